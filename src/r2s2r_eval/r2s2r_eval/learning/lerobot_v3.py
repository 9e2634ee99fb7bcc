"""LeRobot v3.0 datasets through ``lerobot`` itself: the demonstration writer and its validation.

``lerobot``'s ``LeRobotDataset`` writes the layout (``meta/info.json``, ``meta/episodes/``,
``meta/tasks.parquet``, ``data/chunk-*/file-*.parquet``, ``videos/<key>/chunk-*/file-*.mp4``); this module
adds what LeRobot has no place for, the metadata of each episode r2s2r keeps (attempt, seed, world and
the variation's realised parameters), one JSON line per episode in ``meta/r2s2r_episodes.jsonl``.

A v3.0 dataset's Parquet and metadata files are complete only once ``finalize`` has run, so the writer is a
context manager that finalizes on every exit, an interrupt included; reopening the folder appends.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from r2s2r_eval.learning.lerobot_format import DatasetError, EpisodeData, read_info
from r2s2r_eval.learning.lerobot_import import VIDEO_BACKEND, lerobot_dataset, open_dataset

__all__ = ["CODEBASE_VERSION", "EPISODES_FILE", "LeRobotV3Writer", "validate_v3_dataset"]

CODEBASE_VERSION = "v3.0"
EPISODES_FILE = "meta/r2s2r_episodes.jsonl"
# The columns LeRobotDataset adds to every dataset, besides the user features.
INDEX_FEATURES = ("timestamp", "frame_index", "episode_index", "index", "task_index")


def _lerobot_features(features: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The ``features`` LeRobotDataset.create takes: dtype, shape, names (it writes the video info)."""
    return {
        key: {"dtype": spec["dtype"], "shape": tuple(spec["shape"]), "names": spec.get("names")}
        for key, spec in features.items()
        if key not in INDEX_FEATURES
    }


def _read_episode_lines(root: Path) -> list[dict[str, Any]]:
    path = root / EPISODES_FILE
    if not path.is_file():
        return []
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise DatasetError(f"{path}:{i}: not valid JSON: {err}") from None
    return out


@contextmanager
def _scheduling_kept() -> Iterator[None]:
    """Give the calling thread back its scheduling policy after LeRobot's video encoder has run.

    SVT-AV1 (LeRobot's default codec) moves the thread that opens an encoder to ``SCHED_FIFO`` when the
    process runs as root, as in containers and CI. Every process started from that thread afterwards (ROS
    nodes, workers, a test suite's next tests) would inherit real-time priority and starve the rest of the
    machine, so the policy is put back once each encode returns.
    """
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    try:
        yield
    finally:
        if os.sched_getscheduler(0) != policy or os.sched_getparam(0) != param:
            os.sched_setscheduler(0, policy, param)


