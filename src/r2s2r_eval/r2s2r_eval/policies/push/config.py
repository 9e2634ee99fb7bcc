"""Parameters of the scripted push policy."""

from __future__ import annotations

from dataclasses import dataclass

from r2s2r_sim.ranges import within

from r2s2r_eval.policies.scripted.config import FrameParams

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

    perception_noise_m: float = within(0.0, ">= 0")
    push_speed_m_s: float = within(0.06, "(0, 0.5]")
    stop_tolerance_m: float = within(0.012, "(0, 0.1]")
    push_height_m: float = within(0.02, "[0, 0.1]")
    speed: float = within(1.0, "(0, 10]")
    closed_loop: bool = True
    control_rate_hz: float = within(10.0, "(0, 1000]")
    image_width: int = 320
    image_height: int = 240
    image_rate_hz: float = 5.0
