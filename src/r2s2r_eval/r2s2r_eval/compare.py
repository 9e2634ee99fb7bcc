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
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from r2s2r_eval import failure_regions as fr
from r2s2r_eval import metrics

__all__ = [
    "TARGETS",
    "CompareError",
    "CompareSettings",
    "EpisodeTable",
    "compare",
    "format_summary",
    "load_episodes",
    "policy_label",
    "write_report",
]

REQUIRED_COLUMNS = ("policy", "success", "world_id")
MAX_TABLE_BYTES = 2 * 1024**3
EPISODE_TABLE_ROWS = 200
TARGETS: Mapping[str, tuple[str, float]] = {
    "pearson": (">=", 0.95),
    "mmrv": ("<=", 0.03),
    "failure_prediction_accuracy": (">=", 0.85),
}
"""Issue 8's closed-loop targets, printed beside the measured values."""


class CompareError(ValueError):
    """The results cannot be compared: unreadable, a missing column, no episodes, different worlds."""


def policy_label(name: str, params: Mapping[str, Any]) -> str:
    """``name`` or ``name:k=v,...`` (sorted keys), as ``r2s2r sweep --policy`` spells a policy."""
    args = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    return f"{name}:{args}" if args else name


@dataclass(frozen=True, kw_only=True)
class EpisodeTable:
    """The episodes of one side.

    Attributes:
        source: the file read.
        policy: policy label per episode, shape ``(n,)``.
        success: outcome per episode (bool).
        world_id: world id per episode.
        world_hash: world hash per episode ("" if the file has none).
        reason: ``success`` or the failure reason per episode ("" if unknown).
        key: episode key per episode ("" if none).
        params: realised variation parameters, shape ``(n, d)``, ``nan`` where an episode lacks one.
        names: parameter names (``physics.friction_scale``...), length ``d``.
    """

    source: str
    policy: np.ndarray
    success: np.ndarray
    world_id: np.ndarray
    world_hash: np.ndarray
    reason: np.ndarray
    key: np.ndarray
    params: np.ndarray
    names: tuple[str, ...]

    def __len__(self) -> int:
        """Number of episodes."""
        return int(self.success.size)


def _table_from_records(source: str, records: list[dict[str, Any]], names: list[str]) -> EpisodeTable:
    n = len(records)
    params = np.full((n, len(names)), np.nan)
    col = {name: j for j, name in enumerate(names)}
    for i, r in enumerate(records):
        for name, v in r["params"].items():
            if v is not None and name in col:
                params[i, col[name]] = float(v)
    return EpisodeTable(
        source=source,
        policy=np.array([r["policy"] for r in records], dtype=object),
        success=np.array([bool(r["success"]) for r in records], dtype=bool),
        world_id=np.array([r["world_id"] for r in records], dtype=object),
        world_hash=np.array([r.get("world_hash") or "" for r in records], dtype=object),
        reason=np.array([r.get("reason") or "" for r in records], dtype=object),
        key=np.array([r.get("key") or "" for r in records], dtype=object),
        params=params,
        names=tuple(names),
    )


def _load_store(path: Path) -> EpisodeTable:
    from r2s2r_eval.results import ResultsError, ResultsStore

    records: list[dict[str, Any]] = []
    names: dict[str, None] = {}
    try:
        with ResultsStore(path) as store:
            for row in store.rows():
                p = dict((row.variation or {}).get("params", {}))
                names.update(dict.fromkeys(p))
                records.append(
                    {
                        "policy": policy_label(row.policy, row.parameters),
                        "success": row.success,
                        "world_id": row.world_id,
                        "world_hash": row.world_hash,
                        "reason": row.reason,
                        "key": row.episode_key,
                        "params": p,
                    }
                )
    except ResultsError as err:
        raise CompareError(str(err)) from None
    return _table_from_records(str(path), records, list(names))


