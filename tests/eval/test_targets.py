"""Targets files (`--targets`): the loader's checks, grading, and `r2s2r metrics` with and without them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from r2s2r_eval.analysis.targets import Target, TargetsError, grade, load_targets

DATA = Path(__file__).resolve().parents[1] / "data"
EXAMPLE = DATA / "sim_real_example.csv"
SHIPPED = Path(__file__).resolve().parents[2] / "config" / "compare_targets.yaml"


def test_shipped_targets_are_the_projects_bar():
    assert load_targets(SHIPPED) == (
        Target(metric="pearson", min=0.95),
        Target(metric="mmrv", max=0.03),
        Target(metric="failure_prediction_accuracy", min=0.85),
        Target(metric="failure_prediction_balanced_accuracy", min=0.75),
    )


def test_metrics_without_targets_grades_nothing(r2s2r_cli):
    rc, out, err = r2s2r_cli("metrics", str(EXAMPLE), "--resamples", "50")
    assert rc == 0, err
    data = json.loads(out)
    assert "targets" not in data and '"met"' not in out


def test_metrics_with_targets_grades_the_known_table(r2s2r_cli):
    # tests/data/sim_real_example.csv: pearson 0.94333, MMRV 0.02, Spearman 0.8, Kendall 0.6667 (by hand
    # in test_metrics_cli.py); failure prediction is not measured from a rates table.
    rc, out, err = r2s2r_cli("metrics", str(EXAMPLE), "--resamples", "50", "--targets", str(SHIPPED))
    assert rc == 0, err
    t = json.loads(out)["targets"]
    assert t["pearson"]["target"] == ">= 0.95" and t["pearson"]["met"] is False
    assert t["pearson"]["measured"] == pytest.approx(0.94333, abs=1e-5)
    assert t["mmrv"]["target"] == "<= 0.03" and t["mmrv"]["met"] is True
    assert t["failure_prediction_accuracy"] == {
        "target": ">= 0.85",
        "min": 0.85,
        "max": None,
        "measured": None,
        "met": None,
    }


def test_bad_targets_file_exits_2_naming_the_field(tmp_path, r2s2r_cli):
    bad = tmp_path / "t.yaml"
    bad.write_text("spearman: {min: 0.9, max: 0.5}\n")
    rc, out, err = r2s2r_cli("metrics", str(EXAMPLE), "--targets", str(bad))
    assert rc == 2 and out == ""
    assert f"{bad}: spearman: min 0.9 is above max 0.5" in err


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", r"t.yaml: expected a mapping of metric to bounds.*an empty file"),
        ("- pearson\n", r"t.yaml: expected a mapping of metric to bounds.*got list"),
        ("pearson: 0.95\n", r"t.yaml: pearson: expected \{min: X\}, \{max: X\} or both: got 0.95"),
        ("pearson: {}\n", r"t.yaml: pearson: needs a bound"),
        ("recall: {min: 0.9}\n", r"t.yaml: recall: unknown metric; expected one of pearson, mmrv, spearman"),
        ("mmrv: {max: 0.05, below: 1}\n", r"t.yaml: mmrv.below: unknown bound; expected min and/or max"),
        ("mmrv: {max: yes}\n", r"t.yaml: mmrv.max: must be a number: got True"),
        ("mmrv: {max: .nan}\n", r"t.yaml: mmrv.max: must be in \[0, 1\]"),
        ("mmrv: {max: -0.1}\n", r"t.yaml: mmrv.max: must be in \[0, 1\] \(the metric's range\): got -0.1"),
        ("kendall: {min: 1, max: 0}\n", r"t.yaml: kendall: min 1 is above max 0: never met"),
        ("pearson: {min: [0.9\n", r"t.yaml: not valid YAML"),
    ],
)
def test_bad_targets_files(tmp_path, text, match):
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(TargetsError, match=match):
        load_targets(path)


def test_missing_targets_file(tmp_path):
    with pytest.raises(TargetsError, match="nope.yaml: targets file not found"):
        load_targets(tmp_path / "nope.yaml")


def test_target_checks_itself_and_grades():
    with pytest.raises(TargetsError, match="target: accuracy: unknown metric"):
        Target(metric="accuracy", min=0.5)
    both = Target(metric="pearson", min=0.5, max=0.9)
    assert both.text == "in [0.5, 0.9]"
    assert [both.met(v) for v in (0.5, 0.9, 0.49, 0.91, None, math.nan)] == [
        True,
        True,
        False,
        False,
        None,
        None,
    ]
    graded = grade([both, Target(metric="mmrv", max=0.1)], {"pearson": math.nan})
    assert graded["pearson"]["measured"] is None and graded["pearson"]["met"] is None
    assert graded["mmrv"]["measured"] is None  # not measured: n/a, not a verdict
