"""The BC network: a small CNN with a spatial-softmax keypoint head, fused with joint state by an MLP.

Optionally (``aux_dim > 0``) a second head reads the task object's state (position, yaw) from the
keypoints; it is trained against the simulator's privileged state and its output also feeds the action
head, so the image features are shaped to localise the object precisely.  ``chunk > 1`` predicts the next
``chunk`` actions at once (action chunking, as in ACT).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from r2s2r_eval.policies.bc.config import LEARNERS

__all__ = ["BCModelConfig", "BCNet", "SpatialSoftmax"]


@dataclass(frozen=True, kw_only=True)
class BCModelConfig:
    """Shape of :class:`BCNet`.

    Attributes:
        image_width, image_height: input RGB size (px).
        state_dim: joint-state inputs (all joints on ``/joint_states``, dataset order).
        action_dim: outputs: arm joint-target deltas from the measured arm positions, the gripper, and the
            episode progress in [0, 1].
        channels: conv widths (the first conv has stride 2, and every second one after it).
        hidden: MLP width.
        aux_dim: outputs of the auxiliary object-state head (0: none).
        chunk: consecutive actions predicted per forward pass (>= 1); the output has
            ``chunk * action_dim`` values, step-major.
        head_features: the action head reads the image keypoints (True) or, with an auxiliary head, only
            the object state read from the image and the joint state (False): the privileged expert's
            commands are a function of exactly those, and a low-dimensional input cannot overfit to the
            few object poses the demonstrations show.
        learner: which network; "act" and "diffusion" are lerobot's
            (:mod:`r2s2r_eval.policies.bc.lerobot_net`), sized by ``hidden`` and ``chunk``, with no
            auxiliary head (:data:`~r2s2r_eval.policies.bc.config.LEARNERS`).
    """

    image_width: int = 96
    image_height: int = 72
    state_dim: int = 8
    action_dim: int = 8
    channels: tuple[int, ...] = (16, 32, 32)
    hidden: int = 256
    aux_dim: int = 0
    chunk: int = 1
    head_features: bool = True
    learner: str = "cnn"

    def __post_init__(self) -> None:
        if self.learner not in LEARNERS:
            raise ValueError(f"learner: must be one of {', '.join(LEARNERS)}, got {self.learner!r}")
        if self.learner != "cnn" and self.aux_dim:
            raise ValueError(f"aux_dim: must be 0 for learner {self.learner!r}, got {self.aux_dim}")
        if self.aux_dim < 0:
            raise ValueError(f"aux_dim: must be >= 0, got {self.aux_dim}")
        if not self.head_features and self.aux_dim == 0:
            raise ValueError("head_features: False needs an auxiliary head (aux_dim > 0)")
        for name in ("image_width", "image_height", "state_dim", "action_dim", "hidden", "chunk"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: must be >= 1, got {getattr(self, name)}")
        if not self.channels:
            raise ValueError("channels: must not be empty")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        d = asdict(self)
        d["channels"] = list(self.channels)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BCModelConfig:
        """Inverse of :meth:`to_dict`."""
        return cls(**{**d, "channels": tuple(d["channels"])})


class SpatialSoftmax(nn.Module):
    """Expected image coordinates (x, y in [-1, 1]) of each channel's softmax: 2 features per channel."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> (B, 2C)."""
        b, c, h, w = x.shape
        probs = torch.softmax(x.reshape(b, c, h * w), dim=-1).reshape(b, c, h, w)
        ys = torch.linspace(-1.0, 1.0, h, device=x.device, dtype=x.dtype)
        xs = torch.linspace(-1.0, 1.0, w, device=x.device, dtype=x.dtype)
        ex = (probs.sum(dim=2) * xs).sum(dim=-1)
        ey = (probs.sum(dim=3) * ys).sum(dim=-1)
        return torch.cat([ex, ey], dim=1)


class BCNet(nn.Module):
    """Image (B, 3, H, W) in [0, 1] and normalised state (B, S) -> normalised action (B, A)."""

    def __init__(self, cfg: BCModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        layers: list[nn.Module] = []
        c_in = 3
        for i, c in enumerate(cfg.channels):
            stride = 2 if i % 2 == 0 else 1
            layers += [
                nn.Conv2d(c_in, c, 5 if i == 0 else 3, stride=stride, padding=2 if i == 0 else 1),
                nn.GroupNorm(8 if c % 8 == 0 else 1, c),
                nn.ReLU(),
            ]
            c_in = c
        self.encoder = nn.Sequential(*layers)
        self.keypoints = SpatialSoftmax()
        self.aux = (
            nn.Sequential(nn.Linear(2 * c_in, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, cfg.aux_dim))
            if cfg.aux_dim
            else None
        )
        self.head = nn.Sequential(
            nn.Linear((2 * c_in if cfg.head_features else 0) + cfg.aux_dim + cfg.state_dim, cfg.hidden),
            nn.ReLU(),
            nn.Linear(cfg.hidden, cfg.hidden),
            nn.ReLU(),
            nn.Linear(cfg.hidden, cfg.chunk * cfg.action_dim),
        )

    def forward_all(
        self, image: torch.Tensor, state: torch.Tensor, env: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Normalised action chunk (B, chunk * A) and normalised object state (B, aux_dim) or None.

        ``env``: a normalised object state to give the action head instead of the one read from the
        image (teacher forcing in training).
        """
        features = self.keypoints(self.encoder(image * 2.0 - 1.0))
        if self.aux is None:
            return self.head(torch.cat([features, state], dim=1)), None
        aux = self.aux(features)
        seen = aux if env is None else env
        parts = [features, seen, state] if self.cfg.head_features else [seen, state]
        return self.head(torch.cat(parts, dim=1)), aux

    def object_state(self, image: torch.Tensor) -> torch.Tensor:
        """Normalised object state (B, aux_dim) read from the image alone (the auxiliary head)."""
        if self.aux is None:
            raise ValueError("BCNet.object_state: this network has no auxiliary head (aux_dim 0)")
        return self.aux(self.keypoints(self.encoder(image * 2.0 - 1.0)))

    def forward(self, image: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """Normalised action chunk (B, chunk * A)."""
        return self.forward_all(image, state)[0]
