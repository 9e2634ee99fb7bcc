"""Where do policies fail, and does sim predict where they fail on hardware? Pure numpy functions.

Inputs are design matrices: ``X`` of shape ``(n, d)`` holding each episode's realised variation
parameters (named by ``names``, e.g. ``physics.friction_scale``) and ``y`` of shape ``(n,)`` holding
its success (bool or 0/1). Everything here is deterministic (no randomness) and numpy-only.

* :func:`binned_success`: success against one parameter in quantile bins, with Wilson intervals.
* :func:`~r2s2r_eval.analysis.failure_tree.fit_tree`: a shallow CART classification tree (Gini impurity,
  axis-aligned splits, depth ≤ 3) on the parameters; :func:`~r2s2r_eval.analysis.failure_tree.failure_rules`
  prints its failure leaves as rules such as
  ``fails when physics.friction_scale < 0.62 (n=12, success 1/12 = 0.08)``.
* :func:`knn_proba`: a k-nearest-neighbour success predictor (features scaled to [0, 1]).
* :func:`failure_agreement`: a model trained on SIM episodes predicts each REAL episode's outcome
  from its realised parameters (per-episode accuracy), and the failure regions of a sim-trained
  and a real-trained model are compared by IoU over the union of episodes.
* :func:`next_trials`: parameter points worth running next on hardware, ranked by sim-real
  disagreement and sim uncertainty.

Missing values: a parameter that is ``nan`` in any of the episodes given (e.g. ``clutter.3.x`` when
an episode had fewer clutter objects) is not used by the tree or the neighbour search
(:func:`usable_features` says which are); :func:`binned_success` ignores the ``nan`` episodes of
its one parameter and reports how many it dropped.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from r2s2r_eval.analysis import metrics
from r2s2r_eval.analysis.failure_tree import design_matrix as _xy
from r2s2r_eval.analysis.failure_tree import (
    fit_tree,
    predict_proba,
)

__all__ = [
    "Agreement",
    "BinnedSuccess",
    "Candidate",
    "PairedAgreement",
    "balanced_accuracy",
    "binary_entropy",
    "cohen_kappa",
    "binned_success",
    "failure_agreement",
    "knn_proba",
    "next_trials",
    "paired_agreement",
    "quantile_edges",
    "region_iou",
    "usable_features",
]


# --------------------------------------------------------------------------------------------------
# Per axis: binned success rate
# --------------------------------------------------------------------------------------------------
def quantile_edges(values: npt.ArrayLike, n_bins: int) -> np.ndarray:
    """Bin edges at the quantiles of the finite ``values``: at most ``n_bins`` bins, duplicates merged.

    Returns ``n_edges`` increasing edges (first = min, last = max); a constant or single value gives
    one bin ``[v, v]``; no finite value gives an empty array.

    Raises:
        ValueError: ``n_bins < 1``.
    """
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1: got {n_bins}")
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        return np.empty(0)
    edges = np.unique(np.quantile(v, np.linspace(0.0, 1.0, n_bins + 1)))
    return edges if edges.size > 1 else np.array([edges[0], edges[0]])


@dataclass(frozen=True, kw_only=True)
class BinnedSuccess:
    """Success rate per bin of one parameter.

    Attributes:
        edges: bin edges, shape ``(B + 1,)``; bin ``b`` is ``[edges[b], edges[b+1])``, the last bin
            closed on the right.
        trials: episodes per bin, shape ``(B,)`` (0 where a bin is empty).
        successes: successes per bin.
        rate: ``successes / trials``; ``nan`` for an empty bin.
        low: Wilson lower bound (0 for an empty bin).
        high: Wilson upper bound (1 for an empty bin).
        dropped: episodes left out because the parameter was ``nan`` or outside the edges.
    """

    edges: np.ndarray
    trials: np.ndarray
    successes: np.ndarray
    rate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    dropped: int

    @property
    def centres(self) -> np.ndarray:
        """Bin midpoints, shape ``(B,)``."""
        return 0.5 * (self.edges[:-1] + self.edges[1:])


def binned_success(
    values: npt.ArrayLike, success: npt.ArrayLike, *, edges: npt.ArrayLike, confidence: float = 0.95
) -> BinnedSuccess:
    """Success rate of the episodes in each bin of ``values``, with Wilson intervals.

    Use the same ``edges`` (e.g. :func:`quantile_edges` of the pooled sim and real values) for sim
    and for real so that their curves compare bin by bin.

    Raises:
        ValueError: shapes that differ, fewer than 2 edges, edges not non-decreasing.
    """
    v = np.asarray(values, dtype=float).ravel()
    s = np.asarray(success).ravel()
    if v.shape != s.shape:
        raise ValueError(f"values and success must have the same length: got {v.size} and {s.size}")
    e = np.asarray(edges, dtype=float)
    if e.ndim != 1 or e.size < 2 or np.any(np.diff(e) < 0):
        raise ValueError("edges must be >= 2 non-decreasing values")
    inside = np.isfinite(v) & (v >= e[0]) & (v <= e[-1])
    idx = np.clip(np.searchsorted(e, v[inside], side="right") - 1, 0, e.size - 2)
    n = np.bincount(idx, minlength=e.size - 1).astype(int)
    k = np.bincount(idx, weights=s[inside].astype(float), minlength=e.size - 1).round().astype(int)
    low, high = metrics.wilson_interval(k, n, confidence=confidence)
    return BinnedSuccess(
        edges=e,
        trials=n,
        successes=k,
        rate=np.asarray(metrics.success_rate(k, n), dtype=float).reshape(n.shape),
        low=np.asarray(low, dtype=float).reshape(n.shape),
        high=np.asarray(high, dtype=float).reshape(n.shape),
        dropped=int(v.size - inside.sum()),
    )


# --------------------------------------------------------------------------------------------------
# Nearest neighbours
# --------------------------------------------------------------------------------------------------
def usable_features(*matrices: npt.ArrayLike) -> np.ndarray:
    """Columns finite in every row of every matrix and not constant over them all (bool mask)."""
    stacked = np.vstack([np.asarray(m, dtype=float) for m in matrices])
    if stacked.shape[0] == 0:
        return np.zeros(stacked.shape[1], dtype=bool)
    finite = np.all(np.isfinite(stacked), axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: not usable anyway
        spread = np.nanmax(stacked, axis=0) - np.nanmin(stacked, axis=0)
    return finite & (spread > 0)


def knn_proba(
    train_X: npt.ArrayLike,
    train_y: npt.ArrayLike,
    X: npt.ArrayLike,
    *,
    k: int = 5,
    scale: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Success probability of each row of ``X``: the success share of its ``k`` nearest training rows.

    Euclidean distance after scaling every column to [0, 1] by ``scale = (low, high)`` (default:
    the training range; a constant column scales by 1). Distance ties are broken by training order.
    ``k`` larger than the training set uses all of it. Range [0, 1].

    Raises:
        ValueError: bad shapes, non-finite input, ``k < 1``, or an empty training set.
    """
    tx, ty = _xy(train_X, train_y)
    q = np.asarray(X, dtype=float)
    if q.ndim != 2 or q.shape[1] != tx.shape[1]:
        raise ValueError(f"X must have shape (m, {tx.shape[1]}): got {q.shape}")
    if k < 1:
        raise ValueError(f"k must be >= 1: got {k}")
    if tx.shape[0] == 0:
        raise ValueError("no training episodes")
    if not (np.all(np.isfinite(tx)) and np.all(np.isfinite(q))):
        raise ValueError("knn_proba needs finite parameters (select columns with usable_features)")
    lo, hi = scale if scale is not None else (tx.min(axis=0), tx.max(axis=0))
    span = np.where(hi - lo > 0, hi - lo, 1.0)
    a, b = (tx - lo) / span, (q - lo) / span
    d2 = np.sum((b[:, None, :] - a[None, :, :]) ** 2, axis=-1)
    kk = min(k, tx.shape[0])
    nearest = np.argsort(d2, axis=1, kind="stable")[:, :kk]
    return ty[nearest].mean(axis=1)


