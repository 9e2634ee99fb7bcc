"""The variation engine's error and the checks every axis config shares (no other variation import)."""

from __future__ import annotations

import math

__all__ = ["Range", "VariationError", "check_names", "check_nonneg", "check_range", "fail"]

Range = tuple[float, float]


class VariationError(ValueError):
    """A variation config, or a variation applied to a world, is invalid.

    The message names the file (when there is one) and the field at fault, e.g.
    ``"config/variations.yaml: physics.mass_scale: must be > 0, got [0.0, 1.2]"``.
    """


def fail(field: str, msg: str) -> VariationError:
    """The error for ``field`` (named first, so a loader can prefix the file and the axis)."""
    return VariationError(f"{field}: {msg}")


def check_range(field: str, value: Range, *, positive: bool = False, nonneg: bool = False) -> None:
    """Refuse a ``[low, high]`` range that is not finite and ordered (and > 0 or >= 0 when asked)."""
    if len(value) != 2 or not all(math.isfinite(v) for v in value):
        raise fail(field, f"must be [low, high] with finite numbers, got {list(value)}")
    if value[0] > value[1]:
        raise fail(field, f"must be [low, high] with low <= high, got {list(value)}")
    if positive and value[0] <= 0:
        raise fail(field, f"scales must be > 0, got {list(value)}")
    if nonneg and value[0] < 0:
        raise fail(field, f"must be >= 0, got {list(value)}")


def check_nonneg(field: str, value: float) -> None:
    """Refuse a value that is not a finite number >= 0."""
    if not math.isfinite(value) or value < 0:
        raise fail(field, f"must be a finite number >= 0, got {value}")


def check_names(field: str, names: tuple[str, ...], *, allow_empty: bool = True) -> None:
    """Refuse duplicate or empty names (and an empty list unless ``allow_empty``)."""
    if not allow_empty and not names:
        raise fail(field, "must name at least one element")
    if len(set(names)) != len(names):
        raise fail(field, f"duplicate names in {list(names)}")
    if any(not n for n in names):
        raise fail(field, f"names must be non-empty, got {list(names)}")
