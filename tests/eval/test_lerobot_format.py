"""The tests' LeRobot v2.1 writer and validator on a synthetic dataset: the v2.1 datasets the refusal and
conversion tests write are what LeRobot v2.1 is (no simulator)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("imageio_ffmpeg", reason="MP4 encoding needs imageio-ffmpeg")

from lerobot_v21 import (  # noqa: E402
    CODEBASE_VERSION,
    LeRobotWriter,
    encode_video,
    read_episode,
    validate_lerobot_dataset,
)
from r2s2r_eval.learning.lerobot_format import DatasetError, EpisodeData, read_info  # noqa: E402

W, H, FPS = 16, 12, 10.0
FEATURES = {
    "observation.images.camera": {
        "dtype": "video",
        "shape": [H, W, 3],
        "names": ["height", "width", "channels"],
    },
    "observation.state": {"dtype": "float32", "shape": [3], "names": ["a", "b", "c"]},
    "action": {"dtype": "float32", "shape": [2], "names": ["a", "gripper"]},
}


def _episode(n: int, seed: int) -> EpisodeData:
    rng = np.random.default_rng(seed)
    frames = np.zeros((n, H, W, 3), np.uint8)
    for t in range(n):
        frames[t, :, : t % W] = 200  # a bar that grows: frames differ
    return EpisodeData(
        task="pick",
        columns={
            "observation.state": rng.normal(size=(n, 3)).astype(np.float32),
            "action": rng.normal(size=(n, 2)).astype(np.float32),
        },
        videos={"observation.images.camera": frames},
        extra={"seed": seed},
    )


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "ds"
    w = LeRobotWriter(root, fps=FPS, features=FEATURES)
    w.add_episode(_episode(5, 0))
    w.add_episode(_episode(7, 1))
    return root


def test_written_dataset_validates_and_reads_back(dataset: Path) -> None:
    assert validate_lerobot_dataset(dataset) == []
    info = read_info(dataset)
    assert info["codebase_version"] == CODEBASE_VERSION
    assert (info["total_episodes"], info["total_frames"], info["total_videos"]) == (2, 12, 2)
    for name in ("episodes.jsonl", "episodes_stats.jsonl", "tasks.jsonl", "stats.json"):
        assert (dataset / "meta" / name).is_file()
    assert (dataset / "data/chunk-000/episode_000001.parquet").is_file()
    assert (dataset / "videos/chunk-000/observation.images.camera/episode_000001.mp4").is_file()
    ep = read_episode(dataset, 1)
    assert ep["observation.state"].shape == (7, 3)
    assert ep["observation.images.camera"].shape == (7, H, W, 3)
    np.testing.assert_array_equal(ep["index"], np.arange(5, 12))
    np.testing.assert_array_equal(ep["frame_index"], np.arange(7))


def test_reopen_appends_and_refuses_another_schema(dataset: Path) -> None:
    w = LeRobotWriter(dataset, fps=FPS, features=FEATURES)
    assert w.num_episodes == 2
    w.add_episode(_episode(4, 2))
    assert validate_lerobot_dataset(dataset) == []
    other = {**FEATURES, "action": {"dtype": "float32", "shape": [3], "names": None}}
    with pytest.raises(DatasetError, match="other features or fps; not overwriting"):
        LeRobotWriter(dataset, fps=FPS, features=other)


def test_writer_refuses_bad_columns(tmp_path: Path) -> None:
    w = LeRobotWriter(tmp_path / "ds", fps=FPS, features=FEATURES)
    ep = _episode(5, 0)
    bad = EpisodeData(
        task="pick",
        columns={**ep.columns, "action": np.zeros((5, 3), np.float32)},
        videos=ep.videos,
        extra={},
    )
    with pytest.raises(DatasetError, match="column 'action' has shape"):
        w.add_episode(bad)


def _rewrite_parquet(path: Path, fn) -> None:  # type: ignore[no-untyped-def]
    pq.write_table(fn(pq.read_table(path)), path)


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        (
            lambda r: (r / "videos/chunk-000/observation.images.camera/episode_000001.mp4").unlink(),
            "video file missing",
        ),
        (
            lambda r: _rewrite_parquet(r / "data/chunk-000/episode_000000.parquet", lambda t: t.slice(0, 4)),
            "4 rows, episodes.jsonl length 5",
        ),
        (
            lambda r: _rewrite_parquet(
                r / "data/chunk-000/episode_000000.parquet", lambda t: t.drop_columns(["action"])
            ),
            "differ from info.json features",
        ),
        (
            lambda r: _rewrite_parquet(
                r / "data/chunk-000/episode_000001.parquet",
                lambda t: t.set_column(
                    t.column_names.index("frame_index"), "frame_index", pa.array(np.arange(7)[::-1].copy())
                ),
            ),
            "frame_index must run",
        ),
        (
            lambda r: _rewrite_parquet(
                r / "data/chunk-000/episode_000001.parquet",
                lambda t: t.set_column(t.column_names.index("index"), "index", pa.array(np.arange(7))),
            ),
            "index must run 5..11",
        ),
        (
            lambda r: _patch_info(r, lambda i: i["features"]["observation.state"].update(shape=[4])),
            "rows have \\[3\\] values, shape \\[4\\]",
        ),
        (
            lambda r: _patch_info(r, lambda i: i["features"]["action"].update(dtype="int64")),
            "info.json says list<int64>",
        ),
        (lambda r: _patch_info(r, lambda i: i.update(total_frames=13)), "total_frames 13"),
        (
            lambda r: _patch_info(
                r, lambda i: i["features"]["observation.images.camera"].update(shape=[24, 32, 3])
            ),
            "16x12 pixels, info.json shape says 32x24",
        ),
        (
            lambda r: (r / "meta/episodes.jsonl").write_text(
                (r / "meta/episodes.jsonl").read_text().splitlines()[0] + "\n"
            ),
            "1 episodes",
        ),
        (lambda r: (r / "meta/info.json").write_text("{"), "not valid JSON"),
    ],
)
def test_corrupted_dataset_fails_validation(dataset: Path, corrupt, message: str) -> None:  # type: ignore[no-untyped-def]
    corrupt(dataset)
    problems = validate_lerobot_dataset(dataset)
    assert problems, "corruption not detected"
    assert any(__import__("re").search(message, p) for p in problems), problems


def test_video_frame_count_mismatch_is_detected(dataset: Path) -> None:

    video = dataset / "videos/chunk-000/observation.images.camera/episode_000000.mp4"
    encode_video(np.zeros((3, H, W, 3), np.uint8), video, FPS)
    assert any("3 frames, the episode has 5 rows" in p for p in validate_lerobot_dataset(dataset))


def _patch_info(root: Path, fn) -> None:  # type: ignore[no-untyped-def]
    path = root / "meta/info.json"
    info = json.loads(path.read_text())
    fn(info)
    path.write_text(json.dumps(info))