def binary_entropy(p: npt.ArrayLike) -> np.ndarray:
    """Entropy in bits of a Bernoulli(p), element-wise: range [0, 1], 0 at p ∈ {0, 1}, 1 at 0.5."""
    q = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(q * np.log2(q) + (1 - q) * np.log2(1 - q))
    return np.where((q == 0) | (q == 1), 0.0, h)


# --------------------------------------------------------------------------------------------------
# Sim-versus-real agreement
# --------------------------------------------------------------------------------------------------
def region_iou(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Intersection over union of two regions given as boolean membership over the same points.

    Range [0, 1]; ``nan`` when both regions are empty (no failures anywhere: nothing to overlap);
    0 when exactly one is empty.
    """
    x, y = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if x.shape != y.shape:
        raise ValueError(f"regions must have the same shape: got {x.shape} and {y.shape}")
    union = int(np.sum(x | y))
    return math.nan if union == 0 else float(np.sum(x & y)) / union


@dataclass(frozen=True, kw_only=True)
class Agreement:
    """How well sim predicts real failures, for one policy.

    Attributes:
        n_real: real episodes predicted.
        accuracy: share of real episodes whose outcome the SIM-trained tree predicts (success iff
            the leaf rate >= 0.5).
        knn_accuracy: the same with the SIM k-nearest-neighbour predictor.
        base_rate_accuracy: accuracy of predicting every real episode as sim's majority outcome
            (what a model that ignores the parameters gets; compare ``accuracy`` with it).
        failure_recall: share of real failures predicted as failures (``nan`` without real failures).
        failure_precision: share of predicted failures that failed in real (``nan`` if none predicted).
        iou: IoU of the failure regions of the sim-trained and the real-trained tree, evaluated at the
            union of sim and real episodes' parameter points (``nan`` if neither predicts a failure).
        features: the parameter names the models used.
    """

    n_real: int
    accuracy: float
    knn_accuracy: float
    base_rate_accuracy: float
    failure_recall: float
    failure_precision: float
    iou: float
    features: tuple[str, ...]


def failure_agreement(
    sim_X: npt.ArrayLike,
    sim_y: npt.ArrayLike,
    real_X: npt.ArrayLike,
    real_y: npt.ArrayLike,
    names: Sequence[str],
    *,
    max_depth: int = 2,
    min_leaf: int = 3,
    k: int = 5,
) -> Agreement:
    """Train on sim, predict real at the same realised parameters; compare the failure regions.

    Uses only the :func:`usable_features` of sim and real together. See :class:`Agreement`.

    Raises:
        ValueError: no sim or no real episodes, or column counts that differ from ``names``.
    """
    sx, sy = _xy(sim_X, sim_y)
    rx, ry = _xy(real_X, real_y)
    if sx.shape[1] != len(names) or rx.shape[1] != len(names):
        raise ValueError(f"X must have {len(names)} columns (one per name)")
    if sy.size == 0 or ry.size == 0:
        raise ValueError(f"need sim and real episodes: got {sy.size} sim and {ry.size} real")
    use = usable_features(sx, rx)
    feats = tuple(n for n, u in zip(names, use, strict=True) if u)
    sx, rx = sx[:, use], rx[:, use]
    sim_tree = fit_tree(sx, sy, max_depth=max_depth, min_leaf=min_leaf)
    real_tree = fit_tree(rx, ry, max_depth=max_depth, min_leaf=min_leaf)
    pred = predict_proba(sim_tree, rx) >= 0.5
    both = np.vstack([sx, rx])
    scale = (both.min(axis=0), both.max(axis=0)) if both.shape[1] else None
    knn = knn_proba(sx, sy, rx, k=k, scale=scale) >= 0.5
    majority = sy.mean() >= 0.5
    fail_real, fail_pred = ~ry, ~pred
    iou = region_iou(predict_proba(sim_tree, both) < 0.5, predict_proba(real_tree, both) < 0.5)
    return Agreement(
        n_real=int(ry.size),
        accuracy=float(np.mean(pred == ry)),
        knn_accuracy=float(np.mean(knn == ry)),
        base_rate_accuracy=float(np.mean(ry == majority)),
        failure_recall=float(np.sum(fail_real & fail_pred) / fail_real.sum())
        if fail_real.any()
        else math.nan,
        failure_precision=float(np.sum(fail_real & fail_pred) / fail_pred.sum())
        if fail_pred.any()
        else math.nan,
        iou=iou,
        features=feats,
    )


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """A parameter point worth a real trial.

    Attributes:
        index: row of the candidate matrix (e.g. the sim episode whose parameters to replicate).
        priority: ``max(disagreement, sim_entropy)`` in [0, 1]; higher first.
        p_sim: sim success probability there (k nearest sim episodes).
        p_real: real success probability there (k nearest real episodes), ``nan`` without real data.
        sim_entropy: entropy of ``p_sim`` in bits (1 = sim is a coin flip there).
        reason: ``"disagree"`` when ``|p_sim - p_real|`` sets the priority, else ``"uncertain"``.
    """

    index: int
    priority: float
    p_sim: float
    p_real: float
    sim_entropy: float
    reason: str


def next_trials(
    sim_X: npt.ArrayLike,
    sim_y: npt.ArrayLike,
    real_X: npt.ArrayLike,
    real_y: npt.ArrayLike,
    candidates: npt.ArrayLike,
    *,
    k: int = 5,
    top: int = 10,
) -> list[Candidate]:
    """Rank candidate parameter points for the next real trials: sim-real disagreement or sim doubt.

    At each candidate, ``p_sim`` and ``p_real`` are k-nearest-neighbour success shares of the sim and
    the real episodes (columns scaled by their joint range; pass only usable, finite columns).
    ``priority = max(|p_sim − p_real|, H(p_sim))``, both in [0, 1]: a trial is informative where the
    two worlds already differ or where sim itself cannot say. Ties keep candidate order; points of
    priority 0 (sim certain and real agreeing) are not listed. Without real episodes the priority is
    the entropy alone.

    Raises:
        ValueError: bad shapes, non-finite input, no sim episodes, ``top < 1``.
    """
    sx, sy = _xy(sim_X, sim_y)
    rx, ry = _xy(real_X, real_y)
    c = np.asarray(candidates, dtype=float)
    if top < 1:
        raise ValueError(f"top must be >= 1: got {top}")
    if c.ndim != 2 or c.shape[1] != sx.shape[1] or rx.shape[1] != sx.shape[1]:
        raise ValueError("sim_X, real_X and candidates must have the same columns")
    if c.shape[0] == 0:
        return []
    both = np.vstack([sx, rx, c])
    scale = (both.min(axis=0), both.max(axis=0))
    p_sim = knn_proba(sx, sy, c, k=k, scale=scale)
    p_real = knn_proba(rx, ry, c, k=k, scale=scale) if ry.size else np.full(c.shape[0], np.nan)
    h = binary_entropy(p_sim)
    dis = np.abs(p_sim - p_real)
    pri = np.where(np.isfinite(dis), np.maximum(dis, h), h)
    order = [i for i in np.argsort(-pri, kind="stable") if pri[i] > 0][:top]
    return [
        Candidate(
            index=int(i),
            priority=float(pri[i]),
            p_sim=float(p_sim[i]),
            p_real=float(p_real[i]),
            sim_entropy=float(h[i]),
            reason="disagree" if np.isfinite(dis[i]) and dis[i] >= h[i] else "uncertain",
        )
        for i in order
    ]


@dataclass(frozen=True, kw_only=True)
class PairedAgreement:
    """How well sim predicts each real episode when sim is run at that episode's own parameters.

    Attributes:
        n: real episodes with a sim partner (same policy, same variation, same seed).
        unmatched: real episodes without one (left out of every figure).
        accuracy: share of paired real episodes whose outcome equals their sim partner's.
        constant_guess: accuracy of predicting every real episode as its policy's majority sim outcome.
        failure_recall: share of real failures whose sim partner failed (``nan`` without real failures).
        failure_precision: share of sim failures whose real partner failed (``nan`` without sim failures).
        balanced_accuracy: the mean of the shares of real successes and of real failures that sim
            predicted (``nan`` unless real has both): a constant guess scores 0.5 whatever the base rate.
        kappa: Cohen's kappa of sim's predictions against real's outcomes: agreement beyond what the
            two sides' rates alone would give (0: no better than chance; ``nan`` when chance is 1).
        per_policy: policy -> (pairs, accuracy).
    """

    n: int
    unmatched: int
    accuracy: float
    constant_guess: float
    failure_recall: float
    failure_precision: float
    balanced_accuracy: float
    kappa: float
    per_policy: dict[str, tuple[int, float]]


def paired_agreement(
    real: Sequence[tuple[str, int, bool]], sim: Sequence[tuple[str, int, bool]]
) -> PairedAgreement:
    """Predict each real episode by the sim episode of the same policy and seed.

    ``real`` and ``sim`` are ``(policy label, episode seed, success)`` triples; the seed stands for the
    variation (both sides draw it from the same seed) and the policy's own random stream, so sim and
    real share everything but the world: this is "sim at the same parameters" taken literally.

    Raises:
        ValueError: a (policy, seed) pair twice on one side, or no real episode with a sim partner.
    """

    def index(rows: Sequence[tuple[str, int, bool]], side: str) -> dict[tuple[str, int], bool]:
        out: dict[tuple[str, int], bool] = {}
        for policy, seed, success in rows:
            key = (str(policy), int(seed))
            if key in out:
                raise ValueError(f"{side}: policy {policy!r} has seed {seed} twice; pairs must be unique")
            out[key] = bool(success)
        return out

    r, s = index(real, "real"), index(sim, "sim")
    keys = sorted(k for k in r if k in s)
    if not keys:
        raise ValueError(f"no real episode has a sim partner (real {len(r)}, sim {len(s)} episodes)")
    ry = np.array([r[k] for k in keys])
    sy = np.array([s[k] for k in keys])
    policies = sorted({k[0] for k in keys})
    per_policy, guess_correct = {}, 0
    for p in policies:
        m = np.array([k[0] == p for k in keys])
        per_policy[p] = (int(m.sum()), float(np.mean(ry[m] == sy[m])))
        majority = sy[m].mean() >= 0.5
        guess_correct += int(np.sum(ry[m] == majority))
    fail_r, fail_s = ~ry, ~sy
    return PairedAgreement(
        n=len(keys),
        unmatched=len(r) - len(keys),
        accuracy=float(np.mean(ry == sy)),
        constant_guess=guess_correct / len(keys),
        failure_recall=float(np.sum(fail_r & fail_s) / fail_r.sum()) if fail_r.any() else math.nan,
        failure_precision=float(np.sum(fail_r & fail_s) / fail_s.sum()) if fail_s.any() else math.nan,
        balanced_accuracy=balanced_accuracy(ry, sy),
        kappa=cohen_kappa(ry, sy),
        per_policy=per_policy,
    )


def balanced_accuracy(real: np.ndarray, predicted: np.ndarray) -> float:
    """Mean recall of the two outcomes (success, failure) of ``real``; ``nan`` unless real has both."""
    real, predicted = np.asarray(real, dtype=bool), np.asarray(predicted, dtype=bool)
    if real.all() or not real.any():
        return math.nan
    return float((np.mean(predicted[real]) + np.mean(~predicted[~real])) / 2)


def cohen_kappa(real: np.ndarray, predicted: np.ndarray) -> float:
    """Cohen's kappa of two boolean ratings; ``nan`` when both sides are one constant (chance is 1)."""
    real, predicted = np.asarray(real, dtype=bool), np.asarray(predicted, dtype=bool)
    observed = float(np.mean(real == predicted))
    chance = float(np.mean(real) * np.mean(predicted) + np.mean(~real) * np.mean(~predicted))
    return math.nan if chance >= 1.0 else (observed - chance) / (1.0 - chance)
