"""MP4 codec for LeRobot ``video`` features: deterministic H.264 encoding and exact decoding via ffmpeg."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

__all__ = ["DatasetError", "count_video_frames", "encode_video", "read_video"]


class DatasetError(ValueError):
    """A LeRobot dataset is malformed or cannot be written; the message names the file and the field."""


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
