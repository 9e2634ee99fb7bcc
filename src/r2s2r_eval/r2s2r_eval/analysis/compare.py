"""Sim-versus-real comparison of two sets of episodes: the core of ``r2s2r compare``.

:func:`load_episodes` reads a results store (SQLite) or its Parquet/CSV export into an
:class:`EpisodeTable`; :func:`compare` checks the two sides against each other and computes every
number of the report (per-policy success with Wilson intervals, cross-policy metrics with bootstrap
intervals, failure regions per policy, the next real trials); :func:`write_report` writes
``report.html`` (one self-contained page, plots embedded as base64 PNGs), ``summary.json`` and the
PNGs into a new folder; :func:`format_summary` is the terminal version.

Policies are identified by name and parameters (``reference:perception_noise_m=0.03``), the way
``r2s2r sweep --policy`` writes them. Bad input never yields a silently wrong number: an empty side,
a missing column, or different world ids on the two sides (without ``allow_different_worlds``) raise
:class:`CompareError`; a policy on one side only, fewer than 2 shared policies, or episodes without
variation parameters become explicit warnings in the summary and the report.

The report grades nothing unless the settings hold targets (``r2s2r compare --targets FILE``,
:mod:`r2s2r_eval.analysis.targets`): what is good enough is the user's call, not this module's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from r2s2r_sim.ranges import check_fields, within

from r2s2r_eval.analysis import failure_regions as fr
from r2s2r_eval.analysis import failure_tree as ft
from r2s2r_eval.analysis import metrics
from r2s2r_eval.analysis.compare_data import CompareError, EpisodeTable
from r2s2r_eval.analysis.targets import Target, grade

__all__ = [
    "CompareSettings",
    "Comparison",
    "compare",
]


@dataclass(frozen=True, kw_only=True)
class CompareSettings:
    """Settings of :func:`compare`.

    Attributes:
        confidence: Wilson and bootstrap level in (0, 1).
        resamples: bootstrap resamples (>= 1).
        seed: bootstrap seed.
        n_bins: quantile bins per axis (>= 1).
        max_depth: failure tree depth (0..3).
        min_leaf: smallest tree leaf (>= 1).
        k: neighbours of the k-NN predictor (>= 1).
        top_axes: axes shown in the per-axis curves (most important first).
        top_trials: suggested next real trials per policy.
        mmrv_comparison: ``less`` (paper equation) or ``greater`` (SimplerEnv code); see metrics.mmrv.
        allow_different_worlds: compare sides whose world ids differ (a warning instead of an error).
        targets: bounds to grade the figures against (met / not met); none by default.
    """

    confidence: float = within(0.95, "(0, 1)")
    resamples: int = within(2000, ">= 1")
    seed: int = 0
    n_bins: int = within(5, ">= 1")
    max_depth: int = within(2, f"[0, {ft.MAX_DEPTH}]")
    min_leaf: int = within(3, ">= 1")
    k: int = within(5, ">= 1")
    top_axes: int = within(6, ">= 1")
    top_trials: int = within(10, ">= 1")
    mmrv_comparison: str = "less"
    allow_different_worlds: bool = False
    targets: tuple[Target, ...] = ()

    def __post_init__(self) -> None:
        """Check ranges; the message names the field."""
        check_fields(self, error=CompareError)
        if self.mmrv_comparison not in ("less", "greater"):
            raise CompareError(f"mmrv_comparison must be 'less' or 'greater': got {self.mmrv_comparison!r}")


def _num(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _side_stats(k: int, n: int, confidence: float) -> dict[str, Any]:
    low, high = metrics.wilson_interval(k, n, confidence=confidence)
    return {"successes": k, "trials": n, "success_rate": k / n, "wilson_low": low, "wilson_high": high}


def _align(sim: EpisodeTable, real: EpisodeTable) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Parameter names of both sides (sim's order, then real-only), and each side's matrix on them."""
    names = list(dict.fromkeys([*sim.names, *real.names]))

    def on(t: EpisodeTable) -> np.ndarray:
        out = np.full((len(t), len(names)), np.nan)
        for j, name in enumerate(names):
            if name in t.names:
                out[:, j] = t.params[:, t.names.index(name)]
        return out

    return names, on(sim), on(real)


