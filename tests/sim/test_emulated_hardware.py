"""Core of the emulated hardware (stand-in for an arm driver + RealSense): profile, latency, noise, camera."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import cv2
import mujoco
import numpy as np
import pytest
import yaml
from r2s2r_sim.hardware.emulated_arm import EmulatedArm
from r2s2r_sim.hardware.emulated_camera import render_geometry
from r2s2r_sim.hardware.profile import HardwareProfileError, load_hardware_profile
from r2s2r_sim.render.renderer import camera_intrinsics
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

REPO = Path(__file__).resolve().parents[2]
DEFAULT = REPO / "config" / "emulated_hardware" / "ideal_profile.yaml"
MARKER_WORLD = REPO / "tests" / "worlds" / "marker"


def _write(tmp_path: Path, data: dict[str, Any], name: str = "profile.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _default_data() -> dict[str, Any]:
    return yaml.safe_load(DEFAULT.read_text())


@pytest.fixture(scope="module")
def base() -> SimWorld:
    return SimWorld(world_path("tabletop-pick-v1"))


@pytest.fixture(scope="module")
def arm() -> EmulatedArm:
    return EmulatedArm("tabletop-pick-v1", load_hardware_profile(DEFAULT), seed=3)


# ------------------------------------------------------------------------------------------ profile


def test_default_profile_loads() -> None:
    p = load_hardware_profile(DEFAULT)
    assert p.world == "tabletop-pick-v1"
    assert p.camera.distortion.d().any()
    assert len(p.sha256) == 64


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda d: d.pop("driver"), r"profile\.yaml: driver: required field is missing"),
        (lambda d: d.update(extra=1), r"profile\.yaml: : unknown key\(s\) \['extra'\]"),
        (lambda d: d["driver"].update(command_latency_s=-0.1), r"driver\.command_latency_s: must be in"),
        (
            lambda d: d["driver"]["joint_state_noise"].update(position_std_rad="x"),
            r"driver\.joint_state_noise\.position_std_rad: must be a finite number",
        ),
        (lambda d: d["camera"]["intrinsics"].update(fx=0), r"camera\.intrinsics\.fx: must be in \(0"),
        (lambda d: d["camera"]["intrinsics"].update(cx=900), r"camera\.intrinsics\.cx: must be in"),
        (
            lambda d: d["camera"]["distortion"].update(model="equidistant"),
            r"camera\.distortion\.model: must be 'plumb_bob'",
        ),
        (lambda d: d["camera"]["pose"].update(rpy=[0, 1]), r"camera\.pose\.rpy: must be a list of 3"),
        (
            lambda d: d["physics"]["geom_friction"].update(cube_geom=[1, -1, 0]),
            r"physics\.geom_friction\.cube_geom\[1\]: must be in",
        ),
        (lambda d: d["physics"]["servos"].update(elbow={"kp": 10}), r"physics\.servos\.elbow\.kv: required"),
        (
            lambda d: d["lights"]["key_light"].update(direction=[0, 0, 0]),
            r"lights\.key_light\.direction: must not be the zero vector",
        ),
    ],
)
def test_profile_errors_name_file_and_field(tmp_path: Path, edit: Any, match: str) -> None:
    data = _default_data()
    edit(data)
    with pytest.raises(HardwareProfileError, match=match):
        load_hardware_profile(_write(tmp_path, data))


def test_profile_file_errors(tmp_path: Path) -> None:
    with pytest.raises(HardwareProfileError, match=r"nope\.yaml: hardware profile file not found"):
        load_hardware_profile(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\n")
    with pytest.raises(HardwareProfileError, match=r"bad\.yaml: not valid YAML"):
        load_hardware_profile(bad)
    big = tmp_path / "big.yaml"
    big.write_text("#" * (2 << 20))
    with pytest.raises(HardwareProfileError, match=r"big\.yaml: file is \d+ bytes"):
        load_hardware_profile(big)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            lambda d: d["physics"]["body_masses_kg"].update(cueb=1.0),
            r"physics\.body_masses_kg\.cueb: no body 'cueb' in world",
        ),
        (
            lambda d: d["physics"]["joints"].update(elbw={"damping": 1.0}),
            r"physics\.joints\.elbw: no joint 'elbw' in world 'tabletop-pick-v1' \(joints: \[.*'elbow'",
        ),
        (
            lambda d: d["physics"]["servos"].update(elbw={"kp": 1.0, "kv": 0.0}),
            r"physics\.servos\.elbw: no position actuator 'elbw'",
        ),
        (lambda d: d["objects"].update(vase={"pose": None}), r"objects\.vase: no body 'vase'"),
        (lambda d: d["lights"].update(sun={"diffuse": [1, 1, 1]}), r"lights\.sun: no light 'sun'"),
        (lambda d: d["camera"].update(name="wrist"), r"camera\.name: no camera 'wrist' in world"),
        (lambda d: d.update(world="kitchen-v1"), r"world: the profile is for 'kitchen-v1'"),
    ],
)
def test_profile_names_checked_against_world(tmp_path: Path, edit: Any, match: str) -> None:
    data = _default_data()
    edit(data)
    profile = load_hardware_profile(_write(tmp_path, data))
    with pytest.raises(HardwareProfileError, match=match):
        EmulatedArm("tabletop-pick-v1", profile)


def test_profile_addresses_a_servo_by_the_joint_or_tendon_it_drives(tmp_path: Path) -> None:
    """A profile may name the tendon the gripper's actuator drives, as world.yaml and the flags may."""
    data = _default_data()
    gains = data["physics"]["servos"].pop("gripper")
    data["physics"]["servos"]["gripper_tendon"] = gains
    m = EmulatedArm("tabletop-pick-v1", load_hardware_profile(_write(tmp_path, data))).world.model
    a = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_ACTUATOR, "gripper")
    assert m.actuator_gainprm[a, 0] == pytest.approx(gains["kp"])
    assert m.actuator_biasprm[a, 2] == pytest.approx(-gains["kv"])
    data["physics"]["servos"]["#40"] = data["physics"]["servos"].pop("gripper_tendon")
    with pytest.raises(HardwareProfileError, match=r"physics\.servos\.#40: no position actuator '#40'"):
        EmulatedArm("tabletop-pick-v1", load_hardware_profile(_write(tmp_path, data)))


