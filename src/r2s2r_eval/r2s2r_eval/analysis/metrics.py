"""Sim-versus-real metrics: pure, vectorized numpy functions with documented bounds.

Per policy: :func:`success_rate` and :func:`wilson_interval`. Across policies (does sim predict real?):
:func:`pearson`, :func:`mmrv`, :func:`spearman` and :func:`kendall`, registered by name in
:data:`CROSS_POLICY_METRICS`; each takes keyword-only ``sim=`` and ``real=`` success rates of shape
``(..., N)`` (N policies on the last axis, any leading batch axes) and returns shape ``(...)``; a plain
float for 1-D input. :func:`bootstrap_intervals` gives percentile intervals for them by resampling
episodes, and :func:`trials_to_separate` sizes an experiment.

Undefined values (a correlation of a constant vector, the rate of zero trials) are ``nan``, never an
exception and never a made-up number; invalid input (rates outside [0, 1], fewer than 2 policies,
shapes that differ) raises ``ValueError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import special, stats

__all__ = [
    "CROSS_POLICY_METRICS",
    "BootstrapInterval",
    "CrossPolicyMetric",
    "bootstrap_intervals",
    "episodes_from_counts",
    "kendall",
    "mmrv",
    "pearson",
    "spearman",
    "success_rate",
    "trials_to_separate",
    "wilson_interval",
]

ArrayLike = npt.ArrayLike
CrossPolicyMetric = Callable[..., "np.ndarray | float"]
"""``metric(*, sim, real) -> value``: rates of shape ``(..., N)`` in, shape ``(...)`` out."""


# --------------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------------
def _out(value: np.ndarray) -> np.ndarray | float:
    """A 0-d result as a Python float, anything else unchanged."""
    return float(value) if np.ndim(value) == 0 else value


def _confidence_z(confidence: float) -> float:
    """Two-sided standard normal quantile for ``confidence`` in (0, 1)."""
    if not (isinstance(confidence, int | float) and 0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be in (0, 1): got {confidence!r}")
    return float(special.ndtri(0.5 + confidence / 2.0))


def _counts(successes: ArrayLike, trials: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Broadcast and check success and trial counts: whole numbers with 0 <= successes <= trials."""
    k, n = np.broadcast_arrays(np.asarray(successes, dtype=float), np.asarray(trials, dtype=float))
    if not (np.all(np.isfinite(k)) and np.all(np.isfinite(n))):
        raise ValueError("successes and trials must be finite")
    if np.any(k != np.round(k)) or np.any(n != np.round(n)):
        raise ValueError("successes and trials must be whole numbers")
    if np.any(n < 0) or np.any(k < 0) or np.any(k > n):
        raise ValueError("need 0 <= successes <= trials")
    return k, n