def _load_export(path: Path) -> EpisodeTable:
    import pyarrow as pa

    try:
        if path.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(path)
        else:
            import pyarrow.csv as pcsv

            table = pcsv.read_csv(path)
    except (OSError, pa.ArrowException) as err:
        raise CompareError(f"{path}: cannot read as {path.suffix.lstrip('.')}: {err}") from None
    cols = table.column_names
    missing = [c for c in REQUIRED_COLUMNS if c not in cols]
    if missing:
        raise CompareError(
            f"{path}: missing column(s) {', '.join(missing)} (have: {', '.join(cols[:12])}"
            f"{', ...' if len(cols) > 12 else ''}); expected an `r2s2r sweep --export` file"
        )
    data = table.to_pydict()
    n = table.num_rows
    names = [c[4:] for c in cols if c.startswith("var.")]
    for c in ("policy", "success", "world_id"):
        bad = [i for i, v in enumerate(data[c]) if v is None or v == ""]
        if bad:
            raise CompareError(f"{path}: column {c!r} is empty on data row {bad[0] + 1}")
    params_json = data.get("parameters", [None] * n)
    records: list[dict[str, Any]] = []
    for i in range(n):
        success = data["success"][i]
        if isinstance(success, str):
            if success.strip().lower() not in ("true", "false", "1", "0"):
                raise CompareError(f"{path}: column 'success', data row {i + 1}: not a boolean: {success!r}")
            success = success.strip().lower() in ("true", "1")
        elif success not in (True, False, 0, 1):
            raise CompareError(f"{path}: column 'success', data row {i + 1}: not a boolean: {success!r}")
        try:
            params = json.loads(params_json[i]) if params_json[i] else {}
        except (TypeError, json.JSONDecodeError):
            raise CompareError(f"{path}: column 'parameters', data row {i + 1}: not JSON") from None
        records.append(
            {
                "policy": policy_label(str(data["policy"][i]), params),
                "success": bool(success),
                "world_id": str(data["world_id"][i]),
                "world_hash": data.get("world_hash", [None] * n)[i],
                "reason": data.get("reason", [None] * n)[i],
                "key": data.get("episode_key", [None] * n)[i],
                "params": {name: data[f"var.{name}"][i] for name in names},
            }
        )
    return _table_from_records(str(path), records, names)


def load_episodes(path: str | Path) -> EpisodeTable:
    """Read episodes from an r2s2r results store (SQLite) or an ``r2s2r sweep --export`` file.

    The kind is told by content (the SQLite header) and, otherwise, the suffix (``.parquet``,
    ``.csv``). Required export columns: ``policy``, ``success``, ``world_id``; ``parameters``,
    ``world_hash``, ``reason``, ``episode_key`` and ``var.*`` are used when present.

    Raises:
        CompareError: missing or oversized file, unknown format, missing column, bad value; the
            message names the file (and the column and row).
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        with p.open("rb") as fh:
            head = fh.read(16)
    except OSError as err:
        raise CompareError(f"{p}: cannot read: {err.strerror or err}") from None
    if size > MAX_TABLE_BYTES:
        raise CompareError(f"{p}: larger than {MAX_TABLE_BYTES} bytes; refusing to load")
    if head == b"SQLite format 3\x00":
        return _load_store(p)
    if p.suffix.lower() in (".parquet", ".csv"):
        return _load_export(p)
    raise CompareError(f"{p}: not an SQLite results store, and not .parquet or .csv")


# --------------------------------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------------------------------
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
    """

    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0
    n_bins: int = 5
    max_depth: int = 2
    min_leaf: int = 3
    k: int = 5
    top_axes: int = 6
    top_trials: int = 10
    mmrv_comparison: str = "less"
    allow_different_worlds: bool = False

    def __post_init__(self) -> None:
        """Check ranges; the message names the field."""
        if not 0.0 < self.confidence < 1.0:
            raise CompareError(f"confidence must be in (0, 1): got {self.confidence}")
        for name in ("resamples", "n_bins", "min_leaf", "k", "top_axes", "top_trials"):
            if getattr(self, name) < 1:
                raise CompareError(f"{name} must be >= 1: got {getattr(self, name)}")
        if not 0 <= self.max_depth <= fr.MAX_DEPTH:
            raise CompareError(f"max_depth must be in [0, {fr.MAX_DEPTH}]: got {self.max_depth}")
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


