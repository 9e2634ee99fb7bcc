"""How tightly the identification pinned each parameter down: standard errors from the fit itself.

The toolbox's :func:`mujoco.sysid.calculate_intervals` gives the classic least-squares covariance
``s^2 (J^T J)^-1`` at the optimum (``s^2`` the residual variance, ``J`` the residual Jacobian).  That
formula assumes independent residuals.  A real arm's residuals are not: what the MuJoCo model lacks
(joint compliance, backlash, velocity-dependent friction, quantised encoders) leaves slow, correlated
tracking errors, and a dense recording then holds far fewer independent samples than rows.  The standard
errors are therefore widened by the square root of the residuals' integrated autocorrelation time
``tau`` (effective sample size ``n / tau``, Sokal's windowed estimator), so
model mismatch, not only sensor noise, shows up as uncertainty.  Noisier data gives a larger ``s^2``
and so larger errors; a model that explains the data leaves small, uncorrelated residuals.  Where the
drivers report efforts, they measure each joint's overall scale, which positions barely see; that
measurement enters as one more residual row (``standard_errors(..., scale_std=...)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.special
from mujoco import sysid

__all__ = [
    "Z95",
    "after_effort_correction",
    "autocorrelation_time",
    "parameter_range",
    "regression_std",
    "standard_errors",
]

_SOKAL_C = 5.0  # window factor of the autocorrelation time estimate (Sokal 1997: 4 to 10)
Z95 = 1.96  # two-sided 95 % interval of a normal error, in standard errors


def autocorrelation_time(err: np.ndarray) -> float:
    """Integrated autocorrelation time of residual series ``err`` (T, channels), mean over channels.

    ``tau = 1 + 2 sum_{k <= M} rho_k`` with Sokal's self-consistent window (the smallest ``M`` with
    ``M >= 5 tau``: longer windows only add noise), so white noise gives about 1 and a slowly varying error
    gives many samples.  Constant channels are
    skipped; 1.0 when there is nothing to measure.
    """
    err = np.asarray(err, dtype=np.float64)
    if err.ndim == 1:
        err = err[:, None]
    n = err.shape[0]
    taus = []
    for x in err.T:
        x = x - x.mean()
        var = float(x @ x)
        if n < 4 or var <= 0 or not math.isfinite(var):
            continue
        spectrum = np.fft.rfft(x, 2 * n)
        rho = np.fft.irfft(spectrum * np.conj(spectrum))[:n] / var
        tau_m = 1.0 + 2.0 * np.cumsum(rho[1:])  # tau summed up to lag m = 1 .. n - 1
        window = np.nonzero(np.arange(1, n) >= _SOKAL_C * tau_m)[0]
        taus.append(float(tau_m[window[0]]) if window.size else float(tau_m[-1]))
    return float(np.clip(np.mean(taus), 1.0, n)) if taus else 1.0


def standard_errors(
    residual_fn: Callable[..., Any],
    fitted: sysid.ParameterDict,
    jacobian: np.ndarray,
    *,
    scale_std: Mapping[str, float] | None = None,
) -> tuple[dict[str, float], float]:
    """Per fitted parameter its standard error (its own units; ``inf`` where the data cannot see it), and tau.

    Args:
        residual_fn: the fit's residual function (``mujoco.sysid.build_residual_fn``).
        fitted: the parameters at the optimum (frozen ones get no error: they were not fitted).
        jacobian: the residual Jacobian at the optimum, one column per non-frozen parameter
            (``opt_result.jac`` of :func:`mujoco.sysid.optimize`).
        scale_std: joint -> relative standard error of the joint's overall scale as the efforts measure
            it (:func:`r2s2r_capture.sysid.effort_correction.effort_correction`).  Positions alone barely see
            scaling all of a joint's ``<joint>/<kind>`` parameters together (a wrist's link inertia is
            small); this adds that information, as one more residual row along the scale direction.
    """
    names = [k for k in fitted.keys() if not fitted[k].frozen]
    residuals, preds, records = residual_fn(fitted.as_vector(), fitted, return_pred_all=True)
    jac = np.asarray(jacobian, dtype=np.float64)
    if jac.ndim != 2 or jac.shape[1] != len(names):
        raise ValueError(f"jacobian has shape {jac.shape}, expected (n_residuals, {len(names)})")
    n = sum(np.asarray(r).size for r in residuals)
    dof = n - jac.shape[1]
    if dof < 1:
        return {k: math.inf for k in names}, 1.0
    tau = autocorrelation_time(_stack_errors(preds, records))
    flat = np.concatenate([np.ravel(r) for r in residuals])
    s2 = float(flat @ flat) / dof
    rows = []
    x = np.array([float(fitted[k].value[0]) for k in names])
    for joint, rel in (scale_std or {}).items():
        d = np.array([x[i] if k.startswith(f"{joint}/") else 0.0 for i, k in enumerate(names)])
        if not (math.isfinite(rel) and rel > 0) or not d.any():
            continue
        # s = w.x with w = d / |d|^2 is the joint's scale (1 at the optimum); its prior variance rel^2,
        # in the units of the tau-widened covariance below.
        rows.append(d / float(d @ d) * math.sqrt(s2 * tau) / rel)
    if rows:
        jac = np.vstack([jac, np.array(rows)])
        residuals = [*residuals, np.zeros(len(rows))]
    _, intervals = sysid.calculate_intervals(residuals, jac)
    z = float(scipy.special.stdtrit(n + len(rows) - jac.shape[1], 0.975))
    se = np.asarray(intervals, dtype=np.float64) / z * math.sqrt(tau)
    return {k: float(v) if math.isfinite(v) else math.inf for k, v in zip(names, se, strict=True)}, tau


def regression_std(X: np.ndarray, residual: np.ndarray) -> np.ndarray:
    """Standard errors of a linear least-squares fit ``y ~ X b`` from its residual, widened by tau."""
    X = np.asarray(X, dtype=np.float64)
    dof = max(X.shape[0] - X.shape[1], 1)
    s2 = float(residual @ residual) / dof * autocorrelation_time(residual)
    return np.sqrt(np.diag(s2 * np.linalg.pinv(X.T @ X)))


def _stack_errors(preds: Sequence[Any], records: Sequence[Any]) -> np.ndarray:
    """Prediction minus record of every rollout, stacked in time (channels as columns)."""
    return np.vstack(
        [np.asarray(p[0].data) - np.asarray(r[0].data) for p, r in zip(preds, records, strict=True)]
    )


def after_effort_correction(
    std: dict[str, float], corrections: dict[str, tuple[float, float]], names: Sequence[str]
) -> dict[str, float]:
    """The errors of ``std`` carried through the effort correction, one for every name in ``names``.

    A joint whose parameters were scaled by ``c`` has its errors scaled by ``c`` (the relative error
    stays).  Joint damping set from the efforts (not fitted) gets the error of the joint's servo kv:
    positions see only their sum, and the split gets no error of its own.  Anything else not fitted is
    ``inf`` (unknown).
    """
    out = {}
    for name in names:
        joint, _, kind = name.rpartition("/")
        scale = corrections.get(joint, (1.0, 0.0))[0]
        if name in std:
            out[name] = std[name] * scale
        elif kind == "damping" and f"{joint}/kv" in std:
            out[name] = std[f"{joint}/kv"] * scale
        else:
            out[name] = math.inf
    return out


def parameter_range(value: float, std: float, bounds: tuple[float, float]) -> tuple[float, float]:
    """``value +- Z95 std`` clipped to ``bounds``; the whole of ``bounds`` when ``std`` is not finite."""
    lo, hi = bounds
    if not math.isfinite(std):
        return float(lo), float(hi)
    return float(max(lo, value - Z95 * std)), float(min(hi, value + Z95 * std))