# ------------------------------------------------------------------------------- latency and noise


def test_arm_command_applied_after_latency(arm: EmulatedArm) -> None:
    arm.reset(0)
    latency = arm.profile.driver.command_latency_s
    before = arm.world.data.ctrl[:6].copy()
    target = before + 0.1
    assert arm.submit_arm(target).accepted
    steps = round(latency / arm.dt)
    arm.advance(steps - 1)
    np.testing.assert_allclose(arm.world.data.ctrl[:6], before)
    arm.advance(2)
    np.testing.assert_allclose(arm.world.data.ctrl[:6], target)
    arm.advance(1000)  # 2 s: the servos reach the target
    pos, _, _ = arm.world.joint_state()
    np.testing.assert_allclose(pos[:6], target, atol=0.02)
    assert not arm.submit_arm([0.0] * 5).accepted
    assert not arm.submit_arm([math.nan] * 6).accepted
    assert not arm.submit_gripper(math.inf).accepted
    assert arm.submit_gripper(0.0).accepted
    arm.reset(0)
    assert arm.pending_commands == 0


def test_joint_state_noise_is_seeded() -> None:
    profile = load_hardware_profile(DEFAULT)
    a = EmulatedArm("tabletop-pick-v1", profile, seed=7)
    b = EmulatedArm("tabletop-pick-v1", profile, seed=7)
    c = EmulatedArm("tabletop-pick-v1", profile, seed=8)
    true_pos, true_vel, _ = a.world.joint_state()
    pa = np.array([a.joint_state()[0] for _ in range(2000)])
    pb = np.array([b.joint_state()[0] for _ in range(2000)])
    pc = np.array([c.joint_state()[0] for _ in range(2000)])
    np.testing.assert_array_equal(pa, pb)
    assert not np.array_equal(pa, pc)
    std = profile.driver.position_noise_std_rad
    assert np.allclose((pa - true_pos).std(axis=0), std, rtol=0.1)
    assert np.allclose((pa - true_pos).mean(axis=0), 0.0, atol=4 * std / math.sqrt(2000))