def _tree_json(node: fr.Node, names: Sequence[str]) -> dict[str, Any]:
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


def _rule_json(rule: fr.Rule) -> dict[str, Any]:
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
    sim_tree = fr.fit_tree(sxu, sy, max_depth=s.max_depth, min_leaf=s.min_leaf)
    real_tree = fr.fit_tree(rxu, ry, max_depth=s.max_depth, min_leaf=s.min_leaf)
    agreement = fr.failure_agreement(sx, sy, rx, ry, names, max_depth=s.max_depth, min_leaf=s.min_leaf, k=s.k)
    importance = fr.feature_importance(sim_tree, len(feats)) + fr.feature_importance(real_tree, len(feats))
    # Two map axes: the most important split parameters, then the best single splits on the pooled data.
    order = list(np.argsort(-importance, kind="stable"))
    if np.count_nonzero(importance) < 2 and feats:
        pooled_x, pooled_y = np.vstack([sxu, rxu]), np.concatenate([sy, ry])
        single = np.array(
            [
                fr.feature_importance(
                    fr.fit_tree(pooled_x[:, [j]], pooled_y, max_depth=1, min_leaf=s.min_leaf), 1
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
        "sim_failure_rules": [_rule_json(r) for r in fr.failure_rules(sim_tree, feats)],
        "real_failure_rules": [_rule_json(r) for r in fr.failure_rules(real_tree, feats)],
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
    sim_rate = np.array([d["sim"]["success_rate"] for d in per_policy])
    real_rate = np.array([d["real"]["success_rate"] for d in per_policy])

    def mmrv_fn(**kw: Any) -> Any:
        return metrics.mmrv(**kw, comparison=s.mmrv_comparison)  # type: ignore[arg-type]

    chosen = {**metrics.CROSS_POLICY_METRICS, "mmrv": mmrv_fn}
    cross: dict[str, Any] = {}
    if len(shared) >= 2:
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
    else:
        warnings.append(
            f"Only {len(shared)} policy on both sides: cross-policy metrics (Pearson, MMRV, Spearman, "
            "Kendall) need at least 2 and are not computed."
        )

    # Failure regions, per policy.
    names, sim_x, real_x = _align(sim, real)
    failures: dict[str, Any] = {}
    failure_plots: list[dict[str, Any]] = []
    axis_curves: dict[str, dict[str, dict[str, fr.BinnedSuccess]]] = {}
    correct = total = 0
    if not names:
        warnings.append(
            "No variation parameters in the results (no `variation` / `var.*` data): failure regions, "
            "per-axis curves and next-trial suggestions are skipped."
        )
    else:
        importance_total: dict[str, float] = {}
        for p in shared:
            ms, mr = sim.policy == p, real.policy == p
            summ, plot = _policy_failures(
                p, sim_x[ms], sim.success[ms], real_x[mr], real.success[mr], names, s, sim.key[ms]
            )
            failures[p] = summ
            failure_plots.append(plot)
            for n, v in summ["importance"].items():
                importance_total[n] = importance_total.get(n, 0.0) + v
            correct += round(summ["agreement"]["accuracy"] * summ["agreement"]["real_episodes"])
            total += summ["agreement"]["real_episodes"]
        usable = fr.usable_features(sim_x, real_x)
        ranked = sorted(importance_total, key=lambda n: -importance_total[n])
        rest = [n for n, u in zip(names, usable, strict=True) if u and n not in importance_total]
        for name in (ranked + rest)[: s.top_axes]:
            j = names.index(name)
            edges = fr.quantile_edges(np.concatenate([sim_x[:, j], real_x[:, j]]), s.n_bins)
            axis_curves[name] = {}
            for p in shared:
                ms, mr = sim.policy == p, real.policy == p
                axis_curves[name][p] = {
                    "sim": fr.binned_success(
                        sim_x[ms, j], sim.success[ms], edges=edges, confidence=s.confidence
                    ),
                    "real": fr.binned_success(
                        real_x[mr, j], real.success[mr], edges=edges, confidence=s.confidence
                    ),
                }
    accuracy = correct / total if total else math.nan

    measured = {
        "pearson": cross.get("pearson", {}).get("value"),
        "mmrv": cross.get("mmrv", {}).get("value"),
        "failure_prediction_accuracy": _num(accuracy),
    }
    targets = {}
    for name, (op, bound) in TARGETS.items():
        v = measured[name]
        met = None if v is None else (v >= bound if op == ">=" else v <= bound)
        targets[name] = {"target": f"{op} {bound}", "measured": v, "met": met}

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
            "real_episodes": total,
            "definition": "per real episode: does a tree trained on the same policy's sim episodes "
            "predict its outcome from its realised parameters",
        },
        "targets": targets,
        "failure_regions": failures,
        "axes_shown": list(axis_curves),
    }
    episodes = [
        (side, str(t.policy[i]), bool(t.success[i]), str(t.reason[i]), str(t.key[i]))
        for side, t in (("sim", sim), ("real", real))
        for i in range(len(t))
    ]
    return Comparison(
        summary=summary,
        policies=shared,
        failure_plots=failure_plots,
        axis_curves=axis_curves,
        episodes=episodes,
    )


# --------------------------------------------------------------------------------------------------
# Terminal summary
# --------------------------------------------------------------------------------------------------
def _f(v: float | None, spec: str = ".3f") -> str:
    return "n/a" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, spec)


