"""What a BC training reads: its settings, and the demonstrations as arrays with their normalisation.

Nothing here needs PyTorch, so the settings can be checked (and ``r2s2r train --help`` shown) without it;
the training loop itself is :mod:`r2s2r_eval.learning.train_loop`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from r2s2r_sim.ranges import check_fields, within

from r2s2r_eval.learning.lerobot_read import (
    ACTION_KEY,
    ENV_KEY,
    IMAGE_KEY,
    STATE_KEY,
    bc_features,
    read_episodes,
)
from r2s2r_eval.policies.bc.config import DIFFUSION_HORIZON_MULTIPLE, LEARNERS

__all__ = [
    "ENV_KEY",
    "LEARNER_DEFAULTS",
    "IMAGE_KEY",
    "Normalization",
    "TrainConfig",
    "TrainData",
    "TrainError",
    "load_demonstrations",
]


_MAX_GRIPPER_LEVELS = 2


class TrainError(ValueError):
    """Training cannot start or finish as configured (names the field or file at fault)."""


LEARNER_DEFAULTS: dict[str, dict[str, Any]] = {
    "cnn": {"lr": 1e-3, "aux_weight": 1.0, "chunk": 1},
    "act": {"lr": 1e-4, "aux_weight": 0.0, "chunk": 10},
    "diffusion": {"lr": 1e-4, "aux_weight": 0.0, "chunk": 16},
}
"""Per learner, the settings ``r2s2r train --learner`` starts from: lerobot's learners have no auxiliary
head, train at ACT's and Diffusion Policy's usual rate, and predict ACT's and Diffusion Policy's chunks
scaled to this product's 10 Hz control."""


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """How :func:`~r2s2r_eval.learning.train.train` trains.

    Attributes:
        steps: optimiser steps (>= 1).
        batch_size: samples per step (>= 1).
        lr: peak Adam learning rate (cosine decay to 5% of it).
        weight_decay: AdamW weight decay.
        shift_px: random image shift augmentation (px, DrQ-style; >= 0).
        color_jitter: random per-sample brightness/contrast scale (fraction; >= 0).
        val_fraction: episodes held out for a validation loss (in [0, 0.5)).
        seed: torch and sampling seed (>= 0).
        num_threads: torch CPU threads (>= 1).
        channels, hidden: network size (see :class:`~r2s2r_eval.policies.bc.model.BCModelConfig`).
        absolute: predict absolute arm joint targets (True) or targets relative to the measured arm
            positions (False); absolute targets keep the servo's tracking error out of the next command.
        time_input: give the network the time since the episode started (s) next to the joint state, so
            the phases in which the expert holds still (closing the gripper) do not look alike.
        state_noise: std (rad or m) of Gaussian noise added to the joint-state input during training.
            A demonstration's next target is always close to the current joint state, so a network can
            learn to copy the state, and in closed loop any early error then persists and grows (the
            "copycat" failure of behaviour cloning); noising the input makes it read the target from
            the image and the time instead.
        aux_weight: weight of the auxiliary loss on the task object's state (position, yaw) read from
            the image, against the privileged ``observation.environment_state`` of the demonstrations
            (0: no auxiliary head).  Without it the image features that locate the object are learned only
            through the actions, and too loosely: the first step of an episode went 0.1 rad wrong.
        chunk: consecutive actions predicted per step (action chunking; the policy averages the
            overlapping predictions of one step, ACT's temporal ensembling).
        head_features: the action head also reads the image keypoints (True), or only the object state
            from the auxiliary head and the joint state (False; needs ``aux_weight > 0``).
        teacher_forcing_m: with ``head_features`` False, train the action head on the true object state
            plus Gaussian noise of this std (m, on the position; the yaw features get noise of std 1)
            instead of the auxiliary head's estimate, so it learns the expert's map exactly and tolerates
            estimates this far off; 0: the estimate.
        perception_frames: folders written by
            :func:`~r2s2r_eval.learning.perception_frames.collect_perception_frames`: still frames with the
            object at many more poses than the demonstrations show; each step adds ``batch_size`` of them to
            the auxiliary loss only (needs ``aux_weight > 0``).
        save_every: steps between resume states (``train_state.pt`` in the output folder: network,
            optimiser, schedule and random generators), so a training stopped part-way goes on from its
            last state with the same result as one uninterrupted run; 0: none.
        learner: the network: "cnn" (the CNN above), "act" (lerobot's action-chunking transformer) or
            "diffusion" (lerobot's Diffusion Policy, ``chunk`` a multiple of 4); lerobot's learners need
            ``aux_weight`` 0 (:data:`LEARNER_DEFAULTS` has each one's starting settings).
    """

    steps: int = within(3000, ">= 1")
    batch_size: int = within(64, ">= 1")
    lr: float = within(1e-3, "> 0")
    weight_decay: float = within(1e-4, ">= 0")
    shift_px: int = within(4, ">= 0")
    color_jitter: float = within(0.1, "[0, 1)")
    val_fraction: float = within(0.05, "[0, 0.5)")
    seed: int = within(0, ">= 0")
    num_threads: int = within(2, ">= 1")
    channels: tuple[int, ...] = (16, 32, 32)
    hidden: int = 256
    absolute: bool = True
    time_input: bool = True
    state_noise: float = within(0.0, ">= 0")
    aux_weight: float = within(1.0, ">= 0")
    chunk: int = within(1, "[1, 100]")
    head_features: bool = True
    teacher_forcing_m: float = 0.0
    perception_frames: tuple[str, ...] = ()
    save_every: int = within(500, ">= 0")
    learner: str = "cnn"

    def __post_init__(self) -> None:
        check_fields(self, error=TrainError)
        lerobot = self.learner != "cnn"
        checks = (
            ("learner", self.learner in LEARNERS, f"one of {', '.join(LEARNERS)}"),
            ("aux_weight", not lerobot or self.aux_weight == 0, f"0 for learner {self.learner!r}"),
            (
                "chunk",
                self.learner != "diffusion" or self.chunk % DIFFUSION_HORIZON_MULTIPLE == 0,
                f"a multiple of {DIFFUSION_HORIZON_MULTIPLE} for learner 'diffusion'",
            ),
            ("head_features", self.head_features or self.aux_weight > 0, "True unless aux_weight > 0"),
            (
                "teacher_forcing_m",
                math.isfinite(self.teacher_forcing_m)
                and self.teacher_forcing_m >= 0
                and (self.teacher_forcing_m == 0 or not self.head_features),
                ">= 0, and 0 unless head_features is False",
            ),
            (
                "perception_frames",
                not self.perception_frames or self.aux_weight > 0,
                "empty unless aux_weight > 0",
            ),
        )
        for name, ok, expected in checks:
            if not ok:
                raise TrainError(f"{name}: must be {expected}, got {getattr(self, name)}")


