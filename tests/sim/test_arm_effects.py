"""The emulated arm's unmodelled effects: friction, backlash, torque limits, encoder counts."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from r2s2r_sim.hardware.arm_effects import JointEffects
from r2s2r_sim.hardware.emulated_arm import EmulatedArm
from r2s2r_sim.hardware.profile import HardwareProfileError, load_hardware_profile
from r2s2r_sim.paths import config_dir

PROFILES = config_dir() / "emulated_hardware"


def _profile(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "profile.yaml"
    path.write_text((PROFILES / "ideal_profile.yaml").read_text() + "\n" + text)
    return path


def _arm(tmp_path: Path, text: str) -> EmulatedArm:
    return EmulatedArm("tabletop-pick-v1", load_hardware_profile(_profile(tmp_path, text)), seed=1)


def test_stribeck_curve() -> None:
    j = JointEffects(static_friction=1.0, coulomb_friction=0.6, stribeck_velocity=0.05)
    assert j.dry_friction(0.0) == pytest.approx(1.0)
    assert j.dry_friction(0.05) == pytest.approx(0.6 + 0.4 * math.exp(-1))
    assert j.dry_friction(-0.05) == pytest.approx(j.dry_friction(0.05))
    assert j.dry_friction(2.0) == pytest.approx(0.6)


def test_encoder_counts(tmp_path: Path) -> None:
    arm = _arm(tmp_path, "arm_effects: {encoder_counts_per_rev: 4096}")
    arm.submit_arm(arm.joint_state()[0][:6] + 0.1234567)
    arm.advance(200)
    pos = arm.joint_state()[0]
    step = 2 * math.pi / 4096
    hinge = pos[:6]
    np.testing.assert_allclose(hinge / step, np.rint(hinge / step), atol=1e-9)


def _settle_error(arm: EmulatedArm, delta: float) -> float:
    q0 = arm.world.data.qpos[arm.world.state_qpos_addresses[0]]
    cmd = arm.joint_state()[0][:6]
    cmd[0] = q0 + delta
    arm.submit_arm(cmd)
    arm.advance(1500)
    return float(arm.world.data.qpos[arm.world.state_qpos_addresses[0]] - q0)


def test_backlash_leaves_the_play_untransmitted(tmp_path: Path) -> None:
    play = 0.02
    rigid = _settle_error(_arm(tmp_path, ""), 0.005)
    loose = _settle_error(
        _arm(tmp_path, f"arm_effects: {{joints: {{shoulder_pan: {{backlash: {play}}}}}}}"), 0.005
    )
    assert rigid == pytest.approx(0.005, abs=5e-4)
    assert abs(loose) < 1e-3  # a command inside half the play moves nothing
    far = _settle_error(
        _arm(tmp_path, f"arm_effects: {{joints: {{shoulder_pan: {{backlash: {play}}}}}}}"), 0.1
    )
    assert far == pytest.approx(0.1 - play / 2, abs=2e-3)


def test_static_friction_stops_the_servo_short(tmp_path: Path) -> None:
    rigid = _settle_error(_arm(tmp_path, ""), 0.05)
    sticky = _settle_error(
        _arm(
            tmp_path, "arm_effects: {joints: {shoulder_pan: {static_friction: 30.0, coulomb_friction: 20.0}}}"
        ),
        0.05,
    )
    # the servo (kp ~ 900 N m/rad) cannot push through 30 N m of breakaway friction within ~0.03 rad
    assert rigid == pytest.approx(0.05, abs=2e-3)
    assert 0.05 - sticky > 0.015


def test_torque_limit_saturates_the_actuator(tmp_path: Path) -> None:
    arm = _arm(tmp_path, "arm_effects: {joints: {shoulder_pan: {torque_limit: 5.0}}}")
    cmd = arm.joint_state()[0][:6]
    cmd[0] += 1.0
    arm.submit_arm(cmd)
    peak = 0.0
    for _ in range(300):
        arm.advance(1)
        peak = max(peak, abs(float(arm.world.data.actuator_force[0])))
    assert peak == pytest.approx(5.0, rel=1e-6)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("arm_effects: {joints: {elbw: {backlash: 0.01}}}", r"arm_effects\.joints\.elbw: no joint 'elbw'"),
        (
            "arm_effects: {joints: {elbow: {static_friction: -1}}}",
            r"arm_effects\.joints\.elbow\.static_friction",
        ),
        (
            "arm_effects: {joints: {elbow: {static_friction: 0.1, coulomb_friction: 0.2}}}",
            r"arm_effects\.joints\.elbow: coulomb_friction must not exceed static_friction",
        ),
        ("arm_effects: {encoder_counts_per_rev: 3}", r"arm_effects\.encoder_counts_per_rev"),
        ("arm_effects: {gearing: 1}", r"arm_effects: unknown key"),
    ],
)
def test_bad_arm_effects_are_refused_naming_the_field(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(HardwareProfileError, match=match):
        _arm(tmp_path, text)


def test_rigid_profile_trajectory_is_unchanged(tmp_path: Path) -> None:
    def run(arm: EmulatedArm) -> np.ndarray:
        cmd = arm.joint_state()[0][:6] + 0.2
        arm.submit_arm(cmd)
        arm.advance(400)
        return arm.world.data.qpos.copy()

    plain = run(
        EmulatedArm("tabletop-pick-v1", load_hardware_profile(PROFILES / "ideal_profile.yaml"), seed=1)
    )
    empty = run(_arm(tmp_path, "arm_effects:\n"))
    np.testing.assert_array_equal(plain, empty)


def test_driver_rate_and_finer_physics_step(tmp_path: Path) -> None:
    arm = _arm(tmp_path, "arm_effects: {physics_timestep_s: 0.0005, control_rate_hz: 250}")
    assert arm.dt == pytest.approx(0.0005)
    act = 0  # the first arm servo
    before = float(arm.world.data.ctrl[act])
    arm.advance(1)  # off the control tick at 0: the next tick is at 4 ms
    cmd = arm.joint_state()[0][:6]
    cmd[0] += 0.1
    arm.submit_arm(cmd)
    latency = arm.profile.driver.command_latency_s
    changed_at = None
    for _ in range(int((latency + 0.01) / arm.dt) + 1):
        arm.advance(1)
        if changed_at is None and float(arm.world.data.ctrl[act]) != before:
            changed_at = arm.clock - arm.dt  # released before the step that just ran
    assert changed_at is not None
    assert changed_at >= latency - 1e-9
    assert changed_at / 0.004 == pytest.approx(round(changed_at / 0.004), abs=1e-6)  # on a 250 Hz tick
    assert changed_at - latency < 0.004 + 1e-9


def _deflection_under_load(arm: EmulatedArm, torque: float) -> float:
    """Steady link offset of shoulder_pan under an external torque, holding its command."""
    qadr = arm.world.state_qpos_addresses[0]
    dof = int(arm.world.model.jnt_dofadr[arm.world.model.joint("shoulder_pan").id])
    q0 = float(arm.world.data.qpos[qadr])
    arm.submit_arm(arm.joint_state()[0][:6] * 0 + arm.world.data.qpos[arm.world.state_qpos_addresses[:6]])
    arm.advance(200)
    q0 = float(arm.world.data.qpos[qadr])
    arm.world.data.qfrc_applied[dof] = torque
    arm.advance(3000)
    return float(arm.world.data.qpos[qadr]) - q0


def test_compliance_is_a_spring_in_series_with_the_servo(tmp_path: Path) -> None:
    torque, k = 20.0, 2000.0
    rigid_arm = _arm(tmp_path, "")
    kp = float(rigid_arm.world.model.actuator_gainprm[0, 0])
    rigid = _deflection_under_load(rigid_arm, torque)
    soft = _deflection_under_load(
        _arm(tmp_path, f"arm_effects: {{joints: {{shoulder_pan: {{stiffness: {k}, motor_inertia: 0.05}}}}}}"),
        torque,
    )
    assert rigid == pytest.approx(torque / kp, rel=0.05)
    assert soft == pytest.approx(torque / kp + torque / k, rel=0.05)


@pytest.mark.parametrize("seed", range(4))
def test_random_realistic_profiles_load_and_stay_stable(tmp_path: Path, seed: int) -> None:
    from r2s2r_capture.bench.random_profile import random_profile

    path = random_profile(seed, tmp_path / f"p{seed}.yaml", realistic=True)
    profile = load_hardware_profile(path)
    assert not profile.arm.rigid and not profile.sensors.ideal and profile.contacts.objects
    arm = EmulatedArm("tabletop-pick-v1", profile, seed=seed)
    cmd = arm.joint_state()[0][:6] + 0.2
    arm.submit_arm(cmd)
    arm.advance(int(0.6 / arm.dt))
    assert np.isfinite(arm.world.data.qpos).all()
    assert np.abs(arm.joint_state()[0][:6] - cmd).max() < 0.05