def format_summary(summary: Mapping[str, Any]) -> str:
    """The summary as plain text for a terminal."""
    lines = [
        f"sim:  {summary['sim_source']} ({summary['episodes']['sim']} episodes, "
        f"world {', '.join(summary['worlds']['sim'])})",
        f"real: {summary['real_source']} ({summary['episodes']['real']} episodes, "
        f"world {', '.join(summary['worlds']['real'])})",
    ]
    lines += [f"WARNING: {w}" for w in summary["warnings"]]
    conf = round(100 * summary["settings"]["confidence"])
    width = max(len("policy"), *(len(p["policy"]) for p in summary["policies"]))
    lines += ["", f"{'policy':<{width}}  {'sim success [' + str(conf) + '% Wilson]':<30}  real success"]
    for p in summary["policies"]:
        cells = []
        for side in ("sim", "real"):
            d = p[side]
            cells.append(
                f"{d['success_rate']:.2f} [{d['wilson_low']:.2f}, {d['wilson_high']:.2f}] "
                f"{d['successes']}/{d['trials']}"
            )
        lines.append(f"{p['policy']:<{width}}  {cells[0]:<30}  {cells[1]}")
    if summary["metrics"]:
        lines += ["", f"{'metric':<10} {'value':>7}   bootstrap {conf}%"]
        for name, m in summary["metrics"].items():
            iv = f"[{_f(m['bootstrap_low'])}, {_f(m['bootstrap_high'])}]"
            if m["bootstrap_undefined_fraction"] > 0:
                iv += f" ({m['bootstrap_undefined_fraction']:.0%} of resamples undefined)"
            lines.append(f"{name:<10} {_f(m['value']):>7}   {iv}")
    lines += ["", "targets (issue 8):"]
    for name, t in summary["targets"].items():
        verdict = {True: "met", False: "NOT met", None: "n/a"}[t["met"]]
        lines.append(f"  {name:<28} {_f(t['measured']):>7}  target {t['target']:<7} {verdict}")
    fp = summary["failure_prediction"]
    if fp["real_episodes"]:
        lines += [
            "",
            f"failure prediction accuracy (sim tree -> real episodes): {_f(fp['accuracy'])} "
            f"over {fp['real_episodes']} real episodes",
        ]
    for p, f in summary["failure_regions"].items():
        a = f["agreement"]
        lines += [
            "",
            f"[{p}] accuracy {a['accuracy']:.2f} (k-NN {a['knn_accuracy']:.2f}, constant guess "
            f"{a['base_rate_accuracy']:.2f}), failure-region IoU {_f(a['failure_region_iou'], '.2f')}",
        ]
        for side in ("sim", "real"):
            rules = f[f"{side}_failure_rules"]
            lines += [f"  {side}: {r['text']}" for r in rules] or [f"  {side}: no failure region found"]
        if f["next_real_trials"]:
            t = f["next_real_trials"][0]
            params = ", ".join(f"{k}={v:.3g}" for k, v in t["parameters"].items())
            lines.append(
                f"  next real trial: {params} ({t['reason']}, p_sim {t['p_sim']:.2f}, "
                f"p_real {_f(t['p_real'], '.2f')}; {len(f['next_real_trials'])} suggestions in summary.json)"
            )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------------