# --------------------------------------------------------------------------- profile changes the model


def test_default_profile_differs_from_sim_world_in_every_group(arm: EmulatedArm, base: SimWorld) -> None:
    m, b = arm.world.model, base.model

    def ids(obj: mujoco.mjtObj, name: str) -> int:
        i = mujoco.mj_name2id(b, obj, name)
        assert i >= 0 and mujoco.mj_name2id(m, obj, name) == i, name
        return int(i)

    body, geom, joint, act = (
        mujoco.mjtObj.mjOBJ_BODY,
        mujoco.mjtObj.mjOBJ_GEOM,
        mujoco.mjtObj.mjOBJ_JOINT,
        mujoco.mjtObj.mjOBJ_ACTUATOR,
    )
    p = arm.profile
    # physics: masses, friction, damping / armature / friction loss, servo gains
    cube = ids(body, "cube")
    assert m.body_mass[cube] == pytest.approx(0.095) and b.body_mass[cube] == pytest.approx(0.08)
    for name, value in p.physics.geom_friction.items():
        g = ids(geom, name)
        np.testing.assert_allclose(m.geom_friction[g], value)
        assert not np.allclose(m.geom_friction[g], b.geom_friction[g]), name
    for name, dyn in p.physics.joints.items():
        dof = int(m.jnt_dofadr[ids(joint, name)])
        assert m.dof_damping[dof] == pytest.approx(dyn.damping) != b.dof_damping[dof]
        assert m.dof_armature[dof] == pytest.approx(dyn.armature) != b.dof_armature[dof]
        assert m.dof_frictionloss[dof] == pytest.approx(dyn.frictionloss) != b.dof_frictionloss[dof]
    for name, gains in p.physics.servos.items():
        a = ids(act, name)
        assert m.actuator_gainprm[a, 0] == pytest.approx(gains.kp) != b.actuator_gainprm[a, 0]
        assert m.actuator_biasprm[a, 1] == pytest.approx(-gains.kp)
        assert m.actuator_biasprm[a, 2] == pytest.approx(-gains.kv) != b.actuator_biasprm[a, 2]
    # driver: latency and noise (the sim has neither)
    assert p.driver.command_latency_s > 0
    assert p.driver.position_noise_std_rad > 0 and p.driver.velocity_noise_std_rad_s > 0
    # camera: intrinsics with distortion, pose
    k_sim = camera_intrinsics(b, "realsense", 640, 480)
    assert not np.allclose(p.camera.intrinsics.k(), k_sim, atol=1.0)
    assert np.all(p.camera.distortion.d() != 0)
    pos_e, quat_e = arm.world.camera_pose("camera")
    pos_s, quat_s = base.camera_pose("camera")
    np.testing.assert_allclose(pos_e, p.camera.pose.position, atol=1e-9)
    assert np.linalg.norm(pos_e - pos_s) > 0.01 and abs(abs(np.dot(quat_e, quat_s)) - 1) > 1e-5
    # objects: sizes and poses
    g = ids(geom, "cube_geom")
    assert m.geom_size[g, 0] == pytest.approx(0.0205) != b.geom_size[g, 0]
    bin_id = ids(body, "bin")
    assert not np.allclose(m.body_pos[bin_id], b.body_pos[bin_id])
    assert not np.allclose(m.body_quat[bin_id], b.body_quat[bin_id])
    assert arm.world.body_pose("cube")[0][2] == pytest.approx(0.7705)
    # lighting
    for name in p.lights:
        li = ids(mujoco.mjtObj.mjOBJ_LIGHT, name)
        assert not np.allclose(m.light_diffuse[li], b.light_diffuse[li])
        assert not np.allclose(m.light_pos[li], b.light_pos[li])
    # the profile's world is a separate instance: the base world is untouched
    assert base.world_hash == arm.base_world_hash != arm.world.world_hash


