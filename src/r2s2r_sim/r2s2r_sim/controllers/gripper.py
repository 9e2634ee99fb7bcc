"""The gripper action's core: a GripperCommand goal until reached or stalled, as gripper_action_controller.

ros2_controllers' position GripperActionController (Jazzy) sends the goal's position to the gripper joint
and, each update: succeeds with ``reached_goal`` once |goal - position| < ``goal_tolerance``; otherwise
counts the gripper as moving while |velocity| > ``stall_velocity_threshold``, and after ``stall_timeout``
without moving ends the goal as ``stalled`` (succeeded if ``allow_stalling``, else aborted). A new goal
cancels the running one. ``max_effort`` is kept for the result only: the sim's gripper pushes with the force
its actuators are modelled with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from r2s2r_sim.controllers.joint_trajectory import GoalStatus

__all__ = ["GripperAction", "GripperActionConfig", "GripperEnd", "GripperReading"]


@dataclass(frozen=True, kw_only=True)
class GripperActionConfig:
    """gripper_action_controller's parameters (its defaults); m or rad as the gripper joint, s."""

    goal_tolerance: float = 0.01
    stall_velocity_threshold: float = 0.001
    stall_timeout: float = 1.0
    allow_stalling: bool = False

    def __post_init__(self) -> None:
        for field in ("goal_tolerance", "stall_velocity_threshold", "stall_timeout"):
            value = getattr(self, field)
            if not math.isfinite(value) or value <= 0.0:
                raise ValueError(f"{field} must be a finite number > 0, got {value}")


@dataclass(frozen=True)
class GripperReading:
    """What a GripperCommand feedback and result carry."""

    position: float
    effort: float
    stalled: bool = False
    reached_goal: bool = False


@dataclass(frozen=True)
class GripperEnd:
    """A gripper goal's end: its terminal status and result."""

    goal_id: int
    status: GoalStatus
    result: GripperReading


class GripperAction:
    """One gripper's action goals; see the module docstring. :meth:`update` runs once per physics step."""

    def __init__(self, config: GripperActionConfig | None = None) -> None:
        self.config = config if config is not None else GripperActionConfig()
        self._goal_id: int | None = None
        self._next_id = 1
        self.target: float | None = None  # the running goal's position
        self.max_effort = 0.0
        self._last_movement = 0.0

    @property
    def active_goal(self) -> int | None:
        """The id of the running goal, if any."""
        return self._goal_id

    def start(
        self, position: float, max_effort: float, now: float, *, goal_id: int | None = None
    ) -> tuple[int, GripperEnd | None]:
        """Run a goal for ``position`` from time ``now`` (s); returns its id and the goal it preempted.

        ``goal_id`` names the goal (default: the next number).

        Raises:
            ValueError: ``position`` or ``max_effort`` is not finite.
        """
        if not (math.isfinite(position) and math.isfinite(max_effort)):
            raise ValueError(f"gripper goal must be finite: position {position}, max_effort {max_effort}")
        preempted = None
        if self._goal_id is not None:
            preempted = GripperEnd(self._goal_id, GoalStatus.CANCELED, GripperReading(math.nan, math.nan))
        self._goal_id = self._next_id if goal_id is None else goal_id
        self._next_id = max(self._next_id, self._goal_id) + 1
        self.target, self.max_effort = float(position), float(max_effort)
        self._last_movement = now
        return self._goal_id, preempted

    def cancel(self, goal_id: int, position: float, effort: float) -> GripperEnd | None:
        """Cancel goal ``goal_id`` if it is running, with the gripper's state as its result."""
        if self._goal_id != goal_id:
            return None
        self._goal_id = None
        return GripperEnd(goal_id, GoalStatus.CANCELED, GripperReading(position, effort))

    def stop(self) -> GripperEnd | None:
        """End the running goal as canceled: the sim was reset under it."""
        if self._goal_id is None:
            return None
        goal_id, self._goal_id = self._goal_id, None
        return GripperEnd(goal_id, GoalStatus.CANCELED, GripperReading(math.nan, math.nan))

    def update(self, now: float, position: float, velocity: float, effort: float) -> GripperEnd | None:
        """One step at ``now`` (s) with the gripper joint's measured state: the goal's end, if it ended."""
        if self._goal_id is None or self.target is None:
            return None
        cfg = self.config
        if abs(self.target - position) < cfg.goal_tolerance:
            return self._finish(GoalStatus.SUCCEEDED, GripperReading(position, effort, reached_goal=True))
        if abs(velocity) > cfg.stall_velocity_threshold:
            self._last_movement = now
        elif now - self._last_movement > cfg.stall_timeout:
            status = GoalStatus.SUCCEEDED if cfg.allow_stalling else GoalStatus.ABORTED
            return self._finish(status, GripperReading(position, effort, stalled=True))
        return None

    def _finish(self, status: GoalStatus, result: GripperReading) -> GripperEnd:
        assert self._goal_id is not None
        goal_id, self._goal_id = self._goal_id, None
        return GripperEnd(goal_id, status, result)
