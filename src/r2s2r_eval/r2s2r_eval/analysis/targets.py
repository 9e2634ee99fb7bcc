"""Targets a sim-vs-real comparison is graded against: read from a YAML file, none unless one is given.

A targets file maps a metric to its bound(s)::

    pearson: {min: 0.95}                      # met when pearson >= 0.95
    mmrv: {max: 0.03}                         # met when mmrv <= 0.03
    failure_prediction_accuracy: {min: 0.85}

Which figure is good enough depends on the user's task and budget, so r2s2r sets no target itself; the
project's own studies pass ``config/compare_targets.yaml``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from r2s2r_sim.ranges import Interval
from r2s2r_sim.yaml_files import read_yaml

__all__ = ["TARGET_METRICS", "Target", "TargetsError", "grade", "load_targets"]

TARGET_METRICS: Mapping[str, Interval] = {
    "pearson": Interval.parse("[-1, 1]"),
    "mmrv": Interval.parse("[0, 1]"),
    "spearman": Interval.parse("[-1, 1]"),
    "kendall": Interval.parse("[-1, 1]"),
    "failure_prediction_accuracy": Interval.parse("[0, 1]"),
    "failure_prediction_balanced_accuracy": Interval.parse("[0, 1]"),
    "failure_prediction_kappa": Interval.parse("[-1, 1]"),
}
"""The metrics a target may bound, with the range of their values: a bound outside it is a typo."""


class TargetsError(ValueError):
    """A targets file or target that cannot be used: unreadable, an unknown metric, a bad bound."""


@dataclass(frozen=True, kw_only=True)
class Target:
    """A bound on one metric: met when ``min <= value`` and ``value <= max`` (either may be absent).

    Attributes:
        metric: a key of :data:`TARGET_METRICS`.
        min: lowest acceptable value, or None.
        max: highest acceptable value, or None.
    """

    metric: str
    min: float | None = None
    max: float | None = None

    def __post_init__(self) -> None:
        """Check the metric and the bounds; the message names the metric and the bound."""
        _check(self.metric, {"min": self.min, "max": self.max}, where="target")

    @property
    def text(self) -> str:
        """The bound as read in a report: ``>= 0.95``, ``<= 0.03`` or ``in [0.9, 1.0]``."""
        if self.min is not None and self.max is not None:
            return f"in [{self.min}, {self.max}]"
        return f">= {self.min}" if self.min is not None else f"<= {self.max}"

    def met(self, value: float | None) -> bool | None:
        """Whether ``value`` meets the target; None when the value is undefined or was not measured."""
        if value is None or not math.isfinite(value):
            return None
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)


def _check(metric: object, bounds: Mapping[str, object], *, where: str) -> None:
    """Refuse an unknown metric, a bound that is not a number in the metric's range, or min above max."""
    if metric not in TARGET_METRICS:
        raise TargetsError(f"{where}: {metric}: unknown metric; expected one of {', '.join(TARGET_METRICS)}")
    interval = TARGET_METRICS[str(metric)]
    given = {k: v for k, v in bounds.items() if v is not None}
    if not given:
        raise TargetsError(f"{where}: {metric}: needs a bound: {{min: X}}, {{max: X}} or both")
    for key, value in given.items():
        # bool is a number to Python, but `min: yes` is not a bound anyone meant.
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TargetsError(f"{where}: {metric}.{key}: must be a number: got {value!r}")
        if value not in interval:
            raise TargetsError(
                f"{where}: {metric}.{key}: must be {interval.text} (the metric's range): got {value}"
            )
    if "min" in given and "max" in given and given["min"] > given["max"]:  # type: ignore[operator]
        raise TargetsError(f"{where}: {metric}: min {given['min']} is above max {given['max']}: never met")


def load_targets(path: str | Path) -> tuple[Target, ...]:
    """Read a targets file (see the module docstring), in the file's order.

    Raises:
        TargetsError: missing, oversized or invalid YAML; not a non-empty mapping; an unknown metric; a
            bound key other than ``min``/``max``; a bound that is not a number in the metric's range; min
            above max. The message names the file and the field.
    """
    source = Path(path)
    data = read_yaml(source, TargetsError, kind="targets file").data
    if not isinstance(data, dict) or not data:
        raise TargetsError(
            f"{source}: expected a mapping of metric to bounds, e.g. 'pearson: {{min: 0.95}}': "
            f"got {type(data).__name__ if data is not None else 'an empty file'}"
        )
    targets = []
    for metric, spec in data.items():
        if not isinstance(spec, dict):
            raise TargetsError(f"{source}: {metric}: expected {{min: X}}, {{max: X}} or both: got {spec!r}")
        for key in spec:
            if key not in ("min", "max"):
                raise TargetsError(f"{source}: {metric}.{key}: unknown bound; expected min and/or max")
        _check(metric, spec, where=str(source))
        targets.append(Target(metric=str(metric), min=_float(spec.get("min")), max=_float(spec.get("max"))))
    return tuple(targets)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def grade(targets: Sequence[Target], measured: Mapping[str, float | None]) -> dict[str, dict[str, Any]]:
    """Each target beside its measured value and whether it is met (JSON-ready, in the targets' order).

    A metric missing from ``measured`` (not computed by this command) or undefined is ``n/a``
    (``met: None``), never a verdict.
    """
    out = {}
    for t in targets:
        value = measured.get(t.metric)
        value = None if value is None or not math.isfinite(value) else float(value)
        out[t.metric] = {"target": t.text, "min": t.min, "max": t.max, "measured": value, "met": t.met(value)}
    return out
