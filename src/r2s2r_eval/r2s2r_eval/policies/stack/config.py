"""Parameters of the scripted stacking policy."""

from __future__ import annotations

from dataclasses import dataclass

from r2s2r_eval.policies.reference.config import ReferenceParams
from r2s2r_eval.policies.scripted.config import FrameParams
from r2s2r_eval.policy import check_ranges

__all__ = ["StackParams"]


@dataclass(frozen=True, kw_only=True)
class StackParams(ReferenceParams, FrameParams):
    """Parameters of :class:`~r2s2r_eval.policies.stack.policy.StackPolicy`: the reference policy's and these.

    Attributes:
        release_height_m: height (m) of the held block's centre above its resting spot on the support when
            the gripper opens; in [0, 0.1].
        image_width, image_height, image_rate_hz: the frames it reads (see :class:`FrameParams`; it looks
            once, at the start).
    """

    release_height_m: float = 0.008

    def __post_init__(self) -> None:
        super().__post_init__()
        checks = (
            ("release_height_m", self.release_height_m, 0.0 <= self.release_height_m <= 0.1, "in [0, 0.1]"),
            *self.frame_checks(),
        )
        check_ranges(checks)