@dataclass(frozen=True, kw_only=True, eq=False)
class TrainData:
    """The demonstrations as arrays, frame by frame; episodes are contiguous runs of frames."""

    images: np.ndarray  # N x H x W x 3 uint8
    states: np.ndarray  # N x S float32: joint positions (+ time since the episode started, s)
    targets: np.ndarray  # N x A float32: arm targets (absolute or relative), gripper, progress
    env: np.ndarray | None  # N x E float32: privileged task-object state, if every dataset has it
    episode: np.ndarray  # N int
    joint_names: tuple[str, ...]
    arm_names: tuple[str, ...]
    fps: float

    def chunked_targets(self, chunk: int) -> np.ndarray:
        """N x (chunk * A): each frame's targets and those of the ``chunk - 1`` frames after it.

        Chunks stay inside their episode: its last frame is repeated past the end.
        """
        if chunk == 1:
            return self.targets
        idx = np.arange(len(self.targets))[:, None] + np.arange(chunk)[None, :]
        # Last frame index of each frame's episode (episodes are contiguous).
        ends = np.flatnonzero(np.diff(self.episode, append=self.episode[-1] + 1))
        last = ends[np.searchsorted(ends, np.arange(len(self.targets)))]
        idx = np.minimum(idx, last[:, None])
        return self.targets[idx].reshape(len(self.targets), -1)

    def gripper_levels(self) -> list[float] | None:
        """The gripper commands the demonstrations used, if they used at most two (open, closed); else None.

        A policy may snap its regressed gripper command to these levels; demonstrations that open a jaw
        gradually have no levels to snap to, and snapping would undo what they show.
        """
        values = np.unique(np.round(self.targets[:, len(self.arm_names)].astype(np.float64), 6))
        return [float(v) for v in values] if len(values) <= _MAX_GRIPPER_LEVELS else None


