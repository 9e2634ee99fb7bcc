"""The pick-place success rule: the object must rest at the target, released, for the settle time."""

from __future__ import annotations

import dataclasses
import shutil

import mujoco
import pytest
from conftest import BUNDLED
from r2s2r_sim.errors import WorldError
from r2s2r_sim.tasks.common import SettleClock
from r2s2r_sim.tasks.registry import SETTLE_SAMPLE_S, PickPlaceTask
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.world.sim_world import SimWorld

OPEN, CLOSED = 0.04, 0.0


@pytest.fixture(scope="module")
def world() -> SimWorld:
    return SimWorld(BUNDLED)


def _task(world: SimWorld) -> PickPlaceTask:
    assert isinstance(world.task, PickPlaceTask)
    return world.task


def _cube_at_target(world: SimWorld, dz: float, gripper: float, vel: tuple[float, ...] = (0, 0, 0)) -> None:
    world.reset(0)
    target, _ = world.site_pose("bin_center")
    jnt = world.model.body("cube").jntadr[0]
    adr, dof = world.model.jnt_qposadr[jnt], world.model.jnt_dofadr[jnt]
    world.data.qpos[adr : adr + 3] = target + [0.0, 0.0, dz]
    world.data.qvel[:] = 0
    world.data.qvel[dof : dof + 3] = vel
    world.set_gripper_command(gripper, immediate=True)
    mujoco.mj_forward(world.model, world.data)


def _first_success(world: SimWorld, seconds: float) -> float | None:
    """Step in sample periods; the time of the first success verdict, if any."""
    task = _task(world)
    per_sample = round(SETTLE_SAMPLE_S / world.timestep)
    while world.time < seconds:
        world.step(per_sample)
        outcome = task.evaluate(world)
        if outcome is not None:
            assert outcome.success, outcome
            return world.time
    return None


def test_settle_clock_counts_an_unbroken_run() -> None:
    clock = SettleClock()
    assert clock.update(0.0, True) == 0.0 and clock.holding
    assert clock.update(0.3, True) == pytest.approx(0.3)
    assert clock.held_for(0.3) and not clock.held_for(0.31)
    assert clock.update(0.4, False) == 0.0 and not clock.holding and not clock.held_for(0.0)
    assert clock.update(0.5, True) == 0.0
    assert clock.update(0.9, True) == pytest.approx(0.4)
    # Time running backwards is a new episode.
    assert clock.update(0.1, True) == 0.0


def test_resting_released_object_succeeds_after_the_settle_time(world: SimWorld) -> None:
    _cube_at_target(world, 0.003, OPEN)
    settle = _task(world).config.settle_time
    t = _first_success(world, 2.0)
    assert t is not None
    # It rests within a few samples of the start, then needs the whole settle time.
    assert settle <= t <= settle + 0.1


def test_object_at_the_target_with_the_gripper_closed_is_not_success(world: SimWorld) -> None:
    _cube_at_target(world, 0.003, CLOSED)
    assert _first_success(world, 1.5) is None
    assert _task(world).metrics(world)["gripper_released"] == 0.0
    world.set_gripper_command(OPEN, immediate=True)
    t0 = world.time
    t = _first_success(world, t0 + 1.5)
    assert t is not None and t - t0 >= _task(world).config.settle_time


def test_falling_object_is_not_success_until_it_has_rested(world: SimWorld) -> None:
    # 5 cm above the target: inside the height band while it falls, then it bounces and comes to rest.
    _cube_at_target(world, 0.05, OPEN)
    task = _task(world)
    per_sample = round(SETTLE_SAMPLE_S / world.timestep)
    landed = None
    while world.time < 2.0:
        world.step(per_sample)
        m = task.metrics(world)
        if landed is None and m["object_speed_m_s"] <= task.config.settle_speed:
            landed = world.time
        outcome = task.evaluate(world)
        if outcome is not None:
            break
    assert landed is not None and landed > 0.05  # it really fell
    assert outcome is not None and outcome.success
    assert world.time - landed >= task.config.settle_time - 1e-9


def test_the_world_judges_at_the_same_instants_however_the_steps_are_chunked(world: SimWorld) -> None:
    # The sim node steps one physics step at a time, the episode runner a control period (50 steps) at a
    # time: both read the world's verdict, which must be the same one at the same simulated time.
    # The policy says done at 1.0 s (the cube has landed and rests), so the task judges one settle period on.
    verdicts = []
    for chunk in (1, 7, 50):
        _cube_at_target(world, 0.05, OPEN)
        world.policy_done(at=1.0)
        while world.verdict is None and world.time < 2.0:
            world.step(chunk)
        verdict = world.verdict
        assert verdict is not None and verdict.success and verdict.time_s is not None, verdict
        verdicts.append(verdict)
        # Reached at a sample instant, possibly inside the last chunk; the first verdict is kept.
        assert verdict.time_s / SETTLE_SAMPLE_S == pytest.approx(round(verdict.time_s / SETTLE_SAMPLE_S))
        assert verdict.time_s == pytest.approx(1.0 + _task(world).config.settle_time)
        assert verdict.time_s <= world.time
        world.step(50)
        assert world.verdict is verdict
    assert [v.time_s for v in verdicts] == [verdicts[0].time_s] * 3
    assert [v.metrics for v in verdicts] == [verdicts[0].metrics] * 3
    world.reset(0)
    assert world.verdict is None  # a reset forgets the previous episode's verdict


def test_moving_object_at_the_target_is_not_at_rest(world: SimWorld) -> None:
    # Sliding at 0.3 m/s across the bin floor: not at rest for as long as it moves.
    _cube_at_target(world, 0.003, OPEN, vel=(0.3, 0.0, 0.0))
    task = _task(world)
    world.step(round(SETTLE_SAMPLE_S / world.timestep))
    assert task.metrics(world)["object_speed_m_s"] > task.config.settle_speed
    assert not task.settle.holding


def test_settle_parameters_come_from_world_yaml(tmp_path) -> None:
    cfg = load_world_config(BUNDLED)
    assert cfg.task is not None
    assert (cfg.task.settle_time, cfg.task.settle_speed, cfg.task.settle_angular_speed) == (0.5, 0.02, 0.5)
    slow = dataclasses.replace(cfg.task, settle_time=1.2)
    assert slow.settle_time == 1.2
    with pytest.raises(WorldError, match=r"settle_time: must be in \[0, timeout\)"):
        dataclasses.replace(cfg.task, settle_time=cfg.task.timeout)
    with pytest.raises(WorldError, match="settle_speed: must be > 0"):
        dataclasses.replace(cfg.task, settle_speed=0.0)


def test_settle_time_read_from_yaml(tmp_path) -> None:
    dst = tmp_path / "w"
    shutil.copytree(BUNDLED, dst)
    text = (
        (dst / "world.yaml").read_text().replace("  timeout: 30.0\n", "  timeout: 30.0\n  settle_time: 1.0\n")
    )
    (dst / "world.yaml").write_text(text)
    w = SimWorld(dst)
    assert _task(w).config.settle_time == 1.0
    _cube_at_target(w, 0.003, OPEN)
    t = _first_success(w, 2.5)
    assert t is not None and 1.0 <= t <= 1.1
    text = text.replace("settle_time: 1.0", "settle_time: -1")
    (dst / "world.yaml").write_text(text)
    with pytest.raises(WorldError, match="settle_time"):
        load_world_config(dst)