def _tree_json(node: ft.Node, names: Sequence[str]) -> dict[str, Any]:
    if node.is_leaf:
        return {"trials": node.trials, "successes": node.successes}
    assert node.left is not None and node.right is not None
    return {
        "trials": node.trials,
        "successes": node.successes,
        "split": {"parameter": names[node.feature], "threshold": node.threshold},
        "left": _tree_json(node.left, names),
        "right": _tree_json(node.right, names),
    }


def _rule_json(rule: ft.Rule) -> dict[str, Any]:
    return {
        "conditions": [{"parameter": n, "op": op, "threshold": t} for n, op, t in rule.conditions],
        "trials": rule.trials,
        "successes": rule.successes,
        "success_rate": rule.rate,
        "text": rule.text(),
    }


def _policy_failures(
    label: str,
    sx: np.ndarray,
    sy: np.ndarray,
    rx: np.ndarray,
    ry: np.ndarray,
    names: list[str],
    s: CompareSettings,
    sim_keys: np.ndarray,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(summary part, plot data) of one policy's failure analysis."""
    use = fr.usable_features(sx, rx)
    feats = [n for n, u in zip(names, use, strict=True) if u]
    sxu, rxu = sx[:, use], rx[:, use]
    sim_tree = ft.fit_tree(sxu, sy, max_depth=s.max_depth, min_leaf=s.min_leaf)
    real_tree = ft.fit_tree(rxu, ry, max_depth=s.max_depth, min_leaf=s.min_leaf)
    agreement = fr.failure_agreement(sx, sy, rx, ry, names, max_depth=s.max_depth, min_leaf=s.min_leaf, k=s.k)
    importance = ft.feature_importance(sim_tree, len(feats)) + ft.feature_importance(real_tree, len(feats))
    # Two map axes: the most important split parameters, then the best single splits on the pooled data.
    order = list(np.argsort(-importance, kind="stable"))
    if np.count_nonzero(importance) < 2 and feats:
        pooled_x, pooled_y = np.vstack([sxu, rxu]), np.concatenate([sy, ry])
        single = np.array(
            [
                ft.feature_importance(
                    ft.fit_tree(pooled_x[:, [j]], pooled_y, max_depth=1, min_leaf=s.min_leaf), 1
                )[0]
                for j in range(len(feats))
            ]
        )
        order = list(np.lexsort((-single, -importance)))
    map_axes = [feats[j] for j in order[:2]]
    candidates = fr.next_trials(sxu, sy, rxu, ry, sxu, k=s.k, top=s.top_trials) if sy.size else []
    shown = [feats[j] for j in order[:3]]
    trials = [
        {
            "sim_episode_key": str(sim_keys[c.index]) or None,
            "priority": c.priority,
            "reason": c.reason,
            "p_sim": c.p_sim,
            "p_real": _num(c.p_real),
            "sim_entropy_bits": c.sim_entropy,
            "parameters": {n: float(sxu[c.index, feats.index(n)]) for n in shown},
        }
        for c in candidates
    ]
    summary = {
        "features_used": feats,
        "features_unused": [n for n, u in zip(names, use, strict=True) if not u],
        "sim_failure_rules": [_rule_json(r) for r in ft.failure_rules(sim_tree, feats)],
        "real_failure_rules": [_rule_json(r) for r in ft.failure_rules(real_tree, feats)],
        "sim_tree": _tree_json(sim_tree, feats),
        "real_tree": _tree_json(real_tree, feats),
        "agreement": {
            "real_episodes": agreement.n_real,
            "accuracy": agreement.accuracy,
            "knn_accuracy": agreement.knn_accuracy,
            "base_rate_accuracy": agreement.base_rate_accuracy,
            "failure_recall": _num(agreement.failure_recall),
            "failure_precision": _num(agreement.failure_precision),
            "failure_region_iou": _num(agreement.iou),
        },
        "importance": {feats[j]: float(importance[j]) for j in order if importance[j] > 0},
        "map_axes": map_axes,
        "next_real_trials": trials,
    }
    plot = {
        "label": label,
        "feats": feats,
        "sim_x": sxu,
        "sim_y": sy,
        "real_x": rxu,
        "real_y": ry,
        "sim_tree": sim_tree,
        "real_tree": real_tree,
        "map_axes": map_axes,
        "importance": importance,
    }
    return summary, plot


@dataclass(kw_only=True)
class Comparison:
    """What :func:`compare` found: ``summary`` is JSON-ready; the rest feeds the plots and tables."""

    summary: dict[str, Any]
    policies: list[str]
    failure_plots: list[dict[str, Any]] = field(default_factory=list)
    axis_curves: dict[str, dict[str, dict[str, fr.BinnedSuccess]]] = field(default_factory=dict)
    episodes: list[tuple[str, str, bool, str, str]] = field(default_factory=list)


def _check_worlds(
    sim: EpisodeTable, real: EpisodeTable, s: CompareSettings, warnings: list[str]
) -> tuple[list[str], list[str]]:
    """Each side's world ids; different (or several) worlds are an error unless the settings allow them.

    Results of different worlds are not comparable, so comparing them has to be asked for and is then
    said in the warnings.
    """
    sim_worlds, real_worlds = sorted(set(sim.world_id)), sorted(set(real.world_id))
    if sim_worlds != real_worlds or len(sim_worlds) > 1:
        what = (
            f"sim {sim.source} has world(s) {', '.join(sim_worlds)}; real {real.source} has world(s) "
            f"{', '.join(real_worlds)}"
        )
        if not s.allow_different_worlds:
            raise CompareError(
                f"different worlds: {what}. Results of different worlds or tasks are not comparable; "
                "pass --allow-different-worlds if this is intended (e.g. a reconstructed world)"
            )
        warnings.append(f"Different worlds compared (--allow-different-worlds): {what}.")
    return sim_worlds, real_worlds


def _shared_policies(
    sim: EpisodeTable, real: EpisodeTable, warnings: list[str]
) -> tuple[list[str], list[str], list[str]]:
    """The policies on both sides (sim's order), sim-only and real-only ones (a warning when any).

    Only shared policies are compared; the others are named so that none is dropped silently.
    """
    sim_pol, real_pol = list(dict.fromkeys(sim.policy)), list(dict.fromkeys(real.policy))
    shared = [p for p in sim_pol if p in set(real_pol)]
    sim_only = [p for p in sim_pol if p not in set(real_pol)]
    real_only = [p for p in real_pol if p not in set(sim_pol)]
    if sim_only or real_only:
        warnings.append(
            "Policies on one side only, excluded from the comparison and the cross-policy metrics: "
            + "; ".join(
                part
                for part in (
                    f"sim only: {', '.join(sim_only)}" if sim_only else "",
                    f"real only: {', '.join(real_only)}" if real_only else "",
                )
                if part
            )
            + "."
        )
    if not shared:
        raise CompareError(
            f"no policy is on both sides: sim {sim.source} has {', '.join(sim_pol)}; "
            f"real {real.source} has {', '.join(real_pol)}"
        )
    return shared, sim_only, real_only


def _cross_policy_metrics(
    per_policy: list[dict[str, Any]],
    sim_eps: list[np.ndarray],
    real_eps: list[np.ndarray],
    s: CompareSettings,
    warnings: list[str],
) -> dict[str, Any]:
    """Pearson, MMRV, Spearman and Kendall of the per-policy success rates, with bootstrap intervals.

    They rank policies, so they need at least two shared policies; with fewer, or when a metric is
    undefined, the warnings say so instead of reporting a number.
    """
    sim_rate = np.array([d["sim"]["success_rate"] for d in per_policy])
    real_rate = np.array([d["real"]["success_rate"] for d in per_policy])

    def mmrv_fn(**kw: Any) -> Any:
        return metrics.mmrv(**kw, comparison=s.mmrv_comparison)  # type: ignore[arg-type]

    chosen = {**metrics.CROSS_POLICY_METRICS, "mmrv": mmrv_fn}
    cross: dict[str, Any] = {}
    if len(per_policy) < 2:
        warnings.append(
            f"Only {len(per_policy)} policy on both sides: cross-policy metrics (Pearson, MMRV, Spearman, "
            "Kendall) need at least 2 and are not computed."
        )
        return cross
    intervals = metrics.bootstrap_intervals(
        sim_episodes=sim_eps,
        real_episodes=real_eps,
        rng=np.random.default_rng(s.seed),
        resamples=s.resamples,
        confidence=s.confidence,
        metrics=chosen,
    )
    for name, fn in chosen.items():
        iv = intervals[name]
        cross[name] = {
            "value": _num(float(fn(sim=sim_rate, real=real_rate))),
            "bootstrap_low": _num(iv.low),
            "bootstrap_high": _num(iv.high),
            "bootstrap_undefined_fraction": iv.undefined_fraction,
        }
        if cross[name]["value"] is None:
            warnings.append(f"{name} is undefined (a side has the same success rate for every policy).")
    return cross


@dataclass(kw_only=True)
class _Failures:
    """The failure-region part of a comparison, per policy, and the real episodes its trees predicted."""

    regions: dict[str, Any] = field(default_factory=dict)
    plots: list[dict[str, Any]] = field(default_factory=list)
    axis_curves: dict[str, dict[str, dict[str, fr.BinnedSuccess]]] = field(default_factory=dict)
    correct: int = 0
    total: int = 0


def _failures(
    sim: EpisodeTable, real: EpisodeTable, shared: list[str], s: CompareSettings, warnings: list[str]
) -> _Failures:
    """Failure regions and agreement per shared policy, and success along the most important axes.

    Needs variation parameters; results without any get a warning and an empty part, not an error,
    because the success rates and cross-policy metrics still stand.
    """
    names, sim_x, real_x = _align(sim, real)
    out = _Failures()
    if not names:
        warnings.append(
            "No variation parameters in the results (no `variation` / `var.*` data): failure regions, "
            "per-axis curves and next-trial suggestions are skipped."
        )
        return out
    importance_total: dict[str, float] = {}
    for p in shared:
        ms, mr = sim.policy == p, real.policy == p
        summ, plot = _policy_failures(
            p, sim_x[ms], sim.success[ms], real_x[mr], real.success[mr], names, s, sim.key[ms]
        )
        out.regions[p] = summ
        out.plots.append(plot)
        for n, v in summ["importance"].items():
            importance_total[n] = importance_total.get(n, 0.0) + v
        out.correct += round(summ["agreement"]["accuracy"] * summ["agreement"]["real_episodes"])
        out.total += summ["agreement"]["real_episodes"]
    usable = fr.usable_features(sim_x, real_x)
    ranked = sorted(importance_total, key=lambda n: -importance_total[n])
    rest = [n for n, u in zip(names, usable, strict=True) if u and n not in importance_total]
    for name in (ranked + rest)[: s.top_axes]:
        j = names.index(name)
        edges = fr.quantile_edges(np.concatenate([sim_x[:, j], real_x[:, j]]), s.n_bins)
        out.axis_curves[name] = {}
        for p in shared:
            ms, mr = sim.policy == p, real.policy == p
            out.axis_curves[name][p] = {
                "sim": fr.binned_success(sim_x[ms, j], sim.success[ms], edges=edges, confidence=s.confidence),
                "real": fr.binned_success(
                    real_x[mr, j], real.success[mr], edges=edges, confidence=s.confidence
                ),
            }
    return out


def _targets(cross: dict[str, Any], accuracy: float, targets: tuple[Target, ...]) -> dict[str, Any]:
    """Each target of the settings beside its measured value and whether it is met; empty without any."""
    measured = {name: m["value"] for name, m in cross.items()}
    return grade(targets, {**measured, "failure_prediction_accuracy": _num(accuracy)})


def compare(sim: EpisodeTable, real: EpisodeTable, settings: CompareSettings | None = None) -> Comparison:
    """Compare sim and real episodes (see the module docstring for the checks).

    Raises:
        CompareError: a side without episodes, world ids that differ (unless allowed), or no policy
            on both sides.
    """
    s = settings or CompareSettings()
    warnings: list[str] = []
    for side, t in (("sim", sim), ("real", real)):
        if len(t) == 0:
            raise CompareError(f"{t.source}: no episodes on the {side} side; nothing to compare")
    sim_worlds, real_worlds = _check_worlds(sim, real, s, warnings)
    shared, sim_only, real_only = _shared_policies(sim, real, warnings)

    per_policy: list[dict[str, Any]] = []
    sim_eps, real_eps = [], []
    for p in shared:
        ys, yr = sim.success[sim.policy == p], real.success[real.policy == p]
        sim_eps.append(ys.astype(np.int8))
        real_eps.append(yr.astype(np.int8))
        per_policy.append(
            {
                "policy": p,
                "sim": _side_stats(int(ys.sum()), int(ys.size), s.confidence),
                "real": _side_stats(int(yr.sum()), int(yr.size), s.confidence),
            }
        )
    cross = _cross_policy_metrics(per_policy, sim_eps, real_eps, s, warnings)
    failures = _failures(sim, real, shared, s, warnings)
    accuracy = failures.correct / failures.total if failures.total else math.nan

    hashes = {"sim": sorted(set(sim.world_hash) - {""}), "real": sorted(set(real.world_hash) - {""})}
    summary = {
        "sim_source": sim.source,
        "real_source": real.source,
        "worlds": {"sim": sim_worlds, "real": real_worlds},
        "world_hashes": hashes,
        "episodes": {"sim": len(sim), "real": len(real)},
        "settings": {
            "confidence": s.confidence,
            "bootstrap_resamples": s.resamples,
            "bootstrap": "percentile; episodes resampled per policy and side",
            "seed": s.seed,
            "bins_per_axis": s.n_bins,
            "tree_max_depth": s.max_depth,
            "tree_min_leaf": s.min_leaf,
            "knn_k": s.k,
            "mmrv_comparison": s.mmrv_comparison,
        },
        "warnings": warnings,
        "policies_compared": shared,
        "policies_excluded": {"sim_only": sim_only, "real_only": real_only},
        "policies": per_policy,
        "metrics": cross,
        "failure_prediction": {
            "accuracy": _num(accuracy),
            "real_episodes": failures.total,
            "definition": "per real episode: does a tree trained on the same policy's sim episodes "
            "predict its outcome from its realised parameters",
        },
        "targets": _targets(cross, accuracy, s.targets),
        "failure_regions": failures.regions,
        "axes_shown": list(failures.axis_curves),
    }
    episodes = [
        (side, str(t.policy[i]), bool(t.success[i]), str(t.reason[i]), str(t.key[i]))
        for side, t in (("sim", sim), ("real", real))
        for i in range(len(t))
    ]
    return Comparison(
        summary=summary,
        policies=shared,
        failure_plots=failures.plots,
        axis_curves=failures.axis_curves,
        episodes=episodes,
    )