def load_demonstrations(
    roots: Sequence[str | Path], *, absolute: bool = True, time_input: bool = True
) -> TrainData:
    """Read frames, joint states (+ episode time) and BC targets (arm targets, gripper, progress).

    ``absolute``: arm targets as recorded; else minus the measured arm positions.  ``time_input``: append
    the frame's ``timestamp`` (s since the episode started) to the state.

    Raises:
        TrainError: no dataset, no episode, or datasets with different joints, image size or fps.
        DatasetError: a dataset that is not LeRobot v3.0, or a feature that does not map onto the bc
            policy's inputs (:func:`~r2s2r_eval.learning.lerobot_read.bc_features`).
    """
    if not roots:
        raise TrainError("no dataset given")
    images, states, targets, episodes, envs = [], [], [], [], []
    ref: tuple[Any, ...] | None = None
    n_ep = 0
    for root in roots:
        feats = bc_features(root)
        this = (feats.joint_names, feats.arm_names, feats.image_shape, feats.fps)
        if ref is None:
            ref = this
        elif this != ref:
            raise TrainError(f"{root}: joints, image size or fps differ from {roots[0]}: {this} vs {ref}")
        arm_idx = [feats.joint_names.index(n) for n in feats.arm_names]
        for ep in read_episodes(root, feats):
            s = ep[STATE_KEY]
            a = ep[ACTION_KEY]
            # Targets: arm targets, gripper, and episode progress in [0, 1] (the policy's "done" signal).
            progress = np.linspace(0.0, 1.0, len(a), dtype=np.float32)[:, None]
            t = np.concatenate([a, progress], axis=1)
            if not absolute:
                t[:, : len(feats.arm_names)] -= s[:, arm_idx]
            if time_input:
                s = np.concatenate([s, ep["timestamp"][:, None]], axis=1)
            images.append(ep[IMAGE_KEY])
            envs.append(ep[ENV_KEY] if ENV_KEY in ep else None)
            states.append(s)
            targets.append(t)
            episodes.append(np.full(len(s), n_ep))
            n_ep += 1
    if ref is None or n_ep == 0:
        raise TrainError(f"datasets {list(map(str, roots))} hold no episode")
    return TrainData(
        images=np.concatenate(images),
        states=np.concatenate(states),
        targets=np.concatenate(targets),
        env=None if any(e is None for e in envs) else np.concatenate(envs),
        episode=np.concatenate(episodes),
        joint_names=ref[0],
        arm_names=ref[1],
        fps=ref[3],
    )


@dataclass(frozen=True, kw_only=True, eq=False)
class Normalization:
    """Mean and std of the network's inputs and outputs over the training frames.

    The network sees and predicts normalised values; the checkpoint keeps these so the policy can undo it.
    The object-state pair is None without the auxiliary loss.
    """

    state_mean: np.ndarray
    state_std: np.ndarray
    action_mean: np.ndarray
    action_std: np.ndarray
    env_mean: np.ndarray | None = None
    env_std: np.ndarray | None = None

    @classmethod
    def of(cls, data: TrainData, train_idx: np.ndarray, *, env: bool) -> Normalization:
        """Over the frames ``train_idx`` of ``data``; with ``env``, of the object state too."""
        env_mean = env_std = None
        if env:
            assert data.env is not None
            env_mean, env_std = data.env[train_idx].mean(0), data.env[train_idx].std(0) + 1e-4
        return cls(
            state_mean=data.states[train_idx].mean(0),
            state_std=data.states[train_idx].std(0) + 1e-3,
            action_mean=data.targets[train_idx].mean(0),
            action_std=data.targets[train_idx].std(0) + 1e-4,
            env_mean=env_mean,
            env_std=env_std,
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``normalization`` entry of a checkpoint's ``config.json``."""
        return {
            "state_mean": self.state_mean.tolist(),
            "state_std": self.state_std.tolist(),
            "action_mean": self.action_mean.tolist(),
            "action_std": self.action_std.tolist(),
            **(
                {"env_mean": self.env_mean.tolist(), "env_std": self.env_std.tolist()}
                if self.env_mean is not None and self.env_std is not None
                else {}
            ),
        }
