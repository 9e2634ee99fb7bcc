"""Contract of the cells: every cell (simulated world, emulated hardware) passes the same checks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from r2s2r_sim.cells.emulated_cell import EmulatedCell
from r2s2r_sim.cells.sim_cell import Cell, SimCell
from r2s2r_sim.errors import RenderError, WorldError
from r2s2r_sim.tasks.registry import TASKS, ObjectPose, make_task
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "config/emulated_hardware/ideal_profile.yaml"
WORLD = "tabletop-pick-v1"

CELLS: dict[str, Callable[[], Cell]] = {
    "sim": lambda: SimCell(SimWorld(world_path(WORLD)), world_dir=world_path(WORLD)),
    "emulated": lambda: EmulatedCell(WORLD, PROFILE),
}


@pytest.fixture(params=sorted(CELLS))
def cell(request: pytest.FixtureRequest) -> Iterator[Cell]:
    with CELLS[request.param]() as c:  # type: ignore[attr-defined]
        yield c


def test_cell_follows_the_protocol(cell: Cell) -> None:
    assert isinstance(cell, Cell)
    assert cell.world_dir == world_path(WORLD) and cell.world_id == WORLD
    assert cell.camera_k.shape == (3, 3) and cell.camera_rate_hz > 0 and cell.dt > 0


def test_reset_starts_the_episode_at_time_zero_from_the_seed(cell: Cell) -> None:
    cell.reset(3)
    first = cell.world.body_pose("cube")[0]
    assert cell.time == 0.0
    cell.advance(10)
    assert cell.time == pytest.approx(10 * cell.dt)
    cell.reset(3)
    np.testing.assert_array_equal(cell.world.body_pose("cube")[0], first)
    assert cell.time == 0.0
    cell.reset(4)
    assert not np.array_equal(cell.world.body_pose("cube")[0], first)


def test_render_matches_the_camera(cell: Cell) -> None:
    cell.reset(0)
    rgb, depth = cell.render()
    assert rgb.dtype == np.uint8 and rgb.shape == (cell.camera.height, cell.camera.width, 3)
    assert depth.dtype == np.uint16 and depth.shape == rgb.shape[:2] and depth.max() > 0


def test_bad_commands_are_refused_and_the_episode_ends(cell: Cell) -> None:
    cell.reset(0)
    n = len(cell.world.arm_joint_names)
    assert not cell.submit(np.full(n, np.nan), 0.0).accepted
    assert not cell.submit(np.zeros(n - 1), 0.0).accepted
    home = cell.joint_state()[0][:n]
    assert cell.submit(home, cell.world.config.robot.gripper.open_command).accepted  # type: ignore[union-attr]
    cell.advance(5)
    assert cell.outcome(step_limit=False) is None
    ended = cell.outcome(step_limit=True)
    assert ended is not None and not ended.success and "max_steps" in ended.reason
    assert set(ended.metrics) == set(cell.metrics())


def test_render_needs_an_open_cell() -> None:
    for make in CELLS.values():
        with pytest.raises(RenderError, match="before open"):
            make().render()


def test_task_places_the_object_where_the_episode_names() -> None:
    world = SimWorld(world_path(WORLD))
    world.reset(0, object_pose=ObjectPose(0.45, -0.02, 0.3))
    pos, quat = world.body_pose("cube")
    assert pos[:2] == pytest.approx([0.45, -0.02])
    assert quat == pytest.approx([np.cos(0.15), 0.0, 0.0, np.sin(0.15)])


def test_unknown_task_type_is_refused_with_the_registered_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    config = SimWorld(world_path(WORLD)).config.task
    assert config is not None
    monkeypatch.delitem(TASKS, config.type)
    registered = r"\['drawer', 'push', 'stack'\]"  # the others, without the one removed
    with pytest.raises(WorldError, match=r"task.type: no task registered .*registered: " + registered):
        make_task(config)
