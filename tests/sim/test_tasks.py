"""Push, stack and drawer tasks: their registry entries, episode starts, and success and failure rules."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from r2s2r_sim.errors import WorldError
from r2s2r_sim.tasks.common import SettleClock, free_qpos_address
from r2s2r_sim.tasks.config import TaskType
from r2s2r_sim.tasks.drawer import DrawerTask
from r2s2r_sim.tasks.push import PushTask
from r2s2r_sim.tasks.registry import TASKS, make_task
from r2s2r_sim.tasks.stack import StackTask
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import WORLDS


@pytest.fixture(scope="module")
def push() -> SimWorld:
    return SimWorld(WORLDS["tabletop-push-v1"])


@pytest.fixture(scope="module")
def stack() -> SimWorld:
    return SimWorld(WORLDS["tabletop-stack-v1"])


@pytest.fixture(scope="module")
def drawer() -> SimWorld:
    return SimWorld(WORLDS["tabletop-drawer-v1"])


def _put(world: SimWorld, body: str, pos: tuple[float, float, float], quat=(1.0, 0.0, 0.0, 0.0)) -> None:  # type: ignore[no-untyped-def]
    adr = free_qpos_address(world, body)
    world.data.qpos[adr : adr + 3] = pos
    world.data.qpos[adr + 3 : adr + 7] = quat


def _at(world: SimWorld, t: float) -> None:
    """Freeze the state (no velocity) and move the clock to ``t`` without stepping the physics."""
    world.data.qvel[:] = 0.0
    world.data.time = t
    mujoco.mj_forward(world.model, world.data)


def _judge_over(world: SimWorld, times: list[float]):  # type: ignore[no-untyped-def]
    """The task's verdicts at ``times`` (seconds since the reset), state frozen."""
    assert world.task is not None
    out = []
    for t in times:
        _at(world, t)
        out.append(world.task.evaluate(world))
    return out


# --------------------------------------------------------------------------------------------- registry


def test_registry_builds_each_task_for_its_world() -> None:
    assert set(TASKS) == set(TaskType)
    for world_id, cls in (
        ("tabletop-push-v1", PushTask),
        ("tabletop-stack-v1", StackTask),
        ("tabletop-drawer-v1", DrawerTask),
    ):
        world = SimWorld(WORLDS[world_id])
        assert world.config.task is not None
        assert isinstance(world.task, cls)
        assert isinstance(make_task(world.config.task), cls)


def test_task_refuses_another_type(push: SimWorld) -> None:
    assert push.config.task is not None
    with pytest.raises(WorldError, match="StackTask needs 'stack', got 'push'"):
        StackTask(push.config.task)


def test_hold_timer_restarts_on_false_and_when_time_goes_back() -> None:
    timer = SettleClock()
    assert timer.update(1.0, True) == 0.0
    assert timer.update(1.4, True) == pytest.approx(0.4)
    assert timer.update(1.5, False) == 0.0
    assert timer.update(1.6, True) == 0.0
    assert timer.update(2.0, True) == pytest.approx(0.4)
    assert timer.update(0.1, True) == 0.0  # a new episode
    assert timer.update(0.3, True) == pytest.approx(0.2)


# ----------------------------------------------------------------------------------------- episode start


@pytest.mark.parametrize("world_id", ["tabletop-push-v1", "tabletop-stack-v1", "tabletop-drawer-v1"])
def test_start_is_seeded_and_randomized(world_id: str) -> None:
    world = SimWorld(WORLDS[world_id])
    world.reset(5)
    a = world.data.qpos.copy()
    world.reset(5)
    assert np.array_equal(world.data.qpos, a)
    world.reset(6)
    assert not np.array_equal(world.data.qpos, a)


