"""The real2sim bench reports what the arm's unmodelled effects make effective, and does not score it."""

import pytest

pytest.importorskip("mujoco")

from r2s2r_sim.arm_effects import JointEffects  # noqa: E402

from r2s2r_capture import bench_real2sim as B  # noqa: E402

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
