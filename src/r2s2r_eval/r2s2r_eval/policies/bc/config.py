"""Parameters of the BC policy."""

from __future__ import annotations

import math
from dataclasses import dataclass

from r2s2r_eval.policy import PolicyParams

__all__ = ["CHECKPOINT_CONFIG", "CHECKPOINT_WEIGHTS", "DIFFUSION_HORIZON_MULTIPLE", "LEARNERS", "BCParams"]

LEARNERS = ("cnn", "act", "diffusion")
"""The networks a checkpoint can hold: the CNN of :mod:`~r2s2r_eval.policies.bc.model`, or lerobot's ACT or
Diffusion Policy (:mod:`~r2s2r_eval.policies.bc.lerobot_net`)."""
DIFFUSION_HORIZON_MULTIPLE = 4
"""Diffusion Policy's chunk (its horizon) is a multiple of this: its two-stage UNet halves it per stage."""

# The files of a checkpoint folder written by ``r2s2r train``.
CHECKPOINT_WEIGHTS = "policy.pt"
CHECKPOINT_CONFIG = "config.json"


@dataclass(frozen=True, kw_only=True)
class BCParams(PolicyParams):
    """Parameters of :class:`~r2s2r_eval.policies.bc.policy.BCPolicy`.

    Attributes:
        checkpoint: folder written by ``r2s2r train`` (``policy.pt`` + ``config.json``); required.
        control_rate_hz: rate (Hz) the policy asks to be called at; 0 uses the training data's fps.
        num_threads: torch CPU threads (>= 1).
        done_progress: the policy reports ``done`` once its predicted episode progress reaches this, with
            the gripper open, for two steps in a row (in (0, 2]; above 1: never).
        ensemble_decay: for checkpoints that predict action chunks: weight ``exp(-ensemble_decay * age)``
            of a prediction made ``age`` steps ago in the average for the current step (>= 0; 0: plain
            mean; large: newest prediction only).
        snap_gripper: where the demonstrations commanded the gripper only open or closed (the
            checkpoint's ``gripper_levels``), command the nearer of those levels instead of the regressed
            value.  A slightly-closed regressed command moves the fingers a little, which the network
            reads as "closing" (in such demonstrations the fingers leave the open position only when a
            grasp starts) and answers by closing further: a feedback loop that shut the gripper 20 cm
            above the cube.  Demonstrations that open a hinged jaw gradually have no levels, and the
            regressed value is commanded whatever this says: snapping would fling the cube.
    """

    checkpoint: str = ""
    control_rate_hz: float = 0.0
    num_threads: int = 2
    done_progress: float = 0.97
    ensemble_decay: float = 0.1
    snap_gripper: bool = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.control_rate_hz <= 1000.0:
            raise ValueError(
                f"control_rate_hz: must be in [0, 1000] (0: the data's fps), got {self.control_rate_hz}"
            )
        if not 0.0 < self.done_progress <= 2.0:
            raise ValueError(f"done_progress: must be in (0, 2], got {self.done_progress}")
        if not (math.isfinite(self.ensemble_decay) and self.ensemble_decay >= 0):
            raise ValueError(f"ensemble_decay: must be >= 0, got {self.ensemble_decay}")
        if self.num_threads < 1:
            raise ValueError(f"num_threads: must be >= 1, got {self.num_threads}")
