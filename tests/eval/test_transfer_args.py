"""``r2s2r transfer --task``: the task picks the world, variations, expert and reference row (no training)."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="the transfer study's training needs PyTorch (torch==2.13.0 CPU)")

from r2s2r_eval.learning.demos import DemoConfig, DemoError  # noqa: E402
from r2s2r_eval.studies import transfer  # noqa: E402
from r2s2r_eval.studies.task_studies import task_study  # noqa: E402
from r2s2r_sim.paths import config_dir  # noqa: E402
from r2s2r_sim.worlds import world_path  # noqa: E402


def _parse(*argv: str) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    transfer.COMMAND.add_arguments(ap)
    return ap.parse_args(list(argv))


def _config_of(monkeypatch: pytest.MonkeyPatch, *argv: str) -> transfer.TransferConfig:
    """The config ``r2s2r transfer ARGV`` would run, caught before any work."""
    seen: dict[str, Any] = {}

    def fake_run(out: Path, cfg: transfer.TransferConfig, **kw: Any) -> dict[str, Any]:
        seen["cfg"], seen["out"] = cfg, out
        raise SystemExit(0)

    monkeypatch.setattr(transfer, "run_transfer", fake_run)
    with pytest.raises(SystemExit):
        transfer.cmd_transfer(_parse(*argv))
    return seen["cfg"]


def test_task_defaults_to_pick(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cfg = _config_of(monkeypatch, "--out", str(tmp_path), "--small")
    assert cfg.task == "pick" and cfg.expert == "privileged"


def test_task_push_with_its_reference_expert(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cfg = _config_of(
        monkeypatch, "--out", str(tmp_path), "--task", "push", "--expert", "reference", "--small"
    )
    assert (cfg.task, cfg.expert, cfg.demos) == ("push", "reference", transfer.SMALL.demos)


def test_task_push_with_its_privileged_expert(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cfg = _config_of(monkeypatch, "--out", str(tmp_path), "--task", "push", "--small")
    assert (cfg.task, cfg.expert) == ("push", "privileged")


def test_privileged_expert_refused_for_other_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("--out", str(tmp_path / "out"), "--task", "drawer", "--expert", "privileged")
    assert transfer.cmd_transfer(_parse(*argv)) == 2
    err = capsys.readouterr().err
    assert "task 'drawer': the privileged experts demonstrate pick and push only" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("task", ["stack", "drawer"])
def test_tasks_without_a_privileged_expert_default_to_their_reference(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, task: str
) -> None:
    cfg = _config_of(monkeypatch, "--out", str(tmp_path), "--task", task)
    assert (cfg.task, cfg.expert) == (task, "reference")


def test_the_drawer_defaults_to_the_recipe_that_sees_time(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The drawer's phases are told apart by time: its study trains with the time and the image features."""
    pick = _config_of(monkeypatch, "--out", str(tmp_path))
    drawer = _config_of(monkeypatch, "--out", str(tmp_path), "--task", "drawer")
    assert (pick.time_input, pick.head_features) == (False, False)
    assert (drawer.time_input, drawer.head_features, drawer.teacher_forcing_m) == (True, True, 0.0)
    assert (drawer.steps, drawer.max_steps) == (3000, task_study("drawer").max_steps)
    # Each part of the recipe can be turned off (or on for pick) from the command line.
    old = _config_of(monkeypatch, "--out", str(tmp_path), "--task", "drawer", "--no-time-input")
    assert (old.time_input, old.head_features) == (False, True)
    seeing = _config_of(monkeypatch, "--out", str(tmp_path), "--head-features")
    assert (seeing.task, seeing.head_features, seeing.teacher_forcing_m) == ("pick", True, 0.0)
    # A CI-sized run keeps its tiny sizes whatever the task's recipe says.
    small = _config_of(monkeypatch, "--out", str(tmp_path), "--task", "drawer", "--small")
    assert (small.steps, small.max_steps, small.demos) == (
        transfer.SMALL.steps,
        transfer.SMALL.max_steps,
        transfer.SMALL.demos,
    )
    assert small.time_input and small.expert == "reference"


def test_unknown_task_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parse("--task", "sort")
    assert "invalid choice: 'sort'" in capsys.readouterr().err
    with pytest.raises(
        ValueError, match=r"unknown task 'sort' \(tasks: \['drawer', 'pick', 'push', 'stack'\]\)"
    ):
        transfer.TransferConfig(task="sort")


def test_demonstrations_by_a_tasks_reference_policy() -> None:
    name = task_study("push").family[0].name
    DemoConfig(world="tabletop-push-v1", expert_kind="reference", expert_policy=name)
    with pytest.raises(DemoError, match="expert_policy: .* but expert_kind is 'privileged'"):
        DemoConfig(world="tabletop-push-v1", expert_policy=name)


