"""Per-task study settings: every family loads, and ``r2s2r closed-loop --task`` picks a task's settings."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from r2s2r_eval.policy import load_policy
from r2s2r_eval.studies import closed_loop
from r2s2r_eval.studies.task_studies import TASK_STUDIES, TaskStudy, task_study
from r2s2r_sim.hardware.profile import load_hardware_profile
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.worlds import WORLDS


@pytest.mark.parametrize("task", sorted(TASK_STUDIES))
def test_every_family_member_loads_for_its_world(task: str) -> None:
    study = TASK_STUDIES[task]
    assert study.world in WORLDS and load_world_config(WORLDS[study.world]).task is not None
    assert len(study.family) >= 6
    assert len({spec.canonical() for spec in study.family}) == len(study.family)  # all different
    for spec in study.family:
        load_policy(spec.name, spec.params)
    assert study.variations.is_file()


def test_pick_study_is_the_closed_loop_default() -> None:
    assert closed_loop.FAMILY == task_study("pick").family
    assert closed_loop.SMALL_FAMILY == task_study("pick").small_family


def test_study_refuses_a_small_family() -> None:
    with pytest.raises(ValueError, match="family needs at least 6 policies, got 1"):
        TaskStudy(
            task="x",
            world="tabletop-push-v1",
            family=task_study("push").family[:1],
            small_family=(),
            profile=None,
        )
    with pytest.raises(
        ValueError, match=r"unknown task 'sort' \(tasks: \['drawer', 'pick', 'push', 'stack'\]\)"
    ):
        task_study("sort")


def _ns(tmp_path: Path, task: str) -> argparse.Namespace:
    return argparse.Namespace(
        out=tmp_path / "out",
        task=task,
        profile=None,
        small=True,
        trials=None,
        workers=1,
        quick_capture=False,
        max_steps=None,
    )


@pytest.mark.parametrize("task", sorted(TASK_STUDIES))
def test_every_study_profile_is_written_for_its_world(task: str) -> None:
    study = TASK_STUDIES[task]
    assert study.profile is not None
    assert study.world in load_hardware_profile(study.profile).worlds


def test_closed_loop_unknown_task_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert closed_loop.cmd_closed_loop(_ns(tmp_path, "sort")) == 2
    assert "unknown task 'sort'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_closed_loop_task_push_runs_the_push_study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Argument level: what ``r2s2r closed-loop --task push --quick-capture --trials 3`` would run."""
    seen: list[closed_loop.ClosedLoopConfig] = []
    monkeypatch.setattr(closed_loop, "run_closed_loop", seen.append)
    ap = argparse.ArgumentParser()
    closed_loop.COMMAND.add_arguments(ap)
    ns = ap.parse_args(["--out", str(tmp_path), "--task", "push", "--quick-capture", "--trials", "3"])
    assert closed_loop.cmd_closed_loop(ns) == 0
    study = task_study("push")
    (cfg,) = seen
    assert (cfg.world, cfg.policies, cfg.trials, cfg.quick_capture) == (study.world, study.family, 3, True)
    assert cfg.profile == study.profile and cfg.variations == study.variations
    assert cfg.max_steps == 300 == study.max_steps  # the push task's 30 s: a slower unit still finishes
    ns = ap.parse_args(["--out", str(tmp_path), "--task", "pick", "--max-steps", "250"])
    assert closed_loop.cmd_closed_loop(ns) == 0
    assert (seen[1].world, seen[1].max_steps, task_study("pick").max_steps) == ("tabletop-pick-v1", 250, 200)
