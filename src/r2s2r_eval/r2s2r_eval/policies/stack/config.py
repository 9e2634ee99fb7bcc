"""Parameters of the scripted stacking policy."""

from __future__ import annotations

from dataclasses import dataclass

from r2s2r_sim.ranges import within

from r2s2r_eval.policies.reference.config import ReferenceParams
from r2s2r_eval.policies.scripted.config import FrameParams

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

    release_height_m: float = within(0.008, "[0, 0.1]")