def test_run_transfer_uses_the_tasks_world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The first stage of a push run is its demonstrations in the push world, by the push expert."""
    seen: list[DemoConfig] = []

    def fake_collect(data: Path, demo_cfg: DemoConfig, **kw: Any) -> list[Path]:
        seen.append(demo_cfg)
        raise SystemExit(0)

    monkeypatch.setattr(transfer, "collect_sharded", fake_collect)
    cfg = transfer.TransferConfig(task="push", expert="reference", ablations=("six_axes",))
    with pytest.raises(SystemExit):
        transfer.run_transfer(tmp_path, cfg, log=lambda _m: None)
    study = task_study("push")
    assert seen[0].world == study.world and seen[0].variations == study.variations
    assert seen[0].expert_policy == study.family[0].name
    seen.clear()
    cfg = transfer.TransferConfig(task="push", ablations=("six_axes",))
    with pytest.raises(SystemExit):
        transfer.run_transfer(tmp_path / "privileged", cfg, log=lambda _m: None)
    assert (seen[0].world, seen[0].expert_kind, seen[0].expert_policy) == (study.world, "privileged", None)


def test_each_stage_stores_its_results_and_wall_time_and_resumes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Demonstrations and perception frames are stored with their wall time and not run again on resume."""
    import json

    calls: list[str] = []

    def fake_collect(data: Path, demo_cfg: DemoConfig, **kw: Any) -> list[Path]:
        calls.append("demos")
        shard = data / "shard-0"
        (shard / "meta").mkdir(parents=True)
        (shard / "meta/info.json").write_text('{"total_episodes": 3, "total_frames": 30}', encoding="utf-8")
        (shard / "meta/r2s2r_attempts.jsonl").write_text("{}\n{}\n{}\n{}\n", encoding="utf-8")
        return [shard]

    def fake_render(out: Path, pf_cfg: Any, **kw: Any) -> list[Path]:
        calls.append("frames")
        return [out / "shard-0"]

    def stop(*args: Any, **kw: Any) -> None:
        raise SystemExit(0)

    monkeypatch.setattr(transfer, "collect_sharded", fake_collect)
    monkeypatch.setattr(transfer, "render_sharded", fake_render)
    monkeypatch.setattr(transfer, "validate_v3_dataset", lambda d: [])
    monkeypatch.setattr(transfer, "train", stop)
    cfg = transfer.TransferConfig(ablations=("six_axes",), perception_worlds=2, perception_per_world=3)
    for _ in range(2):
        with pytest.raises(SystemExit):
            transfer.run_transfer(tmp_path, cfg, log=lambda _m: None)
    assert calls == ["demos", "frames"]  # the second run resumed both stages from the report
    entry = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["ablations"]["six_axes"]
    dataset, frames = entry["dataset"], entry["perception"]
    assert list(dataset) == [
        "paths",
        "episodes",
        "frames",
        "attempts",
        "action_noise",
        "valid",
        "problems",
        "wall_s",
    ]
    assert (dataset["episodes"], dataset["frames"], dataset["attempts"], dataset["valid"]) == (3, 30, 4, True)
    assert list(frames) == ["paths", "frames", "wall_s"] and frames["frames"] == 6
    assert dataset["wall_s"] >= 0 and frames["wall_s"] >= 0


@pytest.mark.parametrize("task", sorted(transfer.TASK_STUDIES))
@pytest.mark.parametrize("small", [False, True])
def test_every_tasks_defaults_make_a_valid_config(task: str, small: bool) -> None:
    cfg = transfer.task_config(task, small=small)
    assert cfg.task == task
    assert cfg.expert == ("privileged" if task in transfer.PRIVILEGED_TASKS else "reference")


def test_a_lerobot_learner_trains_without_the_object_head(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cnn = _config_of(monkeypatch, "--out", str(tmp_path))
    act = _config_of(monkeypatch, "--out", str(tmp_path), "--learner", "act")
    assert (cnn.learner, cnn.aux_weight, cnn.perception_worlds > 0, cnn.lr) == ("cnn", 1.0, True, 1e-3)
    assert (act.learner, act.aux_weight, act.perception_worlds, act.head_features) == ("act", 0.0, 0, True)
    assert (act.lr, act.chunk, act.teacher_forcing_m) == (1e-4, 10, 0.0)
    diffusion = _config_of(monkeypatch, "--out", str(tmp_path), "--learner", "diffusion", "--chunk", "8")
    assert (diffusion.learner, diffusion.chunk) == ("diffusion", 8)


def test_a_report_from_before_the_learner_option_resumes_as_the_cnn(tmp_path: Path) -> None:
    import json

    small = transfer.SMALL
    config = {k: list(v) if isinstance(v, tuple) else v for k, v in small.__dict__.items()}
    del config["learner"], config["lr"]
    report = {"config": config, "profile": str(transfer.DEFAULT_PROFILE), "ablations": {}}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    new = {"config": {**config, "learner": "cnn", "lr": small.lr}, "profile": report["profile"]}
    assert transfer._resumable(path, new)["config"] == config
    with pytest.raises(transfer.StudyFolderError, match="learner: 'cnn' there, 'act' now"):
        transfer._resumable(path, {**new, "config": {**new["config"], "learner": "act"}})


def test_world_of_another_arm_is_trained_on_and_evaluated_in(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--world runs the study in a world of the same task (e.g. one `r2s2r world new` wrote for another
    arm), with its own variations; it needs a profile written for it, and a world of another task is
    refused before anything runs."""
    own = tmp_path / "my_arm_world"
    shutil.copytree(world_path("tabletop-pick-v1"), own)
    (own / "variations.yaml").write_text((config_dir() / "variations.yaml").read_text())
    cfg = _config_of(monkeypatch, "--out", str(tmp_path / "t"), "--world", str(own), "--profile", "ideal")
    assert cfg.world == str(own)
    assert cfg.study.world == str(own.resolve()) and cfg.study.variations == own.resolve() / "variations.yaml"
    for args, message in (
        (["--world", str(own)], f"--world {own}: give --profile"),
        (["--world", "tabletop-push-v1", "--profile", "ideal"], "push-v1: its task is push, not pick"),
    ):
        assert transfer.cmd_transfer(_parse("--out", str(tmp_path / "t"), *args)) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "t").exists()