def _rates(sim: ArrayLike, real: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Check paired success rates: same shape (..., N), N >= 2, finite, within [0, 1]."""
    s, r = np.asarray(sim, dtype=float), np.asarray(real, dtype=float)
    if s.shape != r.shape:
        raise ValueError(f"sim and real must have the same shape: got {s.shape} and {r.shape}")
    if s.ndim == 0 or s.shape[-1] < 2:
        raise ValueError(f"need at least 2 policies on the last axis: got shape {s.shape}")
    for name, x in (("sim", s), ("real", r)):
        if not np.all((x >= 0.0) & (x <= 1.0)):  # also rejects nan
            raise ValueError(f"{name} success rates must be in [0, 1]")
    return s, r


# --------------------------------------------------------------------------------------------------
# Per policy
# --------------------------------------------------------------------------------------------------
def success_rate(successes: ArrayLike, trials: ArrayLike) -> np.ndarray | float:
    """Success rate ``successes / trials``, element-wise.

    Range [0, 1]; ``nan`` where ``trials == 0`` (no episodes, no rate).

    Raises:
        ValueError: counts that are not whole numbers or not ``0 <= successes <= trials``.
    """
    k, n = _counts(successes, trials)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _out(np.where(n > 0, k / np.where(n > 0, n, 1.0), np.nan))


def wilson_interval(
    successes: ArrayLike, trials: ArrayLike, *, confidence: float = 0.95
) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Wilson score interval for a binomial success probability, element-wise.

    With ``p = k/n`` and ``z`` the two-sided normal quantile of ``confidence``::

        centre = (p + z²/(2n)) / (1 + z²/n)
        half   = z / (1 + z²/n) · sqrt(p(1−p)/n + z²/(4n²))

    Bounds: ``0 <= low <= k/n <= high <= 1``. Edge cases: ``k == 0`` gives ``low == 0`` exactly and
    ``k == n`` gives ``high == 1`` exactly (the interval never collapses to a point, unlike the Wald
    interval); ``n == 0`` gives ``(0, 1)``, the whole range, since no episode says anything.

    Returns:
        ``(low, high)``, each broadcast to the shape of the inputs (floats for scalar input).

    Raises:
        ValueError: bad counts, or ``confidence`` outside (0, 1).
    """
    z = _confidence_z(confidence)
    k, n = _counts(successes, trials)
    safe_n = np.where(n > 0, n, 1.0)
    p = k / safe_n
    denom = 1.0 + z * z / safe_n
    centre = (p + z * z / (2.0 * safe_n)) / denom
    half = z / denom * np.sqrt(p * (1.0 - p) / safe_n + z * z / (4.0 * safe_n * safe_n))
    low = np.clip(centre - half, 0.0, 1.0)
    high = np.clip(centre + half, 0.0, 1.0)
    low = np.where((k == 0) | (n == 0), 0.0, low)
    high = np.where((k == n) | (n == 0), 1.0, high)
    return _out(low), _out(high)


def episodes_from_counts(successes: int, trials: int) -> np.ndarray:
    """The Bernoulli episodes behind an aggregated count: ``successes`` ones then zeros (int8).

    Episode order is irrelevant to every metric here, so this is exactly the data the count summarises.

    Raises:
        ValueError: bad counts.
    """
    k, n = _counts(successes, trials)
    if k.ndim:
        raise ValueError("episodes_from_counts takes one policy's counts (scalars)")
    out = np.zeros(int(n), dtype=np.int8)
    out[: int(k)] = 1
    return out


# --------------------------------------------------------------------------------------------------
# Across policies
# --------------------------------------------------------------------------------------------------
def pearson(*, sim: ArrayLike, real: ArrayLike) -> np.ndarray | float:
    """Pearson correlation between sim and real success rates across policies (last axis).

    Range [−1, 1]. Symmetric in its arguments. If either vector is constant the correlation is
    undefined and the result is ``nan`` (SimplerEnv's code would return 0 or 1 here; we do not
    invent a value). Batched over leading axes.
    """
    s, r = _rates(sim, real)
    ds = s - s.mean(axis=-1, keepdims=True)
    dr = r - r.mean(axis=-1, keepdims=True)
    ss, rr = np.sum(ds * ds, axis=-1), np.sum(dr * dr, axis=-1)
    # A constant vector has exactly zero spread up to rounding of its mean.
    tol = (64 * np.finfo(float).eps) ** 2 * s.shape[-1]
    defined = (ss > tol) & (rr > tol)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.sum(ds * dr, axis=-1) / np.sqrt(np.where(defined, ss * rr, 1.0))
    return _out(np.where(defined, np.clip(value, -1.0, 1.0), np.nan))


def mmrv(
    *, sim: ArrayLike, real: ArrayLike, comparison: Literal["less", "greater"] = "less"
) -> np.ndarray | float:
    """Mean Maximum Rank Violation of SIMPLER (Li et al. 2024, arXiv:2405.05941), across policies.

    With ``R`` the real and ``S`` the sim success rates of N policies::

        RankViolation(i, j) = |R_i − R_j| · 1[(S_i < S_j) ≠ (R_i < R_j)]
        MMRV = (1/N) · Σ_i max_j RankViolation(i, j)

    This follows the paper's equation as written above (strict ``<`` on both sides); the paper text
    could not be consulted here, so the equation is taken as specified. The magnitude is the REAL
    success gap: keep ``sim`` and ``real`` apart (they are keyword-only for that reason).

    Ties: a pair tied on one side only counts as a violation when the strict indicator differs.
    With ``comparison="less"`` (the equation), ``S_i == S_j`` and ``R_i < R_j`` charge policy ``i``
    (the one worse in real) with ``R_j − R_i``; ``S_i == S_j`` and ``R_i > R_j`` charge nothing to
    ``i`` (it is charged to ``j`` instead). Ties in real add nothing (the magnitude is 0).
    ``comparison="greater"`` uses ``>`` on both sides, as the authors' reference code does
    (simpler-env/SimplerEnv ``simpler_env/utils/metrics.py::mean_maximum_rank_violation``), which
    charges the real-BETTER policy of a sim tie instead. The two agree whenever sim has no ties
    among policies whose real rates differ; otherwise they can differ (e.g. sim ``[.5, .5, .5]``,
    real ``[.1, .2, .9]``: 0.5 with ``less``, 0.3 with ``greater``). Use ``greater`` to reproduce
    numbers computed with SimplerEnv's code.

    Range [0, max(R) − min(R)] ⊆ [0, 1]; 0 for a perfect ranking. Constant real: 0. Constant sim
    (and ``less``): ``mean(max(R) − R)``, every policy but the real-best is violated by its gap to
    it. Not symmetric in its arguments. Batched over leading axes.

    Raises:
        ValueError: bad rates, or an unknown ``comparison``.
    """
    s, r = _rates(sim, real)
    if comparison == "less":
        sim_order = s[..., :, None] < s[..., None, :]
        real_order = r[..., :, None] < r[..., None, :]
    elif comparison == "greater":
        sim_order = s[..., :, None] > s[..., None, :]
        real_order = r[..., :, None] > r[..., None, :]
    else:
        raise ValueError(f"comparison must be 'less' or 'greater': got {comparison!r}")
    violation = np.abs(r[..., :, None] - r[..., None, :]) * (sim_order != real_order)
    return _out(violation.max(axis=-1).mean(axis=-1))


def spearman(*, sim: ArrayLike, real: ArrayLike) -> np.ndarray | float:
    """Spearman rank correlation across policies: Pearson of average ranks (``scipy.stats.rankdata``).

    Equals ``scipy.stats.spearmanr`` (ties get average ranks). Range [−1, 1]; ``nan`` if either
    vector is constant. Symmetric. Batched over leading axes.
    """
    s, r = _rates(sim, real)
    n = s.shape[-1]
    # Ranks lie in [1, N]: rescale to [0, 1] so that the rate validation in pearson() passes.
    scale = 1.0 / (n - 1)
    rs = (stats.rankdata(s, axis=-1) - 1.0) * scale
    rr = (stats.rankdata(r, axis=-1) - 1.0) * scale
    return pearson(sim=rs, real=rr)


def kendall(*, sim: ArrayLike, real: ArrayLike) -> np.ndarray | float:
    """Kendall's tau-b across policies (ties corrected), as ``scipy.stats.kendalltau``'s default.

    ``tau_b = Σ_{i<j} sgn(S_i−S_j)·sgn(R_i−R_j) / sqrt(Σ_{i<j} sgn(S_i−S_j)² · Σ_{i<j} sgn(R_i−R_j)²)``.
    Range [−1, 1]; ``nan`` if either vector is constant. Symmetric. Batched over leading axes
    (``scipy.stats.kendalltau`` is not, hence the pairwise form; tests check they agree).
    """
    s, r = _rates(sim, real)
    iu = np.triu_indices(s.shape[-1], k=1)
    ds = np.sign(s[..., :, None] - s[..., None, :])[..., iu[0], iu[1]]
    dr = np.sign(r[..., :, None] - r[..., None, :])[..., iu[0], iu[1]]
    num = np.sum(ds * dr, axis=-1)
    den = np.sum(ds * ds, axis=-1) * np.sum(dr * dr, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = num / np.sqrt(np.where(den > 0, den, 1.0))
    return _out(np.where(den > 0, np.clip(value, -1.0, 1.0), np.nan))


CROSS_POLICY_METRICS: Mapping[str, CrossPolicyMetric] = {
    "pearson": pearson,
    "mmrv": mmrv,
    "spearman": spearman,
    "kendall": kendall,
}
"""Cross-policy metrics by name, each ``metric(*, sim, real)`` and batched over leading axes."""

METRIC_BOUNDS: Mapping[str, tuple[float, float]] = {
    "pearson": (-1.0, 1.0),
    "mmrv": (0.0, 1.0),
    "spearman": (-1.0, 1.0),
    "kendall": (-1.0, 1.0),
}
"""Documented range of each entry of :data:`CROSS_POLICY_METRICS` (``nan`` aside)."""


# --------------------------------------------------------------------------------------------------
# Bootstrap
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class BootstrapInterval:
    """A percentile bootstrap interval.

    Attributes:
        low: lower percentile (``nan`` if the metric was undefined in every resample).
        high: upper percentile.
        undefined_fraction: share of resamples where the metric was ``nan`` (e.g. Pearson when a
            resample made one side constant); the percentiles are over the defined resamples only,
            so a large fraction means the interval is not to be trusted.
    """

    low: float
    high: float
    undefined_fraction: float


def _check_episodes(name: str, episodes: Sequence[ArrayLike]) -> list[np.ndarray]:
    out = []
    for i, ep in enumerate(episodes):
        a = np.asarray(ep, dtype=float).ravel()
        if a.size == 0:
            raise ValueError(f"{name}[{i}] has no episodes: cannot resample zero trials")
        if not np.all((a == 0.0) | (a == 1.0)):
            raise ValueError(f"{name}[{i}] must hold Bernoulli outcomes (0 or 1)")
        out.append(a)
    return out


def bootstrap_intervals(
    *,
    sim_episodes: Sequence[ArrayLike],
    real_episodes: Sequence[ArrayLike],
    rng: np.random.Generator,
    resamples: int = 2000,
    confidence: float = 0.95,
    metrics: Mapping[str, CrossPolicyMetric] = CROSS_POLICY_METRICS,
) -> dict[str, BootstrapInterval]:
    """Percentile bootstrap intervals of cross-policy metrics, resampling EPISODES.

    In each of ``resamples`` rounds, every policy's sim episodes and, independently, its real
    episodes are resampled with replacement (same count as observed); the success rates of the
    resample are fed to each metric (all metrics see the same resamples). The interval is the
    ``(1 − confidence)/2`` and ``(1 + confidence)/2`` percentiles of the defined values. From
    aggregated counts, build the episodes with :func:`episodes_from_counts`.

    Args:
        sim_episodes: per policy, its sim outcomes (0/1), any length >= 1.
        real_episodes: per policy (same order), its real outcomes.
        rng: the only source of randomness; same generator state, same intervals.
        resamples: number of bootstrap rounds (>= 1).
        confidence: interval coverage in (0, 1).
        metrics: name -> batched metric; defaults to :data:`CROSS_POLICY_METRICS`.

    Raises:
        ValueError: mismatched policy counts, fewer than 2 policies, a policy with no episodes,
            non-Bernoulli outcomes, ``resamples < 1`` or bad ``confidence``.
    """
    _confidence_z(confidence)
    if not isinstance(resamples, int | np.integer) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer: got {resamples!r}")
    if len(sim_episodes) != len(real_episodes):
        raise ValueError(
            f"sim_episodes and real_episodes must list the same policies: got {len(sim_episodes)} "
            f"and {len(real_episodes)}"
        )
    if len(sim_episodes) < 2:
        raise ValueError(f"need at least 2 policies: got {len(sim_episodes)}")
    sims = _check_episodes("sim_episodes", sim_episodes)
    reals = _check_episodes("real_episodes", real_episodes)

    def resample(side: list[np.ndarray]) -> np.ndarray:
        rates = np.empty((resamples, len(side)))
        for p, ep in enumerate(side):
            idx = rng.integers(0, ep.size, size=(resamples, ep.size))
            rates[:, p] = ep[idx].mean(axis=1)
        return rates

    sim_rates, real_rates = resample(sims), resample(reals)
    q = 100.0 * np.array([(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0])
    out: dict[str, BootstrapInterval] = {}
    for name, metric in metrics.items():
        values = np.asarray(metric(sim=sim_rates, real=real_rates), dtype=float)
        finite = values[np.isfinite(values)]
        low, high = np.percentile(finite, q) if finite.size else (math.nan, math.nan)
        out[name] = BootstrapInterval(
            low=float(low), high=float(high), undefined_fraction=1.0 - finite.size / values.size
        )
    return out


# --------------------------------------------------------------------------------------------------
# Experiment size
# --------------------------------------------------------------------------------------------------
def trials_to_separate(
    p1: ArrayLike, p2: ArrayLike, *, alpha: float = 0.05, power: float = 0.8
) -> np.ndarray | float:
    """Trials per policy for a two-sided two-proportion z-test to tell success rates p1 and p2 apart.

    Standard normal-approximation sample size with pooled variance under the null (Fleiss,
    *Statistical Methods for Rates and Proportions*, no continuity correction)::

        p̄ = (p1 + p2) / 2
        n = ⌈ (z_{1−α/2} · sqrt(2 p̄ (1−p̄)) + z_{power} · sqrt(p1(1−p1) + p2(1−p2)))² / (p1 − p2)² ⌉

    per policy (both policies get ``n`` trials). E.g. 0.5 vs 0.6 at α = 0.05, power 0.8: 388.

    Range: a whole number >= 1 (returned as float); ``inf`` where ``p1 == p2`` (no finite
    experiment separates equal rates). Element-wise with broadcasting.

    Raises:
        ValueError: rates outside [0, 1], or ``alpha`` / ``power`` outside (0, 1).
    """
    a, b = np.broadcast_arrays(np.asarray(p1, dtype=float), np.asarray(p2, dtype=float))
    if not (np.all((a >= 0) & (a <= 1)) and np.all((b >= 0) & (b <= 1))):
        raise ValueError("success rates p1 and p2 must be in [0, 1]")
    for name, v in (("alpha", alpha), ("power", power)):
        if not (isinstance(v, int | float) and 0.0 < v < 1.0):
            raise ValueError(f"{name} must be in (0, 1): got {v!r}")
    z_a = float(special.ndtri(1.0 - alpha / 2.0))
    z_b = float(special.ndtri(power))
    pbar = (a + b) / 2.0
    num = (z_a * np.sqrt(2.0 * pbar * (1.0 - pbar)) + z_b * np.sqrt(a * (1 - a) + b * (1 - b))) ** 2
    diff2 = (a - b) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        # Round away float noise before the ceiling (e.g. 387.9999999 must not become 388 + 1).
        n = np.maximum(np.ceil(np.round(num / np.where(diff2 > 0, diff2, 1.0), 9)), 1.0)
    return _out(np.where(diff2 > 0, n, np.inf))
