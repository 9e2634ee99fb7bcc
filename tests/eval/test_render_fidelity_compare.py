"""The render-fidelity study's verdict: changed outcomes, not overlapping intervals, decide equivalence."""

from __future__ import annotations

import json

import pytest
from r2s2r_eval.analysis.metrics import wilson_interval
from r2s2r_eval.studies.render_fidelity import compare_to_baseline, main


def _outcome(success: list[bool]) -> dict:
    k, n = sum(success), len(success)
    return {"success_by_episode": success, "rate": k / n, "wilson95": list(wilson_interval(k, n))}


def test_same_outcomes_episode_for_episode_are_equivalent():
    success = [True] * 160 + [False] * 40
    verdict = compare_to_baseline(_outcome(success), _outcome(list(success)))
    assert verdict == {"changed_outcomes": 0, "rates_within_each_others_interval": True, "equivalent": True}


def test_swapped_outcomes_with_equal_rates_are_not_equivalent():
    base = [True] * 160 + [False] * 40
    arm = list(base)
    arm[0], arm[199] = False, True  # one success lost, another gained: the same rate
    verdict = compare_to_baseline(_outcome(base), _outcome(arm))
    assert verdict["changed_outcomes"] == 2
    assert verdict["rates_within_each_others_interval"]
    assert not verdict["equivalent"]


def test_a_rate_outside_the_baselines_interval_is_reported():
    base = [True] * 180 + [False] * 20
    arm = [True] * 120 + [False] * 80
    verdict = compare_to_baseline(_outcome(base), _outcome(arm))
    assert verdict["changed_outcomes"] == 60
    assert not verdict["rates_within_each_others_interval"]
    assert not verdict["equivalent"]


def test_a_policy_for_another_task_is_refused_before_any_frame(tmp_path, capsys):
    out = tmp_path / "rf"
    with pytest.raises(SystemExit) as exc:
        main(["--world", "tabletop-drawer-v1", "--policy", "reference", "--pixels-only", "--out", str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "'drawer'" in err and "drawer_reference" in err, err
    assert not out.exists()


def test_auto_draws_the_worlds_reference_policy_in_its_own_variations(tmp_path):
    out = tmp_path / "rf"
    argv = ["--world", "tabletop-drawer-v1", "--policy", "auto", "--pixels-only", "--image-episodes", "1"]
    assert main([*argv, "--arm", "fast/camera", "--arm", "fast/policy", "--out", str(out)]) in (0, None)
    report = json.loads((out / "report.json").read_text())
    assert report["policy"] == "drawer_reference"
    diff = report["pixel_differences_vs_baseline"]["fast/policy"]
    assert 0.0 <= diff["mean"] <= 255.0