def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _plot_scatter(summary: Mapping[str, Any]) -> bytes:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    for p in summary["policies"]:
        s, r = p["sim"], p["real"]
        ax.errorbar(
            s["success_rate"],
            r["success_rate"],
            xerr=[[s["success_rate"] - s["wilson_low"]], [s["wilson_high"] - s["success_rate"]]],
            yerr=[[r["success_rate"] - r["wilson_low"]], [r["wilson_high"] - r["success_rate"]]],
            fmt="o",
            capsize=3,
            label=p["policy"],
        )
    ax.plot([0, 1], [0, 1], "k--", lw=1, label="identity")
    ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), xlabel="sim success rate", ylabel="real success rate")
    conf = round(100 * summary["settings"]["confidence"])
    ax.set_title(f"Sim vs real success ({conf}% Wilson intervals)")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    return _png(fig)


def _plot_ranking(summary: Mapping[str, Any]) -> bytes:
    import matplotlib.pyplot as plt
    from scipy import stats

    pols = summary["policies"]
    sim_rank = stats.rankdata([-p["sim"]["success_rate"] for p in pols], method="average")
    real_rank = stats.rankdata([-p["real"]["success_rate"] for p in pols], method="average")
    fig, ax = plt.subplots(figsize=(6, 0.5 * len(pols) + 2))
    for p, a, b in zip(pols, sim_rank, real_rank, strict=True):
        line = ax.plot([0, 1], [a, b], "o-", lw=2)[0]
        ax.annotate(
            f"{p['policy']} ({p['sim']['success_rate']:.2f})",
            (0, a),
            xytext=(-6, 0),
            textcoords="offset points",
            ha="right",
            va="center",
            fontsize=8,
            color=line.get_color(),
        )
        ax.annotate(
            f"({p['real']['success_rate']:.2f})",
            (1, b),
            xytext=(6, 0),
            textcoords="offset points",
            ha="left",
            va="center",
            fontsize=8,
            color=line.get_color(),
        )
    ax.set(xlim=(-0.9, 1.4), xticks=[0, 1], xticklabels=["sim rank", "real rank"], ylabel="rank (1 = best)")
    ax.invert_yaxis()
    ax.set_title("Ranking: sim vs real (crossing lines = rank violations)")
    return _png(fig)


def _plot_axes(comp: Comparison, confidence: float) -> bytes:
    import matplotlib.pyplot as plt

    axes_names = list(comp.axis_curves)
    fig, axs = plt.subplots(
        len(axes_names), 2, figsize=(10, 2.6 * len(axes_names)), squeeze=False, sharey=True
    )
    for row, name in enumerate(axes_names):
        for col, side in enumerate(("sim", "real")):
            ax = axs[row, col]
            for p, sides in comp.axis_curves[name].items():
                b = sides[side]
                ok = b.trials > 0
                ax.errorbar(
                    b.centres[ok],
                    b.rate[ok],
                    yerr=[(b.rate - b.low)[ok], (b.high - b.rate)[ok]],
                    fmt="o-",
                    capsize=2,
                    label=p,
                )
            ax.set(ylim=(-0.05, 1.05), xlabel=name, title=f"{side}: success vs {name}")
            ax.grid(alpha=0.3)
        axs[row, 0].set_ylabel("success rate")
    axs[0, 1].legend(fontsize=7)
    fig.suptitle(f"Per-axis success ({round(100 * confidence)}% Wilson intervals, quantile bins)", y=1.0)
    fig.tight_layout()
    return _png(fig)


