"""Allowed ranges declared on dataclass fields, and the one check that enforces them.

A config field states its range where it is declared, in the notation its error message and docs use::

    speed: float = within(1.0, "(0, 10]")
    image_width: int = within(640, ">= 32")

:func:`check_fields` (called from ``__post_init__``) then refuses the first field out of its range with
``"<name>: must be <range>, got <value>"``, and a reader of a YAML section takes each field's bounds from
:func:`field_interval` instead of a second table.  A NaN or infinite value is out of every range.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Interval", "check_fields", "field_interval", "within"]

_KEY = "r2s2r.range"
_NUMBER = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?"
_INTERVAL = re.compile(rf"^([\[(])\s*({_NUMBER})\s*,\s*({_NUMBER})\s*([\])])(?:\s+(\S.*))?$")
_HALF_LINE = re.compile(rf"^(>=|>|<=|<)\s*({_NUMBER})(?:\s+(\S.*))?$")


@dataclass(frozen=True)
class Interval:
    """A range of numbers, parsed from ``"[lo, hi]"`` (either end open with a parenthesis) or ``">= lo"``.

    A trailing word is a unit, kept for the message only: ``"(0, 1] m/s"``.
    """

    text: str
    low: float
    high: float
    low_open: bool
    high_open: bool

    @classmethod
    def parse(cls, text: str) -> Interval:
        """Raises ``ValueError`` naming ``text`` if it is not an interval or a half line."""
        m = _INTERVAL.match(text)
        if m:
            return cls(f"in {text}", float(m[2]), float(m[3]), m[1] == "(", m[4] == ")")
        m = _HALF_LINE.match(text)
        if not m:
            raise ValueError(f"range {text!r}: expected e.g. '[0, 1]', '(0, 10] m/s' or '>= 0'")
        op, bound = m[1], float(m[2])
        if op.startswith(">"):
            return cls(text, bound, math.inf, op == ">", True)
        return cls(text, -math.inf, bound, True, op == "<")

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, numbers.Real) or not math.isfinite(value):  # numpy numbers too
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below


def within(default: Any, interval: str) -> Any:
    """A dataclass field with ``default`` whose values must lie in ``interval`` (see :class:`Interval`).

    With a ``None`` default the field is optional: ``None`` (off) passes :func:`check_fields`.
    """
    return dataclasses.field(default=default, metadata={_KEY: Interval.parse(interval)})


def field_interval(cls: type, name: str) -> Interval | None:
    """The range declared on field ``name`` of dataclass ``cls`` or of the nearest base declaring one.

    A subclass that only changes a field's default keeps its base's range.
    """
    for klass in cls.__mro__:
        fld = getattr(klass, "__dataclass_fields__", {}).get(name)
        if fld is not None and _KEY in fld.metadata:
            interval: Interval = fld.metadata[_KEY]
            return interval
    return None


def check_fields(obj: Any, *, error: type[Exception] = ValueError, prefix: str = "") -> None:
    """Refuse the first field of dataclass ``obj`` (in declaration order) outside its declared range.

    Raises:
        error: ``"<prefix><name>: must be <range>, got <value>"``.
    """
    for fld in dataclasses.fields(obj):
        interval = field_interval(type(obj), fld.name)
        value = getattr(obj, fld.name)
        if interval is None or (value is None and fld.default is None):
            continue
        if value not in interval:
            raise error(f"{prefix}{fld.name}: must be {interval.text}, got {value}")
