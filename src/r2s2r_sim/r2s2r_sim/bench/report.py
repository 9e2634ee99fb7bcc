"""What every ``make bench`` benchmark reports: its ``--out`` option, the JSON writer, and its ratios.

A benchmark declares each ratio it measures with the target it must meet (:class:`Ratio`) and prints them
with :func:`print_ratios`: one table, ``ratio  target  ok/SHORT``, and a line naming those that fall short.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

__all__ = ["Ratio", "add_out_option", "add_world_options", "print_ratios", "write_results"]


def add_out_option(parser: argparse.ArgumentParser) -> None:
    """Add the required ``--out`` (the JSON file to write)."""
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write (its folder is created)")


def add_world_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--world`` (the bundled pick world by default) and ``--variations`` (None: the bundled axes)."""
    parser.add_argument("--world", default="tabletop-pick-v1", help="bundled world id or world folder")
    parser.add_argument(
        "--variations", type=Path, default=None, help="variation axes YAML (default: config/variations.yaml)"
    )


def write_results(results: Mapping[str, Any], out: Path) -> None:
    """Write ``results`` as indented JSON to ``out`` (creating its folder, replacing the file) and say so."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(f"wrote {out}")


@dataclass(frozen=True)
class Ratio:
    """A measured ratio and the target it must meet.

    Attributes:
        name: what is compared, e.g. ``"(a) SimWorld.step / mj_step"``.
        ratio: the measured ratio (NaN: not measured, which falls short).
        target: the bound it must meet.
        direction: ``">="`` (at least ``target``, a speed-up) or ``"<="`` (at most, a cost).
        tolerance: how far past the bound still counts as met (e.g. a paced real-time factor, which
            cannot exceed ~1.0).
        figures: the figures behind the ratio, printed beside it (optional).
    """

    name: str
    ratio: float
    target: float
    direction: str = ">="
    tolerance: float = 0.0
    figures: str = ""

    def __post_init__(self) -> None:
        if self.direction not in (">=", "<="):
            raise ValueError(f"Ratio {self.name!r}: direction must be '>=' or '<=', got {self.direction!r}")

    @property
    def ok(self) -> bool:
        """The ratio meets its target (within ``tolerance``)."""
        if self.direction == ">=":
            return self.ratio >= self.target - self.tolerance
        return self.ratio <= self.target + self.tolerance

    def as_dict(self) -> dict[str, Any]:
        """The ratio as a JSON-ready mapping (with ``ok``)."""
        return {
            "name": self.name,
            "ratio": self.ratio,
            "target": self.target,
            "direction": self.direction,
            "ok": self.ok,
        }


def print_ratios(ratios: Iterable[Ratio], *, file: TextIO | None = None) -> list[Ratio]:
    """Print ``ratios`` as a table, each beside its target, then which fall short; return those.

    The table's columns are the name, the figures, ``ratio``, ``target`` (with its direction) and ``ok`` or
    ``SHORT``; the summary line names every ratio that falls short, or says that all targets are met.
    """
    rows = list(ratios)
    out = file if file is not None else sys.stdout
    width = max([len("measure"), *(len(r.name) for r in rows)])
    fig_width = max([len("figures"), *(len(r.figures) for r in rows)])
    print(f"{'measure':{width}}  {'figures':{fig_width}}  {'ratio':>7}  {'target':>8}  ok?", file=out)
    for r in rows:
        target = f"{r.direction} {r.target:g}"
        mark = "ok" if r.ok else "SHORT"
        print(f"{r.name:{width}}  {r.figures:{fig_width}}  {r.ratio:7.3f}  {target:>8}  {mark}", file=out)
    short = [r for r in rows if not r.ok]
    if short:
        names = "; ".join(f"{r.name} {r.ratio:.3f} (target {r.direction} {r.target:g})" for r in short)
        print(f"SHORT of target: {len(short)} of {len(rows)}: {names}", file=out)
    else:
        print(f"all {len(rows)} targets met", file=out)
    return short
