"""Behaviour cloning of the BC policy from LeRobot-format demonstrations (PyTorch, CPU).

The settings and the data are :mod:`r2s2r_eval.learning.train_data`; the optimisation itself is
:mod:`r2s2r_eval.learning.train_loop`, the only module of a training that imports PyTorch.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from r2s2r_eval.learning.perception_frames import load_perception_frames
from r2s2r_eval.learning.train_data import (
    ENV_KEY,
    IMAGE_KEY,
    Normalization,
    TrainConfig,
    TrainData,
    TrainError,
    load_demonstrations,
)
from r2s2r_eval.policies.bc.config import CHECKPOINT_WEIGHTS

if TYPE_CHECKING:
    from r2s2r_eval.learning.train_loop import FitResult

__all__ = [
    "ENV_KEY",
    "IMAGE_KEY",
    "TRAIN_STATE",
    "TrainConfig",
    "TrainData",
    "TrainError",
    "TrainSummary",
    "load_demonstrations",
    "train",
]

TRAIN_STATE = "train_state.pt"
"""The resume state a training keeps in its output folder until the checkpoint is written."""


@dataclass(frozen=True, kw_only=True)
class TrainSummary:
    """What :func:`train` did: the checkpoint folder, data size, wall time and losses."""

    out: Path
    episodes: int
    frames: int
    wall_s: float
    train_loss: float
    val_loss: float | None


def _perception_frames(cfg: TrainConfig, data: TrainData) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The still frames of ``cfg.perception_frames`` and their object states, or Nones when none are given.

    They must match the demonstrations' image size and object state, since they feed the same head.
    """
    if not cfg.perception_frames:
        return None, None
    loaded = []
    for folder in cfg.perception_frames:
        try:
            loaded.append(load_perception_frames(folder))
        except ValueError as err:
            raise TrainError(f"perception_frames: {err}") from err
    p_images = np.concatenate([im for im, _ in loaded])
    p_env = np.concatenate([e for _, e in loaded]).astype(np.float32)
    if p_images.shape[1:] != data.images.shape[1:] or p_env.shape[1] != (
        data.env.shape[1] if data.env is not None else -1
    ):
        raise TrainError(
            f"perception_frames: frames {p_images.shape[1:]} / state {p_env.shape[1:]} do not match "
            f"the demonstrations' {data.images.shape[1:]}"
        )
    return p_images, p_env


def _split(data: TrainData, cfg: TrainConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    """Training and held-out frame indices, and the number of held-out episodes.

    Whole episodes are held out (frames of one episode are too alike to validate each other), and only
    from 4 episodes on.
    """
    n_eps = int(data.episode.max()) + 1
    n_val = int(round(cfg.val_fraction * n_eps)) if n_eps >= 4 else 0
    val_eps = set(rng.permutation(n_eps)[:n_val].tolist())
    is_val = np.isin(data.episode, list(val_eps))
    return np.flatnonzero(~is_val), np.flatnonzero(is_val), n_val


def _checkpoint_config(
    cfg: TrainConfig,
    datasets: Sequence[str | Path],
    data: TrainData,
    norm: Normalization,
    result: FitResult,
    *,
    n_val: int,
    n_perception: int,
    wall: float,
) -> dict[str, Any]:
    """The checkpoint's ``config.json``: what the policy needs to run it, and how it was trained."""
    return {
        "policy": "bc" if cfg.learner == "cnn" else "lerobot",
        "model": result.model_config.to_dict(),
        "joint_names": list(data.joint_names),
        "arm_names": list(data.arm_names),
        "fps": data.fps,
        "action": (
            "arm: joint targets (rad)"
            if cfg.absolute
            else "arm: joint-target delta from the measured arm positions (rad)"
        )
        + "; gripper: command; progress: fraction of the demonstration done",
        "absolute": cfg.absolute,
        "time_input": cfg.time_input,
        "gripper_levels": data.gripper_levels(),
        "normalization": norm.to_dict(),
        "train": {
            **asdict(cfg),
            "channels": list(cfg.channels),
            "perception_frames": [os.fspath(Path(p).resolve()) for p in cfg.perception_frames],
        },
        "datasets": [os.fspath(Path(d).resolve()) for d in datasets],
        "data": {
            "episodes": int(data.episode.max()) + 1,
            "frames": int(len(data.states)),
            "val_episodes": n_val,
            "perception_frames": n_perception,
        },
        "result": {
            "wall_s": wall,
            "train_loss": float(np.mean(result.losses[-100:])),
            "val_loss": result.val_loss,
            "val_object_error": result.val_object,
        },
    }


def train(
    datasets: Sequence[str | Path],
    out: str | Path,
    cfg: TrainConfig | None = None,
    *,
    progress: Callable[[int, float], None] | None = None,
) -> TrainSummary:
    """Train the BC network on ``datasets`` and write ``policy.pt`` + ``config.json`` to ``out``.

    Args:
        datasets: LeRobot dataset folders written by ``r2s2r demos`` (same joints and image size).
        out: checkpoint folder; must not hold a checkpoint already. A ``train_state.pt`` left there by a
            training with the same settings and data that stopped part-way is resumed.
        cfg: training settings.
        progress: called with ``(step, loss)`` every 100 steps.

    Raises:
        TrainError: ``out`` holds a checkpoint, or bad datasets.
    """
    # reason: train_loop imports torch, which `r2s2r --help` (it imports this module) must not load
    from r2s2r_eval.learning.train_loop import fit, write_checkpoint

    cfg = cfg or TrainConfig()
    out = Path(out)
    if (out / CHECKPOINT_WEIGHTS).exists():
        raise TrainError(f"{out / CHECKPOINT_WEIGHTS}: exists already, not overwriting")
    wall0 = time.perf_counter()
    rng = np.random.default_rng(cfg.seed)
    data = load_demonstrations(datasets, absolute=cfg.absolute, time_input=cfg.time_input)
    if cfg.aux_weight > 0 and data.env is None:
        raise TrainError(
            f"aux_weight {cfg.aux_weight} needs feature {ENV_KEY!r} in every dataset (recorded by "
            "`r2s2r demos` since it exists); re-record, or train with aux_weight 0"
        )
    perception = _perception_frames(cfg, data)
    train_idx, val_idx, n_val = _split(data, cfg, rng)
    norm = Normalization.of(data, train_idx, env=cfg.aux_weight > 0 and data.env is not None)
    result = fit(
        cfg,
        data,
        norm,
        (train_idx, val_idx),
        rng,
        perception=perception,
        datasets=datasets,
        state_path=out / TRAIN_STATE,
        progress=progress,
    )
    wall = time.perf_counter() - wall0
    n_perception = 0 if perception[0] is None else len(perception[0])
    config = _checkpoint_config(
        cfg, datasets, data, norm, result, n_val=n_val, n_perception=n_perception, wall=wall
    )
    write_checkpoint(out, result.model, config, out / TRAIN_STATE)
    return TrainSummary(
        out=out,
        episodes=int(data.episode.max()) + 1,
        frames=int(len(data.states)),
        wall_s=wall,
        train_loss=float(np.mean(result.losses[-100:])),
        val_loss=result.val_loss,
    )
