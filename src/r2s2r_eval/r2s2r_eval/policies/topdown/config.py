"""Parameters of the depth-only top-down policy."""

from __future__ import annotations

from dataclasses import dataclass

from r2s2r_eval.policy import PolicyParams, check_ranges

__all__ = ["TopdownParams"]


@dataclass(frozen=True, kw_only=True)
class TopdownParams(PolicyParams):
    """Parameters of :class:`~r2s2r_eval.policies.topdown.policy.TopdownPolicy`.

    Attributes:
        speed: tool speed along the straight Cartesian segments (m/s); in (0, 1].
        grasp_depth_m: the tool centre point closes this far below the top of the chosen blob (m); in
            [0, 0.05].  0.02 puts it at the centre of a 4 cm cube.
        settle_s: added to every straight move before the next segment starts (s); in [0, 5].  The plan
            is timed open loop, so with a small ``settle_s`` at high ``speed`` the servos' lag decides
            where the fingers close.
        min_blob_height_m: depth points at least this high above the table plane count as objects (m);
            in (0, 0.05].
        control_rate_hz: rate (Hz) the policy asks to be called at; in (0, 1000].
    """

    speed: float = 0.15
    grasp_depth_m: float = 0.02
    settle_s: float = 0.3
    min_blob_height_m: float = 0.01
    control_rate_hz: float = 10.0

    def __post_init__(self) -> None:
        checks = (
            ("speed", self.speed, 0.0 < self.speed <= 1.0, "in (0, 1] m/s"),
            ("grasp_depth_m", self.grasp_depth_m, 0.0 <= self.grasp_depth_m <= 0.05, "in [0, 0.05]"),
            ("settle_s", self.settle_s, 0.0 <= self.settle_s <= 5.0, "in [0, 5] s"),
            (
                "min_blob_height_m",
                self.min_blob_height_m,
                0.0 < self.min_blob_height_m <= 0.05,
                "in (0, 0.05]",
            ),
            ("control_rate_hz", self.control_rate_hz, 0.0 < self.control_rate_hz <= 1000.0, "in (0, 1000]"),
        )
        check_ranges(checks)
