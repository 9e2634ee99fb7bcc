"""A LeRobot v2.1 dataset writer, reader and validator, for the tests of the v2.1 refusal and conversion.

lerobot 0.4 writes v3.0 only, so the tests write the v2.1 datasets a team may still hold with this
(Parquet + ``meta/`` + H.264 MP4 through ffmpeg), and check that the product refuses them with the
converter's command and that lerobot's converter takes them.

Layout (LeRobot codebase version v2.1)::

    meta/info.json                 schema: fps, path templates, features (dtype, shape, names)
    meta/episodes.jsonl            {"episode_index", "tasks", "length"} per episode
    meta/episodes_stats.jsonl      {"episode_index", "stats": {feature: {min, max, mean, std, count}}}
    meta/tasks.jsonl               {"task_index", "task"}
    meta/stats.json                dataset-wide stats (the v2.0 file; still read by many tools)
    data/chunk-000/episode_000000.parquet
    videos/chunk-000/observation.images.camera/episode_000000.mp4
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from collections.abc import Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from r2s2r_eval.learning.lerobot_format import DatasetError, EpisodeData, read_info

CODEBASE_VERSION = "v2.1"
CHUNKS_SIZE = 1000
DATA_PATH = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
VIDEO_PATH = "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
# Columns every LeRobot dataset has, besides the user features.
_INDEX_FEATURES: dict[str, dict[str, Any]] = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}
_ARROW = {"float32": pa.float32(), "float64": pa.float64(), "int64": pa.int64(), "bool": pa.bool_()}
_MAX_META_BYTES = 256 << 20  # a sane bound on a meta file read (untrusted input)


def _stats(values: np.ndarray) -> dict[str, Any]:
    """min/max/mean/std/count over axis 0 (per channel for images, normalised to [0, 1], shape C x 1 x 1)."""
    if values.ndim == 4:  # T x H x W x C images
        v = values.astype(np.float64) / 255.0
        per = lambda f: f(v, axis=(0, 1, 2)).reshape(-1, 1, 1).tolist()  # noqa: E731
        return {
            "min": per(np.min),
            "max": per(np.max),
            "mean": per(np.mean),
            "std": per(np.std),
            "count": [len(values)],
        }
    v = values.astype(np.float64).reshape(len(values), -1)
    return {
        "min": v.min(0).tolist(),
        "max": v.max(0).tolist(),
        "mean": v.mean(0).tolist(),
        "std": v.std(0).tolist(),
        "count": [len(values)],
    }


def _aggregate(stats: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Pooled min/max/mean/std/count of per-episode stats (as LeRobot's ``aggregate_stats``)."""
    n = np.array([s["count"][0] for s in stats], dtype=np.float64)
    means = [np.asarray(s["mean"], dtype=np.float64) for s in stats]
    stds = [np.asarray(s["std"], dtype=np.float64) for s in stats]
    total = n.sum()
    mean = sum(w * m for w, m in zip(n, means, strict=True)) / total
    var = sum(w * (s**2 + (m - mean) ** 2) for w, s, m in zip(n, stds, means, strict=True)) / total
    return {
        "min": np.min([np.asarray(s["min"]) for s in stats], axis=0).tolist(),
        "max": np.max([np.asarray(s["max"]) for s in stats], axis=0).tolist(),
        "mean": mean.tolist(),
        "std": np.sqrt(var).tolist(),
        "count": [int(total)],
    }


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    if path.stat().st_size > _MAX_META_BYTES:
        raise DatasetError(f"{path}: larger than {_MAX_META_BYTES} bytes, not a dataset meta file")
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise DatasetError(f"{path}:{i}: not valid JSON: {err}") from None
    return out


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _ffmpeg() -> str:
    try:
        import imageio_ffmpeg  # optional until a video is touched
    except ImportError as err:
        raise DatasetError("MP4 encoding needs imageio-ffmpeg (pip install imageio-ffmpeg)") from err
    return str(imageio_ffmpeg.get_ffmpeg_exe())


