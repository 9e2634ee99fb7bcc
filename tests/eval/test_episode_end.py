"""The one end-of-episode rule: the simulated world and the emulated hardware end and judge alike.

The policy's done starts the task's settle period (the arm holding its last command), after which the task
judges once; before a done, a success held for the settle period ends the episode; otherwise the task's
timeout judges; a failure seen earlier ends nothing.
The same scripted trajectory on both cells must end at the same time, step and reason: a cell with its own
rule would make the closed loop compare two different evaluations.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np
import pytest
from r2s2r_eval.episodes.runner import EpisodeResult, EpisodeRunner
from r2s2r_eval.learning.demo_expert import PrivilegedExpert
from r2s2r_eval.policy import Action, EpisodeInfo, Observation, ObservationKind, Policy
from r2s2r_sim.cells.emulated_cell import EmulatedCell
from r2s2r_sim.cells.sim_cell import Cell, SimCell
from r2s2r_sim.tasks.registry import SETTLE_SAMPLE_S, settle_period_s
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "config/emulated_hardware/ideal_profile.yaml"
PUSH = "tabletop-push-v1"
PICK = "tabletop-pick-v1"
RATE_HZ = 10.0
PERIOD = 1.0 / RATE_HZ

CELLS: dict[str, Callable[[str], Cell]] = {
    "sim": lambda world: SimCell(SimWorld(world_path(world)), world_dir=world_path(world)),
    "emulated": lambda world: EmulatedCell(world, PROFILE),
}


class _HoldThenDone(Policy):
    """Holds the arm where it starts; says done after ``done_after`` actions (None: never)."""

    requires = frozenset({ObservationKind.JOINT_STATE})

    def __init__(self, done_after: int | None) -> None:
        self.done_after = done_after

    def reset(self, info: EpisodeInfo) -> None:
        self.info = info
        self.hold: np.ndarray | None = None
        self.acts = 0

    @property
    def done(self) -> bool:
        return self.done_after is not None and self.acts >= self.done_after

    def act(self, observation: Observation) -> Action:
        assert not self.done, "the runner must not call a policy that said it is done"
        self.acts += 1
        if self.hold is None:
            self.hold = observation.positions(self.info.arm_joint_names)
        return Action(arm_positions=self.hold.copy(), gripper=self.info.gripper_command_range[1])


def _run(cell: str, world: str, policy: _HoldThenDone, *, max_steps: int | None = None) -> EpisodeResult:
    with EpisodeRunner(CELLS[cell](world)) as runner:
        return runner.run(policy, seed=2, control_rate_hz=RATE_HZ, max_steps=max_steps)


def _settle(world: str) -> float:
    config = SimWorld(world_path(world)).config.task
    assert config is not None
    return settle_period_s(config)


@pytest.mark.parametrize("world", [PUSH, PICK])
def test_done_is_judged_one_settle_period_later_alike_in_every_cell(world: str) -> None:
    settle = _settle(world)
    assert settle > 0
    results = {}
    for cell in CELLS:
        policy = _HoldThenDone(done_after=12)
        results[cell] = _run(cell, world, policy)
        assert policy.acts == 12  # not called after its done
    sim, emu = results["sim"], results["emulated"]
    # Done after the action at 1.1 s; the arm holds; the task judges at 1.1 s + its settle period.
    assert sim.duration_s == pytest.approx(11 * PERIOD + settle, abs=1e-9)
    assert sim.steps == int(np.ceil((11 * PERIOD + settle) / PERIOD - 1e-9))
    # The object never reached the goal: the task says what is missing, no timeout.
    assert not sim.success and "timeout" not in sim.reason and sim.reason
    assert (emu.success, emu.reason, emu.duration_s, emu.steps) == (
        sim.success,
        sim.reason,
        sim.duration_s,
        sim.steps,
    )
    assert set(emu.metrics) == set(sim.metrics)


def test_without_done_the_timeout_judges_alike_in_every_cell() -> None:
    results = {cell: _run(cell, PUSH, _HoldThenDone(done_after=None)) for cell in CELLS}
    sim, emu = results["sim"], results["emulated"]
    timeout = SimWorld(world_path(PUSH)).config.task.timeout  # type: ignore[union-attr]
    assert sim.reason == "object_outside_region (timeout)" and not sim.success
    assert timeout - 1e-9 <= sim.duration_s <= timeout + SETTLE_SAMPLE_S + 1e-9
    assert (emu.reason, emu.duration_s, emu.steps) == (sim.reason, sim.duration_s, sim.steps)


def test_the_step_limit_judges_alike_in_every_cell() -> None:
    results = {cell: _run(cell, PUSH, _HoldThenDone(done_after=None), max_steps=7) for cell in CELLS}
    sim, emu = results["sim"], results["emulated"]
    assert sim.reason == "object_outside_region (max_steps)" and sim.steps == 7
    assert sim.duration_s == pytest.approx(7 * PERIOD)
    assert (emu.reason, emu.duration_s, emu.steps) == (sim.reason, sim.duration_s, sim.steps)


class _NeverDone(PrivilegedExpert):
    """The demonstration expert without its done, for a policy that never says it (behaviour cloning)."""

    @property
    def done(self) -> bool:
        return False


def test_without_done_a_held_success_ends_the_episode_alike_in_every_cell() -> None:
    results = {}
    for cell in CELLS:
        with EpisodeRunner(CELLS[cell](PICK)) as runner:
            results[cell] = runner.run(
                _NeverDone(runner.world), seed=0, control_rate_hz=RATE_HZ, camera_rate_hz=1e-3
            )
    timeout = SimWorld(world_path(PICK)).config.task.timeout  # type: ignore[union-attr]
    for cell, res in results.items():  # the emulated unit's physics differs: its episode takes its own time
        assert res.success and res.reason == "success", (cell, res.reason)
        assert res.duration_s < timeout / 2, cell  # not run to the timeout once it has succeeded
        assert res.metrics["object_settled_s"] >= _settle(PICK) - 1e-9, cell


# ---------------------------------------------------------------------------------------- the world's rule


def _cube_resting_at_target(world: SimWorld) -> int:
    """Reset with the pick cube 1 mm over the bin centre, gripper open; returns its free joint's dof."""
    world.reset(0)
    target, _ = world.site_pose("bin_center")
    jnt = world.model.body("cube").jntadr[0]
    adr, dof = world.model.jnt_qposadr[jnt], world.model.jnt_dofadr[jnt]
    world.data.qpos[adr : adr + 3] = target + [0.0, 0.0, 0.001]
    world.data.qvel[:] = 0
    world.set_gripper_command(0.04, immediate=True)
    mujoco.mj_forward(world.model, world.data)
    return int(dof)