def test_reset_places_cube_like_the_sim_for_the_seed(arm: EmulatedArm, base: SimWorld) -> None:
    base.reset(5)
    arm.reset(5)
    np.testing.assert_allclose(arm.world.body_pose("cube")[0][:2], base.body_pose("cube")[0][:2])


def test_judge_is_a_task_verdict(arm: EmulatedArm) -> None:
    arm.reset(1)
    verdict = arm.judge()
    assert not verdict.success and verdict.reason == "not_achieved"
    assert set(verdict.metrics) >= {"object_to_target_m", "gripper_released"}
    assert '"judge": "emulated (stand-in for a human judge' in arm.judge_json()


# ---------------------------------------------------------------------------------------- distortion


def _marker_profile(tmp_path: Path) -> Path:
    # Strong barrel distortion and an off-centre principal point, so a mistake shows by many pixels.
    data = {
        "name": "marker-test",
        "world": "marker-test-v1",
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
            "distortion": {
                "model": "plumb_bob",
                "k1": -0.28,
                "k2": 0.09,
                "p1": 0.0015,
                "p2": -0.001,
                "k3": 0.0,
            },
            "pose": {"position": [2.0, 0.01, 1.0], "rpy": [0.02, -0.03, 0.015]},
        },
    }
    return _write(tmp_path, data, "marker_profile.yaml")


def test_render_geometry_covers_the_distorted_image(tmp_path: Path) -> None:
    cam = load_hardware_profile(_marker_profile(tmp_path)).camera
    width, height, f = render_geometry(cam)
    assert f == 520.0 and width > 640 and height > 480


def test_distorted_image_matches_project_points(tmp_path: Path) -> None:
    profile = load_hardware_profile(_marker_profile(tmp_path))
    arm = EmulatedArm(MARKER_WORLD, profile)
    cam = profile.camera
    k, d = cam.intrinsics.k(), cam.distortion.d()
    opt_pos, opt_quat = arm.world.camera_pose("camera")
    rot = np.empty(9)
    mujoco.mju_quat2Mat(rot, opt_quat)
    world_to_opt = rot.reshape(3, 3).T
    with arm.camera_renderer() as renderer:
        rgb, depth_mm = renderer.render(arm.world.data)
    assert rgb.shape == (480, 640, 3) and depth_mm.shape == (480, 640) and depth_mm.dtype == np.uint16
    colours = {"marker_red": 0, "marker_green": 1, "marker_blue": 2}
    shifts, errors = [], []
    for body, channel in colours.items():
        centre, _ = arm.world.body_pose(body)
        p_opt = world_to_opt @ (centre - opt_pos)
        expected, _ = cv2.projectPoints(p_opt.reshape(1, 1, 3), np.zeros(3), np.zeros(3), k, d)
        expected = expected.reshape(2)
        pinhole = (k @ (p_opt / p_opt[2]))[:2]
        others = [c for c in range(3) if c != channel]
        mask = (rgb[..., channel] > 150) & np.all(rgb[..., others] < 80, axis=-1)
        assert mask.sum() > 50, f"{body}: marker not visible"
        v, u = np.nonzero(mask)
        found = np.array([u.mean(), v.mean()])
        errors.append(float(np.linalg.norm(found - expected)))
        assert errors[-1] < 1.0, f"{body}: found {found}, projectPoints {expected}"
        shifts.append(float(np.linalg.norm(pinhole - expected)))
        # Depth is aligned and distorted the same way: the marker's z-depth at its centre pixel.
        z_mm = depth_mm[int(round(expected[1])), int(round(expected[0]))]
        assert abs(z_mm / 1000.0 - (p_opt[2] - 0.03)) < 0.01, f"{body}: depth {z_mm} mm, z {p_opt[2]}"
    # The distortion is really applied: off-centre markers are pixels away from their pinhole projection.
    assert max(shifts) > 5.0, shifts
    print(f"distortion: centroid vs projectPoints error (px) {errors}, pinhole shift (px) {shifts}")
