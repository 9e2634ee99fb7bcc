"""`r2s2r profile new` on worlds made by `r2s2r world new` for the conformance arms: the template lists every
joint, servo (tendon-driven ones included) and contact geom at the world's values, loads, runs the emulated
hardware like the sim, and an edited value shows in the emulated arm's model."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml
from conftest import SHARED_ROBOTS
from r2s2r_sim.cli.main import main as r2s2r
from r2s2r_sim.hardware.emulated_arm import EmulatedArm
from r2s2r_sim.hardware.profile import HardwareProfileError, load_hardware_profile
from r2s2r_sim.hardware.profile_elements import model_servo
from r2s2r_sim.world.geom_keys import geom_address
from r2s2r_sim.world.sim_world import SimWorld
from test_bring_your_own_arm import ARMS

pytestmark = pytest.mark.skipif(
    not SHARED_ROBOTS.is_dir(), reason=f"conformance robots not found at {SHARED_ROBOTS}"
)


@pytest.fixture(scope="module", params=sorted(ARMS))
def template(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path, Path]:
    name = request.param
    if name.endswith("xacro") and importlib.util.find_spec("xacro") is None:
        pytest.skip("xacro is not installed (pip install xacro)")
    robot, flags, _, _ = ARMS[name]
    out = tmp_path_factory.mktemp(name) / "world"
    assert r2s2r(["world", "new", "--robot", str(SHARED_ROBOTS / robot), "--out", str(out), *flags]) == 0
    assert r2s2r(["profile", "new", "--world", str(out)]) == 0
    return name, out, out / "hardware_profile.yaml"


def test_template_lists_every_joint_servo_and_contact_geom(template: tuple[str, Path, Path]) -> None:
    name, world_dir, path = template
    profile = load_hardware_profile(path)
    model = SimWorld(world_dir).model
    phys = profile.physics
    hinges = [
        model.joint(j).name for j in range(model.njnt) if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE
    ]
    assert sorted(phys.joints) == sorted(hinges)
    for j in hinges:
        dof = model.joint(j).dofadr[0]
        dyn = phys.joints[j]
        assert (dyn.damping, dyn.armature, dyn.frictionloss) == pytest.approx(
            (model.dof_damping[dof], model.dof_armature[dof], model.dof_frictionloss[dof]), rel=1e-8
        )
    servos = {model.actuator(a).name: model_servo(model, a) for a in range(model.nu)}
    assert sorted(phys.servos) == sorted(servos) and all(s is not None for s in servos.values())
    for act, form in servos.items():
        assert (phys.servos[act].kp, phys.servos[act].kv) == pytest.approx((form.kp, form.kv), rel=1e-8)
    contact = {
        geom_address(model, g)
        for g in range(model.ngeom)
        if model.geom_contype[g] or model.geom_conaffinity[g]
    }
    assert set(phys.geom_friction) == contact
    gripper = ARMS[name][3]
    if gripper is not None:
        assert gripper[0] in phys.servos
    if name == "ufactory_xarm7":  # the tendon-driven gripper and the unnamed finger geoms
        assert model.actuator_trntype[model.actuator("gripper").id] == mujoco.mjtTrn.mjTRN_TENDON
        assert phys.servos["gripper"].kp == 100 and phys.servos["gripper"].kv == 10
        assert "body:left_finger/0" in phys.geom_friction and "body:right_finger/0" in phys.geom_friction
    # Each reset places the task object per seed: a pose in the template would be overridden.
    task = SimWorld(world_dir).config.task
    assert task is not None and profile.objects[task.object_body].pose is None
    assert all(o.pose is not None for n, o in profile.objects.items() if n != task.object_body)
    cam = profile.camera
    assert (cam.intrinsics.cx, cam.intrinsics.cy) == (319.5, 239.5)
    assert cam.distortion.d().tolist() == [0.0] * 5


def _drive(world: SimWorld, advance, n: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    home = world.joint_state()[0][: len(world.arm_joint_names)]
    target = np.clip(home + 0.15, world.arm_limits[:, 0], world.arm_limits[:, 1])
    out = []
    for k in range(n):
        assert world.set_arm_command(home + (target - home) * min(1.0, (k + 1) / (n / 2))).accepted
        if k == n // 4 and world.gripper_command_range is not None:
            assert world.set_gripper_command(world.gripper_command_range[1]).accepted
        advance()
        out.append(world.data.qpos.copy())
    return np.array(out)


def test_unchanged_template_runs_the_emulated_hardware_like_the_sim(template: tuple[str, Path, Path]) -> None:
    _, world_dir, path = template
    arm = EmulatedArm(world_dir, load_hardware_profile(path), seed=3)
    sim = SimWorld(world_dir)
    sim.reset(3)
    n = int(0.6 / sim.timestep)
    emulated = _drive(arm.world, arm.advance, n)
    simulated = _drive(sim, sim.step, n)
    assert np.ptp(simulated, axis=0).max() > 0.1  # it moved
    np.testing.assert_allclose(emulated, simulated, atol=1e-6)
    assert arm.world.model.nu == sim.model.nu


def test_edited_values_show_in_the_emulated_arm(template: tuple[str, Path, Path], tmp_path: Path) -> None:
    name, world_dir, path = template
    doc = yaml.safe_load(path.read_text())
    phys = doc["physics"]
    base = SimWorld(world_dir).model
    edited_servos = list(phys["servos"])[:1] + ([ARMS[name][3][0]] if ARMS[name][3] else [])
    for act in edited_servos:
        phys["servos"][act] = {"kp": phys["servos"][act]["kp"] * 1.5, "kv": phys["servos"][act]["kv"] * 0.5}
    joint = next(iter(phys["joints"]))
    phys["joints"][joint] = {"damping": 3.25, "armature": 0.0125, "frictionloss": 0.375}
    robot_geoms = [
        k
        for k in phys["geom_friction"]
        if k.startswith("body:") or k not in ("floor", "table_top", "cube_geom") and not k.startswith("bin_")
    ]
    pad = robot_geoms[-1]
    phys["geom_friction"][pad] = [0.55, 0.004, 0.0002]
    doc["contacts"] = {"geoms": {pad: {"solref": [0.02, 1.0], "solimp": [0.8, 0.95, 0.002, 0.5, 2.0]}}}
    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump(doc))
    model = EmulatedArm(world_dir, load_hardware_profile(edited)).world.model
    for act in edited_servos:
        a = model.actuator(act).id
        old, new = model_servo(base, a), model_servo(model, a)
        assert old is not None and new is not None
        assert (new.kp, new.kv) == pytest.approx((old.kp * 1.5, old.kv * 0.5), rel=1e-8)
        assert new.scale == pytest.approx(old.scale, rel=1e-12)  # the command units are the world's
    dof = model.joint(joint).dofadr[0]
    assert (model.dof_damping[dof], model.dof_armature[dof], model.dof_frictionloss[dof]) == (
        3.25,
        0.0125,
        0.375,
    )
    (g,) = [g for g in range(model.ngeom) if geom_address(model, g) == pad]
    np.testing.assert_allclose(model.geom_friction[g], [0.55, 0.004, 0.0002])
    np.testing.assert_allclose(model.geom_solref[g], [0.02, 1.0])
    assert not np.allclose(base.geom_friction[g], [0.55, 0.004, 0.0002])  # it was another value
    doc["physics"]["geom_friction"][f"body:{pad.split('/')[0].removeprefix('body:')}/9"] = [
        1.0,
        0.005,
        0.0001,
    ]
    edited.write_text(yaml.safe_dump(doc))
    with pytest.raises(HardwareProfileError, match=r"edited\.yaml: physics\.geom_friction\..*/9: no geom"):
        EmulatedArm(world_dir, load_hardware_profile(edited))
