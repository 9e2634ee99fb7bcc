"""What the dataset code shares: the episode record a writer takes, ``meta/info.json``, the error type.

Datasets are written and read through lerobot's own ``LeRobotDataset`` (LeRobot v3.0,
:mod:`r2s2r_eval.learning.lerobot_v3`); ``meta/info.json`` is read here first so that a dataset of another
version is refused with what to do, before lerobot is imported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DatasetError", "EpisodeData", "read_info"]

# A sane bound on a meta file we read (untrusted input).
_MAX_META_BYTES = 256 << 20


class DatasetError(ValueError):
    """A LeRobot dataset is malformed or cannot be written; the message names the file and the field."""


@dataclass(frozen=True, kw_only=True, eq=False)
class EpisodeData:
    """One episode to write.

    Attributes:
        task: natural-language task.
        columns: feature name -> (T, *shape) array, for the non-video features of the writer's schema.
        videos: video feature name -> (T, H, W, 3) uint8 RGB frames.
        extra: JSON-able episode metadata kept in ``episodes.jsonl`` next to the standard keys.
    """

    task: str
    columns: Mapping[str, np.ndarray]
    videos: Mapping[str, np.ndarray]
    extra: Mapping[str, Any]

    @property
    def length(self) -> int:
        """Number of frames."""
        return (
            len(next(iter(self.videos.values()))) if self.videos else len(next(iter(self.columns.values())))
        )


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise DatasetError(f"{path}: missing")
    if path.stat().st_size > _MAX_META_BYTES:
        raise DatasetError(f"{path}: larger than {_MAX_META_BYTES} bytes, not a dataset meta file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DatasetError(f"{path}: not valid JSON: {err}") from None


def read_info(root: str | Path) -> dict[str, Any]:
    """``meta/info.json`` of the dataset at ``root``."""
    info = _read_json(Path(root) / "meta/info.json")
    if not isinstance(info, dict):
        raise DatasetError(f"{root}/meta/info.json: must be a JSON object")
    return info
