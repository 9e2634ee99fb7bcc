"""The evaluator's parameter ranges: one declaration, enforced by the config and sent to ROS."""

from __future__ import annotations

import dataclasses

import pytest
from r2s2r_eval.episodes.evaluation import PARAMETER_DESCRIPTIONS, EvaluatorConfig, EvaluatorError

BOUNDED = sorted(name for name, (_text, bounds) in PARAMETER_DESCRIPTIONS.items() if bounds is not None)


def test_every_numeric_parameter_has_a_range():
    numeric = {
        f.name
        for f in dataclasses.fields(EvaluatorConfig)
        if isinstance(f.default, int | float) and not isinstance(f.default, bool)
    }
    assert numeric == set(BOUNDED)


@pytest.mark.parametrize("name", BOUNDED)
def test_the_ros_range_ends_are_accepted_and_just_outside_refused(name):
    low, high = PARAMETER_DESCRIPTIONS[name][1]
    kind = type(getattr(EvaluatorConfig(), name))
    for value in (low, high):
        assert getattr(EvaluatorConfig(**{name: kind(value)}), name) == kind(value)
    step = 1 if kind is int else 1e-3
    for value in (kind(low) - step, kind(high) + step):
        with pytest.raises(EvaluatorError, match=rf"^parameter {name}: must be .*got {value}"):
            EvaluatorConfig(**{name: value})


def test_a_nan_timeout_is_refused_naming_the_parameter():
    with pytest.raises(EvaluatorError, match="parameter episode_timeout_s"):
        EvaluatorConfig(episode_timeout_s=float("nan"))
