"""SimWorld on the bundled worlds: names, reset, determinism, commands, tracking, reach, task."""

from __future__ import annotations

import shutil
from pathlib import Path

import mujoco
import numpy as np
import pytest
from conftest import BUNDLED
from r2s2r_sim.errors import WorldError
from r2s2r_sim.tasks.registry import Outcome, PickPlaceTask
from r2s2r_sim.world.sim_world import CommandCheck, SimWorld
from r2s2r_sim.worlds import WORLDS


@pytest.fixture(scope="module")
def world() -> SimWorld:
    return SimWorld(BUNDLED)


def _rollout(world: SimWorld, seed: int, steps: int = 200) -> np.ndarray:
    """Reset, then a fixed command sequence; returns the stacked state vectors."""
    world.reset(seed)
    home = world.joint_state()[0][: len(world.arm_joint_names)]
    states = []
    for k in range(steps):
        world.set_arm_command(home + 0.2 * np.sin(0.01 * k))
        if world.gripper_command_range is not None:
            world.set_gripper_command(world.gripper_command_range[k % 2])
        world.step(2)
        states.append(world.state_vector())
    return np.stack(states)


# ------------------------------------------------------------------ contract over the registry (STYLE 8)


@pytest.mark.parametrize("world_id", sorted(WORLDS))
def test_registered_world_contract(world_id: str) -> None:
    w = SimWorld(WORLDS[world_id])
    assert w.world_id == world_id
    w.reset(3)
    w.step(50)
    q, v, e = w.joint_state()
    n = len(w.joint_names)
    for arr in (q, v, e):
        assert arr.shape == (n,) and arr.dtype == np.float64 and np.all(np.isfinite(arr))
    assert w.arm_limits.shape == (len(w.arm_joint_names), 2)
    for cam in w.config.cameras:
        pos, quat = w.camera_pose(cam.name)
        assert pos.shape == (3,) and np.isclose(np.linalg.norm(quat), 1.0)
    before = w.state_vector()
    assert not w.set_arm_command([np.nan] * len(w.arm_joint_names)).accepted
    assert np.array_equal(w.state_vector(), before)
    np.testing.assert_array_equal(_rollout(w, 5, 20), _rollout(w, 5, 20))


# ------------------------------------------------------------------------------ the bundled world


def test_everything_is_named(world: SimWorld) -> None:
    m = world.model
    for objtype, count in (
        (mujoco.mjtObj.mjOBJ_BODY, m.nbody),
        (mujoco.mjtObj.mjOBJ_JOINT, m.njnt),
        (mujoco.mjtObj.mjOBJ_GEOM, m.ngeom),
        (mujoco.mjtObj.mjOBJ_SITE, m.nsite),
        (mujoco.mjtObj.mjOBJ_CAMERA, m.ncam),
        (mujoco.mjtObj.mjOBJ_ACTUATOR, m.nu),
        (mujoco.mjtObj.mjOBJ_LIGHT, m.nlight),
    ):
        unnamed = [i for i in range(count) if not mujoco.mj_id2name(m, objtype, i)]
        assert not unnamed, f"unnamed {objtype.name} ids {unnamed}"


def test_interface(world: SimWorld) -> None:
    assert world.world_id == "tabletop-pick-v1"
    assert world.timestep == 0.002
    assert world.model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert world.arm_joint_names == (
        "shoulder_pan",
        "shoulder_lift",
        "elbow",
        "wrist_1",
        "wrist_2",
        "wrist_3",
    )
    assert world.gripper_joint_names == ("left_finger", "right_finger")
    assert world.joint_names == world.arm_joint_names + world.gripper_joint_names
    assert world.gripper_command_range == (0.0, 0.04)
    assert np.isinf(world.arm_limits[5]).all()  # wrist_3 is continuous
    world.reset(0)
    pos, quat = world.base_pose()
    np.testing.assert_allclose(pos, [0, 0, 0.75])
    np.testing.assert_allclose(quat, [1, 0, 0, 0])
    ee, ee_quat = world.ee_pose()
    assert ee[2] > 0.9  # home: above the table
    # tool z axis points down at home
    mat = np.empty(9)
    mujoco.mju_quat2Mat(mat, ee_quat)
    assert mat.reshape(3, 3)[2, 2] < -0.99
    with pytest.raises(WorldError, match="no body 'ghost'"):
        world.body_pose("ghost")
    with pytest.raises(WorldError, match="no site 'ghost'"):
        world.site_pose("ghost")