def encode_video(frames: np.ndarray, path: Path, fps: float, *, crf: int = 18) -> None:
    """Encode ``frames`` (T x H x W x 3 uint8 RGB; H, W even) to an H.264 yuv420p MP4, deterministically.

    Raises:
        DatasetError: bad frames or ffmpeg failure.
    """
    if frames.ndim != 4 or frames.shape[3] != 3 or frames.dtype != np.uint8 or len(frames) == 0:
        raise DatasetError(
            f"{path}: frames must be a non-empty T x H x W x 3 uint8 array, got {frames.shape}"
        )
    t, h, w, _ = frames.shape
    if h % 2 or w % 2:
        raise DatasetError(f"{path}: yuv420p needs even width and height, got {w}x{h}")
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        _ffmpeg(),
        "-hide_banner",
        "-loglevel",
        "error",
        "-y",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "-s",
        f"{w}x{h}",
        "-r",
        f"{fps:g}",
        "-i",
        "-",
        "-c:v",
        "libx264",
        "-preset",
        "medium",
        "-crf",
        str(crf),
        "-pix_fmt",
        "yuv420p",
        "-g",
        "2",
        "-threads",
        "1",
        "-bitexact",
        "-map_metadata",
        "-1",
        "-movflags",
        "+faststart",
        str(path),
    ]
    proc = subprocess.run(cmd, input=np.ascontiguousarray(frames).tobytes(), capture_output=True, check=False)
    if proc.returncode != 0:
        raise DatasetError(f"{path}: ffmpeg failed: {proc.stderr.decode(errors='replace')[-500:]}")


def read_video(path: Path) -> np.ndarray:
    """Decode an MP4 to a T x H x W x 3 uint8 RGB array.

    Raises:
        DatasetError: the file is missing or not a readable video.
    """
    import imageio_ffmpeg

    if not path.is_file():
        raise DatasetError(f"{path}: video file missing")
    try:
        reader = imageio_ffmpeg.read_frames(str(path), pix_fmt="rgb24")
        meta = next(reader)
        w, h = meta["size"]
        frames = [np.frombuffer(f, dtype=np.uint8).reshape(h, w, 3) for f in reader]
    except (RuntimeError, OSError, StopIteration) as err:
        raise DatasetError(f"{path}: cannot decode video: {err}") from err
    if not frames:
        raise DatasetError(f"{path}: video has no frames")
    return np.stack(frames)


def count_video_frames(path: Path) -> tuple[int, int, int]:
    """``(frames, width, height)`` of an MP4, by decoding it (exact, unlike the container's estimate)."""
    frames = read_video(path)
    return len(frames), frames.shape[2], frames.shape[1]


