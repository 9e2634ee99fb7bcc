"""The real2sim bench reports what the arm's unmodelled effects make effective, and does not score it."""

import pytest

pytest.importorskip("mujoco")

from r2s2r_capture.bench import real2sim as B  # noqa: E402
from r2s2r_sim.hardware.arm_effects import JointEffects  # noqa: E402

TRUTHS = {"kp": 400.0, "kv": 40.0, "damping": 2.0, "viscous": 42.0, "armature": 0.1, "frictionloss": 0.3}


def test_rigid_joint_has_no_effective_values() -> None:
    assert B._effective_truths(TRUTHS, None) == {}
    assert B._effective_truths(TRUTHS, JointEffects(torque_limit=50.0)) == {}


def test_series_spring_and_friction_references() -> None:
    eff = B._effective_truths(
        TRUTHS,
        JointEffects(
            stiffness=1200.0,
            motor_inertia=0.05,
            viscous_friction=0.5,
            static_friction=0.2,
            coulomb_friction=0.1,
        ),
    )
    assert eff["kp"] == pytest.approx(400.0 * 1200.0 / 1600.0)  # springs in series
    assert eff["armature"] == pytest.approx(0.15)
    assert eff["viscous"] == pytest.approx(42.5) and eff["damping"] == pytest.approx(2.5)
    assert eff["frictionloss"] == pytest.approx(0.4)
    assert "kv" in eff


def test_backlash_makes_every_parameter_effective() -> None:
    eff = B._effective_truths(TRUTHS, JointEffects(backlash=0.002))
    assert set(eff) == set(TRUTHS) and eff == TRUTHS


def test_effective_parameters_are_not_scored() -> None:
    report = {
        "camera_position_mm": 1.0,
        "camera_rotation_deg": 0.1,
        "objects": {
            "cube": {"position_mm": 1.0, "size_mm": 1.0},
            "bin": {"position_mm": 1.0, "size_mm": 1.0},
        },
        "tracking_heldout_rmse_rad": {"reduction_x": 10.0},
        "sysid": {
            "a/kp": {"truth": 1.0, "fitted": 1.05, "error_pct": 5.0, "effective": False},
            "a/frictionloss": {"truth": 1.0, "fitted": 2.0, "error_pct": 100.0, "effective": True},
        },
    }
    assert B._passes(report)["sysid_all_params"]
    report["sysid"]["a/frictionloss"]["effective"] = False
    assert not B._passes(report)["sysid_all_params"]


@pytest.mark.parametrize(
    "effects",
    [
        "",  # commands applied on the world's 2 ms step: 20 ms
        "arm_effects: {physics_timestep_s: 0.0005}",  # 18.5 ms
        "arm_effects: {physics_timestep_s: 0.0005, control_rate_hz: 1000}",  # on the 1 ms tick: 19 ms
    ],
)
def test_command_delay_truth_is_the_delay_the_emulated_arm_shows(tmp_path, effects: str) -> None:
    # The delay is scored against what the stand-in does with a command given on its grid: wait out the
    # latency, then apply it on the next step or driver tick.
    from r2s2r_sim.hardware.emulated_arm import EmulatedArm
    from r2s2r_sim.hardware.profile import load_hardware_profile
    from r2s2r_sim.paths import config_dir
    from r2s2r_sim.world.sim_world import SimWorld
    from r2s2r_sim.worlds import world_path

    path = tmp_path / "profile.yaml"
    path.write_text((config_dir() / "emulated_hardware" / "ideal_profile.yaml").read_text() + "\n" + effects)
    profile = load_hardware_profile(path)
    arm = EmulatedArm("tabletop-pick-v1", profile, seed=1)
    latency = 0.0181  # between the steps of every case
    arm.world.command_delay_s = latency
    world_dt = float(SimWorld(world_path("tabletop-pick-v1")).model.opt.timestep)
    expected = B.delay_as_applied(latency, world_dt, profile.arm)
    assert expected > latency + 1e-4  # rounded up, so the case tests something

    before = float(arm.world.data.ctrl[0])
    given = arm.clock
    cmd = arm.joint_state()[0][:6]
    cmd[0] += 0.1
    arm.submit_arm(cmd)
    changed_at = None
    for _ in range(int((latency + 0.01) / arm.dt) + 1):
        arm.advance(1)
        if float(arm.world.data.ctrl[0]) != before:
            changed_at = arm.clock - arm.dt  # applied before the step that just ran
            break
    assert changed_at is not None, "the command never reached the servo"
    assert changed_at - given == pytest.approx(expected, abs=1e-9)


def test_a_parameter_zero_in_truth_is_exact_only_at_zero() -> None:
    assert B._pct(0.0, 0.0) == 0.0 and B._pct(5e-7, 0.0) == 0.0  # the fit left it where it is
    assert B._pct(0.01, 0.0) == float("inf")  # no relative error to give it
    assert B._pct(1.05, 1.0) == pytest.approx(5.0)