def test_stack_start_draws_both_blocks_in_their_ranges(stack: SimWorld) -> None:
    cfg = stack.config.task
    assert cfg is not None and cfg.object_pose_range is not None and cfg.support_pose_range is not None
    for seed in range(5):
        stack.reset(seed)
        for body, r in (("cube", cfg.object_pose_range), ("support", cfg.support_pose_range)):
            pos, _ = stack.body_pose(body)
            assert r.x[0] <= pos[0] <= r.x[1] and r.y[0] <= pos[1] <= r.y[1]


def test_drawer_start_opening_in_range(drawer: SimWorld) -> None:
    cfg = drawer.config.task
    assert cfg is not None and cfg.joint_start_range is not None
    openings = []
    for seed in range(5):
        drawer.reset(seed)
        openings.append(float(drawer.data.joint("drawer_slide").qpos[0]))
    assert all(cfg.joint_start_range[0] <= q <= cfg.joint_start_range[1] for q in openings)
    assert len(set(openings)) == 5


# ------------------------------------------------------------------------------------------------- push


def test_push_success_needs_the_hold(push: SimWorld) -> None:
    push.reset(0)
    target, _ = push.site_pose("target_center")
    _put(push, "puck", (target[0] + 0.04, target[1], 0.77))  # inside the 5 cm region
    verdicts = _judge_over(push, [1.0, 1.2, 1.4, 1.5])
    assert verdicts[:3] == [None, None, None]
    assert verdicts[3] is not None and verdicts[3].success and verdicts[3].reason == "success"
    assert verdicts[3].metrics["object_to_target_m"] == pytest.approx(0.04, abs=1e-6)
    assert verdicts[3].metrics["held_s"] == pytest.approx(0.5)


def test_push_failures_say_what_happened(push: SimWorld) -> None:
    assert push.config.task is not None
    timeout = push.config.task.timeout
    target, _ = push.site_pose("target_center")
    push.reset(0)
    _put(push, "puck", (target[0] + 0.06, target[1], 0.77))  # 1 cm outside the region
    (v,) = _judge_over(push, [timeout])
    assert v is not None and not v.success and v.reason == "object_outside_region (timeout)"
    push.reset(0)
    _put(push, "puck", (target[0], target[1], 0.80))  # on target but 3 cm up: lifted, not pushed
    (v,) = _judge_over(push, [timeout])
    assert v is not None and v.reason == "object_lifted (timeout)"
    push.reset(0)
    _put(push, "puck", (0.9, 0.0, 0.5))  # off the table
    (v,) = _judge_over(push, [2.0])
    assert v is not None and v.reason == "object_dropped"
    push.reset(0)
    _put(push, "puck", (target[0], target[1], 0.77))
    _at(push, timeout - 0.1)
    dof = int(push.model.jnt_dofadr[push.model.body("puck").jntadr[0]])
    push.data.qvel[dof] = 0.2  # sliding through the region at 0.2 m/s
    mujoco.mj_forward(push.model, push.data)
    assert push.task is not None
    assert push.task.evaluate(push) is None
    push.data.time = timeout
    v = push.task.evaluate(push)
    assert v is not None and v.reason == "not_settled (timeout)"


