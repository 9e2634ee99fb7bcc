"""A training stopped part-way by Ctrl-C, then resumed: the shared check of every learner's resume state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from r2s2r_eval.learning.train import TRAIN_STATE, TrainConfig, train


def assert_resumes_to_the_same_network(
    demos: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg: TrainConfig
) -> None:
    """Train ``cfg`` (6 steps, states every 2) whole, and stopped at step 5 then rerun: the same weights."""
    assert cfg.steps == 6 and cfg.save_every == 2
    whole = tmp_path / "whole"
    train([demos], whole, cfg)
    assert not (whole / TRAIN_STATE).exists()  # the resume state goes once the checkpoint is written

    calls = {"n": 0}
    step = torch.optim.AdamW.step

    def stop_at_fifth(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt  # as a Ctrl-C between the states of steps 4 and 6
        return step(self, *args, **kwargs)

    parts = tmp_path / "parts"
    with monkeypatch.context() as m:
        m.setattr(torch.optim.AdamW, "step", stop_at_fifth)
        with pytest.raises(KeyboardInterrupt):
            train([demos], parts, cfg)
    assert (parts / TRAIN_STATE).exists() and not (parts / "policy.pt").exists()
    assert torch.load(parts / TRAIN_STATE, weights_only=True)["step"] == 4
    train([demos], parts, cfg)
    a = torch.load(whole / "policy.pt", weights_only=True)
    b = torch.load(parts / "policy.pt", weights_only=True)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
