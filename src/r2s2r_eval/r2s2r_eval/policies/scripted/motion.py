"""A speed-limited Cartesian set-point follower for the scripted policies (their arm model re-exported)."""

from __future__ import annotations

import math

import numpy as np

from r2s2r_eval.policies.reference.kinematics import ArmScene, KinematicArm, arm_scene, tool_down_rotation

__all__ = ["ArmScene", "CartesianMover", "arm_scene", "tool_yaw"]

# Cartesian, tool-yaw and joint speed limits at speed = 1 (as the reference policy's).
LINEAR_SPEED = 0.15  # m/s
YAW_SPEED = 1.0  # rad/s
JOINT_SPEED = 1.5  # rad/s


def tool_yaw(rot: np.ndarray) -> float:
    """Yaw of the tool's finger (y) axis about world z."""
    return math.atan2(rot[1, 1], rot[0, 1])


class CartesianMover:
    """Moves a tool-down set-point toward goals at bounded Cartesian, yaw and joint speeds, through IK."""

    def __init__(self, arm: KinematicArm, q_meas: np.ndarray, speed: float = 1.0) -> None:
        """Start at the measured joint positions ``q_meas`` (command order); ``speed`` scales every limit."""
        self.arm = arm
        self.speed = speed
        self.q_cmd = np.asarray(q_meas, dtype=np.float64).copy()
        pos, rot = arm.fk(self.q_cmd)
        self.pos = pos
        self.yaw = tool_yaw(rot)

    def step(self, goal: np.ndarray, yaw: float, dt: float, *, linear_speed: float = LINEAR_SPEED) -> bool:
        """Move the set-point one control period ``dt`` (s) toward ``goal`` (m) and ``yaw`` (rad).

        Returns:
            Whether the set-point is at the goal (position and yaw).
        """
        delta = np.asarray(goal, dtype=np.float64) - self.pos
        dist = float(np.linalg.norm(delta))
        max_step = linear_speed * self.speed * dt
        self.pos = goal.copy() if dist <= max_step else self.pos + delta * (max_step / dist)
        dyaw = yaw - self.yaw
        max_yaw = YAW_SPEED * self.speed * dt
        self.yaw += float(np.clip(dyaw, -max_yaw, max_yaw))
        q_des, _ = self.arm.ik(self.pos, tool_down_rotation(self.yaw), self.q_cmd)
        max_dq = JOINT_SPEED * self.speed * dt
        self.q_cmd = self.q_cmd + np.clip(q_des - self.q_cmd, -max_dq, max_dq)
        return dist <= max_step and abs(dyaw) <= max_yaw

    def tool(self, q_meas: np.ndarray) -> np.ndarray:
        """Measured tool position (m) for joint positions ``q_meas``."""
        pos, _ = self.arm.fk(q_meas)
        return np.asarray(pos)