def _split_segments(
    tree: fr.Node, ix: int, iy: int, box: list[float]
) -> list[tuple[str, float, float, float]]:
    """Split lines of the tree on map columns ix/iy inside each node's box.

    Segments are ``('v', x, y0, y1)`` (a split on ix) or ``('h', y, x0, x1)`` (a split on iy).

    A split on another column does not bound the map, so both children keep the parent's box there.
    """
    out: list[tuple[str, float, float, float]] = []
    if tree.is_leaf:
        return out
    assert tree.left is not None and tree.right is not None
    x0, x1, y0, y1 = box
    t = tree.threshold
    if tree.feature == ix:
        out.append(("v", t, y0, y1))
        out += _split_segments(tree.left, ix, iy, [x0, min(t, x1), y0, y1])
        out += _split_segments(tree.right, ix, iy, [max(t, x0), x1, y0, y1])
    elif tree.feature == iy:
        out.append(("h", t, x0, x1))
        out += _split_segments(tree.left, ix, iy, [x0, x1, y0, min(t, y1)])
        out += _split_segments(tree.right, ix, iy, [x0, x1, max(t, y0), y1])
    else:
        out += _split_segments(tree.left, ix, iy, box) + _split_segments(tree.right, ix, iy, box)
    return out


def _plot_failure_map(plot: Mapping[str, Any]) -> bytes | None:
    import matplotlib.pyplot as plt

    feats, axes_ = plot["feats"], plot["map_axes"]
    if not axes_:
        return None
    ix = feats.index(axes_[0])
    iy = feats.index(axes_[1]) if len(axes_) > 1 else None
    fig, axs = plt.subplots(1, 2, figsize=(11, 4.6), sharex=True, sharey=True)
    allx = np.vstack([plot["sim_x"], plot["real_x"]])
    pad = lambda lo, hi: (lo - 0.03 * (hi - lo or 1), hi + 0.03 * (hi - lo or 1))  # noqa: E731
    xlim = pad(allx[:, ix].min(), allx[:, ix].max())
    ylim = pad(allx[:, iy].min(), allx[:, iy].max()) if iy is not None else (-1, 1)
    for ax, side in zip(axs, ("sim", "real"), strict=True):
        x, y, tree = plot[f"{side}_x"], plot[f"{side}_y"], plot[f"{side}_tree"]
        yy = x[:, iy] if iy is not None else np.zeros(len(x))
        ax.scatter(x[y, ix], yy[y], c="tab:green", marker="o", s=22, label="success", alpha=0.8)
        ax.scatter(x[~y, ix], yy[~y], c="tab:red", marker="x", s=26, label="failure", alpha=0.9)
        for kind, v, a, b in _split_segments(tree, ix, iy if iy is not None else -2, [*xlim, *ylim]):
            if kind == "v":
                ax.plot([v, v], [a, b], "k-", lw=1.5)
            else:
                ax.plot([a, b], [v, v], "k-", lw=1.5)
        ax.set(
            xlim=xlim,
            ylim=ylim,
            xlabel=axes_[0],
            ylabel=axes_[1] if iy is not None else "",
            title=f"{side} ({len(y)} episodes): tree splits on these axes",
        )
        ax.legend(fontsize=7)
    fig.suptitle(f"Failure regions: {plot['label']}")
    fig.tight_layout()
    return _png(fig)


