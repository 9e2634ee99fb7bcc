"""Parameters of the scripted drawer-opening policy."""

from __future__ import annotations

from dataclasses import dataclass

from r2s2r_sim.ranges import within

from r2s2r_eval.policies.scripted.config import FrameParams

__all__ = ["DrawerParams"]


@dataclass(frozen=True, kw_only=True)
class DrawerParams(FrameParams):
    """Parameters of :class:`~r2s2r_eval.policies.drawer.policy.DrawerPolicy`.

    Attributes:
        perception_noise_m: standard deviation (m) of a bias added to the handle estimate's x, y and z,
            drawn once per episode from the episode's policy stream; >= 0.
        hook_offset_m: how far (m) behind the handle bar's centre, toward the drawer front, the closed
            fingers go down; in [0, 0.1].
        hook_depth_m: how far (m) below the bar's centre the tool centre point goes (the fingertips are
            15 mm lower); in [-0.05, 0.1].
        open_to_m: the opening (m along the joint axis) the policy pulls the drawer to; in (0, 1].
        pull_speed_m_s: tool speed while pulling (m/s); in (0, 0.5].
        speed: scale of the Cartesian, yaw and joint speed limits outside the pull; in (0, 10].
        assume_camera_of: a bundled world id whose camera (intrinsics and pose) the policy assumes
            instead of the observed ``CameraInfo`` and ``/tf``: a policy developed against a nominal,
            uncalibrated camera model.  Empty: trust the observation.
        control_rate_hz: rate (Hz) the policy asks to be called at; in (0, 1000].
        image_width, image_height, image_rate_hz: the frames it reads (see :class:`FrameParams`; it looks
            once, at the start).
    """

    perception_noise_m: float = within(0.0, ">= 0")
    hook_offset_m: float = within(0.025, "[0, 0.1]")
    hook_depth_m: float = within(0.003, "[-0.05, 0.1]")
    open_to_m: float = within(0.15, "(0, 1]")
    pull_speed_m_s: float = within(0.08, "(0, 0.5]")
    speed: float = within(1.0, "(0, 10]")
    assume_camera_of: str = ""
    control_rate_hz: float = within(10.0, "(0, 1000]")
