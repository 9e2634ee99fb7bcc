"""The world's judge samples: the same instants and verdicts as the rule worked out at every step.

``SimWorld.step`` keeps the next sample's due time between steps and only compares times (the judge once
took it from the time at the start of every step, a cost the sim node paid at every physics step).  These
tests hold the kept schedule to that rule, written out here, under every way of stepping: one step at a
time, in chunks, with delayed commands and a hardware step hook, with the time set by hand and after a
reset, and with a timestep that does not divide the sample period.
"""

from __future__ import annotations

import dataclasses
import math

import mujoco
import numpy as np
import pytest
from r2s2r_sim.tasks.common import free_qpos_address, touching_robot
from r2s2r_sim.tasks.registry import SETTLE_SAMPLE_S, judge_now
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import WORLDS

PICK = WORLDS["tabletop-pick-v1"]


def _reference_step(world: SimWorld, n: int) -> None:
    """``world.step(n)`` by the rule: the next sample's due time worked out from the time at every step."""
    assert world.task is not None
    while n > 0:
        t = float(world.data.time)
        due = (math.floor(t / SETTLE_SAMPLE_S + 1e-6) + 1) * SETTLE_SAMPLE_S
        k = min(n, max(1, math.ceil((due - t) / world.timestep - 1e-6)))
        world._physics_steps(k)
        n -= k
        if world.data.time >= due - 1e-9:
            world._judge.sample(world.task, world)


def _record_samples(world: SimWorld) -> list[float]:
    """The time of every judge sample ``world`` takes from now on."""
    times: list[float] = []
    judge = world._judge
    sample = judge.sample

    def recorded(task, w):  # type: ignore[no-untyped-def]
        times.append(w.time)
        sample(task, w)

    judge.sample = recorded  # type: ignore[method-assign]
    return times


