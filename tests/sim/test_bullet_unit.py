"""The Bullet stand-in unit (``engine: pybullet``): its servos, latency, camera, determinism and refusals.

Each test builds the unit from the shipped ``bullet`` profile (or a copy edited in ``tmp_path``) and reads
what Bullet did through the emulated cell's own interface, the world's MuJoCo data being Bullet's mirror.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pybullet
import pytest
import yaml
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.policy import load_policy
from r2s2r_eval.studies.task_studies import task_study
from r2s2r_sim.cells.emulated_cell import EmulatedCell
from r2s2r_sim.hardware.bullet_unit.physics import BulletPhysics
from r2s2r_sim.hardware.emulated_arm import EmulatedArm
from r2s2r_sim.hardware.profile import HardwareProfileError, load_hardware_profile
from r2s2r_sim.hardware.shipped_profiles import profile_path
from transforms3d import euler

REPO = Path(__file__).resolve().parents[2]
MARKER_WORLD = REPO / "tests" / "worlds" / "marker"
PICK = "tabletop-pick-v1"


def _bullet_data() -> dict[str, Any]:
    return yaml.safe_load(profile_path("bullet").read_text())


def _write(tmp_path: Path, data: dict[str, Any], name: str = "profile.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _quiet(tmp_path: Path, latency_s: float = 0.0, name: str = "quiet.yaml") -> Path:
    """The bullet unit without joint noise or sensor effects, with the given driver latency."""
    data = _bullet_data()
    data["driver"]["command_latency_s"] = latency_s
    data["driver"]["joint_state_noise"] = {"position_std_rad": 0.0, "velocity_std_rad_s": 0.0}
    for section in ("depth_sensor", "color_sensor", "frame_timing"):
        data.pop(section)
    return _write(tmp_path, data, name)


def test_shipped_bullet_profile_builds_a_bullet_unit() -> None:
    profile = load_hardware_profile(profile_path("bullet"))
    assert profile.engine == "pybullet"
    assert load_hardware_profile(profile_path("ideal")).engine == "mujoco"
    arm = EmulatedArm(PICK, profile)
    # The profile reached Bullet: the cube's mass and the driver's torque limit are the unit's.
    physics = arm.world.step_hook
    assert isinstance(physics, BulletPhysics)
    cube = next(b for b in physics.scene.free_bodies if b.name == "cube")
    assert pybullet.getDynamicsInfo(cube.uid, -1, physicsClientId=physics.client)[0] == pytest.approx(0.095)


# ------------------------------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    ("section", "value"),
    [
        ("contacts", {"cone": "pyramidal"}),
        ("lights", {"key_light": {"diffuse": [0.5, 0.5, 0.5]}}),
        ("arm_effects", {"encoder_counts_per_rev": 4096}),
    ],
)
def test_a_section_without_a_bullet_counterpart_is_refused_by_name(
    tmp_path: Path, section: str, value: dict[str, Any]
) -> None:
    data = _bullet_data()
    data[section] = value
    profile = load_hardware_profile(_write(tmp_path, data))
    with pytest.raises(HardwareProfileError, match=rf"engine pybullet: section {section}\b"):
        EmulatedArm(PICK, profile)


def test_an_unknown_engine_is_refused(tmp_path: Path) -> None:
    data = _bullet_data()
    data["engine"] = "physx"
    with pytest.raises(HardwareProfileError, match=r"engine: unknown engine 'physx'"):
        load_hardware_profile(_write(tmp_path, data))


def test_the_drawer_slides_on_a_bullet_joint_with_the_units_damping() -> None:
    cell = EmulatedCell("tabletop-drawer-v1", profile_path("bullet"))
    cell.reset(1)
    physics = cell.world.step_hook
    assert isinstance(physics, BulletPhysics)
    uid, index, qadr, _, ref = physics.scene.scene_joints[0]
    c = physics.client
    assert pybullet.getJointState(uid, index, physicsClientId=c)[0] == pytest.approx(
        cell.world.data.qpos[qadr] - ref
    )
    assert pybullet.getJointInfo(uid, index, physicsClientId=c)[2] == pybullet.JOINT_PRISMATIC
    pybullet.resetJointState(uid, index, 0.0, 0.0, physicsClientId=c)

    def pull(force: float, steps: int) -> tuple[float, float]:
        for _ in range(steps):
            pybullet.setJointMotorControl2(
                uid, index, pybullet.TORQUE_CONTROL, force=force, physicsClientId=c
            )
            pybullet.stepSimulation(physicsClientId=c)
        q, v = pybullet.getJointState(uid, index, physicsClientId=c)[:2]
        return q + ref, v

    # Pulled with 5 N it runs at (5 N - friction 2 N) / damping 9.5 N s/m: the unit's runners (sim 8, 1.5).
    _, speed = pull(5.0, 250)
    assert speed == pytest.approx((5.0 - 2.0) / 9.5, rel=0.05)
    position, _ = pull(50.0, 400)  # pulled hard: it stops at the end of the slide's range
    assert position == pytest.approx(0.17, abs=1e-3)


# ------------------------------------------------------------------------------------------ the arm


def test_holding_torque_matches_the_link_masses(tmp_path: Path) -> None:
    """At rest at home, shoulder_lift's effort is the moment of the masses beyond it (a hand computation)."""
    cell = EmulatedCell(PICK, _quiet(tmp_path))
    cell.reset(0)
    cell.advance(500)  # 1 s: settled
    world = cell.world
    m, d = world.model, world.data
    _, velocity, effort = cell.joint_state()
    assert np.abs(velocity).max() < 1e-2  # at rest
    for name in ("shoulder_lift", "elbow"):
        jid = m.joint(name).id
        axis, anchor = d.xaxis[jid], d.xanchor[jid]
        body = int(m.jnt_bodyid[jid])
        beyond = [b for b in range(m.nbody) if _descends(m, b, body)]
        moment = sum(
            float(np.dot(axis, np.cross(d.xipos[b] - anchor, m.body_mass[b] * m.opt.gravity))) for b in beyond
        )
        index = world.joint_names.index(name)
        # The servo holds the joint against gravity: its torque cancels gravity's moment about the axis.
        assert abs(moment) > 1.0, (name, moment)
        assert effort[index] == pytest.approx(-moment, rel=0.01), (name, effort[index], moment)


