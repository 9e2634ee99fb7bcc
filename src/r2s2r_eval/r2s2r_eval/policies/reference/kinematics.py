"""The arm's kinematic copy, shared with ``r2s2r world new`` (which places the scene where it reaches)."""

from r2s2r_sim.kinematics import KinematicArm, tool_down_rotation

__all__ = ["KinematicArm", "tool_down_rotation"]
