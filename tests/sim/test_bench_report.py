"""The benchmarks' ratio table: each ratio beside its target, ok or SHORT, and which fall short."""

from __future__ import annotations

import io
import math

import pytest
from r2s2r_sim.bench.report import Ratio, print_ratios


def test_a_ratio_meets_its_target_in_its_direction() -> None:
    assert Ratio("speed", 0.95, 0.9).ok
    assert Ratio("speed", 0.9, 0.9).ok
    assert not Ratio("speed", 0.89, 0.9).ok
    assert Ratio("cost", 1.4, 1.5, direction="<=").ok
    assert not Ratio("cost", 1.6, 1.5, direction="<=").ok
    assert Ratio("paced rtf", 0.985, 1.0, tolerance=0.02).ok
    assert not Ratio("paced rtf", 0.97, 1.0, tolerance=0.02).ok
    assert not Ratio("not measured", math.nan, 0.9).ok
    assert not Ratio("not measured", math.nan, 0.9, direction="<=").ok
    with pytest.raises(ValueError, match="direction"):
        Ratio("typo", 1.0, 1.0, direction=">")


def test_the_table_marks_each_ratio_and_the_summary_names_the_short_ones() -> None:
    out = io.StringIO()
    ratios = [
        Ratio("(a) SimWorld.step / mj_step", 0.93, 0.9, figures="93 / 100 steps/s"),
        Ratio("(b) node camera / bare render", 0.5, 0.8),
        Ratio("(x) a cost", 2.5, 2.0, direction="<="),
    ]
    short = print_ratios(ratios, file=out)
    assert [r.name for r in short] == ["(b) node camera / bare render", "(x) a cost"]
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["measure", "figures", "ratio", "target", "ok?"]
    assert (
        lines[1].endswith("  ok") and "0.930" in lines[1] and ">= 0.9" in lines[1] and "93 / 100" in lines[1]
    )
    assert lines[2].endswith("SHORT") and "0.500" in lines[2] and ">= 0.8" in lines[2]
    assert lines[3].endswith("SHORT") and "<= 2" in lines[3]
    assert lines[4] == (
        "SHORT of target: 2 of 3: (b) node camera / bare render 0.500 (target >= 0.8); "
        "(x) a cost 2.500 (target <= 2)"
    )
    assert Ratio("r", 1.0, 0.9).as_dict() == {
        "name": "r",
        "ratio": 1.0,
        "target": 0.9,
        "direction": ">=",
        "ok": True,
    }


def test_all_met_says_so() -> None:
    out = io.StringIO()
    assert print_ratios([Ratio("r", 1.0, 0.9)], file=out) == []
    assert out.getvalue().splitlines()[-1] == "all 1 targets met"