def _descends(model: mujoco.MjModel, body: int, root: int) -> bool:
    while body > 0:
        if body == root:
            return True
        body = int(model.body_parentid[body])
    return False


def _response(cell: EmulatedCell, joint: int, target: np.ndarray, steps: int) -> np.ndarray:
    """Joint ``joint``'s true position at each physics step after ``target`` is submitted at rest."""
    cell.reset(0)
    cell.advance(100)  # settle
    cell.submit(target, 0.04)
    adr = int(cell.world.state_qpos_addresses[joint])
    out = []
    for _ in range(steps):
        cell.advance(1)
        out.append(float(cell.world.data.qpos[adr]))
    return np.array(out)


def test_command_latency_delays_the_joint_response_by_as_much(tmp_path: Path) -> None:
    latency = 0.03
    prompt = EmulatedCell(PICK, _quiet(tmp_path, 0.0, "prompt.yaml"))
    late = EmulatedCell(PICK, _quiet(tmp_path, latency, "late.yaml"))
    home = prompt.joint_state()[0][: len(prompt.world.arm_joint_names)]
    target = home.copy()
    target[0] += 0.2  # shoulder_pan
    a = _response(prompt, 0, target, 150)
    b = _response(late, 0, target, 150)
    start = a[0] - (a[1] - a[0])  # where it was before the step

    def onset(x: np.ndarray) -> int:
        return int(np.argmax(np.abs(x - start) > 1e-3))

    dt = prompt.dt
    assert onset(b) - onset(a) == round(latency / dt), (onset(a), onset(b))
    # The delayed response is the prompt one, later: the same servo and the same Bullet.
    shift = round(latency / dt)
    np.testing.assert_allclose(b[shift:], a[:-shift], atol=1e-4)
    assert a[-1] - start > 0.1  # it really moved


# ------------------------------------------------------------------------------------------ determinism


def _trajectory(cell: EmulatedCell, seed: int) -> np.ndarray:
    cell.reset(seed)
    home = cell.world.joint_state()[0][: len(cell.world.arm_joint_names)]  # true: the noise runs on
    states = []
    for k in range(20):
        cell.submit(home + 0.02 * math.sin(0.3 * k), 0.04 if k < 10 else 0.0)
        cell.advance(25)
        states.append(cell.world.data.qpos.copy())
    return np.array(states)


def test_the_same_seed_gives_the_same_episode(tmp_path: Path) -> None:
    profile = profile_path("bullet")
    first, second = EmulatedCell(PICK, profile), EmulatedCell(PICK, profile)
    a = _trajectory(first, 3)
    _trajectory(second, 5)  # another episode first: a reset starts Bullet afresh
    b = _trajectory(second, 3)
    np.testing.assert_array_equal(a, b)
    c = _trajectory(first, 4)
    assert np.abs(c[0, :3] - a[0, :3]).max() > 1e-3  # another seed puts the cube elsewhere
    with first, second:
        first.reset(3)
        second.reset(3)
        rgb_a, depth_a = first.render()
        rgb_b, depth_b = second.render()
    np.testing.assert_array_equal(rgb_a, rgb_b)  # the sensor noise follows the episode seed too
    np.testing.assert_array_equal(depth_a, depth_b)


# ------------------------------------------------------------------------------------------ the camera


