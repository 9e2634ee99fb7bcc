"""Field ranges (r2s2r_sim.ranges): the notation, the check, and a subclass keeping its base's range."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from r2s2r_sim.ranges import Interval, check_fields, field_interval, within


@dataclass(frozen=True, kw_only=True)
class _Base:
    speed: float = within(1.0, "(0, 10] m/s")
    count: int = within(3, ">= 1")
    offset: float | None = within(None, "[-0.5, 0.5)")
    label: str = "x"

    def __post_init__(self) -> None:
        check_fields(self, error=KeyError, prefix="base.")


@dataclass(frozen=True, kw_only=True)
class _Child(_Base):
    count: int = 5  # a new default, the base's range


@pytest.mark.parametrize(
    ("text", "low", "high", "low_open", "high_open", "message"),
    [
        ("[0, 1]", 0.0, 1.0, False, False, "in [0, 1]"),
        ("(0, 1e5]", 0.0, 1e5, True, False, "in (0, 1e5]"),
        ("[-0.05, .1)", -0.05, 0.1, False, True, "in [-0.05, .1)"),
        (">= 32", 32.0, math.inf, False, True, ">= 32"),
        ("> 0", 0.0, math.inf, True, True, "> 0"),
        ("<= 2 s", -math.inf, 2.0, True, False, "<= 2 s"),
    ],
)
def test_interval_notation(text, low, high, low_open, high_open, message) -> None:
    iv = Interval.parse(text)
    assert (iv.low, iv.high, iv.low_open, iv.high_open, iv.text) == (low, high, low_open, high_open, message)


def test_interval_membership_ends_and_non_finite() -> None:
    iv = Interval.parse("(0, 1]")
    assert 1.0 in iv and 0.5 in iv and 0.0 not in iv and 1.5 not in iv
    assert math.nan not in iv and math.inf not in Interval.parse(">= 0") and "1" not in iv
    assert np.float32(0.5) in iv and np.int64(1) in iv and np.int64(2) not in iv


@pytest.mark.parametrize("text", ["0..1", "[1, 2", "in [0, 1]", ">= x", ""])
def test_bad_notation_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="expected e.g."):
        within(0.0, text)


def test_check_fields_names_the_field_its_range_and_the_value() -> None:
    _Base()
    _Base(offset=0.49)
    with pytest.raises(KeyError, match=r"base\.speed: must be in \(0, 10\] m/s, got 0\.0"):
        _Base(speed=0.0)
    with pytest.raises(KeyError, match=r"base\.speed: must be in \(0, 10\] m/s, got nan"):
        _Base(speed=math.nan)
    with pytest.raises(KeyError, match=r"base\.offset: must be in \[-0\.5, 0\.5\), got 0\.5"):
        _Base(offset=0.5)
    with pytest.raises(KeyError, match=r"base\.count: must be >= 1, got 0"):
        _Base(count=0)
    with pytest.raises(KeyError, match=r"base\.count: must be >= 1, got None"):
        _Base(count=None)  # type: ignore[arg-type]  # only a field that defaults to None may be None


def test_a_subclass_that_changes_a_default_keeps_the_range() -> None:
    assert _Child().count == 5
    assert field_interval(_Child, "count") == Interval.parse(">= 1")
    assert field_interval(_Child, "label") is None
    with pytest.raises(KeyError, match=r"base\.count: must be >= 1, got 0"):
        _Child(count=0)
