"""Efforts correcting a position-only fit afterwards: the alternative to fitting them as a residual term.

:func:`r2s2r_capture.sysid.identify.identify` takes this path with ``SysidConfig(effort_in_fit=False)``; the
model side is the fit's own rollout (:func:`r2s2r_capture.sysid.rollout.simulate_recording`).
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np
from mujoco import sysid

from r2s2r_capture.errors import IdentificationError
from r2s2r_capture.sysid.recording import JointRecording
from r2s2r_capture.sysid.rollout import RecordingProblem, simulate_recording
from r2s2r_capture.sysid.uncertainty import regression_std

__all__ = ["apply_effort_correction", "effort_correction"]

# Kinds that scale together along the direction joint positions cannot see (small link inertia).
_SCALED_KINDS = ("kp", "kv", "damping", "armature", "frictionloss")


def _smooth(x: np.ndarray, n: int) -> np.ndarray:
    kernel = np.ones(n) / n
    return np.column_stack([np.convolve(x[:, c], kernel, mode="valid") for c in range(x.shape[1])])


def _gravcomp(model: mujoco.MjModel, problem: RecordingProblem, q: np.ndarray) -> np.ndarray:
    """Gravity compensation the actuators carry (``actuatorgravcomp`` joints) at each row of ``q``."""
    data = mujoco.MjData(model)
    data.qpos[:] = problem.base_qpos
    qadr = [model.jnt_qposadr[j] for j in problem.jids]
    dadr = [model.jnt_dofadr[j] for j in problem.jids]
    on = model.jnt_actgravcomp[problem.jids].astype(float)
    out = np.empty_like(q)
    for i in range(q.shape[0]):
        data.qpos[qadr] = q[i]
        mujoco.mj_forward(model, data)
        out[i] = data.qfrc_gravcomp[dadr] * on
    return out


def effort_correction(
    model: mujoco.MjModel, rec: JointRecording, *, delay_s: float, smoothing_s: float = 0.03
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per joint ``(c, beta, std of c)``: recorded effort ~= ``c`` x modelled effort + ``beta`` x velocity.

    The model is driven by the recorded commands (delayed by ``delay_s``) from the recorded start; its
    actuator effort and the recorded one, both less gravity compensation (which does not scale), are
    smoothed over ``smoothing_s`` (a command applied one physics step early or late puts ``kp * dq``
    spikes into an effort) and fitted by least squares.  Two things positions alone cannot see show up
    here: scaling a joint's kp, kv, damping, armature and friction loss together by ``c`` leaves its
    motion unchanged when its link inertia is small but scales its effort; and moving viscous friction
    ``beta`` from the servo's kv into passive joint damping leaves the motion unchanged but not the
    effort, which carries kv and not the damping.  Joints with no effort signal get ``nan``.  The standard
    error of ``c`` is the regression's, widened for correlated residuals as in
    :func:`r2s2r_capture.sysid.uncertainty.regression_std`.

    Raises:
        IdentificationError: the recording has no efforts.
    """
    if rec.effort is None:
        raise IdentificationError("the recording has no efforts (JointState.effort) to compare")
    dt = float(model.opt.timestep)
    steps = np.rint(rec.t / dt).astype(int)
    keep = np.concatenate([[True], np.diff(steps) > 0])
    sim = simulate_recording(
        model, steps[keep] * dt, rec.q_cmd[keep], rec.joint_names, delay_s=delay_s, q0=rec.q[0]
    )
    assert sim.effort is not None
    problem = RecordingProblem(model, rec)  # the fit's own mapping
    n = max(1, int(round(smoothing_s / dt)))
    measured = _smooth(rec.effort[keep] - _gravcomp(model, problem, rec.q[keep]), n)
    modelled = _smooth(sim.effort - _gravcomp(model, problem, sim.q), n)
    velocity = _smooth(sim.qd, n)
    c = np.full(len(rec.joint_names), np.nan)
    beta = np.full(len(rec.joint_names), np.nan)
    c_std = np.full(len(rec.joint_names), np.nan)
    for k in range(len(rec.joint_names)):
        X = np.column_stack([modelled[:, k], velocity[:, k]])
        if np.linalg.matrix_rank(X) < 2:
            continue
        (c[k], beta[k]), *_ = np.linalg.lstsq(X, measured[:, k], rcond=None)
        c_std[k] = regression_std(X, measured[:, k] - X @ [c[k], beta[k]])[0]
    return c, beta, c_std


def apply_effort_correction(
    fitted: sysid.ParameterDict, joints: Sequence[str], c: np.ndarray, beta: np.ndarray
) -> dict[str, tuple[float, float]]:
    """Scale each joint's parameters by ``c`` and move ``beta`` from kv into damping (in place)."""
    applied: dict[str, tuple[float, float]] = {}
    keys = set(fitted.keys())
    for joint, cj, bj in zip(joints, c, beta, strict=True):
        names = {kind: f"{joint}/{kind}" for kind in _SCALED_KINDS}
        if not np.isfinite(cj) or not np.isfinite(bj) or cj <= 0 or f"{joint}/kp" not in keys:
            continue
        if names["kv"] not in keys or names["damping"] not in keys:
            bj = 0.0  # nowhere to move it
        for kind, name in names.items():
            if name not in keys:
                continue
            p = fitted[name]
            value = p.value * cj
            if kind == "kv":
                value = value - bj
            elif kind == "damping":
                value = value + bj
            p.value = np.clip(value, p.min_value, p.max_value)
        applied[joint] = (float(cj), float(bj))
    return applied