class LeRobotV3Writer:
    """Writes a LeRobot v3.0 dataset one episode at a time through ``LeRobotDataset``; appends on reopen.

    Reopening checks the features and fps against ``meta/info.json`` and refuses others rather than mixing
    two schemas in one dataset.
    """

    def __init__(
        self,
        root: str | Path,
        *,
        fps: float,
        features: Mapping[str, Mapping[str, Any]],
        robot_type: str = "arm6",
    ) -> None:
        """Open (creating if needed) the dataset at ``root``.

        Raises:
            DatasetError: ``fps`` is not a whole number (LeRobot v3.0 stores an integer), or ``root`` holds
                a dataset of another version, schema or fps.
        """
        self.root = Path(root)
        if float(fps) != round(fps) or fps <= 0:
            raise DatasetError(f"fps: LeRobot v3.0 needs a whole number of frames per second, got {fps}")
        self.fps = int(round(fps))
        wanted = _lerobot_features(features)
        module = lerobot_dataset()
        if (self.root / "meta/info.json").exists():
            info = read_info(self.root)
            if info.get("codebase_version") != CODEBASE_VERSION:
                raise DatasetError(
                    f"{self.root / 'meta/info.json'}: codebase_version {info.get('codebase_version')!r}, "
                    f"this writer appends only to {CODEBASE_VERSION!r} (choose another output folder)"
                )
            have = _lerobot_features(info["features"])
            same = {k: (v["dtype"], list(v["shape"])) for k, v in have.items()} == {
                k: (v["dtype"], list(v["shape"])) for k, v in wanted.items()
            }
            if not same or int(info.get("fps", -1)) != self.fps:
                raise DatasetError(
                    f"{self.root / 'meta/info.json'}: existing dataset has other features or fps; not "
                    "overwriting (choose another output folder)"
                )
            self.dataset = open_dataset(self.root)
        else:
            self.dataset = self._create(module, wanted, robot_type)
        self.features: dict[str, dict[str, Any]] = dict(self.dataset.meta.features)
        self.episodes = _read_episode_lines(self.root)
        self.total_frames = int(self.dataset.meta.total_frames)
        self._closed = False

    def _create(self, module: Any, features: dict[str, dict[str, Any]], robot_type: str) -> Any:
        """A new dataset at ``root``; what the folder already holds (e.g. an attempt log) is kept.

        ``LeRobotDataset.create`` makes the folder itself and refuses an existing one, so an existing folder
        is set aside meanwhile and its files moved back in after.
        """
        aside = self.root.with_name(self.root.name + ".r2s2r-aside")
        if self.root.exists():
            os.replace(self.root, aside)
        self.root.parent.mkdir(parents=True, exist_ok=True)
        try:
            return module.LeRobotDataset.create(
                f"local/{self.root.name}",
                fps=self.fps,
                features=features,
                root=self.root,
                robot_type=robot_type,
                use_videos=True,
                video_backend=VIDEO_BACKEND,
            )
        finally:
            if aside.exists():
                for path in sorted(p for p in aside.rglob("*") if not p.is_dir()):
                    target = self.root / path.relative_to(aside)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(path, target)
                shutil.rmtree(aside)

    @property
    def num_episodes(self) -> int:
        """Episodes written so far."""
        return int(self.dataset.meta.total_episodes)

    @property
    def video_keys(self) -> list[str]:
        """Names of the video features."""
        return list(self.dataset.meta.video_keys)

    def add_episode(self, episode: EpisodeData) -> int:
        """Write one episode (frames through ``add_frame``, then ``save_episode``); returns its index.

        Raises:
            DatasetError: a column or video is missing, or has the wrong shape.
        """
        index = self.num_episodes
        n = episode.length
        if n == 0:
            raise DatasetError(f"episode {index}: has no frames")
        arrays: dict[str, np.ndarray] = {}
        for key, spec in self.features.items():
            if key in INDEX_FEATURES:
                continue
            value = episode.videos.get(key) if spec["dtype"] == "video" else episode.columns.get(key)
            if value is None:
                raise DatasetError(f"episode {index}: feature {key!r} missing")
            value = np.asarray(value)
            if value.shape != (n, *spec["shape"]):
                raise DatasetError(
                    f"episode {index}: feature {key!r} has shape {value.shape}, want {(n, *spec['shape'])}"
                )
            arrays[key] = value
        for i in range(n):
            self.dataset.add_frame({**{k: v[i] for k, v in arrays.items()}, "task": episode.task})
        with _scheduling_kept():
            self.dataset.save_episode()
        record = {"episode_index": index, "length": n, **dict(episode.extra)}
        with (self.root / EPISODES_FILE).open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        self.episodes.append(record)
        self.total_frames += n
        return index

    def close(self) -> None:
        """Finalize the dataset (closes its Parquet writers: the files are readable only after this)."""
        if not self._closed:
            self._closed = True
            with _scheduling_kept():
                self.dataset.finalize()

    def __enter__(self) -> LeRobotV3Writer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def validate_v3_dataset(root: str | Path) -> list[str]:
    """Problems of the v3.0 dataset at ``root`` as LeRobotDataset loads it; empty when it is sound.

    Checks the version, that every episode's frames are there (count, order, episode index), that each
    video decodes at its episode's first and last frame, and that ``r2s2r demos``' per-episode metadata,
    where present, has a line per episode.
    """
    root = Path(root)
    try:
        info = read_info(root)
    except DatasetError as err:
        return [str(err)]
    if info.get("codebase_version") != CODEBASE_VERSION:
        return [f"{root}/meta/info.json: codebase_version {info.get('codebase_version')!r}, want 'v3.0'"]
    try:
        ds = open_dataset(root)
    except DatasetError as err:
        return [str(err)]
    problems = []
    if len(ds) != int(info["total_frames"]):
        problems.append(f"{root}: {len(ds)} frames load, meta/info.json says {info['total_frames']}")
    episodes = ds.hf_dataset.with_format(None)["episode_index"]
    lines = _read_episode_lines(root)
    if (root / EPISODES_FILE).exists() and len(lines) != ds.num_episodes:
        problems.append(f"{root}/{EPISODES_FILE}: {len(lines)} lines for {ds.num_episodes} episodes")
    start = 0
    for ep in range(ds.num_episodes):
        length = int(ds.meta.episodes[ep]["length"])
        if list(episodes[start : start + length]) != [ep] * length:
            problems.append(
                f"{root}: episode {ep}'s {length} frames are not at rows {start}..{start + length}"
            )
            break
        for row in (start, start + length - 1):
            try:
                ds[row]
            except Exception as err:  # a decode error of lerobot/torchcodec names the video at fault
                problems.append(f"{root}: frame {row} (episode {ep}) does not load: {err}")
        start += length
    return problems