def test_camera_pose_is_optical_frame(world: SimWorld) -> None:
    world.reset(0)
    pos, quat = world.camera_pose("camera")
    assert np.array_equal(pos, world.camera_pose("realsense")[0])
    mat = np.empty(9)
    mujoco.mju_quat2Mat(mat, quat)
    rot = mat.reshape(3, 3)
    z_fwd, y_down = rot[:, 2], rot[:, 1]
    to_cube = world.body_pose("cube")[0] - pos
    assert z_fwd @ to_cube / np.linalg.norm(to_cube) > 0.9  # looks at the workspace
    assert y_down[2] < -0.8  # image y points (mostly) down in the world
    assert 0.7 < np.linalg.norm(to_cube) < 1.1  # D435 at ~0.7-1.0 m from the workspace


def test_reset_home_and_hold(world: SimWorld) -> None:
    world.reset(1)
    q0, v0, _ = world.joint_state()
    assert world.time == 0.0
    assert np.all(v0 == 0)
    world.step(500)
    q, v, _ = world.joint_state()
    assert np.abs(v).max() < 1e-3
    assert np.abs(q - q0).max() < 1e-3
    assert world.time == pytest.approx(1.0)


def test_deterministic_trajectory(world: SimWorld) -> None:
    a = _rollout(world, 7)
    b = _rollout(world, 7)
    assert np.array_equal(a, b)  # bit-identical


def test_seeds_randomize_object(world: SimWorld) -> None:
    poses = []
    for seed in range(5):
        world.reset(seed)
        pos, quat = world.body_pose("cube")
        poses.append(np.concatenate([pos, quat]))
        rng = world.config.task.object_pose_range  # type: ignore[union-attr]
        assert rng.x[0] <= pos[0] <= rng.x[1] and rng.y[0] <= pos[1] <= rng.y[1]
    assert len({tuple(p) for p in poses}) == 5
    world.reset(3)
    again = np.concatenate(world.body_pose("cube"))
    assert np.array_equal(again, poses[3])


@pytest.mark.parametrize(
    "command",
    [[0.0] * 5, [0.0] * 7, [np.nan, 0, 0, 0, 0, 0], [0, 0, np.inf, 0, 0, 0], [[0.0] * 6], "abc"],
)
def test_bad_arm_command_refused(world: SimWorld, command) -> None:  # type: ignore[no-untyped-def]
    world.reset(0)
    world.step(3)
    before = world.state_vector()
    check = world.set_arm_command(command)
    assert isinstance(check, CommandCheck)
    assert not check.accepted and not check.clamped and check.reason
    assert np.array_equal(world.state_vector(), before)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, "wide"])
def test_bad_gripper_command_refused(world: SimWorld, value) -> None:  # type: ignore[no-untyped-def]
    world.reset(0)
    before = world.state_vector()
    check = world.set_gripper_command(value)
    assert not check.accepted and check.reason
    assert np.array_equal(world.state_vector(), before)


def test_commands_clamped(world: SimWorld) -> None:
    world.reset(0)
    check = world.set_arm_command([0, 5.0, -9.0, 0, 0, 100.0])
    assert check.accepted and check.clamped and "shoulder_lift" in check.reason and "elbow" in check.reason
    assert "wrist_3" not in check.reason  # continuous: not clamped
    ok = world.set_arm_command([0, 0.3, 1.6, 0, 1.2, 0])
    assert ok == CommandCheck(True, False, "")
    g = world.set_gripper_command(0.5)
    assert g.accepted and g.clamped and world.gripper_command == 0.04
    assert world.set_gripper_command(0.0) == CommandCheck(True, False, "")
    assert world.gripper_open_fraction == 0.0