def test_without_done_a_success_held_for_the_settle_period_ends_the_episode() -> None:
    """A policy that never says done (behaviour cloning) is not run to the timeout once it has succeeded."""
    world = SimWorld(world_path(PICK))
    _cube_resting_at_target(world)
    settle = _settle(PICK)
    world.step(round((settle - 0.1) / world.timestep))
    assert world.verdict is None  # at rest at the target, not yet for the whole settle period
    while world.verdict is None:
        world.step(1)
    verdict = world.verdict
    assert verdict.success and verdict.reason == "success"
    assert settle <= verdict.time_s <= settle + 0.1  # the 1 mm drop settles within a few samples
    world.policy_done()  # a done after the verdict changes nothing
    assert world.verdict is verdict


def test_without_done_a_success_that_does_not_hold_ends_nothing() -> None:
    world = SimWorld(world_path(PICK))
    world.reset(0)
    start = world.data.qpos.copy()  # the cube where the episode puts it, on the table
    _cube_resting_at_target(world)
    world.step(round(0.2 / world.timestep))
    world.data.qpos[:] = start  # taken off the target before it has held, back on the table
    world.data.qvel[:] = 0
    mujoco.mj_forward(world.model, world.data)
    world.step(round(2.0 / world.timestep))
    assert world.verdict is None  # neither the brief success nor the cube off the target ends it


def test_after_done_the_judge_comes_a_settle_period_later_and_only_then() -> None:
    world = SimWorld(world_path(PICK))
    _cube_resting_at_target(world)
    world.step(round(0.1 / world.timestep))
    world.policy_done()
    done_at = world.time
    world.policy_done(at=0.0)  # only the first done counts
    world.step(round((_settle(PICK) - 0.05) / world.timestep))
    assert world.verdict is None  # the cube has held for the settle period, but the judge waits for its time
    while world.verdict is None:
        world.step(1)
    verdict = world.verdict
    assert verdict.success and verdict.time_s == pytest.approx(done_at + _settle(PICK), abs=1e-9)


def test_a_success_undone_during_the_settle_period_is_judged_a_failure() -> None:
    world = SimWorld(world_path(PICK))
    dof = _cube_resting_at_target(world)
    world.step(round(0.1 / world.timestep))
    world.policy_done()
    done_at = world.time
    world.step(round(0.2 / world.timestep))
    world.data.qvel[dof : dof + 3] = (0.6, 0.0, 0.0)  # knocked: slides off the target before the judge looks
    while world.verdict is None:
        world.step(1)
    assert not world.verdict.success and world.verdict.reason == "not_achieved"
    assert world.verdict.time_s == pytest.approx(done_at + _settle(PICK), abs=1e-9)
