"""The transfer study's report as a Markdown table (``report.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["format_report"]


def _cell(r: dict[str, Any] | None) -> str:
    """One evaluation as successes/episodes = rate [Wilson 95 %]."""
    if not r:
        return "-"
    lo, hi = r["ci95"]
    return f"{r['successes']}/{r['n']} = {100 * r['rate']:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]"


def format_report(report: dict[str, Any]) -> str:
    """Markdown table of the report; the yardstick world is the bundled one, or the ``--world`` given."""
    world = report.get("config", {}).get("world")
    yardstick = "bundled" if world is None else Path(world).name
    lines = [
        "| policy | demos (episodes/frames) | train (s) | emulated hardware | hardware, operator changes | "
        f"sim, own world | sim, {yardstick} + six axes |",
        "|---|---|---|---|---|---|---|",
    ]
    learner = report.get("config", {}).get("learner", "cnn")
    for name, e in report.get("ablations", {}).items():
        d, t = e.get("dataset", {}), e.get("train", {})
        lines.append(
            f"| {learner}/{name} | {d.get('episodes', '-')}/{d.get('frames', '-')} | "
            f"{t.get('wall_s', float('nan')):.0f} | {_cell(e.get('real'))} | "
            f"{_cell(e.get('real_operator'))} | {_cell(e.get('sim_own'))} | {_cell(e.get('sim'))} |"
        )
    if "reference" in report:
        r = report["reference"]
        lines.append(
            f"| reference expert | - | - | {_cell(r.get('real'))} | {_cell(r.get('real_operator'))} | - | "
            f"{_cell(r.get('sim'))} |"
        )
    lines.append("\nSuccesses / episodes = rate [95 % Wilson interval].")
    return "\n".join(lines) + "\n"
