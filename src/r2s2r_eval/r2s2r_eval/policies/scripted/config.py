"""Parameters every scripted task policy shares: the frames it reads."""

from __future__ import annotations

from dataclasses import dataclass

from r2s2r_sim.ranges import within

from r2s2r_eval.policy import ImageRequest, PolicyParams

__all__ = ["FrameParams"]


@dataclass(frozen=True, kw_only=True)
class FrameParams(PolicyParams):
    """The frames a scripted policy reads; a simulator draws only those.

    Attributes:
        image_width, image_height: image size (px) the policy reads (a simulator draws that); >= 32.
        image_rate_hz: frames per second the policy reads; in (0, 100].  The defaults (640 x 480 at
            1 Hz) suit a policy that looks once, at the start.
    """

    image_width: int = within(640, ">= 32")
    image_height: int = within(480, ">= 32")
    image_rate_hz: float = within(1.0, "(0, 100]")

    def image_request(self) -> ImageRequest:
        """The frames the policy reads: ``image_width`` x ``image_height`` at ``image_rate_hz``."""
        return ImageRequest(width=self.image_width, height=self.image_height, rate_hz=self.image_rate_hz)
