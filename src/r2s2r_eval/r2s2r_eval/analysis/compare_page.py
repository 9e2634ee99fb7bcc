"""The comparison as a terminal summary and as a report folder (``report.html``, ``summary.json``, PNGs)."""

from __future__ import annotations

import base64
import html
import json
import math
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from r2s2r_eval.analysis.compare import Comparison
from r2s2r_eval.analysis.compare_data import CompareError
from r2s2r_eval.analysis.compare_plots import plot_axes, plot_failure_map, plot_ranking, plot_scatter

__all__ = ["format_summary", "write_report"]

EPISODE_TABLE_ROWS = 200


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
    if summary["targets"]:  # only the targets the user gave (--targets)
        lines += ["", "targets:"]
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


_CSS = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}
th{background:#eee}td.l,th.l{text-align:left}.warn{background:#fff3cd;border:1px solid #e0c060;padding:0.5em}
img{max-width:100%}.fail{color:#b00}.ok{color:#070}pre{background:#f6f6f6;padding:0.5em;overflow-x:auto}"""


def _img(data: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(data).decode()}">'


def _head_html(s: Mapping[str, Any]) -> list[str]:
    """The page's head, the two sources, and the warnings (first, so that none is missed)."""
    e = html.escape
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
    return out


def _targets_html(s: Mapping[str, Any]) -> list[str]:
    """The targets table: measured value, target and verdict per quantity; nothing without targets."""
    if not s["targets"]:
        return []
    e = html.escape
    out = [
        "<h2>Targets</h2><table><tr><th class='l'>quantity</th><th>measured</th><th>target</th>"
        "<th>verdict</th></tr>"
    ]
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
    return out


def _success_html(s: Mapping[str, Any], images: Mapping[str, bytes]) -> list[str]:
    """Success per policy on each side with Wilson intervals, the excluded policies, and their plots."""
    e = html.escape
    conf = round(100 * s["settings"]["confidence"])
    out = [
        f"<h2>Success per policy</h2><table><tr><th class='l'>policy</th><th>sim</th>"
        f"<th>sim {conf}% Wilson</th><th>real</th><th>real {conf}% Wilson</th></tr>"
    ]
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
    return out


def _metrics_html(s: Mapping[str, Any]) -> list[str]:
    """The cross-policy metrics with their bootstrap intervals, or why they were not computed."""
    e = html.escape
    conf = round(100 * s["settings"]["confidence"])
    out = ["<h2>Cross-policy metrics</h2>"]
    if not s["metrics"]:
        out.append("<p>Not computed (fewer than 2 policies on both sides).</p>")
        return out
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
    return out


def _next_trials_html(trials: list[dict[str, Any]]) -> list[str]:
    """The table of real trials worth running next for one policy (empty when there are none)."""
    if not trials:
        return []
    e = html.escape
    names = list(trials[0]["parameters"])
    out = [
        "<p>Real trials worth running next (sim-real disagreement or sim uncertainty):</p>"
        "<table><tr><th>priority</th><th class='l'>reason</th><th>p_sim</th><th>p_real</th>"
        + "".join(f"<th>{e(n)}</th>" for n in names)
        + "<th class='l'>sim episode</th></tr>"
    ]
    for t in trials:
        out.append(
            f"<tr><td>{t['priority']:.2f}</td><td class='l'>{t['reason']}</td>"
            f"<td>{t['p_sim']:.2f}</td>"
            f"<td>{_f(t['p_real'], '.2f')}</td>"
            + "".join(f"<td>{t['parameters'][n]:.4g}</td>" for n in names)
            + f"<td class='l'><code>{e((t['sim_episode_key'] or '')[:12])}</code></td></tr>"
        )
    out.append("</table>")
    return out


def _failures_html(comp: Comparison, images: Mapping[str, bytes]) -> list[str]:
    """Per policy: failure-region agreement, each side's failure rules, its map and next real trials."""
    s = comp.summary
    e = html.escape
    out = []
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
        out += _next_trials_html(f["next_real_trials"])
    return out


def _episodes_html(comp: Comparison) -> list[str]:
    """The episode table, folded and cut at ``EPISODE_TABLE_ROWS`` rows to keep the page light."""
    e = html.escape
    n_ep = len(comp.episodes)
    shown = comp.episodes[:EPISODE_TABLE_ROWS]
    out = [
        f"<h2>Episodes</h2><details><summary>{n_ep} episodes"
        + (f" (first {len(shown)} shown; all in the results files)" if n_ep > len(shown) else "")
        + "</summary><table><tr><th class='l'>side</th><th class='l'>policy</th><th>success</th>"
        "<th class='l'>reason</th><th class='l'>episode key</th></tr>"
    ]
    for side, pol, ok, reason, key in shown:
        out.append(
            f"<tr><td class='l'>{side}</td><td class='l'>{e(pol)}</td><td>{int(ok)}</td>"
            f"<td class='l'>{e(reason)}</td><td class='l'><code>{e(key[:16])}</code></td></tr>"
        )
    out.append("</table></details>")
    return out


def _html(comp: Comparison, images: Mapping[str, bytes]) -> str:
    """The self-contained report page: its sections in reading order, the terminal summary last."""
    s = comp.summary
    out = _head_html(s) + _targets_html(s) + _success_html(s, images) + _metrics_html(s)
    if "axes.png" in images:
        out.append("<h2>Per-axis success</h2>" + _img(images["axes.png"], "per-axis success curves"))
    out += _failures_html(comp, images) + _episodes_html(comp)
    out.append("<h2>Terminal summary</h2><pre>" + html.escape(format_summary(s)) + "</pre></body></html>")
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
    images: dict[str, bytes] = {"scatter.png": plot_scatter(comp.summary)}
    if len(comp.policies) >= 2:
        images["ranking.png"] = plot_ranking(comp.summary)
    if comp.axis_curves:
        images["axes.png"] = plot_axes(comp, comp.summary["settings"]["confidence"])
    for i, plot in enumerate(comp.failure_plots):
        png = plot_failure_map(plot)
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
