"""The identification's standard errors: larger on noisier data, widened for correlated residuals."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import mujoco
import numpy as np
import pytest
import scipy.signal
from mujoco import sysid as mjsysid
from r2s2r_capture.sysid import identify as S
from r2s2r_capture.sysid.recording import ExcitationConfig, JointRecording, excitation_trajectory
from r2s2r_capture.sysid.rollout import simulate_recording
from r2s2r_capture.sysid.uncertainty import after_effort_correction, autocorrelation_time

ARM = Path(__file__).resolve().parents[2] / "src/r2s2r_sim/r2s2r_sim/worlds/tabletop_pick/robot/arm6.xml"
ALL = ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3")
FIT = ("elbow",)
CONFIG = S.SysidConfig(joints=FIT, kinds=("armature", "kp"), fit_delay=False, max_iters=8, n_threads=1)


def _truth_model() -> mujoco.MjModel:
    """The 'real' arm: the elbow servo's kp x0.8 and its armature x1.5."""
    spec = mujoco.MjSpec.from_file(str(ARM))
    nominal = spec.compile()
    spec.joint("elbow").armature = 1.5 * nominal.dof_armature[nominal.jnt_dofadr[nominal.joint("elbow").id]]
    mjsysid.apply_pgain(spec, "elbow", 0.8 * nominal.actuator("elbow").gainprm[0])
    return spec.compile()


@pytest.fixture(scope="module")
def clean() -> JointRecording:
    cfg = ExcitationConfig(duration_s=3.0, base_freq_hz=0.5, max_velocity=1.5, ramp_s=0.3)
    t, q_cmd = excitation_trajectory(mujoco.MjModel.from_xml_path(str(ARM)), ALL, cfg, seed=3)
    return simulate_recording(_truth_model(), t, q_cmd, ALL)


def _noisy(rec: JointRecording, sigma: float, seed: int) -> JointRecording:
    """The recording with white encoder noise of ``sigma`` rad (velocity noise ``sigma`` / 10 ms)."""
    rng = np.random.default_rng(seed)
    q = rec.q + rng.normal(0.0, sigma, rec.q.shape)
    qd = rec.qd + rng.normal(0.0, sigma / 0.01, rec.qd.shape)
    return JointRecording(rec.t, rec.q_cmd, q, qd, rec.joint_names, None)


def test_noisier_data_gives_larger_standard_errors(clean: JointRecording) -> None:
    quiet = S.identify(ARM, _noisy(clean, 1e-4, seed=0), CONFIG)
    loud = S.identify(ARM, _noisy(clean, 2e-3, seed=0), CONFIG)
    print("\n" + quiet.summary() + "\n" + loud.summary())
    for name in ("elbow/armature", "elbow/kp"):
        assert 0 < quiet.std[name] < math.inf, name
        # 20 x the noise: errors about 20 x larger (asserted with a wide margin, the fits differ too)
        assert loud.std[name] > 5 * quiet.std[name], (name, quiet.std[name], loud.std[name])
        # the truth is within a few standard errors of the quiet fit (the error means something)
        truth = _truth_model()
        true = {
            "elbow/armature": truth.dof_armature[truth.jnt_dofadr[truth.joint("elbow").id]],
            "elbow/kp": truth.actuator("elbow").gainprm[0],
        }[name]
        assert abs(quiet.fitted[name] - true) < 5 * quiet.std[name] + 0.02 * true, name


def test_correlated_residuals_count_as_fewer_samples() -> None:
    rng = np.random.default_rng(0)
    white = rng.normal(size=(20000, 2))
    assert autocorrelation_time(white) == pytest.approx(1.0, abs=0.3)
    # AR(1) with rho = 0.9: tau = (1 + rho) / (1 - rho) = 19
    ar = scipy.signal.lfilter([1.0], [1.0, -0.9], rng.normal(size=200_000))
    assert autocorrelation_time(ar) == pytest.approx(19.0, rel=0.15)
    assert autocorrelation_time(np.zeros((100, 1))) == 1.0


def test_errors_follow_the_effort_correction() -> None:
    std = {"elbow/kp": 2.0, "elbow/kv": 0.5, "command_delay_s": 1e-3}
    names = ["elbow/kp", "elbow/kv", "elbow/damping", "wrist_1/damping", "command_delay_s"]
    out = after_effort_correction(std, {"elbow": (1.5, 0.2)}, names)
    assert out == {
        "elbow/kp": 3.0,
        "elbow/kv": 0.75,
        "elbow/damping": 0.75,
        "wrist_1/damping": math.inf,
        "command_delay_s": 1e-3,
    }


def test_efforts_narrow_what_positions_cannot_see(clean: JointRecording) -> None:
    # A wrist's motion barely changes when all its parameters scale together; its efforts do.
    cfg = S.SysidConfig(
        joints=("wrist_1",), kinds=("armature", "kp"), fit_delay=False, max_iters=8, n_threads=1
    )
    noisy = _noisy(clean, 1e-4, seed=1)
    rng = np.random.default_rng(2)
    assert clean.effort is not None
    with_effort = dataclasses.replace(noisy, effort=clean.effort + rng.normal(0.0, 0.05, clean.effort.shape))
    positions_only = S.identify(ARM, noisy, cfg)
    both = S.identify(ARM, with_effort, cfg)
    print("\n" + positions_only.summary() + "\n" + both.summary())
    # The efforts pin the armature that the servo hides from positions, and cost kp nothing.
    assert both.std["wrist_1/armature"] < 0.5 * positions_only.std["wrist_1/armature"]
    assert both.std["wrist_1/kp"] < 1.1 * positions_only.std["wrist_1/kp"]
    # Corrected afterwards instead, they narrow the scale that all the joint's parameters share.
    corrected = S.identify(ARM, with_effort, dataclasses.replace(cfg, effort_in_fit=False))
    assert corrected.std["wrist_1/kp"] < 0.5 * positions_only.std["wrist_1/kp"]