def test_arm_tracks_target(world: SimWorld) -> None:
    world.reset(0)
    target = np.array([0.4, 0.5, 1.3, 0.3, 1.0, -0.5])
    assert world.set_arm_command(target).accepted
    world.step(1000)  # 2 s
    q, v, effort = world.joint_state()
    # Gravity is compensated in the arm model, so the servos settle on the target (1 mrad ~ 1 mm at the tool).
    np.testing.assert_allclose(q[:6], target, atol=1e-3)
    assert np.abs(v).max() < 1e-2
    assert np.all(np.isfinite(effort))


def test_gripper_closes_and_opens(world: SimWorld) -> None:
    world.reset(0)
    world.set_gripper_command(0.0)
    world.step(300)
    q = world.joint_state()[0]
    assert q[6] < 2e-3 and q[7] < 2e-3
    world.set_gripper_command(0.04)
    world.step(300)
    q = world.joint_state()[0]
    np.testing.assert_allclose(q[6:], [0.04, 0.04], atol=2e-3)


def _ik(world: SimWorld, target: np.ndarray, q0: np.ndarray) -> tuple[np.ndarray, float]:
    """Damped least squares on a scratch MjData: ee_site to ``target`` with the tool pointing down."""
    m = world.model
    d = mujoco.MjData(m)
    sid = m.site("ee_site").id
    qadr = m.jnt_qposadr[[m.joint(n).id for n in world.arm_joint_names]]
    dadr = m.jnt_dofadr[[m.joint(n).id for n in world.arm_joint_names]]
    q = q0.copy()
    jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    for _ in range(300):
        d.qpos[qadr] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        err_p = target - d.site_xpos[sid]
        z_axis = d.site_xmat[sid].reshape(3, 3)[:, 2]
        err_r = np.cross(z_axis, [0, 0, -1.0])  # align tool z with world -z
        mujoco.mj_jacSite(m, d, jacp, jacr, sid)
        jac = np.vstack([jacp[:, dadr], jacr[:, dadr]])
        err = np.concatenate([err_p, err_r])
        q = q + jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(6), err)
        q = np.clip(q, world.arm_limits[:, 0], world.arm_limits[:, 1])
    return q, float(np.linalg.norm(err_p))


@pytest.mark.parametrize(
    "point",
    [(0.35, -0.15, 0.77), (0.55, -0.15, 0.77), (0.35, 0.05, 0.77), (0.55, 0.05, 0.77), (0.25, 0.38, 0.85)],
    ids=["near-right", "far-right", "near-left", "far-left", "bin"],
)
def test_workspace_reachable_tool_down(world: SimWorld, point: tuple[float, float, float]) -> None:
    world.reset(0)
    home = world.joint_state()[0][:6]
    q, err = _ik(world, np.array(point), home)
    assert err < 2e-3, f"IK misses {point} by {err:.4f} m"
    # and the servos actually get there
    world.set_arm_command(q)
    world.step(1000)
    ee, _ = world.ee_pose()
    assert np.linalg.norm(ee - point) < 5e-3


def test_hash_stable_and_location_independent(world: SimWorld, tmp_path: Path) -> None:
    assert SimWorld(BUNDLED).world_hash == world.world_hash
    copy = tmp_path / "elsewhere"
    shutil.copytree(BUNDLED, copy)
    assert SimWorld(copy).world_hash == world.world_hash
    scene = copy / "scene.xml"
    scene.write_text(scene.read_text().replace('mass="0.08"', 'mass="0.09"'))
    assert SimWorld(copy).world_hash != world.world_hash
    assert len(world.world_hash) == 64


# --------------------------------------------------------------------------------------------- task


