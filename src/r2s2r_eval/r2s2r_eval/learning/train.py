"""Behaviour cloning of the BC policy from LeRobot-format demonstrations (PyTorch, CPU)."""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from r2s2r_sim.ranges import check_fields, within

from r2s2r_eval.learning.lerobot_format import read_episode, read_info
from r2s2r_eval.learning.perception_frames import load_perception_frames
from r2s2r_eval.policies.bc.model import BCModelConfig, BCNet
from r2s2r_eval.policies.bc.policy import CHECKPOINT_CONFIG, CHECKPOINT_WEIGHTS

__all__ = ["TRAIN_STATE", "TrainConfig", "TrainError", "TrainSummary", "load_demonstrations", "train"]

TRAIN_STATE = "train_state.pt"
"""The resume state a training keeps in its output folder until the checkpoint is written."""

IMAGE_KEY = "observation.images.camera"
ENV_KEY = "observation.environment_state"


class TrainError(ValueError):
    """Training cannot start or finish as configured (names the field or file at fault)."""


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """How :func:`train` trains.

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

    def __post_init__(self) -> None:
        check_fields(self, error=TrainError)
        checks = (
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


@dataclass(frozen=True, kw_only=True)
class TrainSummary:
    """What :func:`train` did: the checkpoint folder, data size, wall time and losses."""

    out: Path
    episodes: int
    frames: int
    wall_s: float
    train_loss: float
    val_loss: float | None


@dataclass(frozen=True, kw_only=True, eq=False)
class _Data:
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


def load_demonstrations(
    roots: Sequence[str | Path], *, absolute: bool = True, time_input: bool = True
) -> _Data:
    """Read frames, joint states (+ episode time) and BC targets (arm targets, gripper, progress).

    ``absolute``: arm targets as recorded; else minus the measured arm positions.  ``time_input``: append
    the frame's ``timestamp`` (s since the episode started) to the state.

    Raises:
        TrainError: no dataset, no episode, or datasets with different joints, image size or fps.
    """
    if not roots:
        raise TrainError("no dataset given")
    images, states, targets, episodes, envs = [], [], [], [], []
    ref: tuple[Any, ...] | None = None
    n_ep = 0
    for root in roots:
        info = read_info(root)
        feats = info["features"]
        for key in (IMAGE_KEY, "observation.state", "action"):
            if key not in feats:
                raise TrainError(f"{root}/meta/info.json: feature {key!r} missing (a `r2s2r demos` dataset?)")
        joint_names = tuple(feats["observation.state"]["names"])
        arm_names = tuple(feats["action"]["names"][:-1])
        this = (joint_names, arm_names, tuple(feats[IMAGE_KEY]["shape"]), float(info["fps"]))
        if ref is None:
            ref = this
        elif this != ref:
            raise TrainError(f"{root}: joints, image size or fps differ from {roots[0]}: {this} vs {ref}")
        arm_idx = [joint_names.index(n) for n in arm_names]
        for i in range(int(info["total_episodes"])):
            ep = read_episode(root, i)
            s = ep["observation.state"].astype(np.float32)
            a = ep["action"].astype(np.float32)
            # Targets: arm targets, gripper, and episode progress in [0, 1] (the policy's "done" signal).
            progress = np.linspace(0.0, 1.0, len(a), dtype=np.float32)[:, None]
            t = np.concatenate([a, progress], axis=1)
            if not absolute:
                t[:, : len(arm_names)] -= s[:, arm_idx]
            if time_input:
                s = np.concatenate([s, ep["timestamp"].astype(np.float32)[:, None]], axis=1)
            images.append(ep[IMAGE_KEY])
            envs.append(ep[ENV_KEY].astype(np.float32) if ENV_KEY in ep else None)
            states.append(s)
            targets.append(t)
            episodes.append(np.full(len(s), n_ep))
            n_ep += 1
    if ref is None or n_ep == 0:
        raise TrainError(f"datasets {list(map(str, roots))} hold no episode")
    return _Data(
        images=np.concatenate(images),
        states=np.concatenate(states),
        targets=np.concatenate(targets),
        env=None if any(e is None for e in envs) else np.concatenate(envs),
        episode=np.concatenate(episodes),
        joint_names=ref[0],
        arm_names=ref[1],
        fps=ref[3],
    )


class _Resume:
    """The resume state of one training: written atomically, read back only for the same settings and data."""

    def __init__(self, path: Path, cfg: TrainConfig, datasets: Sequence[str | Path]) -> None:
        self.path = path
        settings = {**asdict(cfg), "save_every": None, "num_threads": None}  # neither changes the result
        self.fingerprint = json.dumps(
            {"train": settings, "datasets": [os.fspath(Path(d).resolve()) for d in datasets]},
            sort_keys=True,
            default=str,
        )

    def load(self) -> dict[str, Any] | None:
        """The saved state, or None when there is none.

        Raises:
            TrainError: a state left by a training with other settings or data (names the file).
        """
        import torch

        if not self.path.exists():
            return None
        try:
            state = torch.load(self.path, map_location="cpu", weights_only=True)
        except Exception as err:  # a torn or foreign file: say which, keep it for inspection
            raise TrainError(
                f"{self.path}: not a readable training state ({err}); delete it to start over"
            ) from err
        if state.get("fingerprint") != self.fingerprint:
            raise TrainError(
                f"{self.path}: left by a training with other settings or datasets; "
                "rerun with those, or delete it to start over"
            )
        return state

    def save(self, **state: Any) -> None:
        import torch

        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        torch.save({"fingerprint": self.fingerprint, **state}, tmp)
        os.replace(tmp, self.path)


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
    import torch
    import torch.nn.functional as F

    cfg = cfg or TrainConfig()
    out = Path(out)
    if (out / CHECKPOINT_WEIGHTS).exists():
        raise TrainError(f"{out / CHECKPOINT_WEIGHTS}: exists already, not overwriting")
    wall0 = time.perf_counter()
    torch.set_num_threads(cfg.num_threads)
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    data = load_demonstrations(datasets, absolute=cfg.absolute, time_input=cfg.time_input)
    if cfg.aux_weight > 0 and data.env is None:
        raise TrainError(
            f"aux_weight {cfg.aux_weight} needs feature {ENV_KEY!r} in every dataset (recorded by "
            "`r2s2r demos` since it exists); re-record, or train with aux_weight 0"
        )
    use_aux = cfg.aux_weight > 0 and data.env is not None
    p_images = p_env = None
    if cfg.perception_frames:
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
    n_eps = int(data.episode.max()) + 1
    n_val = int(round(cfg.val_fraction * n_eps)) if n_eps >= 4 else 0
    val_eps = set(rng.permutation(n_eps)[:n_val].tolist())
    is_val = np.isin(data.episode, list(val_eps))
    train_idx, val_idx = np.flatnonzero(~is_val), np.flatnonzero(is_val)
    s_mean, s_std = data.states[train_idx].mean(0), data.states[train_idx].std(0) + 1e-3
    a_mean, a_std = data.targets[train_idx].mean(0), data.targets[train_idx].std(0) + 1e-4
    e_mean = e_std = None
    if use_aux:
        assert data.env is not None
        e_mean, e_std = data.env[train_idx].mean(0), data.env[train_idx].std(0) + 1e-4
    h, w = data.images.shape[1:3]
    mcfg = BCModelConfig(
        image_width=w,
        image_height=h,
        state_dim=data.states.shape[1],
        action_dim=data.targets.shape[1],
        channels=cfg.channels,
        hidden=cfg.hidden,
        aux_dim=data.env.shape[1] if use_aux and data.env is not None else 0,
        chunk=cfg.chunk,
        head_features=cfg.head_features,
    )
    model = BCNet(mcfg)
    images = torch.from_numpy(data.images)  # uint8, N x H x W x 3
    states = torch.from_numpy((data.states - s_mean) / s_std)
    targets = torch.from_numpy(
        (data.chunked_targets(cfg.chunk) - np.tile(a_mean, cfg.chunk)) / np.tile(a_std, cfg.chunk)
    )
    env = torch.from_numpy((data.env - e_mean) / e_std) if use_aux and data.env is not None else None
    p_img_t = torch.from_numpy(p_images) if p_images is not None else None
    p_env_t = torch.from_numpy((p_env - e_mean) / e_std) if p_env is not None else None
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(k, cfg.steps) / cfg.steps))
    )
    gen = torch.Generator().manual_seed(cfg.seed)
    # State noise in normalised units, on the joint columns only (not the time column).
    joint_noise_scale = torch.zeros(data.states.shape[1])
    joint_noise_scale[: len(data.joint_names)] = torch.from_numpy(
        cfg.state_noise / s_std[: len(data.joint_names)]
    )

    def batch(
        idx: np.ndarray, augment: bool
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        ix = torch.from_numpy(idx)
        img = augmented(images[ix], augment)
        s = states[ix]
        if augment and cfg.state_noise:
            noise = torch.randn(s.shape, generator=gen) * joint_noise_scale
            s = s + noise
        return img, s, targets[ix], (env[ix] if env is not None else None)

    def augmented(raw: torch.Tensor, augment: bool) -> torch.Tensor:
        img = raw.permute(0, 3, 1, 2).float() / 255.0
        if augment:
            b = len(idx)
            if cfg.shift_px:
                shift = (torch.rand(b, 2, generator=gen) * 2 - 1) * cfg.shift_px
                theta = torch.zeros(b, 2, 3)
                theta[:, 0, 0] = theta[:, 1, 1] = 1.0
                theta[:, 0, 2] = shift[:, 0] * 2 / w
                theta[:, 1, 2] = shift[:, 1] * 2 / h
                grid = F.affine_grid(theta, list(img.shape), align_corners=False)
                img = F.grid_sample(img, grid, padding_mode="border", align_corners=False)
            if cfg.color_jitter:
                j = cfg.color_jitter
                gain = 1 + (torch.rand(b, 3, 1, 1, generator=gen) * 2 - 1) * j
                bias = (torch.rand(b, 1, 1, 1, generator=gen) * 2 - 1) * j / 2
                img = (img * gain + bias).clamp(0, 1)
        return img

    tf_scale = None
    if cfg.teacher_forcing_m > 0 and e_std is not None:
        # Noise in normalised units: metres on the position, 1 on the quarter-turn yaw features.
        tf_scale = torch.from_numpy(
            np.array([cfg.teacher_forcing_m] * 3 + [1.0] * (len(e_std) - 3), np.float32) / e_std
        )

    def loss_of(
        img: torch.Tensor, s: torch.Tensor, t: torch.Tensor, e: torch.Tensor | None, forced: bool = False
    ) -> torch.Tensor:
        given = None
        if forced and tf_scale is not None and e is not None:
            given = e + torch.randn(e.shape, generator=gen) * tf_scale
        pred, aux = model.forward_all(img, s, given)
        loss = F.smooth_l1_loss(pred, t, beta=0.1)
        if aux is not None and e is not None:
            loss = loss + cfg.aux_weight * F.smooth_l1_loss(aux, e, beta=0.1)
        return loss

    resume = _Resume(out / TRAIN_STATE, cfg, datasets)
    losses: list[float] = []
    first = 1
    if (state := resume.load()) is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["schedule"])
        rng.bit_generator.state = state["numpy_rng"]
        gen.set_state(state["torch_gen"])
        torch.set_rng_state(state["torch_rng"])
        losses, first = list(state["losses"]), int(state["step"]) + 1
    model.train()
    for step in range(first, cfg.steps + 1):
        idx = train_idx[rng.integers(0, len(train_idx), cfg.batch_size)]
        loss = loss_of(*batch(idx, augment=True), forced=True)
        if p_img_t is not None and p_env_t is not None:
            pix = torch.from_numpy(rng.integers(0, len(p_img_t), cfg.batch_size))
            p_pred = model.object_state(augmented(p_img_t[pix], True))
            loss = loss + cfg.aux_weight * F.smooth_l1_loss(p_pred, p_env_t[pix], beta=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if progress is not None and (step % 100 == 0 or step == cfg.steps):
            progress(step, float(np.mean(losses[-100:])))
        if cfg.save_every and step % cfg.save_every == 0 and step < cfg.steps:
            resume.save(
                step=step,
                model=model.state_dict(),
                optimizer=opt.state_dict(),
                schedule=sched.state_dict(),
                numpy_rng=rng.bit_generator.state,
                torch_gen=gen.get_state(),
                torch_rng=torch.get_rng_state(),
                losses=losses[-100:],
            )
    model.eval()
    val_loss = None
    val_object: dict[str, float] | None = None
    if len(val_idx):
        with torch.no_grad():
            vals, aux_errs = [], []
            for part in np.array_split(val_idx, max(1, len(val_idx) // 256)):
                img, s, t, e = batch(part, augment=False)
                pred, aux = model.forward_all(img, s)
                vals.append(float(F.smooth_l1_loss(pred, t, beta=0.1)) * len(part))
                if aux is not None and e is not None:
                    err = ((aux - e) * torch.from_numpy(e_std)).abs()
                    aux_errs.append(err.numpy())
            val_loss = sum(vals) / len(val_idx)
            if aux_errs:
                err = np.concatenate(aux_errs)
                # Median absolute error of the object state read from held-out images (m; cos/sin units).
                val_object = {
                    "position_m": float(np.median(np.linalg.norm(err[:, :2], axis=1))),
                    "z_m": float(np.median(err[:, 2])),
                    "yaw_features": float(np.median(np.abs(err[:, 3:]).max(axis=1))),
                }
    wall = time.perf_counter() - wall0
    out.mkdir(parents=True, exist_ok=True)
    config = {
        "policy": "bc",
        "model": mcfg.to_dict(),
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
        "normalization": {
            "state_mean": s_mean.tolist(),
            "state_std": s_std.tolist(),
            "action_mean": a_mean.tolist(),
            "action_std": a_std.tolist(),
            **(
                {"env_mean": e_mean.tolist(), "env_std": e_std.tolist()}
                if e_mean is not None and e_std is not None
                else {}
            ),
        },
        "train": {
            **asdict(cfg),
            "channels": list(cfg.channels),
            "perception_frames": [os.fspath(Path(p).resolve()) for p in cfg.perception_frames],
        },
        "datasets": [os.fspath(Path(d).resolve()) for d in datasets],
        "data": {
            "episodes": n_eps,
            "frames": int(len(data.states)),
            "val_episodes": n_val,
            "perception_frames": 0 if p_images is None else len(p_images),
        },
        "result": {
            "wall_s": wall,
            "train_loss": float(np.mean(losses[-100:])),
            "val_loss": val_loss,
            "val_object_error": val_object,
        },
    }
    tmp = out / (CHECKPOINT_WEIGHTS + ".tmp")
    torch.save(model.state_dict(), tmp)
    (out / CHECKPOINT_CONFIG).write_text(json.dumps(config, indent=2), encoding="utf-8")
    os.replace(tmp, out / CHECKPOINT_WEIGHTS)
    resume.path.unlink(missing_ok=True)
    return TrainSummary(
        out=out,
        episodes=n_eps,
        frames=int(len(data.states)),
        wall_s=wall,
        train_loss=float(np.mean(losses[-100:])),
        val_loss=val_loss,
    )
