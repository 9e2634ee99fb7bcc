"""The PyTorch side of a BC training: the network's optimisation, its resume state and its checkpoint.

:func:`r2s2r_eval.learning.train.train` prepares the data and calls :func:`fit` here; this module is the
one that imports PyTorch, so nothing else has to before a training starts.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from r2s2r_eval.learning.train_data import Normalization, TrainConfig, TrainData, TrainError
from r2s2r_eval.policies.bc.config import CHECKPOINT_CONFIG, CHECKPOINT_WEIGHTS
from r2s2r_eval.policies.bc.lerobot_net import LeRobotNet, build_network
from r2s2r_eval.policies.bc.model import BCModelConfig, BCNet

__all__ = ["FitResult", "fit", "write_checkpoint"]

_LEROBOT_GRAD_CLIP = 10.0


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
        """Write ``state`` with this training's fingerprint, replacing the previous one atomically."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        torch.save({"fingerprint": self.fingerprint, **state}, tmp)
        os.replace(tmp, self.path)


class _Trainer:
    """The network, its optimiser and the normalised tensors of one training, and its random streams.

    Every random draw of a step (batch, image shift and colour, state noise, teacher forcing) comes from
    the numpy generator the caller passes and this trainer's torch generator, in a fixed order, so a
    training resumed from its saved state continues exactly as an uninterrupted one.
    """

    def __init__(
        self,
        cfg: TrainConfig,
        data: TrainData,
        norm: Normalization,
        p_images: np.ndarray | None,
        p_env: np.ndarray | None,
    ) -> None:
        self.cfg = cfg
        torch.set_num_threads(cfg.num_threads)
        torch.manual_seed(cfg.seed)
        use_aux = norm.env_mean is not None
        self.height, self.width = data.images.shape[1:3]
        self.model_config = BCModelConfig(
            image_width=self.width,
            image_height=self.height,
            state_dim=data.states.shape[1],
            action_dim=data.targets.shape[1],
            channels=cfg.channels,
            hidden=cfg.hidden,
            aux_dim=data.env.shape[1] if use_aux and data.env is not None else 0,
            chunk=cfg.chunk,
            head_features=cfg.head_features,
            learner=cfg.learner,
        )
        self.model = build_network(self.model_config)
        self.images = torch.from_numpy(data.images)  # uint8, N x H x W x 3
        self.states = torch.from_numpy((data.states - norm.state_mean) / norm.state_std)
        self.targets = torch.from_numpy(
            (data.chunked_targets(cfg.chunk) - np.tile(norm.action_mean, cfg.chunk))
            / np.tile(norm.action_std, cfg.chunk)
        )
        self.env = (
            torch.from_numpy((data.env - norm.env_mean) / norm.env_std)
            if use_aux and data.env is not None
            else None
        )
        self.p_images = torch.from_numpy(p_images) if p_images is not None else None
        self.p_env = torch.from_numpy((p_env - norm.env_mean) / norm.env_std) if p_env is not None else None
        self.env_std = norm.env_std
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.sched = torch.optim.lr_scheduler.LambdaLR(
            self.opt, lambda k: 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(k, cfg.steps) / cfg.steps))
        )
        self.gen = torch.Generator().manual_seed(cfg.seed)
        # State noise in normalised units, on the joint columns only (not the time column).
        n_joints = len(data.joint_names)
        self.joint_noise_scale = torch.zeros(data.states.shape[1])
        self.joint_noise_scale[:n_joints] = torch.from_numpy(cfg.state_noise / norm.state_std[:n_joints])
        self.tf_scale = None
        if cfg.teacher_forcing_m > 0 and norm.env_std is not None:
            # Noise in normalised units: metres on the position, 1 on the quarter-turn yaw features.
            self.tf_scale = torch.from_numpy(
                np.array([cfg.teacher_forcing_m] * 3 + [1.0] * (len(norm.env_std) - 3), np.float32)
                / norm.env_std
            )

    def augmented(self, raw: torch.Tensor, augment: bool) -> torch.Tensor:
        """Images as floats in [0, 1], channels first; with ``augment``, randomly shifted and recoloured."""
        cfg = self.cfg
        img = raw.permute(0, 3, 1, 2).float() / 255.0
        if augment:
            b = len(raw)
            if cfg.shift_px:
                shift = (torch.rand(b, 2, generator=self.gen) * 2 - 1) * cfg.shift_px
                theta = torch.zeros(b, 2, 3)
                theta[:, 0, 0] = theta[:, 1, 1] = 1.0
                theta[:, 0, 2] = shift[:, 0] * 2 / self.width
                theta[:, 1, 2] = shift[:, 1] * 2 / self.height
                grid = F.affine_grid(theta, list(img.shape), align_corners=False)
                img = F.grid_sample(img, grid, padding_mode="border", align_corners=False)
            if cfg.color_jitter:
                j = cfg.color_jitter
                gain = 1 + (torch.rand(b, 3, 1, 1, generator=self.gen) * 2 - 1) * j
                bias = (torch.rand(b, 1, 1, 1, generator=self.gen) * 2 - 1) * j / 2
                img = (img * gain + bias).clamp(0, 1)
        return img

    def batch(
        self, idx: np.ndarray, augment: bool
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Images, states (noised when augmenting), targets and object states of the frames ``idx``."""
        ix = torch.from_numpy(idx)
        img = self.augmented(self.images[ix], augment)
        s = self.states[ix]
        if augment and self.cfg.state_noise:
            noise = torch.randn(s.shape, generator=self.gen) * self.joint_noise_scale
            s = s + noise
        return img, s, self.targets[ix], (self.env[ix] if self.env is not None else None)

    def loss_of(
        self,
        img: torch.Tensor,
        s: torch.Tensor,
        t: torch.Tensor,
        e: torch.Tensor | None,
        forced: bool = False,
    ) -> torch.Tensor:
        """Action loss plus the weighted auxiliary loss; ``forced``: teacher forcing, when configured.

        lerobot's learners train on their own loss (:meth:`LeRobotNet.imitation_loss`).
        """
        if isinstance(self.model, LeRobotNet):
            return self.model.imitation_loss(img, s, t)
        given = None
        if forced and self.tf_scale is not None and e is not None:
            given = e + torch.randn(e.shape, generator=self.gen) * self.tf_scale
        pred, aux = self.model.forward_all(img, s, given)
        loss = F.smooth_l1_loss(pred, t, beta=0.1)
        if aux is not None and e is not None:
            loss = loss + self.cfg.aux_weight * F.smooth_l1_loss(aux, e, beta=0.1)
        return loss

    def step(self, train_idx: np.ndarray, rng: np.random.Generator) -> float:
        """One optimiser step on a random batch (and as many perception frames); its loss."""
        cfg = self.cfg
        idx = train_idx[rng.integers(0, len(train_idx), cfg.batch_size)]
        loss = self.loss_of(*self.batch(idx, augment=True), forced=True)
        if self.p_images is not None and self.p_env is not None:
            pix = torch.from_numpy(rng.integers(0, len(self.p_images), cfg.batch_size))
            p_pred = self.model.object_state(self.augmented(self.p_images[pix], True))
            loss = loss + cfg.aux_weight * F.smooth_l1_loss(p_pred, self.p_env[pix], beta=0.1)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        if isinstance(self.model, LeRobotNet):  # lerobot's training clips at this norm for both learners
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), _LEROBOT_GRAD_CLIP)
        self.opt.step()
        self.sched.step()
        return loss.item()

    def state(self, step: int, rng: np.random.Generator, losses: list[float]) -> dict[str, Any]:
        """Everything a resumed training needs to continue after ``step`` as if never stopped."""
        return {
            "step": step,
            "model": self.model.state_dict(),
            "optimizer": self.opt.state_dict(),
            "schedule": self.sched.state_dict(),
            "numpy_rng": rng.bit_generator.state,
            "torch_gen": self.gen.get_state(),
            "torch_rng": torch.get_rng_state(),
            "losses": losses[-100:],
        }

    def restore(self, state: dict[str, Any], rng: np.random.Generator) -> tuple[list[float], int]:
        """Load a saved :meth:`state`; the recent losses and the step to continue with."""
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.sched.load_state_dict(state["schedule"])
        rng.bit_generator.state = state["numpy_rng"]
        self.gen.set_state(state["torch_gen"])
        torch.set_rng_state(state["torch_rng"])
        return list(state["losses"]), int(state["step"]) + 1

    def validate(self, val_idx: np.ndarray) -> tuple[float | None, dict[str, float] | None]:
        """Loss on the held-out frames, and the median error of the object state read from their images.

        Both are None without held-out frames; the object error is None without an auxiliary head.
        """
        if not len(val_idx):
            return None, None
        val_object: dict[str, float] | None = None
        with torch.no_grad():
            vals, aux_errs = [], []
            for part in np.array_split(val_idx, max(1, len(val_idx) // 256)):
                img, s, t, e = self.batch(part, augment=False)
                if isinstance(self.model, LeRobotNet):
                    vals.append(float(self.model.validation_loss(img, s, t)) * len(part))
                    continue
                pred, aux = self.model.forward_all(img, s)
                vals.append(float(F.smooth_l1_loss(pred, t, beta=0.1)) * len(part))
                if aux is not None and e is not None:
                    err = ((aux - e) * torch.from_numpy(self.env_std)).abs()
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
        return val_loss, val_object


@dataclass(frozen=True, kw_only=True, eq=False)
class FitResult:
    """The trained network (eval mode), its config, the last losses and the validation results."""

    model: BCNet | LeRobotNet
    model_config: BCModelConfig
    losses: list[float]
    val_loss: float | None
    val_object: dict[str, float] | None


def fit(
    cfg: TrainConfig,
    data: TrainData,
    norm: Normalization,
    split: tuple[np.ndarray, np.ndarray],
    rng: np.random.Generator,
    *,
    perception: tuple[np.ndarray | None, np.ndarray | None],
    datasets: Sequence[str | Path],
    state_path: Path,
    progress: Callable[[int, float], None] | None = None,
) -> FitResult:
    """Train the BC network for ``cfg.steps`` steps, resuming from ``state_path`` when it holds a state.

    Args:
        cfg: training settings.
        data: the demonstrations.
        norm: their normalisation.
        split: the training and the held-out frame indices.
        rng: the numpy generator of the batches (already used for the split).
        perception: extra still frames and their object states for the auxiliary loss, or Nones.
        datasets: the dataset folders, which (with ``cfg``) identify a resume state as this training's.
        state_path: where the resume state is kept every ``cfg.save_every`` steps.
        progress: called with ``(step, loss)`` every 100 steps.

    Raises:
        TrainError: ``state_path`` holds a state of another training, or an unreadable one.
    """
    train_idx, val_idx = split
    trainer = _Trainer(cfg, data, norm, *perception)
    resume = _Resume(state_path, cfg, datasets)
    losses: list[float] = []
    first = 1
    if (state := resume.load()) is not None:
        losses, first = trainer.restore(state, rng)
    trainer.model.train()
    for step in range(first, cfg.steps + 1):
        losses.append(trainer.step(train_idx, rng))
        if progress is not None and (step % 100 == 0 or step == cfg.steps):
            progress(step, float(np.mean(losses[-100:])))
        if cfg.save_every and step % cfg.save_every == 0 and step < cfg.steps:
            resume.save(**trainer.state(step, rng, losses))
    trainer.model.eval()
    val_loss, val_object = trainer.validate(val_idx)
    return FitResult(
        model=trainer.model,
        model_config=trainer.model_config,
        losses=losses,
        val_loss=val_loss,
        val_object=val_object,
    )


def write_checkpoint(out: Path, model: BCNet | LeRobotNet, config: dict[str, Any], state_path: Path) -> None:
    """Write ``policy.pt`` and ``config.json`` into ``out``, then drop the resume state.

    The weights are renamed into place last, so a folder with ``policy.pt`` always has its config.
    """
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (CHECKPOINT_WEIGHTS + ".tmp")
    torch.save(model.state_dict(), tmp)
    (out / CHECKPOINT_CONFIG).write_text(json.dumps(config, indent=2), encoding="utf-8")
    os.replace(tmp, out / CHECKPOINT_WEIGHTS)
    state_path.unlink(missing_ok=True)