@pytest.mark.parametrize("world_id", ["tabletop-push-v1", "tabletop-stack-v1", "tabletop-pick-v1"])
def test_a_dropped_object_ends_the_episode_at_the_timeout(world_id: str) -> None:
    """A dropped object stays dropped: the task keeps seeing that failure, and the timeout still ends it."""
    world = SimWorld(WORLDS[world_id])
    assert world.config.task is not None
    timeout = world.config.task.timeout
    world.reset(0)
    _put(world, world.config.task.object_body, (1.2, 0.0, 0.3))  # off the table's edge
    world.data.time = timeout - 1.0
    mujoco.mj_forward(world.model, world.data)
    steps_per_s = round(1.0 / world.timestep)
    world.step(steps_per_s // 2)
    assert world.verdict is None  # a failure seen earlier does not end the episode: the policy may redo it
    world.step(steps_per_s)
    v = world.verdict
    assert v is not None and not v.success and v.reason == "object_dropped"
    assert v.time_s == pytest.approx(timeout, abs=0.06)


# ------------------------------------------------------------------------------------------------ stack


def test_stack_success_on_the_support_after_the_hold(stack: SimWorld) -> None:
    stack.reset(1)
    site, _ = stack.site_pose("stack_target")
    _put(stack, "cube", (site[0] + 0.01, site[1], site[2]))
    verdicts = _judge_over(stack, [2.0, 2.3, 2.5])
    assert verdicts[:2] == [None, None]
    assert verdicts[2] is not None and verdicts[2].success
    assert verdicts[2].metrics["object_to_target_m"] == pytest.approx(0.01, abs=1e-6)
    assert verdicts[2].metrics["gripper_released"] == 1.0


def test_stack_failures_say_what_happened(stack: SimWorld) -> None:
    assert stack.config.task is not None
    timeout = stack.config.task.timeout
    stack.reset(1)
    site, _ = stack.site_pose("stack_target")
    _put(stack, "cube", (site[0] + 0.02, site[1], site[2]))  # 2 cm off: beyond the 1.5 cm tolerance
    (v,) = _judge_over(stack, [timeout])
    assert v is not None and v.reason == "object_not_on_support (timeout)"
    stack.reset(1)
    _put(stack, "cube", (0.9, 0.0, 0.5))
    (v,) = _judge_over(stack, [1.0])
    assert v is not None and v.reason == "object_dropped"
    stack.reset(1)
    support, _ = stack.body_pose("support")
    tipped = (math.cos(0.35), math.sin(0.35), 0.0, 0.0)  # 0.7 rad about x
    _put(stack, "support", tuple(support), tipped)  # type: ignore[arg-type]
    (v,) = _judge_over(stack, [1.0])
    assert v is not None and v.reason == "support_toppled"
    assert v.metrics["support_tilt_rad"] == pytest.approx(0.7, abs=1e-6)


# ----------------------------------------------------------------------------------------------- drawer


def _open(world: SimWorld, q: float) -> None:
    world.data.joint("drawer_slide").qpos[0] = q


def test_drawer_success_is_the_opening_held(drawer: SimWorld) -> None:
    drawer.reset(0)
    _open(drawer, 0.13)  # past the 0.12 m threshold
    verdicts = _judge_over(drawer, [3.0, 3.3, 3.5])
    assert verdicts[:2] == [None, None]
    assert verdicts[2] is not None and verdicts[2].success
    assert verdicts[2].metrics["joint_position"] == pytest.approx(0.13)
    assert verdicts[2].metrics["open_fraction"] == pytest.approx(0.13 / 0.12)


def test_drawer_failures_say_what_happened(drawer: SimWorld) -> None:
    assert drawer.config.task is not None and drawer.task is not None
    timeout = drawer.config.task.timeout
    drawer.reset(0)
    _open(drawer, 0.11)
    (v,) = _judge_over(drawer, [timeout])
    assert v is not None and v.reason == "drawer_not_opened (timeout)"
    drawer.reset(0)
    _open(drawer, 0.15)
    _at(drawer, timeout)
    drawer.data.joint("drawer_slide").qvel[0] = -0.05  # sliding shut
    v = drawer.task.evaluate(drawer)
    assert v is not None and v.reason == "not_settled (timeout)"
    assert v.metrics["joint_speed"] == pytest.approx(0.05)


def test_drawer_task_needs_one_slide_or_hinge_joint(push: SimWorld) -> None:
    cfg = WORLDS["tabletop-drawer-v1"]
    from dataclasses import replace

    from r2s2r_sim.world.config import load_world_config

    task_cfg = load_world_config(cfg).task
    assert task_cfg is not None
    task = DrawerTask(replace(task_cfg, object_body="puck"))
    with pytest.raises(WorldError, match="body 'puck' needs exactly one slide or hinge joint"):
        task.metrics(push)
