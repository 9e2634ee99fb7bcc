"""Parameters of the depth-only top-down policy."""

from __future__ import annotations

from dataclasses import dataclass

from r2s2r_sim.ranges import within

from r2s2r_eval.policy import PolicyParams

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

    speed: float = within(0.15, "(0, 1] m/s")
    grasp_depth_m: float = within(0.02, "[0, 0.05]")
    settle_s: float = within(0.3, "[0, 5] s")
    min_blob_height_m: float = within(0.01, "(0, 0.05]")
    control_rate_hz: float = within(10.0, "(0, 1000]")
