"""LeRobot v3.0 through lerobot itself.

What ``r2s2r demos`` writes loads in ``LeRobotDataset`` with the values written; ``r2s2r train`` trains on
a dataset written by lerobot's own API and refuses what it cannot map.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch", reason="LeRobot datasets and BC training need PyTorch (torch==2.13.0 CPU)")

from lerobot_v21 import LeRobotWriter  # noqa: E402
from r2s2r_eval.cli.train import main as train_main  # noqa: E402
from r2s2r_eval.learning import demos as demos_module  # noqa: E402
from r2s2r_eval.learning.demos import DemoConfig, collect_demos  # noqa: E402
from r2s2r_eval.learning.lerobot_format import (
    DatasetError,  # noqa: E402
    EpisodeData,  # noqa: E402
)
from r2s2r_eval.learning.lerobot_import import lerobot_dataset, open_dataset  # noqa: E402
from r2s2r_eval.learning.lerobot_read import bc_features, read_episodes  # noqa: E402
from r2s2r_eval.learning.lerobot_v3 import (  # noqa: E402
    EPISODES_FILE,
    LeRobotV3Writer,
    validate_v3_dataset,
)

REPO = Path(__file__).resolve().parents[2]
JOINTS = ("j1", "j2", "j3", "left_finger")
ARM = ("j1", "j2", "j3")
H, W = 24, 32


def _frame(episode: int, i: int) -> np.ndarray:
    """A smooth frame (video coding keeps it within a few levels) that differs per episode and step."""
    x = np.linspace(0, 1, W)[None, :, None]
    y = np.linspace(0, 1, H)[:, None, None]
    rgb = np.array([60 + 40 * episode, 80 + 12 * i, 150])[None, None, :]
    return np.clip(rgb + 50 * x + 30 * y, 0, 255).astype(np.uint8) * np.ones((1, 1, 3), np.uint8)


class _FakeRecording:
    """What the demonstration recorder holds after an episode: known frames, states and actions."""

    def __init__(self, episode: int, n: int) -> None:
        self.frames = [_frame(episode, i) for i in range(n)]
        self.states = [np.array([episode, i, -i, 0.01], np.float32) for i in range(n)]
        self.actions = [np.array([i + 0.5, episode, 0.25, 1.0], np.float32) for i in range(n)]
        self.env_states = [np.array([0.1 * i, 0.2, 0.3, 1.0, 0.0], np.float32) for i in range(n)]
        self.stamps = [i / 10 for i in range(n)]
        self.joint_names, self.arm_names = JOINTS, ARM


def test_demos_dataset_loads_in_lerobot_with_the_values_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The expert's episodes are stood in for by known recordings (the simulated path is test_demos_train's):
    # what is checked here is that collect_demos writes them through LeRobotDataset as they were recorded.
    lengths = {0: 5, 1: 4}

    def fake_attempt(cfg: DemoConfig, folder: Path, attempt: int, seed: int, variation: Any, ref: Any) -> Any:
        result = SimpleNamespace(
            success=True, reason="success", steps=lengths[attempt], world_id="w", world_hash="h"
        )
        return result, _FakeRecording(attempt, lengths[attempt])

    monkeypatch.setattr(demos_module, "_run_attempt", fake_attempt)
    root = tmp_path / "demos"
    cfg = DemoConfig(
        variations=REPO / "config/variations.yaml",
        episodes=2,
        seed=0,
        mcap=False,
        image_width=W,
        image_height=H,
    )
    summary = collect_demos(root, cfg)
    assert (summary.episodes, summary.frames) == (2, 9)
    assert validate_v3_dataset(root) == []

    ds = lerobot_dataset().LeRobotDataset("local/demos", root=root, video_backend="torchcodec")
    assert ds.meta.info["codebase_version"] == "v3.0" and ds.num_episodes == 2 and len(ds) == 9
    assert ds.meta.features["observation.state"]["names"] == list(JOINTS)
    assert ds.meta.features["action"]["names"] == [*ARM, "gripper"]
    for index in range(len(ds)):
        item = ds[index]
        ep, i = int(item["episode_index"]), int(item["frame_index"])
        rec = _FakeRecording(ep, lengths[ep])
        np.testing.assert_array_equal(item["observation.state"].numpy(), rec.states[i])
        np.testing.assert_array_equal(item["action"].numpy(), rec.actions[i])
        np.testing.assert_allclose(
            item["observation.environment_state"].numpy(), rec.env_states[i], atol=1e-6
        )
        assert float(item["timestamp"]) == pytest.approx(i / 10)
        image = (item["observation.images.camera"].permute(1, 2, 0).numpy() * 255).astype(np.float64)
        assert image.shape == (H, W, 3)
        assert np.abs(image - rec.frames[i]).mean() < 4, (ep, i)
        assert item["task"] == cfg.task
    # Each episode's variation: the unit point as a feature, the realised parameters beside the dataset.
    meta = [json.loads(line) for line in (root / EPISODES_FILE).read_text().splitlines()]
    assert [m["episode_index"] for m in meta] == [0, 1] and all(m["variation"] for m in meta)
    unit = ds[0]["variation.unit"].numpy()
    assert unit.shape == (len(ds.meta.features["variation.unit"]["names"]),) and np.all(
        (unit >= 0) & (unit <= 1)
    )

    # Reopening appends: a third episode goes after the two, and what was there is unchanged.
    lengths[2] = 3
    more = collect_demos(root, DemoConfig(**{**cfg.__dict__, "episodes": 3}))
    assert (more.episodes, more.new_episodes, more.frames) == (3, 1, 12)
    again = open_dataset(root)
    assert len(again) == 12 and int(again[9]["episode_index"]) == 2
    np.testing.assert_array_equal(again[2]["action"].numpy(), _FakeRecording(0, 5).actions[2])


def _lerobot_dataset(
    root: Path, *, state_names: list[str] | None, action_names: list[str], camera: str
) -> None:
    """A v3.0 dataset written by lerobot's own API directly, with synthetic frames."""
    features = {
        camera: {"dtype": "video", "shape": (H, W, 3), "names": ["height", "width", "channels"]},
        "observation.state": {"dtype": "float32", "shape": (4,), "names": state_names},
        "action": {"dtype": "float32", "shape": (len(action_names),), "names": action_names},
    }
    ds = lerobot_dataset().LeRobotDataset.create("local/synthetic", fps=10, features=features, root=root)
    rng = np.random.default_rng(0)
    for ep in range(2):
        for i in range(6):
            ds.add_frame(
                {
                    camera: _frame(ep, i),
                    "observation.state": rng.normal(size=4).astype(np.float32),
                    "action": rng.normal(size=len(action_names)).astype(np.float32),
                    "task": "reach",
                }
            )
        ds.save_episode()
    ds.finalize()


