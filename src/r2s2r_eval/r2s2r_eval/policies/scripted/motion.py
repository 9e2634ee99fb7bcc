"""The scripted policies' set-point mover: bounded Cartesian motion through IK, paced by each step's time."""

from __future__ import annotations

import math

import numpy as np
from r2s2r_sim.world.kinematics import KinematicArm, tool_down_rotation

__all__ = [
    "JOINT_SPEED",
    "LINEAR_SPEED",
    "MAX_STEP_PERIODS",
    "YAW_SPEED",
    "CartesianMover",
    "StepClock",
    "tool_yaw",
]

# Cartesian, tool-yaw and joint speed limits at speed = 1.
LINEAR_SPEED = 0.15  # m/s
YAW_SPEED = 1.0  # rad/s
JOINT_SPEED = 1.5  # rad/s
# Control periods one step may catch up at once after the policy node held the policy on stale observations.
MAX_STEP_PERIODS = 5


def tool_yaw(rot: np.ndarray) -> float:
    """Yaw of the tool's finger (y) axis about world z."""
    return math.atan2(rot[1, 1], rot[0, 1])


class StepClock:
    """The time each ``act`` call stands for: one control period, or more after steps the node held.

    A driver whose observations go stale makes the policy node hold its steps; a script that moved by one
    period per call would then stretch every motion by the steps lost, and stall under load.  The gap is
    capped at ``MAX_STEP_PERIODS`` periods, so a long stall never turns into one large jump of the command.
    In lockstep and in-process runs every step is exactly one period, and so is every ``tick``.
    """

    def __init__(self, period: float) -> None:
        """Pace calls ``period`` seconds apart (the episode's control period)."""
        self.period = period
        self._first = self._last = math.nan
        self._dropped = 0.0

    def tick(self, stamp: float) -> float:
        """Time (s) the set-point moves over the call at ``stamp`` (s); call once per ``act``."""
        last, self._last = self._last, stamp
        if not math.isfinite(last):
            self._first = stamp
            return self.period
        gap = stamp - last
        if gap < 1.5 * self.period:
            return self.period  # every step taken
        step = min(gap, MAX_STEP_PERIODS * self.period)
        self._dropped += gap - step
        return step

    @property
    def elapsed(self) -> float:
        """Time (s) from the first tick to the last, less what capped stalls dropped for a timed plan."""
        return self._last - self._first - self._dropped


class CartesianMover:
    """Moves a tool-down set-point toward goals at bounded Cartesian, yaw and joint speeds, through IK.

    With ``accel`` the Cartesian motion also accelerates from rest and brakes so as to arrive at rest;
    without it the set-point moves at the speed limit from the first step.
    """

    def __init__(
        self, arm: KinematicArm, q_meas: np.ndarray, speed: float = 1.0, *, accel: float | None = None
    ) -> None:
        """Start at the measured joint positions ``q_meas`` (command order).

        Args:
            arm: the kinematic copy the set-point is solved on.
            q_meas: measured joint positions (rad), command order.
            speed: scale of every speed (and acceleration) limit.
            accel: Cartesian acceleration limit (m/s^2) at ``speed`` 1; None: unlimited.
        """
        self.arm = arm
        self.speed = speed
        self.accel = accel
        self.q_cmd = np.asarray(q_meas, dtype=np.float64).copy()
        pos, rot = arm.fk(self.q_cmd)
        self.pos = pos
        self.yaw = tool_yaw(rot)
        self.velocity = 0.0  # set-point speed along its path (m/s), kept with an acceleration limit

    def start_from_rest(self) -> None:
        """Let the next motion accelerate from rest (a new phase of the script)."""
        self.velocity = 0.0

    def advance(
        self,
        goal: np.ndarray,
        yaw: float,
        dt: float,
        *,
        linear_speed: float = LINEAR_SPEED,
        scale: float = 1.0,
    ) -> bool:
        """Move the set-point over ``dt`` (s) toward ``goal`` (m) and ``yaw`` (rad); the joints do not move.

        Args:
            goal: tool position goal (m).
            yaw: tool yaw goal (rad).
            dt: time the step stands for (:meth:`StepClock.tick`).
            linear_speed: Cartesian speed limit (m/s) at ``speed`` 1.
            scale: scale of the Cartesian speed and acceleration on top of ``speed`` (the yaw's is not).

        Returns:
            Whether the set-point is at the goal (position and yaw).
        """
        delta = np.asarray(goal, dtype=np.float64) - self.pos
        dist = float(np.linalg.norm(delta))
        scale = self.speed * scale
        v_max = linear_speed * scale
        if self.accel is None:
            max_step = v_max * dt
            arrived = dist <= max_step
            self.pos = goal.copy() if arrived else self.pos + delta * (max_step / dist)
        else:
            accel = self.accel * scale
            self.velocity = min(v_max, self.velocity + accel * dt, math.sqrt(2.0 * accel * dist))
            max_step = max(self.velocity * dt, min(dist, 1e-4))
            arrived = dist <= max_step
            if arrived:
                self.pos = goal.copy()
                self.velocity = 0.0
            else:
                self.pos = self.pos + delta * (max_step / dist)
        dyaw = yaw - self.yaw
        max_yaw = YAW_SPEED * self.speed * dt
        self.yaw += float(np.clip(dyaw, -max_yaw, max_yaw))
        return arrived and abs(dyaw) <= max_yaw

    def command(self, dt: float, *, scale: float = 1.0, offset: np.ndarray | None = None) -> np.ndarray:
        """Joint command (rad) toward the set-point (plus ``offset``, m), joint speed bounded over ``dt``."""
        goal = self.pos if offset is None else self.pos + offset
        q_des, _ = self.arm.ik(goal, tool_down_rotation(self.yaw), self.q_cmd)
        max_dq = JOINT_SPEED * self.speed * scale * dt
        self.q_cmd = self.q_cmd + np.clip(q_des - self.q_cmd, -max_dq, max_dq)
        return self.q_cmd

    def step(self, goal: np.ndarray, yaw: float, dt: float, *, linear_speed: float = LINEAR_SPEED) -> bool:
        """:meth:`advance` then :meth:`command` over ``dt`` (s); whether the set-point is at the goal."""
        at = self.advance(goal, yaw, dt, linear_speed=linear_speed)
        self.command(dt)
        return at

    def tool(self, q_meas: np.ndarray) -> np.ndarray:
        """Measured tool position (m) for joint positions ``q_meas``."""
        pos, _ = self.arm.fk(q_meas)
        return np.asarray(pos)
