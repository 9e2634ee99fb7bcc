"""What a policy's action becomes on a trajectory-controller driver: a streamed point, gripper goals; no ROS.

A streaming policy (10-30 Hz) on a driver whose default launch leaves joint_trajectory_controller active
sends each arm target as a one-point ``trajectory_msgs/JointTrajectory`` on the controller's
``~/joint_trajectory`` topic, ``time_from_start`` one control period, unstamped (start on receipt). That is
what ros2_controllers documents for streaming and what teleoperation and servoing nodes do: each message
replaces the running trajectory, the controller interpolates from the arm's current state to the target over
exactly the time until the next one, and nothing waits on a goal handshake. A FollowJointTrajectory goal per
step would add a goal request, response and result per period and cancel the previous goal each time.

The gripper is an action on these drivers (GripperCommand): a goal is sent when the policy's gripper target
changes, and at the first action of an episode; an unchanged target sends nothing, since the controller
holds its last goal and a new goal would only preempt it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from r2s2r_eval.policy import Action

__all__ = ["ArmPoint", "GripperGoal", "TrajectoryCommandPlan"]

# A gripper target within this fraction of the gripper's command range of the last goal is the same target.
_GRIPPER_SAME = 1e-3


@dataclass(frozen=True)
class ArmPoint:
    """One streamed trajectory point: the arm's joints, their targets (rad) and the time to reach them (s)."""

    joint_names: tuple[str, ...]
    positions: tuple[float, ...]
    time_from_start: float


@dataclass(frozen=True)
class GripperGoal:
    """A GripperCommand goal: opening in the gripper joint's units and the effort limit (N)."""

    position: float
    max_effort: float


class TrajectoryCommandPlan:
    """Turns each :class:`Action` into an :class:`ArmPoint` and, when the gripper target moves, a goal."""

    def __init__(
        self,
        *,
        arm_joints: tuple[str, ...],
        period: float,
        gripper_range: tuple[float, float],
        max_effort: float,
    ) -> None:
        """Check and keep the settings.

        Args:
            arm_joints: the arm's joint names, in the order of :attr:`Action.arm_positions`.
            period: the policy's control period (s): each point is reached one period after it is sent.
            gripper_range: the gripper's command range (either order), which scales "the same target".
            max_effort: the effort limit (N) every gripper goal carries.

        Raises:
            ValueError: no joints, a period not finite and > 0, or an effort not finite and >= 0.
        """
        if not arm_joints:
            raise ValueError("arm_joints: the arm needs at least one joint")
        if not (math.isfinite(period) and period > 0.0):
            raise ValueError(f"period must be a finite number of seconds > 0, got {period}")
        if not (math.isfinite(max_effort) and max_effort >= 0.0):
            raise ValueError(f"max_effort must be a finite number >= 0, got {max_effort}")
        self.arm_joints = tuple(arm_joints)
        self.period = float(period)
        self.max_effort = float(max_effort)
        self._same = _GRIPPER_SAME * max(abs(gripper_range[1] - gripper_range[0]), 1e-9)
        self._last_gripper: float | None = None

    def arm_point(self, action: Action) -> ArmPoint:
        """The point that takes the arm to ``action``'s joint targets in one control period.

        Raises:
            ValueError: the action has the wrong number of joints.
        """
        positions = np.asarray(action.arm_positions, dtype=np.float64).reshape(-1)
        if positions.size != len(self.arm_joints):
            raise ValueError(
                f"action has {positions.size} arm positions, the arm has {len(self.arm_joints)} joints"
            )
        return ArmPoint(self.arm_joints, tuple(float(p) for p in positions), self.period)

    def gripper_goal(self, action: Action, *, first: bool) -> GripperGoal | None:
        """The goal for ``action``'s gripper target, or None when it is unchanged.

        ``first``: the episode's first action, whose target is always sent (a reset cancels gripper goals).
        """
        target = float(action.gripper)
        if not first and self._last_gripper is not None and abs(target - self._last_gripper) <= self._same:
            return None
        self._last_gripper = target
        return GripperGoal(target, self.max_effort)

    def forget_gripper(self) -> None:
        """The last goal did not go out: the next action's gripper target is sent whatever it is."""
        self._last_gripper = None