def test_task_success_by_teleport(world: SimWorld) -> None:
    task = world.task
    assert isinstance(task, PickPlaceTask)
    world.reset(0)
    assert task.evaluate(world) is None
    m = task.metrics(world)
    assert m["object_lifted"] == 0.0 and m["object_to_target_m"] > 0.1
    # cheat: put the cube into the bin and open the gripper
    target, _ = world.site_pose("bin_center")
    adr = world.model.jnt_qposadr[world.model.body("cube").jntadr[0]]
    world.data.qpos[adr : adr + 3] = target + [0.0, 0.0, 0.005]
    world.data.qvel[:] = 0
    world.set_gripper_command(0.04)
    mujoco.mj_forward(world.model, world.data)
    world.step(100)  # 0.2 s: resting, but not yet for the settle time
    assert task.evaluate(world) is None
    world.step(round(task.config.settle_time / world.timestep))
    outcome = task.evaluate(world)
    assert isinstance(outcome, Outcome)
    assert outcome.success and outcome.reason == "success"
    assert outcome.metrics["object_to_target_m"] < 0.01
    assert outcome.metrics["gripper_released"] == 1.0
    assert abs(outcome.metrics["object_above_target_m"]) < 0.01
    assert outcome.metrics["object_settled_s"] >= task.config.settle_time
    assert outcome.metrics["object_speed_m_s"] <= task.config.settle_speed


def test_task_timeout(world: SimWorld) -> None:
    task = world.task
    assert task is not None
    world.reset(0)
    world.data.time = world.config.task.timeout - world.timestep / 2  # type: ignore[union-attr]
    assert task.evaluate(world) is None
    world.step(1)
    outcome = task.evaluate(world)
    assert outcome is not None and not outcome.success and outcome.reason == "timeout"
    assert set(outcome.metrics) >= {
        "object_to_target_m",
        "object_height_m",
        "object_lifted",
        "gripper_released",
    }


def test_task_object_dropped(world: SimWorld) -> None:
    task = world.task
    assert task is not None
    world.reset(0)
    adr = world.model.jnt_qposadr[world.model.body("cube").jntadr[0]]
    world.data.qpos[adr : adr + 3] = (1.2, 0.0, 0.3)  # off the table edge
    mujoco.mj_forward(world.model, world.data)
    outcome = task.evaluate(world)
    assert outcome is not None and outcome.reason == "object_dropped" and not outcome.success


def _with_delay(value: float):
    return lambda spec: spec.add_numeric(name="r2s2r_command_delay_s", data=[value])


def test_identified_command_delay_holds_commands_back() -> None:
    w = SimWorld(BUNDLED, spec_editor=_with_delay(0.03))
    assert w.command_delay_s == pytest.approx(0.03)
    w.reset(0)
    home = w.data.ctrl[:6].copy()
    target = w.joint_state()[0][:6] + 0.1
    w.set_arm_command(target)
    w.set_gripper_command(w.config.robot.gripper.closed_command)
    w.step(14)  # 28 ms: not yet
    np.testing.assert_allclose(w.data.ctrl[:6], home)
    assert w.gripper_command == w.config.robot.gripper.open_command
    w.step(2)  # 32 ms: applied
    np.testing.assert_allclose(w.data.ctrl[:6], np.clip(target, w.arm_limits[:, 0], w.arm_limits[:, 1]))
    assert w.gripper_command == w.config.robot.gripper.closed_command
    # a reset drops commands still in flight; `immediate` bypasses the delay (start states)
    w.set_arm_command(target + 0.1)
    w.reset(0)
    w.step(20)
    np.testing.assert_allclose(w.data.ctrl[:6], home)
    w.set_arm_command(target, immediate=True)
    np.testing.assert_allclose(w.data.ctrl[:6], np.clip(target, w.arm_limits[:, 0], w.arm_limits[:, 1]))


def test_bundled_world_has_no_delay_and_bad_delay_is_refused(world: SimWorld) -> None:
    assert world.command_delay_s == 0.0
    with pytest.raises(WorldError, match="command delay must be in"):
        SimWorld(BUNDLED, spec_editor=_with_delay(-1.0))