def _marker_profile(tmp_path: Path, dx: float) -> Path:
    """The marker world on the Bullet unit: an ideal pinhole camera, moved ``dx`` m along its optical x."""
    rpy = (0.02, -0.03, 0.015)
    position = np.array([2.0, 0.01, 1.0])
    link = euler.euler2mat(*rpy, "sxyz")  # fixed axes x, y, z: R = Rz Ry Rx, as the profile reads rpy
    right = -link[:, 1]  # optical x is the link's -y
    data = {
        "name": "marker-bullet-test",
        "world": "marker-test-v1",
        "engine": "pybullet",
        "driver": {
            "command_latency_s": 0.0,
            "joint_state_rate_hz": 100.0,
            "joint_state_noise": {"position_std_rad": 0.0, "velocity_std_rad_s": 0.0},
        },
        "camera": {
            "name": "camera",
            "width": 640,
            "height": 480,
            "rate_hz": 15.0,
            "intrinsics": {"fx": 520.0, "fy": 515.0, "cx": 331.0, "cy": 233.0},
            "distortion": {"model": "plumb_bob", "k1": 0.0, "k2": 0.0, "p1": 0.0, "p2": 0.0, "k3": 0.0},
            "pose": {"position": (position + dx * right).tolist(), "rpy": list(rpy)},
        },
    }
    return _write(tmp_path, data, f"marker_{dx}.yaml")


def _red_marker(arm: EmulatedArm) -> tuple[np.ndarray, np.ndarray]:
    """Centroid (px) of the red marker in the unit's frame, and its projection through ``K``."""
    with arm.camera_renderer() as camera:
        rgb, _ = camera.render(arm.world.data)
    mask = (rgb[..., 0] > 100) & (rgb[..., 1] < 40) & (rgb[..., 2] < 40)
    assert mask.sum() > 50, "red marker not visible"
    v, u = np.nonzero(mask)
    pos, quat = arm.world.camera_pose("camera")
    rot = np.empty(9)
    mujoco.mju_quat2Mat(rot, quat)
    p = rot.reshape(3, 3).T @ (arm.world.body_pose("marker_red")[0] - pos)
    k = arm.profile.camera.intrinsics.k()
    return np.array([u.mean(), v.mean()]), (k @ (p / p[2]))[:2]


def test_a_camera_moved_one_centimetre_moves_a_marker_by_fx_dx_over_z(tmp_path: Path) -> None:
    dx = 0.01
    here = EmulatedArm(MARKER_WORLD, load_hardware_profile(_marker_profile(tmp_path, 0.0)))
    moved = EmulatedArm(MARKER_WORLD, load_hardware_profile(_marker_profile(tmp_path, dx)))
    found, projected = _red_marker(here)
    found_moved, _ = _red_marker(moved)
    # Bullet's frame is K's pinhole: the marker lies where K projects it.
    assert np.linalg.norm(found - projected) < 1.0, (found, projected)
    pos, quat = here.world.camera_pose("camera")
    rot = np.empty(9)
    mujoco.mju_quat2Mat(rot, quat)
    z = float((rot.reshape(3, 3).T @ (here.world.body_pose("marker_red")[0] - pos))[2])
    expected = -520.0 * dx / z  # the camera moves right: the marker moves left
    assert found_moved[0] - found[0] == pytest.approx(expected, abs=0.25), (found, found_moved, expected)
    assert abs(found_moved[1] - found[1]) < 0.25


def test_a_render_process_draws_the_same_frames(tmp_path: Path) -> None:
    """The node's renderer (a child process, so pybullet's frame does not stop its physics thread)."""
    arm = EmulatedArm(PICK, load_hardware_profile(_quiet(tmp_path)))
    arm.advance(50)
    with arm.camera_renderer() as here:
        rgb, depth = here.render(arm.world.data)
    with arm.camera_renderer(own_process=True) as there:
        rgb_there, depth_there = there.render(arm.world.data)
    np.testing.assert_array_equal(rgb, rgb_there)
    np.testing.assert_array_equal(depth, depth_there)
    assert depth.max() > 0 and rgb.std() > 10  # a real frame, not an empty one


# ------------------------------------------------------------------------------------------ an episode


@pytest.mark.study  # whole reference episodes: a minute or two each of the Bullet unit
@pytest.mark.parametrize("task", ["pick", "push", "stack", "drawer"])
def test_reference_policy_succeeds_on_the_bullet_unit(task: str) -> None:
    study = task_study(task)
    cell = EmulatedCell(study.world, profile_path("bullet"))
    policy = load_policy(study.family[0].name, study.family[0].params)
    with EpisodeRunner(cell) as runner:
        result = runner.run(policy, 0, camera_rate_hz=1.0, max_steps=300)
    assert result.world_id == study.world
    assert result.success, (result.reason, dict(result.metrics))