_CSS = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}
th{background:#eee}td.l,th.l{text-align:left}.warn{background:#fff3cd;border:1px solid #e0c060;padding:0.5em}
img{max-width:100%}.fail{color:#b00}.ok{color:#070}pre{background:#f6f6f6;padding:0.5em;overflow-x:auto}"""


def _img(data: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(data).decode()}">'


def _html(comp: Comparison, images: Mapping[str, bytes]) -> str:
    s = comp.summary
    e = html.escape
    conf = round(100 * s["settings"]["confidence"])
    out = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>r2s2r compare</title>",
        f"<style>{_CSS}</style></head><body><h1>Sim vs real: r2s2r compare</h1>",
        f"<p>sim: <code>{e(s['sim_source'])}</code> ({s['episodes']['sim']} episodes, world "
        f"{e(', '.join(s['worlds']['sim']))})<br>real: <code>{e(s['real_source'])}</code> "
        f"({s['episodes']['real']} episodes, world {e(', '.join(s['worlds']['real']))})</p>",
    ]
    if s["warnings"]:
        out.append("<div class='warn'><b>Warnings</b><ul>")
        out += [f"<li>{e(w)}</li>" for w in s["warnings"]]
        out.append("</ul></div>")
    out.append(
        "<h2>Targets</h2><table><tr><th class='l'>quantity</th><th>measured</th><th>target</th>"
        "<th>verdict</th></tr>"
    )
    for name, t in s["targets"].items():
        verdict = {
            True: "<span class='ok'>met</span>",
            False: "<span class='fail'>not met</span>",
            None: "n/a",
        }[t["met"]]
        out.append(
            f"<tr><td class='l'>{e(name)}</td><td>{_f(t['measured'])}</td><td>{e(t['target'])}</td>"
            f"<td>{verdict}</td></tr>"
        )
    out.append("</table>")
    out.append(
        f"<h2>Success per policy</h2><table><tr><th class='l'>policy</th><th>sim</th>"
        f"<th>sim {conf}% Wilson</th><th>real</th><th>real {conf}% Wilson</th></tr>"
    )
    for p in s["policies"]:
        cells = "".join(
            f"<td>{p[k]['successes']}/{p[k]['trials']} = {p[k]['success_rate']:.3f}</td>"
            f"<td>[{p[k]['wilson_low']:.3f}, {p[k]['wilson_high']:.3f}]</td>"
            for k in ("sim", "real")
        )
        out.append(f"<tr><td class='l'>{e(p['policy'])}</td>{cells}</tr>")
    out.append("</table>")
    ex = s["policies_excluded"]
    if ex["sim_only"] or ex["real_only"]:
        out.append(
            f"<p>Excluded (one side only): sim only: {e(', '.join(ex['sim_only']) or 'none')}; "
            f"real only: {e(', '.join(ex['real_only']) or 'none')}.</p>"
        )
    out.append(_img(images["scatter.png"], "sim vs real success scatter"))
    if "ranking.png" in images:
        out.append(_img(images["ranking.png"], "ranking comparison"))
    out.append("<h2>Cross-policy metrics</h2>")
    if s["metrics"]:
        out.append(
            f"<table><tr><th class='l'>metric</th><th>value</th><th>bootstrap {conf}% low</th>"
            "<th>high</th><th>undefined resamples</th></tr>"
        )
        for name, m in s["metrics"].items():
            out.append(
                f"<tr><td class='l'>{e(name)}</td><td>{_f(m['value'])}</td>"
                f"<td>{_f(m['bootstrap_low'])}</td><td>{_f(m['bootstrap_high'])}</td>"
                f"<td>{m['bootstrap_undefined_fraction']:.1%}</td></tr>"
            )
        out.append(
            f"</table><p>Bootstrap: {s['settings']['bootstrap_resamples']} resamples, "
            f"{e(s['settings']['bootstrap'])}, seed {s['settings']['seed']}; MMRV comparison "
            f"'{e(s['settings']['mmrv_comparison'])}'.</p>"
        )
    else:
        out.append("<p>Not computed (fewer than 2 policies on both sides).</p>")
    if "axes.png" in images:
        out.append("<h2>Per-axis success</h2>" + _img(images["axes.png"], "per-axis success curves"))
    if s["failure_regions"]:
        fp = s["failure_prediction"]
        out.append(
            f"<h2>Failure regions</h2><p>Failure prediction accuracy (sim-trained tree, per real "
            f"episode): <b>{_f(fp['accuracy'])}</b> over {fp['real_episodes']} real episodes.</p>"
        )
    for p, f in s["failure_regions"].items():
        a = f["agreement"]
        out.append(
            f"<h3>{e(p)}</h3><p>accuracy {a['accuracy']:.3f} (k-NN {a['knn_accuracy']:.3f}; constant "
            f"guess {a['base_rate_accuracy']:.3f}); failure recall {_f(a['failure_recall'])}, "
            f"precision {_f(a['failure_precision'])}; failure-region IoU "
            f"{_f(a['failure_region_iou'])}</p><ul>"
        )
        for side in ("sim", "real"):
            rules = f[f"{side}_failure_rules"] or [{"text": "no failure region found"}]
            out += [f"<li>{side}: {e(r['text'])}</li>" for r in rules]
        out.append("</ul>")
        key = f"failure_map_{comp.policies.index(p)}.png"
        if key in images:
            out.append(_img(images[key], f"failure map {p}"))
        if f["next_real_trials"]:
            names = list(f["next_real_trials"][0]["parameters"])
            out.append(
                "<p>Real trials worth running next (sim-real disagreement or sim uncertainty):</p>"
                "<table><tr><th>priority</th><th class='l'>reason</th><th>p_sim</th><th>p_real</th>"
                + "".join(f"<th>{e(n)}</th>" for n in names)
                + "<th class='l'>sim episode</th></tr>"
            )
            for t in f["next_real_trials"]:
                out.append(
                    f"<tr><td>{t['priority']:.2f}</td><td class='l'>{t['reason']}</td>"
                    f"<td>{t['p_sim']:.2f}</td>"
                    f"<td>{_f(t['p_real'], '.2f')}</td>"
                    + "".join(f"<td>{t['parameters'][n]:.4g}</td>" for n in names)
                    + f"<td class='l'><code>{e((t['sim_episode_key'] or '')[:12])}</code></td></tr>"
                )
            out.append("</table>")
    n_ep = len(comp.episodes)
    shown = comp.episodes[:EPISODE_TABLE_ROWS]
    out.append(
        f"<h2>Episodes</h2><details><summary>{n_ep} episodes"
        + (f" (first {len(shown)} shown; all in the results files)" if n_ep > len(shown) else "")
        + "</summary><table><tr><th class='l'>side</th><th class='l'>policy</th><th>success</th>"
        "<th class='l'>reason</th><th class='l'>episode key</th></tr>"
    )
    for side, pol, ok, reason, key in shown:
        out.append(
            f"<tr><td class='l'>{side}</td><td class='l'>{e(pol)}</td><td>{int(ok)}</td>"
            f"<td class='l'>{e(reason)}</td><td class='l'><code>{e(key[:16])}</code></td></tr>"
        )
    out.append("</table></details>")
    out.append("<h2>Terminal summary</h2><pre>" + e(format_summary(s)) + "</pre></body></html>")
    return "\n".join(out)


def write_report(comp: Comparison, out_dir: str | Path) -> Path:
    """Write ``report.html``, ``summary.json`` and the PNGs into the NEW folder ``out_dir``.

    Everything is written into a hidden sibling folder first and renamed into place, so ``out_dir``
    is never half-written.

    Raises:
        CompareError: ``out_dir`` exists (never overwritten) or cannot be created.
    """
    import matplotlib

    matplotlib.use("Agg")
    out = Path(out_dir)
    if out.exists() or out.is_symlink():
        raise CompareError(f"{out}: already exists; refusing to overwrite (choose a new output folder)")
    images: dict[str, bytes] = {"scatter.png": _plot_scatter(comp.summary)}
    if len(comp.policies) >= 2:
        images["ranking.png"] = _plot_ranking(comp.summary)
    if comp.axis_curves:
        images["axes.png"] = _plot_axes(comp, comp.summary["settings"]["confidence"])
    for i, plot in enumerate(comp.failure_plots):
        png = _plot_failure_map(plot)
        if png is not None:
            images[f"failure_map_{i}.png"] = png
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        tmp.mkdir(parents=True)
        for name, data in images.items():
            (tmp / name).write_bytes(data)
        (tmp / "summary.json").write_text(json.dumps(comp.summary, indent=2, allow_nan=False) + "\n")
        (tmp / "report.html").write_text(_html(comp, images), encoding="utf-8")
        if out.exists():
            raise CompareError(f"{out}: appeared while writing; refusing to overwrite")
        os.rename(tmp, out)
    except OSError as err:
        raise CompareError(f"{out}: cannot write the report: {err}") from err
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return out
