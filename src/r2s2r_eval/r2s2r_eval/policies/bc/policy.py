"""BC policy plug-in: runs a checkpoint written by ``r2s2r train`` (``policy.pt`` + ``config.json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import torch

from r2s2r_eval.policies.bc.config import CHECKPOINT_CONFIG, CHECKPOINT_WEIGHTS, BCParams
from r2s2r_eval.policies.bc.lerobot_net import LeRobotNet, build_network
from r2s2r_eval.policies.bc.model import BCModelConfig, BCNet
from r2s2r_eval.policy import (
    Action,
    EpisodeInfo,
    ImageRequest,
    Observation,
    ObservationKind,
    Policy,
    PolicyError,
)

__all__ = ["BCPolicy", "load_checkpoint"]

_RANGE_ENDS = "range_ends"
# Demonstration frames are drawn at twice the recorded size and area-downscaled (DemoConfig.render_scale).
_DEMO_RENDER_SCALE = 2


def load_checkpoint(folder: str | Path) -> tuple[BCNet | LeRobotNet, dict[str, Any]]:
    """The network (eval mode) and the ``config.json`` of a checkpoint folder.

    Raises:
        PolicyError: missing files, or weights that do not fit the config.
    """
    folder = Path(folder)
    cfg_path, weights = folder / CHECKPOINT_CONFIG, folder / CHECKPOINT_WEIGHTS
    for path in (cfg_path, weights):
        if not path.is_file():
            raise PolicyError(f"bc policy: checkpoint file {path} missing (write it with `r2s2r train`)")
    try:
        config = json.loads(cfg_path.read_text(encoding="utf-8"))
        model = build_network(BCModelConfig.from_dict(config["model"]))
        state = torch.load(weights, map_location="cpu", weights_only=True)
        model.load_state_dict(state)
    except ImportError as err:  # an ACT or Diffusion Policy checkpoint without lerobot installed
        raise PolicyError(
            f"bc policy: checkpoint {folder} needs {err.name or 'lerobot'} (`make setup` installs it)"
        ) from err
    except (KeyError, TypeError, ValueError, RuntimeError) as err:
        raise PolicyError(f"bc policy: checkpoint {folder} is invalid: {err}") from err
    model.eval()
    return model, config


class BCPolicy(Policy):
    """Behaviour cloning from RGB + joint state: the image is area-downscaled to the training size.

    Outputs arm joint targets (absolute, or the measured arm positions plus a predicted delta for
    checkpoints trained with ``absolute: false``), and a gripper command clipped to the episode's command
    range.  Checkpoints trained with ``time_input`` also get the time since the episode's first
    observation.  It also predicts how far through a demonstration it is, and reports :attr:`done` (then
    holds its last command) once that progress reaches ``done_progress`` with the gripper open on two
    consecutive steps, which ends an episode on (emulated) hardware.  Checkpoints that predict action
    chunks run every step and average the predictions made for the current step over the last ``chunk``
    steps, weighted ``exp(-ensemble_decay * age)`` (ACT's temporal ensembling).
    """

    params_type = BCParams
    requires = frozenset({ObservationKind.JOINT_STATE, ObservationKind.RGB})

    def __init__(self, params: BCParams | None = None) -> None:
        """Load the checkpoint named by ``params.checkpoint``.

        Raises:
            PolicyError: no checkpoint given, or an invalid one.
        """
        super().__init__(params)
        p: BCParams = self.params  # type: ignore[assignment]
        if not p.checkpoint:
            raise PolicyError("bc policy: parameter 'checkpoint' (a `r2s2r train` output folder) is required")
        torch.set_num_threads(p.num_threads)
        self.model, self.config = load_checkpoint(p.checkpoint)
        norm = self.config["normalization"]
        self._state_mean = np.asarray(norm["state_mean"], np.float32)
        self._state_std = np.asarray(norm["state_std"], np.float32)
        self._action_mean = np.asarray(norm["action_mean"], np.float32)
        self._action_std = np.asarray(norm["action_std"], np.float32)
        self.joint_names: tuple[str, ...] = tuple(self.config["joint_names"])
        self.arm_names: tuple[str, ...] = tuple(self.config["arm_names"])
        self._rate = p.control_rate_hz or float(self.config["fps"])
        # Checkpoints written before these options existed predicted deltas from joint state alone.
        self._absolute = bool(self.config.get("absolute", False))
        self._time_input = bool(self.config.get("time_input", False))
        # The gripper commands of the demonstrations, if two-valued (None: gradual); checkpoints without
        # the entry were trained on open/closed commands, the ends of the episode's command range.
        levels = self.config.get("gripper_levels", _RANGE_ENDS)
        self._gripper_levels = None if levels is None or levels == _RANGE_ENDS else np.asarray(levels, float)
        self._snap = p.snap_gripper and levels is not None
        self._t0: float | None = None
        self._info: EpisodeInfo | None = None

    def control_rate_hz(self) -> float:
        """The training data's rate unless overridden."""
        return self._rate

    def image_request(self) -> ImageRequest:
        """The network's input size, one frame per control step, drawn as the demonstrations were."""
        m = self.model.cfg
        return ImageRequest(
            width=m.image_width, height=m.image_height, rate_hz=self._rate, supersample=_DEMO_RENDER_SCALE
        )

    def reset(self, info: EpisodeInfo) -> None:
        """Check the episode's arm against the checkpoint's."""
        if tuple(info.arm_joint_names) != self.arm_names:
            raise PolicyError(
                f"bc policy: trained for arm joints {list(self.arm_names)}, the episode has "
                f"{list(info.arm_joint_names)}"
            )
        self._info = info
        if isinstance(self.model, LeRobotNet):
            self.model.reseed(info.seed)
        self._t0 = None
        self._near_end = 0
        self._last: Action | None = None
        self._chunks: list[np.ndarray] = []  # newest last: (chunk, A) predictions of the last steps

    @property
    def done(self) -> bool:
        """True once the predicted progress says the demonstration is over."""
        return self._near_end >= 2

    @torch.no_grad()
    def act(self, observation: Observation) -> Action:
        """One forward pass."""
        if self._info is None:
            raise PolicyError("bc policy: act() called before reset()")
        if observation.rgb is None:
            raise PolicyError("bc policy: the observation has no rgb image")
        if self.done and self._last is not None:
            return self._last
        m = self.model.cfg
        rgb = observation.rgb
        if rgb.shape[:2] != (m.image_height, m.image_width):
            rgb = cv2.resize(rgb, (m.image_width, m.image_height), interpolation=cv2.INTER_AREA)
        state = observation.positions(self.joint_names).astype(np.float32)
        if self._time_input:
            if self._t0 is None:
                self._t0 = observation.stamp
            state = np.append(state, np.float32(observation.stamp - self._t0))
        # A frame already at the input size comes straight from the (read-only) message buffer.
        pixels = torch.from_numpy(np.require(rgb, requirements=("C", "W")))
        image = pixels.permute(2, 0, 1)[None].float() / 255.0
        s = torch.from_numpy((state - self._state_mean) / self._state_std)[None]
        k = m.chunk
        pred = self.model(image, s)[0].numpy().reshape(k, -1) * self._action_std + self._action_mean
        self._chunks = [*self._chunks[-(k - 1) :], pred] if k > 1 else [pred]
        p: BCParams = self.params  # type: ignore[assignment]
        # Prediction made `age` steps ago for this step is row `age` of that chunk.
        ages = np.arange(len(self._chunks))[::-1]
        rows = np.stack([c[a] for c, a in zip(self._chunks, ages, strict=True)])
        weights = np.exp(-p.ensemble_decay * ages)
        out = (weights[:, None] * rows).sum(0) / weights.sum()
        n = len(self.arm_names)
        arm = out[:n].astype(np.float64)
        if not self._absolute:
            arm = arm + observation.positions(self.arm_names)
        lo, hi = sorted(self._info.gripper_command_range)
        gripper = float(np.clip(out[n], lo, hi))
        open_cmd, closed_cmd = self._info.gripper_command_range
        if self._snap:
            levels = self._gripper_levels if self._gripper_levels is not None else (open_cmd, closed_cmd)
            gripper = float(np.clip(min(levels, key=lambda v: abs(v - gripper)), lo, hi))
        is_open = abs(gripper - open_cmd) < 0.25 * abs(closed_cmd - open_cmd)
        self._near_end = self._near_end + 1 if (out[n + 1] >= p.done_progress and is_open) else 0
        self._last = Action(arm_positions=arm, gripper=gripper)
        return self._last
