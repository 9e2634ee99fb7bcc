"""The closed loop's summary as a terminal table: per-policy rates, the metrics beside their targets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["format_closed_loop"]


def _fmt_rate(d: dict[str, Any]) -> str:
    return f"{d['success_rate']:.2f} [{d['wilson_low']:.2f}, {d['wilson_high']:.2f}] n={d['trials']}"


def _iv(m: dict[str, Any]) -> str:
    f = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
    return f"{f(m['value'])} [{f(m['low'])}, {f(m['high'])}]"


def _verdict(side: dict[str, Any], name: str) -> str:
    """``met``, ``NOT met``, ``n/a`` (undefined value), or nothing when the targets file sets no bound."""
    if name not in side["targets"]:
        return ""
    return {True: "met", False: "NOT met", None: "n/a"}[side["targets"][name]["met"]]


def format_closed_loop(s: dict[str, Any]) -> str:
    """The summary as a terminal table."""
    width = max(len("policy"), *(len(p["policy"]) for p in s["policies"]))
    cols = ("real (emulated hw) [95% Wilson]", "sim (reconstructed)", "baseline (bundled)")
    lines = [f"{'policy':<{width}}  {cols[0]:<32}  {cols[1]:<32}  {cols[2]}"]
    for p in s["policies"]:
        base = _fmt_rate(p["baseline"]) if p["baseline"] else "n/a"
        lines.append(f"{p['policy']:<{width}}  {_fmt_rate(p['real']):<32}  {_fmt_rate(p['sim']):<32}  {base}")
    r, b = s["real_vs_reconstructed"], s["real_vs_bundled"]
    lines += [
        "",
        f"{'metric':<28} {'target':<8} {'reconstructed [95% bootstrap]':<40} bundled [95% bootstrap]",
    ]
    for name in ("pearson", "mmrv"):
        cells = [f"{_iv(side[name])} {_verdict(side, name)}" for side in (r, b)]
        lines.append(f"{name:<28} {s['targets'].get(name, '-'):<8} {cells[0]:<40} {cells[1]}")
    for name, title in (
        ("failure_prediction_accuracy", "failure prediction accuracy"),
        ("failure_prediction_constant_guess", "  (constant-guess accuracy)"),
        ("failure_prediction_balanced_accuracy", "  balanced accuracy"),
        ("failure_prediction_kappa", "  Cohen's kappa"),
        ("failure_prediction_tree_accuracy", "  sim-tree accuracy (sweep)"),
        ("failure_prediction_tree_constant_guess", "  (its constant guess)"),
    ):
        cells = [
            ("n/a" if side.get(name) is None else format(side[name], ".3f")) + f" {_verdict(side, name)}"
            for side in (r, b)
        ]
        target = s["targets"].get(name, "-")
        lines.append(f"{title:<28} {target:<8} {cells[0]:<40} {cells[1]}")
    gaps = f"{r['mean_abs_success_gap']:.3f}"
    lines.append(f"{'mean |sim - real| success':<28} {'-':<8} {gaps:<40} {b['mean_abs_success_gap']:.3f}")
    lines += ["", "bundled world (no reconstruction) against the reconstructed one, worse by:"]
    for key, d in s["bundled_vs_reconstructed"].items():
        v = d["bundled_worse_by"]
        lines.append(
            f"  {key:<28} {'n/a' if v is None else f'{v:+.3f}'}  (positive: the bundled world is worse)"
        )
    lines += ["", "wall: " + ", ".join(f"{k} {v:.0f} s" for k, v in s["wall_s"].items())]
    if "episodes_run_now" in s:
        ran = ", ".join(f"{k} {v}" for k, v in s["episodes_run_now"].items())
        lines.append(f"episodes run now (the rest reused from {Path('work')}/): {ran}")
    return "\n".join(lines)
