"""The transfer study end to end at CI size: sharded demonstrations, training, evaluation, report."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

pytestmark = pytest.mark.study  # demonstrations, training and evaluations: the whole study at CI size

pytest.importorskip("torch", reason="BC training needs PyTorch (torch==2.13.0 CPU)")
pytest.importorskip("imageio_ffmpeg", reason="MP4 encoding needs imageio-ffmpeg")

from r2s2r_eval.studies.transfer import (  # noqa: E402
    DEFAULT_PROFILE,
    SMALL,
    StudyFolderError,
    format_report,
    run_transfer,
)
from r2s2r_eval.studies.transfer_data import shard_seed  # noqa: E402


@pytest.mark.timeout(1800)  # demos, training and three evaluation sides: minutes of CPU on a loaded machine
def test_small_transfer_run_writes_a_resumable_report(tmp_path: Path) -> None:
    # Two-second evaluation episodes: what is checked is which episodes ran where, not their outcome.
    cfg = replace(SMALL, ablations=("no_variation", "six_axes"), workers=2, chunk=3, max_steps=20)
    lines: list[str] = []
    report = run_transfer(tmp_path, cfg, log=lines.append)
    entry = report["ablations"]["no_variation"]
    ds = entry["dataset"]
    # two shards of one episode each, collected in two processes with their own seeds
    assert [Path(p).name for p in ds["paths"]] == ["shard_0", "shard_1"]
    assert ds["episodes"] == 2 and ds["valid"], ds
    seeds = {
        json.loads((Path(p) / "meta/r2s2r_episodes.jsonl").read_text().splitlines()[0])["seed"]
        for p in ds["paths"]
    }
    assert len(seeds) == 2
    assert shard_seed(0, 1) == shard_seed(0, 0) + 1
    ckpt = json.loads((tmp_path / "policies/no_variation/config.json").read_text())
    assert ckpt["model"]["chunk"] == 3 and ckpt["model"]["aux_dim"] == 5
    # perception frames: one world of 10 frames per shard, used by the training
    assert [Path(p).name for p in entry["perception"]["paths"]] == ["shard_0", "shard_1"]
    assert ckpt["data"]["perception_frames"] == 20
    for where in ("real", "real_operator", "sim", "sim_own"):
        r = entry[where]
        assert r["n"] == 1 and len(r["episodes"]) == 1
        assert not any(k.startswith("policy_error") for k in r["reasons"]), r["reasons"]
    # the hardware as captured, and with an operator's changes between trials on the same episode seeds
    assert entry["real"]["variations"] is None and entry["real"]["episodes"][0]["variation"] is None
    assert Path(entry["real_operator"]["variations"]).name == "variations.yaml"
    op = entry["real_operator"]["episodes"][0]
    assert op["seed"] == entry["real"]["episodes"][0]["seed"]
    assert any(k.startswith("appearance.light") for k in op["variation"]), op["variation"]
    assert any(k.startswith("clutter.") for k in op["variation"]), op["variation"]
    assert not any(k.startswith(("physics.", "camera.", "robot_state.")) for k in op["variation"]), op
    # the common yardstick has the six axes; the policy's own world here has none
    assert Path(entry["sim"]["variations"]).name == "variations.yaml"
    assert entry["sim_own"]["variations"] is None and "same_as" not in entry["sim_own"]
    # six axes: its own world is the yardstick, so that evaluation is reused, not run twice
    six = report["ablations"]["six_axes"]
    assert six["sim_own"]["same_as"] == "sim"
    assert six["sim_own"]["episodes"] == six["sim"]["episodes"]
    assert [m for m in lines if m.startswith("[six_axes] evaluation")] == [
        "[six_axes] evaluation real: 1 episodes in tabletop-pick-v1",
        "[six_axes] evaluation real_operator: 1 episodes in tabletop-pick-v1",
        "[six_axes] evaluation sim: 1 episodes in tabletop-pick-v1",
    ]
    assert "cnn/no_variation | 2/" in (tmp_path / "report.md").read_text()
    assert format_report(report) == (tmp_path / "report.md").read_text()
    # A rerun with the same config resumes: nothing is collected, trained or run again.
    again: list[str] = []
    assert run_transfer(tmp_path, cfg, log=again.append)["ablations"] == report["ablations"]
    assert not any(
        k in m for m in again for k in ("demonstrations", "perception", "training", "evaluation")
    ), again


def test_a_rerun_with_other_options_is_refused_and_loses_nothing(tmp_path: Path) -> None:
    # A finished evaluation in a study folder (its options as run_transfer writes them) ...
    config = {k: list(v) if isinstance(v, tuple) else v for k, v in SMALL.__dict__.items()}
    done = {"six_axes": {"real": {"n": 50}}}
    report = {"config": config, "profile": str(DEFAULT_PROFILE), "ablations": done}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    before = path.read_bytes()
    # ... is not thrown away by a run with fewer evaluation episodes, nor reused for another profile.
    for cfg, profile, named in (
        (replace(SMALL, real_episodes=0), DEFAULT_PROFILE, "real_episodes: 1 there, 0 now"),
        (SMALL, Path("ideal_profile.yaml"), "profile: "),
    ):
        lines: list[str] = []
        with pytest.raises(StudyFolderError, match="rerun with the same options") as err:
            run_transfer(tmp_path, cfg, profile=profile, log=lines.append)
        assert named in str(err.value) and str(path) in str(err.value)
        assert not lines and path.read_bytes() == before
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(StudyFolderError, match="not a transfer study report"):
        run_transfer(tmp_path, SMALL, log=print)