class LeRobotWriter:
    """Writes a LeRobot v2.1 dataset one episode at a time; reopening an existing folder appends (resume).

    The schema (``features``) is fixed at creation; reopening checks it against ``meta/info.json`` and
    refuses a different one rather than overwriting.  Each episode's Parquet and MP4 files are written
    first, then its ``episodes.jsonl`` line: a crash leaves at most one orphan file, rewritten on resume.
    """

    def __init__(
        self,
        root: str | Path,
        *,
        fps: float,
        features: Mapping[str, Mapping[str, Any]],
        robot_type: str = "arm6",
    ) -> None:
        """Open (creating if needed) the dataset at ``root`` with the user ``features``.

        Raises:
            DatasetError: ``root`` holds a dataset with another schema, fps or version.
        """
        self.root = Path(root)
        self.fps = float(fps)
        self.robot_type = robot_type
        self.features: dict[str, dict[str, Any]] = {k: dict(v) for k, v in features.items()}
        for key, spec in self.features.items():
            if spec["dtype"] != "video" and spec["dtype"] not in _ARROW:
                raise DatasetError(
                    f"feature {key!r}: dtype {spec['dtype']!r} not in {sorted(_ARROW)} or video"
                )
        self.features.update({k: dict(v) for k, v in _INDEX_FEATURES.items()})
        meta = self.root / "meta"
        self.episodes = _read_jsonl(meta / "episodes.jsonl")
        self.episode_stats = _read_jsonl(meta / "episodes_stats.jsonl")
        self.tasks = {t["task"]: int(t["task_index"]) for t in _read_jsonl(meta / "tasks.jsonl")}
        if (meta / "info.json").exists():
            info = read_info(self.root)
            if info.get("codebase_version") != CODEBASE_VERSION:
                raise DatasetError(
                    f"{meta / 'info.json'}: codebase_version {info.get('codebase_version')!r}, this writer "
                    f"appends only to {CODEBASE_VERSION!r}"
                )
            if info.get("features") != self.features or float(info.get("fps", -1)) != self.fps:
                raise DatasetError(
                    f"{meta / 'info.json'}: existing dataset has other features or fps; not overwriting "
                    "(choose another output folder)"
                )
        meta.mkdir(parents=True, exist_ok=True)
        self.total_frames = sum(int(e["length"]) for e in self.episodes)

    @property
    def video_keys(self) -> list[str]:
        """Names of the video features."""
        return [k for k, v in self.features.items() if v["dtype"] == "video"]

    @property
    def num_episodes(self) -> int:
        """Episodes written so far."""
        return len(self.episodes)

    def add_episode(self, episode: EpisodeData) -> int:
        """Write one episode (Parquet, MP4s, meta lines, info/stats); returns its index.

        Raises:
            DatasetError: a column or video is missing, has the wrong shape, or lengths differ.
        """
        index = len(self.episodes)
        chunk = index // CHUNKS_SIZE
        n = episode.length
        if n == 0:
            raise DatasetError(f"episode {index}: has no frames")
        task_index = self.tasks.setdefault(episode.task, len(self.tasks))
        arrays: dict[str, pa.Array] = {}
        stats: dict[str, Any] = {}
        for key, spec in self.features.items():
            if spec["dtype"] == "video" or key in _INDEX_FEATURES:
                continue
            if key not in episode.columns:
                raise DatasetError(f"episode {index}: column {key!r} missing")
            value = np.asarray(episode.columns[key])
            shape = tuple(spec["shape"])
            if value.shape != (n, *shape):
                raise DatasetError(
                    f"episode {index}: column {key!r} has shape {value.shape}, want {(n, *shape)}"
                )
            arrays[key] = _to_arrow(value, spec)
            stats[key] = _stats(value)
        for key in self.video_keys:
            frames = episode.videos.get(key)
            h, w, c = self.features[key]["shape"]
            if frames is None or frames.shape != (n, h, w, c):
                got = None if frames is None else frames.shape
                raise DatasetError(f"episode {index}: video {key!r} has shape {got}, want {(n, h, w, c)}")
            encode_video(
                frames,
                self.root / VIDEO_PATH.format(episode_chunk=chunk, video_key=key, episode_index=index),
                self.fps,
            )
            stats[key] = _stats(frames)
        frame_index = np.arange(n, dtype=np.int64)
        index_cols = {
            "timestamp": (frame_index / self.fps).astype(np.float32),
            "frame_index": frame_index,
            "episode_index": np.full(n, index, dtype=np.int64),
            "index": self.total_frames + frame_index,
            "task_index": np.full(n, task_index, dtype=np.int64),
        }
        for key, value in index_cols.items():
            arrays[key] = pa.array(value)
            stats[key] = _stats(value.reshape(n, 1))
        data_path = self.root / DATA_PATH.format(episode_chunk=chunk, episode_index=index)
        data_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = data_path.with_name(data_path.name + ".tmp")
        pq.write_table(pa.table(arrays), tmp)
        os.replace(tmp, data_path)
        record = {"episode_index": index, "tasks": [episode.task], "length": n, **dict(episode.extra)}
        self.episodes.append(record)
        self.episode_stats.append({"episode_index": index, "stats": stats})
        self.total_frames += n
        meta = self.root / "meta"
        with (meta / "episodes_stats.jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps({"episode_index": index, "stats": stats}) + "\n")
        _write_atomic(
            meta / "tasks.jsonl",
            "".join(json.dumps({"task_index": i, "task": t}) + "\n" for t, i in self.tasks.items()),
        )
        with (meta / "episodes.jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        self.write_info()
        return index

    def write_info(self) -> None:
        """(Re)write ``meta/info.json`` and ``meta/stats.json`` from the episodes written so far."""
        n_eps = len(self.episodes)
        info = {
            "codebase_version": CODEBASE_VERSION,
            "robot_type": self.robot_type,
            "total_episodes": n_eps,
            "total_frames": self.total_frames,
            "total_tasks": len(self.tasks),
            "total_videos": n_eps * len(self.video_keys),
            "total_chunks": (n_eps + CHUNKS_SIZE - 1) // CHUNKS_SIZE,
            "chunks_size": CHUNKS_SIZE,
            "fps": self.fps,
            "splits": {"train": f"0:{n_eps}"},
            "data_path": DATA_PATH,
            "video_path": VIDEO_PATH if self.video_keys else None,
            "features": self.features,
        }
        meta = self.root / "meta"
        _write_atomic(meta / "info.json", json.dumps(info, indent=4))
        if self.episode_stats:
            keys = self.episode_stats[0]["stats"].keys()
            agg = {k: _aggregate([e["stats"][k] for e in self.episode_stats]) for k in keys}
            _write_atomic(meta / "stats.json", json.dumps(agg, indent=4))


def _to_arrow(value: np.ndarray, spec: Mapping[str, Any]) -> pa.Array:
    dtype = _ARROW[spec["dtype"]]
    shape = tuple(spec["shape"])
    if shape == (1,):
        return pa.array(value.reshape(-1).astype(spec["dtype"]), type=dtype)
    flat = pa.array(value.reshape(-1).astype(spec["dtype"]), type=dtype)
    return pa.FixedSizeListArray.from_arrays(flat, int(math.prod(shape)))


def read_episode(root: str | Path, episode_index: int, *, videos: bool = True) -> dict[str, np.ndarray]:
    """Columns (as ``(T, *shape)`` arrays) and, with ``videos``, decoded frames of one episode."""
    root = Path(root)
    info = read_info(root)
    chunk = episode_index // int(info["chunks_size"])
    table = pq.read_table(root / info["data_path"].format(episode_chunk=chunk, episode_index=episode_index))
    out: dict[str, np.ndarray] = {}
    for key, spec in info["features"].items():
        if spec["dtype"] == "video":
            if videos:
                path = root / info["video_path"].format(
                    episode_chunk=chunk, video_key=key, episode_index=episode_index
                )
                out[key] = read_video(path)
            continue
        col = table.column(key).combine_chunks()
        if isinstance(col.type, pa.FixedSizeListType | pa.ListType):
            arr = np.asarray(col.flatten().to_numpy(zero_copy_only=False)).reshape(len(col), *spec["shape"])
        else:
            arr = col.to_numpy(zero_copy_only=False)
        out[key] = arr
    return out


# ------------------------------------------------------------------------------------------- validation


def _info_problems(root: Path, info: Mapping[str, Any]) -> Generator[str, None, bool]:
    """Problems of ``meta/info.json``: its keys, version and feature specs.

    Returns whether the rest of the dataset can be checked against it: without its keys or with a
    feature lacking dtype and shape, every later check would only repeat the same fault.
    """
    required = (
        "codebase_version",
        "fps",
        "features",
        "data_path",
        "total_episodes",
        "total_frames",
        "chunks_size",
        "total_tasks",
    )
    missing = [k for k in required if k not in info]
    if missing:
        yield f"{root}/meta/info.json: missing keys {missing}"
        return False
    if info["codebase_version"] != CODEBASE_VERSION:
        got = info["codebase_version"]
        yield f"{root}/meta/info.json: codebase_version {got!r}, want {CODEBASE_VERSION!r}"
    features = info["features"]
    for key in _INDEX_FEATURES:
        if key not in features:
            yield f"{root}/meta/info.json: features lacks the index feature {key!r}"
    for key, spec in features.items():
        if not isinstance(spec, dict) or not {"dtype", "shape"} <= spec.keys():
            yield f"{root}/meta/info.json: features.{key}: needs dtype and shape"
            return False
        if spec["dtype"] == "video":
            if len(spec["shape"]) != 3 or "video_path" not in info or info["video_path"] is None:
                yield f"{root}/meta/info.json: features.{key}: a video needs shape [H, W, C] and video_path"
        elif spec["dtype"] not in _ARROW:
            yield f"{root}/meta/info.json: features.{key}: dtype {spec['dtype']!r} not in {sorted(_ARROW)}"
    return True


def _meta_problems(
    root: Path,
    info: Mapping[str, Any],
    episodes: list[dict[str, Any]],
    tasks: list[dict[str, Any]],
    ep_stats: list[dict[str, Any]],
) -> Iterator[str]:
    """Problems of the ``meta/`` line files against each other and ``info.json`` (counts and indices)."""
    if len(episodes) != info["total_episodes"]:
        yield (
            f"{root}/meta/episodes.jsonl: {len(episodes)} episodes, "
            f"info.json total_episodes {info['total_episodes']}"
        )
    if [e.get("episode_index") for e in episodes] != list(range(len(episodes))):
        yield f"{root}/meta/episodes.jsonl: episode_index must run 0..{len(episodes) - 1} in order"
    if len(ep_stats) != len(episodes):
        yield f"{root}/meta/episodes_stats.jsonl: {len(ep_stats)} lines for {len(episodes)} episodes"
    if len(tasks) != info["total_tasks"] or sorted(t.get("task_index") for t in tasks) != list(
        range(len(tasks))
    ):
        yield f"{root}/meta/tasks.jsonl: task_index must run 0..{info['total_tasks'] - 1}"
    if not (root / "meta/stats.json").is_file() and episodes:
        yield f"{root}/meta/stats.json: missing"


def _column_problems(where: Path, table: pa.Table, features: Mapping[str, Any]) -> Iterator[str]:
    """Problems of one episode's Parquet columns against the features: names, Arrow types, shapes."""
    cols = set(table.column_names)
    want = {k for k, s in features.items() if s["dtype"] != "video"}
    if cols != want:
        yield f"{where}: columns {sorted(cols)} differ from info.json features {sorted(want)}"
    for key in sorted(want & cols):
        spec = features[key]
        col = table.column(key).combine_chunks()
        shape = tuple(spec["shape"])
        arrow = _ARROW.get(spec["dtype"])
        if shape == (1,):
            if col.type != arrow:
                dt = spec["dtype"]
                yield f"{where}: column {key!r} has type {col.type}, info.json says {dt} scalar"
            continue
        if not isinstance(col.type, pa.FixedSizeListType | pa.ListType) or col.type.value_type != arrow:
            yield f"{where}: column {key!r} has type {col.type}, info.json says list<{spec['dtype']}>"
            continue
        lengths = np.unique(col.value_lengths().to_numpy(zero_copy_only=False)) if len(col) else []
        if len(lengths) and (len(lengths) != 1 or int(lengths[0]) != math.prod(shape)):
            got = [int(x) for x in lengths]
            yield f"{where}: column {key!r} rows have {got} values, shape {list(shape)}"


def _index_problems(
    where: Path, table: pa.Table, ep: Mapping[str, Any], total: int, fps: float, task_names: Mapping[Any, Any]
) -> Iterator[str]:
    """Problems of one episode's index columns: frame, episode and global index, timestamp and task.

    ``total`` is the number of frames of the episodes before it (where its global index starts).
    """
    i, n = ep.get("episode_index"), table.num_rows
    fi = table.column("frame_index").to_numpy()
    if not np.array_equal(fi, np.arange(n)):
        yield f"{where}: frame_index must run 0..{n - 1}"
    if not np.all(table.column("episode_index").to_numpy() == i):
        yield f"{where}: episode_index must be {i} in every row"
    if not np.array_equal(table.column("index").to_numpy(), total + np.arange(n)):
        yield f"{where}: index must run {total}..{total + n - 1} (global frame index)"
    ts = table.column("timestamp").to_numpy().astype(np.float64)
    if not np.allclose(ts, np.arange(n) / fps, atol=1e-4):
        yield f"{where}: timestamp must be frame_index / fps ({fps})"
    for t in np.unique(table.column("task_index").to_numpy()):
        if int(t) not in task_names:
            yield f"{where}: task_index {int(t)} not in tasks.jsonl"
        elif task_names[int(t)] not in ep.get("tasks", []):
            yield f"{where}: task {task_names[int(t)]!r} not in the episode's tasks"


def _video_problems(
    root: Path, info: Mapping[str, Any], chunk: int, i: int, n: int, *, check_videos: bool
) -> Iterator[str]:
    """Problems of one episode's videos: present, and (decoded, with ``check_videos``) size and frames."""
    for key, spec in info["features"].items():
        if spec["dtype"] != "video":
            continue
        vpath = root / info["video_path"].format(episode_chunk=chunk, video_key=key, episode_index=i)
        vwhere = vpath.relative_to(root)
        if not vpath.is_file():
            yield f"{vwhere}: video file missing"
            continue
        if not check_videos:
            continue
        try:
            frames, w, h = count_video_frames(vpath)
        except DatasetError as err:
            yield str(err)
            continue
        hh, ww, _ = spec["shape"]
        if (h, w) != (hh, ww):
            yield f"{vwhere}: {w}x{h} pixels, info.json shape says {ww}x{hh}"
        if frames != n:
            yield f"{vwhere}: {frames} frames, the episode has {n} rows"


def _episode_problems(
    root: Path,
    info: Mapping[str, Any],
    ep: Mapping[str, Any],
    total: int,
    fps: float,
    task_names: Mapping[Any, Any],
    *,
    check_videos: bool,
) -> Generator[str, None, int]:
    """Problems of one episode's data file and videos; returns its row count (0 when it has no data).

    The count is returned so the caller can check the global frame index and the total frame count.
    """
    i = ep.get("episode_index")
    if not isinstance(i, int):
        return 0
    chunk = i // int(info["chunks_size"])
    path = root / info["data_path"].format(episode_chunk=chunk, episode_index=i)
    where = path.relative_to(root)
    if not path.is_file():
        yield f"{where}: data file missing"
        return 0
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as err:
        yield f"{where}: not a readable Parquet file: {err}"
        return 0
    n = table.num_rows
    if n != ep.get("length"):
        yield f"{where}: {n} rows, episodes.jsonl length {ep.get('length')}"
    yield from _column_problems(where, table, info["features"])
    if {"frame_index", "episode_index", "index", "timestamp", "task_index"} <= set(table.column_names):
        yield from _index_problems(where, table, ep, total, fps, task_names)
    yield from _video_problems(root, info, chunk, i, n, check_videos=check_videos)
    return n


def _problems(root: Path, *, check_videos: bool) -> Iterator[str]:
    """Every problem of the dataset at ``root``, meta files first, then episode by episode."""
    try:
        info = read_info(root)
    except DatasetError as err:
        yield str(err)
        return
    if not (yield from _info_problems(root, info)):
        return
    try:
        episodes = _read_jsonl(root / "meta/episodes.jsonl")
        tasks = _read_jsonl(root / "meta/tasks.jsonl")
        ep_stats = _read_jsonl(root / "meta/episodes_stats.jsonl")
    except DatasetError as err:
        yield str(err)
        return
    yield from _meta_problems(root, info, episodes, tasks, ep_stats)
    task_names = {t.get("task_index"): t.get("task") for t in tasks}
    fps = float(info["fps"])
    total = 0
    for ep in episodes:
        total += yield from _episode_problems(
            root, info, ep, total, fps, task_names, check_videos=check_videos
        )
    if total != info["total_frames"]:
        yield f"{root}/meta/info.json: total_frames {info['total_frames']}, the data files hold {total}"


def validate_lerobot_dataset(path: str | Path, *, check_videos: bool = True) -> list[str]:
    """Check a dataset against the LeRobot v2.1 schema; returns the problems found (empty: valid).

    Checks: ``info.json`` keys, version and features; ``episodes.jsonl``/``tasks.jsonl``/
    ``episodes_stats.jsonl`` consistency; per episode the Parquet columns against the features (names,
    dtypes, shapes), ``frame_index``/``episode_index``/``index``/``timestamp``/``task_index``; each video's
    presence, size and frame count (decoded, with ``check_videos``); totals.
    """
    return list(_problems(Path(path), check_videos=check_videos))