def test_train_runs_on_a_dataset_written_by_lerobot_itself(tmp_path: Path) -> None:
    root = tmp_path / "synthetic"
    _lerobot_dataset(
        root, state_names=list(JOINTS), action_names=[*ARM, "gripper"], camera="observation.images.front"
    )
    feats = bc_features(root)
    assert (feats.image, feats.joint_names, feats.arm_names) == ("observation.images.front", JOINTS, ARM)
    episodes = list(read_episodes(root, feats))
    assert [len(e["action"]) for e in episodes] == [6, 6]
    out = tmp_path / "bc"
    args = [
        "--dataset",
        str(root),
        "--out",
        str(out),
        "--steps",
        "2",
        "--batch-size",
        "4",
        "--aux-weight",
        "0",
    ]
    assert train_main([*args, "--quiet"]) == 0
    config = json.loads((out / "config.json").read_text())
    assert json.dumps(config).count('"j1"') >= 1  # the checkpoint is for this dataset's joints


def test_an_incomplete_dataset_is_refused_without_going_online(tmp_path: Path) -> None:
    # LeRobotDataset falls back to the Hugging Face Hub for files a local dataset lacks; r2s2r keeps it
    # offline, so a damaged folder is a clear error naming it.
    root = tmp_path / "damaged"
    names = {"state_names": list(JOINTS), "action_names": [*ARM, "gripper"]}
    _lerobot_dataset(root, **names, camera="observation.images.cam")
    assert validate_v3_dataset(root) == []
    for f in (root / "data").rglob("*.parquet"):
        f.unlink()
    (problem,) = validate_v3_dataset(root)
    assert str(root) in problem and "do not hold everything meta/ lists" in problem
    with pytest.raises(DatasetError, match="LeRobotDataset cannot load it"):
        list(read_episodes(root, bc_features(root)))


