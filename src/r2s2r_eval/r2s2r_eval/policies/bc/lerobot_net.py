"""lerobot's ACT and Diffusion Policy behind the BC network's interface: one trainer and one policy run all.

The network takes what :class:`~r2s2r_eval.policies.bc.model.BCNet` takes (an RGB image in [0, 1] and the
normalised joint state) and returns the same normalised action chunk (arm targets, gripper, progress per
step), so the checkpoint, the policy plug-in's temporal ensembling and its stop on predicted progress are
shared.  Normalisation stays r2s2r's (lerobot's processors are not used): states and actions arrive
normalised, and images are standardised with the ImageNet statistics lerobot's ResNet backbones expect.

The sizes suit a 2-core CPU: a ResNet-18 trained from scratch (no pretrained weights: nothing is
downloaded), ACT with ``hidden``-wide layers, 2 encoder layers and 1 decoder layer; Diffusion Policy with
a two-stage UNet of ``hidden / 2`` and ``hidden`` channels, one observation step and ``chunk`` actions,
sampled with 10 DDIM steps.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from r2s2r_eval.learning.lerobot_import import lerobot_policy, lerobot_types
from r2s2r_eval.policies.bc.config import DIFFUSION_HORIZON_MULTIPLE
from r2s2r_eval.policies.bc.model import BCModelConfig, BCNet

__all__ = ["LeRobotNet", "build_network"]

_STATE, _IMAGE, _ACTION = "observation.state", "observation.image", "action"
_IMAGENET_MEAN = (0.485, 0.456, 0.406)
_IMAGENET_STD = (0.229, 0.224, 0.225)
_DIFFUSION_STAGES = DIFFUSION_HORIZON_MULTIPLE.bit_length() - 1  # UNet stages, each halving the horizon


def _features(cfg: BCModelConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """Lerobot's input and output feature declarations for this network's tensors."""
    types = lerobot_types()
    image_shape = (3, cfg.image_height, cfg.image_width)
    inputs = {
        _STATE: types.PolicyFeature(type=types.FeatureType.STATE, shape=(cfg.state_dim,)),
        _IMAGE: types.PolicyFeature(type=types.FeatureType.VISUAL, shape=image_shape),
    }
    outputs = {_ACTION: types.PolicyFeature(type=types.FeatureType.ACTION, shape=(cfg.action_dim,))}
    return inputs, outputs


def _lerobot_policy(cfg: BCModelConfig) -> nn.Module:
    """Lerobot's policy of ``cfg.learner``, sized by ``cfg``."""
    module = lerobot_policy(cfg.learner)
    inputs, outputs = _features(cfg)
    common: dict[str, Any] = {
        "input_features": inputs,
        "output_features": outputs,
        "device": "cpu",
        "push_to_hub": False,
        "n_obs_steps": 1,
        "n_action_steps": cfg.chunk,
        "vision_backbone": "resnet18",
        "pretrained_backbone_weights": None,
    }
    if cfg.learner == "act":
        config = module.ACTConfig(
            **common,
            chunk_size=cfg.chunk,
            dim_model=cfg.hidden,
            n_heads=max(1, cfg.hidden // 64),
            dim_feedforward=4 * cfg.hidden,
            n_encoder_layers=2,
            n_decoder_layers=1,
            n_vae_encoder_layers=2,
        )
        return module.ACTPolicy(config)
    config = module.DiffusionConfig(
        **common,
        horizon=cfg.chunk,
        drop_n_last_frames=0,
        crop_shape=None,
        use_group_norm=True,
        down_dims=tuple(cfg.hidden // 2 ** (_DIFFUSION_STAGES - 1 - i) for i in range(_DIFFUSION_STAGES)),
        noise_scheduler_type="DDIM",
        num_inference_steps=10,
        # r2s2r's actions are standardised (mean 0, std 1), not scaled to [-1, 1] as lerobot's default.
        clip_sample_range=4.0,
    )
    return module.DiffusionPolicy(config)


class LeRobotNet(nn.Module):
    """lerobot's ACT or Diffusion Policy: image (B, 3, H, W) in [0, 1], state (B, S) -> action chunk."""

    def __init__(self, cfg: BCModelConfig) -> None:
        super().__init__()
        if cfg.learner == "diffusion" and cfg.chunk % DIFFUSION_HORIZON_MULTIPLE:
            raise ValueError(
                f"chunk: Diffusion Policy's must be a multiple of {DIFFUSION_HORIZON_MULTIPLE}, "
                f"got {cfg.chunk}"
            )
        self.cfg = cfg
        self.policy = _lerobot_policy(cfg)
        self.register_buffer("image_mean", torch.tensor(_IMAGENET_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("image_std", torch.tensor(_IMAGENET_STD).view(1, 3, 1, 1), persistent=False)
        self._noise = torch.Generator().manual_seed(0)

    def reseed(self, seed: int) -> None:
        """Seed Diffusion Policy's sampling noise, so an episode's actions follow from its seed."""
        self._noise.manual_seed(seed)

    def _batch(self, image: torch.Tensor, state: torch.Tensor) -> dict[str, torch.Tensor]:
        """Lerobot's observation batch: one observation step (Diffusion Policy wants it as a time axis)."""
        image = (image - self.image_mean) / self.image_std
        if self.cfg.learner == "diffusion":
            steps = image[:, None]
            return {_STATE: state[:, None], _IMAGE: steps, "observation.images": steps[:, :, None]}
        return {_STATE: state, _IMAGE: image}

    def imitation_loss(self, image: torch.Tensor, state: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The learner's own training loss against the normalised action chunk ``target`` (B, chunk * A).

        ACT: L1 on the chunk plus its VAE's KL term; Diffusion Policy: the noise-prediction error.
        """
        batch = self._batch(image, state)
        batch[_ACTION] = target.reshape(len(target), self.cfg.chunk, self.cfg.action_dim)
        batch["action_is_pad"] = torch.zeros(batch[_ACTION].shape[:2], dtype=torch.bool)
        loss, _ = self.policy(batch)
        return loss

    def validation_loss(self, image: torch.Tensor, state: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """The loss on held-out frames, in eval mode.

        ACT: the L1 of its predicted chunk (its VAE encodes the target only in training, so the KL term has
        no value here); Diffusion Policy: its noise-prediction error, as in training.
        """
        if self.cfg.learner == "act":
            return F.l1_loss(self.forward(image, state), target)
        with torch.no_grad():
            return self.imitation_loss(image, state, target)

    def forward(self, image: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """Normalised action chunk (B, chunk * A); no gradient (inference only)."""
        batch = self._batch(image, state)
        with torch.no_grad():
            if self.cfg.learner == "act":
                chunk = self.policy.predict_action_chunk(batch)
            else:
                self.policy.eval()
                shape = (len(state), self.cfg.chunk, self.cfg.action_dim)
                noise = torch.randn(shape, generator=self._noise)
                chunk = self.policy.diffusion.generate_actions(batch, noise=noise)
        return chunk.reshape(len(chunk), -1)

    def forward_all(
        self, image: torch.Tensor, state: torch.Tensor, env: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, None]:
        """:meth:`forward` and no object state (these learners have no auxiliary head)."""
        del env
        return self.forward(image, state), None


def build_network(cfg: BCModelConfig) -> BCNet | LeRobotNet:
    """The network ``cfg.learner`` names."""
    return BCNet(cfg) if cfg.learner == "cnn" else LeRobotNet(cfg)
