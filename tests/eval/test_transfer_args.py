"""``r2s2r transfer --task``: the task picks the world, variations, expert and reference row (no training)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="the transfer study's training needs PyTorch (torch==2.13.0 CPU)")

from r2s2r_eval.learning.demos import DemoConfig, DemoError  # noqa: E402
from r2s2r_eval.studies import transfer  # noqa: E402
from r2s2r_eval.studies.task_studies import task_study  # noqa: E402


def _parse(*argv: str) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    transfer._add_arguments(ap)
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


def test_privileged_expert_refused_for_other_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert transfer.cmd_transfer(_parse("--out", str(tmp_path / "out"), "--task", "drawer")) == 2
    err = capsys.readouterr().err
    assert "task 'drawer': the privileged expert demonstrates pick-and-place only" in err
    assert not (tmp_path / "out").exists()


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
