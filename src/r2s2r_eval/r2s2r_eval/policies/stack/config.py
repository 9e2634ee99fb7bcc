"""Parameters of the scripted stacking policy."""

from __future__ import annotations

import math
from dataclasses import dataclass

from r2s2r_eval.policies.reference.config import ReferenceParams

__all__ = ["StackParams"]


@dataclass(frozen=True, kw_only=True)
class StackParams(ReferenceParams):
    """Parameters of :class:`~r2s2r_eval.policies.stack.policy.StackPolicy`: the reference policy's and these.

    Attributes:
        release_height_m: height (m) of the held block's centre above its resting spot on the support when
            the gripper opens; in [0, 0.1].
        image_width, image_height: image size (px) the policy reads (a simulator draws that); >= 32.
        image_rate_hz: frames per second the policy reads (it looks once, at the start); in (0, 100].
    """

    release_height_m: float = 0.008
    image_width: int = 640
    image_height: int = 480
    image_rate_hz: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        checks = (
            ("release_height_m", self.release_height_m, 0.0 <= self.release_height_m <= 0.1, "in [0, 0.1]"),
            ("image_width", self.image_width, self.image_width >= 32, ">= 32"),
            ("image_height", self.image_height, self.image_height >= 32, ">= 32"),
            ("image_rate_hz", self.image_rate_hz, 0.0 < self.image_rate_hz <= 100.0, "in (0, 100]"),
        )
        for name, value, ok, expected in checks:
            if not (math.isfinite(value) and ok):
                raise ValueError(f"{name}: must be {expected}, got {value}")