@pytest.mark.parametrize(
    ("state_names", "action_names", "feature"),
    [
        (None, [*ARM, "gripper"], "observation.state"),  # no joint names to match the arm by
        (list(JOINTS), ["x", "y", "z", "gripper"], "action"),  # targets for joints the state does not have
    ],
)
def test_train_refuses_a_feature_it_cannot_map_by_name(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    state_names: list[str] | None,
    action_names: list[str],
    feature: str,
) -> None:
    root = tmp_path / "unmappable"
    _lerobot_dataset(
        root, state_names=state_names, action_names=action_names, camera="observation.images.camera"
    )
    with pytest.raises(DatasetError, match=f"feature '{feature}'"):
        bc_features(root)
    assert train_main(["--dataset", str(root), "--out", str(tmp_path / "bc"), "--steps", "1", "--quiet"]) == 2
    assert f"feature '{feature}'" in capsys.readouterr().err


def test_a_v21_dataset_is_refused_with_the_converter_and_converts(tmp_path: Path) -> None:
    root = tmp_path / "old"
    features = {
        "observation.images.camera": {
            "dtype": "video",
            "shape": [H, W, 3],
            "names": ["height", "width", "channels"],
        },
        "observation.state": {"dtype": "float32", "shape": [4], "names": list(JOINTS)},
        "action": {"dtype": "float32", "shape": [4], "names": [*ARM, "gripper"]},
    }
    writer = LeRobotWriter(root, fps=10, features=features)
    rec = _FakeRecording(0, 4)
    writer.add_episode(
        EpisodeData(
            task="pick",
            columns={"observation.state": np.stack(rec.states), "action": np.stack(rec.actions)},
            videos={"observation.images.camera": np.stack(rec.frames)},
            extra={},
        )
    )
    with pytest.raises(
        DatasetError, match=r"v2\.1.*convert_dataset_v21_to_v30.*r2s2r_eval\.learning\.lerobot_convert"
    ):
        bc_features(root)
    from r2s2r_eval.learning.lerobot_convert import main as convert_main

    assert convert_main([str(root)]) == 0
    (episode,) = read_episodes(root, bc_features(root))
    np.testing.assert_array_equal(episode["action"], np.stack(rec.actions))
    assert (tmp_path / "old_old/meta/info.json").is_file()  # lerobot keeps the original


@pytest.mark.skipif(
    os.geteuid() != 0, reason="SVT-AV1 raises the encoding thread to SCHED_FIFO only in a process run as root"
)
def test_writing_videos_leaves_the_callers_scheduling_alone(tmp_path: Path) -> None:
    # LeRobot's default codec, SVT-AV1, moves the thread that opens an encoder to SCHED_FIFO under root; a
    # writer that let it would hand real-time priority to every process started after it.
    features = {
        "observation.images.front": {"dtype": "video", "shape": (H, W, 3), "names": ["h", "w", "rgb"]},
        "action": {"dtype": "float32", "shape": (2,), "names": ["a", "b"]},
    }
    before = os.sched_getscheduler(0)
    assert before == os.SCHED_OTHER
    with LeRobotV3Writer(tmp_path / "ds", fps=10, features=features) as writer:
        frames = np.stack([_frame(0, i) for i in range(4)])
        writer.add_episode(
            EpisodeData(
                task="reach",
                columns={"action": np.zeros((4, 2), np.float32)},
                videos={"observation.images.front": frames},
                extra={},
            )
        )
        assert os.sched_getscheduler(0) == before
    assert os.sched_getscheduler(0) == before
    assert validate_v3_dataset(tmp_path / "ds") == []