class _Hook:
    """A hardware stand-in's step hook: commands reach the actuators on every third physics step."""

    def __init__(self) -> None:
        self.ticks = 0

    def control_tick(self, time: float) -> bool:
        self.ticks += 1
        return self.ticks % 3 == 0

    def before_step(self, data: mujoco.MjData) -> None:
        data.qfrc_applied[:] = 0.0

    def physics_step(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        mujoco.mj_step(model, data)

    def after_steps(self, data: mujoco.MjData) -> None:
        pass


def _episode(world: SimWorld, stepper, chunk: int, *, hook: bool, delay: float) -> tuple:  # type: ignore[no-untyped-def]
    """A scripted episode (commands, a done, the time set by hand, a reset); its samples and verdicts."""
    world.step_hook = _Hook() if hook else None
    world.command_delay_s = delay
    times = _record_samples(world)
    verdicts = []
    rng = np.random.default_rng(7)
    world.reset(3)
    home = world.joint_state()[0][: len(world.arm_joint_names)]
    # The cube resting at the target: a success once it has held; the policy says done on the way.
    target, _ = world.site_pose("bin_center")
    adr = free_qpos_address(world, "cube")
    world.data.qpos[adr : adr + 3] = target + [0.004, 0.0, 0.01]
    mujoco.mj_forward(world.model, world.data)
    done_at = 0.31
    while world.time < 1.2:
        world.set_arm_command(home + rng.normal(0.0, 0.05, home.shape))
        if done_at is not None and world.time >= done_at:
            world.policy_done()
            done_at = None
        stepper(world, chunk)
    verdicts.append(world.verdict)
    # The time set by hand, forward to just short of the timeout, then stepping on past it.
    timeout = world.config.task.timeout  # type: ignore[union-attr]
    world.data.time = timeout - 0.0371
    while world.time < timeout + 0.1:
        stepper(world, chunk)
    verdicts.append(world.verdict)
    post = judge_now(world.task, world)  # type: ignore[arg-type]
    # A new episode: the schedule starts over from the reset's time.
    world.reset(4)
    while world.time < 0.2:
        stepper(world, chunk)
    verdicts.append(world.verdict)
    world.step_hook = None
    world.command_delay_s = 0.0
    return times, verdicts, post, world.state_vector()


@pytest.mark.parametrize("timestep", [None, 0.003, 0.0015])
@pytest.mark.parametrize("chunk", [1, 3, 7, 50])
@pytest.mark.parametrize("hook,delay", [(False, 0.0), (False, 0.013), (True, 0.004)])
def test_samples_and_verdicts_follow_the_per_step_rule(
    timestep: float | None, chunk: int, hook: bool, delay: float
) -> None:
    cfg = load_world_config(PICK)
    if timestep is not None:  # 3 ms: a timestep that does not divide the 10 ms sample period
        cfg = dataclasses.replace(cfg, physics=dataclasses.replace(cfg.physics, timestep=timestep))
    kept, ruled = SimWorld(PICK, config=cfg), SimWorld(PICK, config=cfg)
    times, verdicts, post, state = _episode(kept, SimWorld.step, chunk, hook=hook, delay=delay)
    ref_times, ref_verdicts, ref_post, ref_state = _episode(
        ruled, _reference_step, chunk, hook=hook, delay=delay
    )
    assert times == ref_times  # the same instants, to the bit
    assert len(times) > 100
    assert verdicts == ref_verdicts and verdicts[0] is not None and verdicts[1] is not None
    assert post == ref_post
    np.testing.assert_array_equal(state, ref_state)


_GOAL = {"tabletop-pick-v1": ("cube", "bin_center"), "tabletop-push-v1": ("puck", "target_center")}


def _put(world: SimWorld, body: str, pos) -> None:  # type: ignore[no-untyped-def]
    adr = free_qpos_address(world, body)
    world.data.qpos[adr : adr + 3] = pos
    world.data.qpos[adr + 3 : adr + 7] = (1.0, 0.0, 0.0, 0.0)
    world.data.qvel[:] = 0.0
    mujoco.mj_forward(world.model, world.data)


@pytest.mark.parametrize("world_id", sorted(_GOAL))
def test_after_the_verdict_the_task_goes_on_timing_its_holds(world_id: str) -> None:
    # After the verdict the world shows a pick task only its observation (its evaluate reads the clocks
    # and changes nothing); a held task still times its hold in evaluate.  A judge asked later (the
    # emulated hardware's judge service, the step limit) sees the holds as when every sample was also
    # evaluated after the verdict.
    def evaluating_after_the_verdict(world: SimWorld) -> None:
        judge, sample = world._judge, world._judge.sample

        def as_before(task, w):  # type: ignore[no-untyped-def]
            if judge.outcome is None:
                sample(task, w)
                return
            observe = getattr(task, "observe", None)
            if observe is not None:
                observe(w)
            task.evaluate(w)

        judge.sample = as_before  # type: ignore[method-assign]

    body, site = _GOAL[world_id]
    worlds = SimWorld(WORLDS[world_id]), SimWorld(WORLDS[world_id])
    evaluating_after_the_verdict(worlds[1])
    seen = []
    for world in worlds:
        task = world.task
        assert task is not None
        world.reset(0)
        target, _ = world.site_pose(site)
        goal = (target[0], target[1], target[2] + 0.01 if world_id == "tabletop-pick-v1" else 0.77)
        _put(world, body, goal)
        while world.verdict is None:  # the success holds: the verdict comes without a done
            world.step()
        assert world.verdict.success
        states = []
        for move in (None, (0.45, -0.1, 0.77), goal, None):  # the object taken away and put back
            if move is not None:
                _put(world, body, move)
            world.step(83)
            states.append((world.time, judge_now(task, world), task.metrics(world)))
        seen.append(states)
    assert seen[0] == seen[1]
    held = [m.get("held_s", m.get("object_settled_s")) for _, _, m in seen[0]]
    assert held[0] > 0.5 and held[1] == 0.0 and 0.0 < held[3] < 0.5  # the holds were timed after the verdict


def _touching_by_contact(world: SimWorld, body: int) -> bool:
    """The contact-by-contact check :func:`touching_robot` replaces."""
    model, data = world.model, world.data
    for i in range(data.ncon):
        b1 = int(model.geom_bodyid[data.contact.geom1[i]])
        b2 = int(model.geom_bodyid[data.contact.geom2[i]])
        if (b1 == body and b2 in world.robot_body_ids) or (b2 == body and b1 in world.robot_body_ids):
            return True
    return False


def test_touching_robot_agrees_with_the_contact_by_contact_check() -> None:
    world = SimWorld(PICK)
    world.reset(0)
    # The cube between the open fingers, then the gripper closes on it.
    ee, _ = world.ee_pose()
    adr = free_qpos_address(world, "cube")
    world.data.qpos[adr : adr + 3] = ee
    mujoco.mj_forward(world.model, world.data)
    world.set_gripper_command(0.0)
    cube = world.model.body("cube").id
    seen = set()
    for _ in range(150):
        world.step()
        for body in range(world.model.nbody):
            expected = _touching_by_contact(world, body)
            assert touching_robot(world, body) is expected
            name = world.model.body(body).name
            if name:
                assert touching_robot(world, name) is expected
            seen.add((body == cube, expected))
    assert (True, True) in seen and (True, False) in seen  # the cube was touched, and not touched
