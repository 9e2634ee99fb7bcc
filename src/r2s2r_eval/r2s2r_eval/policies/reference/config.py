"""Parameters of the reference pick-and-place policy."""

from __future__ import annotations

from dataclasses import dataclass

from r2s2r_sim.ranges import within

from r2s2r_eval.policy import PolicyParams

__all__ = ["ReferenceParams"]


@dataclass(frozen=True, kw_only=True)
class ReferenceParams(PolicyParams):
    """Parameters of :class:`~r2s2r_eval.policies.reference.policy.ReferencePolicy`.

    Attributes:
        perception_noise_m: standard deviation (m) of Gaussian noise added to the horizontal (x, y) cube
            position estimate, drawn once per episode from the episode's policy stream; >= 0.
        grasp_offset_m: height (m) of the tool centre point above the estimated cube centre when the
            gripper closes; in [-0.05, 0.1].  0 puts the fingertips 5 mm above the table.
        speed: scale of the Cartesian (0.15 m/s), tool-yaw (1 rad/s) and joint (1.5 rad/s) speed limits;
            in (0, 10].
        control_rate_hz: rate (Hz) the policy asks to be called at; in (0, 1000].
        assume_camera_of: a bundled world id whose camera (intrinsics and pose) the policy assumes
            instead of the observed ``CameraInfo`` and ``/tf``: a policy developed against a nominal,
            uncalibrated camera model.  Empty: trust the observation.
        weak_grip_speed: scale of the carrying speed and acceleration once the grip has shown itself weak
            (the fingers crept closed during the test lift, or the object slipped before); in (0, 1].
        max_regrasps: grasps retried after an empty grasp or a slip before the policy gives up; in
            [0, 10].
    """

    perception_noise_m: float = within(0.0, ">= 0")
    grasp_offset_m: float = within(0.0, "[-0.05, 0.1]")
    speed: float = within(1.0, "(0, 10]")
    control_rate_hz: float = within(10.0, "(0, 1000]")
    assume_camera_of: str = ""
    weak_grip_speed: float = within(0.35, "(0, 1]")
    max_regrasps: int = within(3, "[0, 10]")

    def __post_init__(self) -> None:
        if isinstance(self.max_regrasps, bool) or not isinstance(self.max_regrasps, int):
            raise ValueError(f"max_regrasps: must be an integer in [0, 10], got {self.max_regrasps!r}")
        super().__post_init__()
