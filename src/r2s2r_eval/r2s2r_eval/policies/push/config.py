"""Parameters of the scripted push policy."""

from __future__ import annotations

from dataclasses import dataclass

from r2s2r_eval.policies.scripted.config import FrameParams
from r2s2r_eval.policy import check_ranges

__all__ = ["PushParams"]


@dataclass(frozen=True, kw_only=True)
class PushParams(FrameParams):
    """Parameters of :class:`~r2s2r_eval.policies.push.policy.PushPolicy`.

    Attributes:
        perception_noise_m: standard deviation (m) of a horizontal bias added to every object estimate,
            drawn once per episode from the episode's policy stream; >= 0.
        push_speed_m_s: tool speed while pushing (m/s); in (0, 0.5].
        stop_tolerance_m: the push ends when the estimated object centre is this close to the target (m);
            in (0, 0.1].
        push_height_m: height of the tool centre point above the object's resting bottom while pushing
            (m); in [0, 0.1].  The fingertips are 15 mm below it.
        speed: scale of the Cartesian, yaw and joint speed limits outside the push; in (0, 10].
        closed_loop: re-estimate the object from every new frame (False: only from the first frame).
        control_rate_hz: rate (Hz) the policy asks to be called at; in (0, 1000].
        image_width, image_height, image_rate_hz: the frames it reads (see :class:`FrameParams`); 320 x 240
            at 5 Hz, to follow the object as it moves.
    """

    perception_noise_m: float = 0.0
    push_speed_m_s: float = 0.06
    stop_tolerance_m: float = 0.012
    push_height_m: float = 0.02
    speed: float = 1.0
    closed_loop: bool = True
    control_rate_hz: float = 10.0
    image_width: int = 320
    image_height: int = 240
    image_rate_hz: float = 5.0

    def __post_init__(self) -> None:
        checks = (
            ("perception_noise_m", self.perception_noise_m, 0.0 <= self.perception_noise_m, ">= 0"),
            ("push_speed_m_s", self.push_speed_m_s, 0.0 < self.push_speed_m_s <= 0.5, "in (0, 0.5]"),
            ("stop_tolerance_m", self.stop_tolerance_m, 0.0 < self.stop_tolerance_m <= 0.1, "in (0, 0.1]"),
            ("push_height_m", self.push_height_m, 0.0 <= self.push_height_m <= 0.1, "in [0, 0.1]"),
            ("speed", self.speed, 0.0 < self.speed <= 10.0, "in (0, 10]"),
            ("control_rate_hz", self.control_rate_hz, 0.0 < self.control_rate_hz <= 1000.0, "in (0, 1000]"),
            *self.frame_checks(),
        )
        check_ranges(checks)
