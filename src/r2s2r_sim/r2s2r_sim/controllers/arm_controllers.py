"""One arm's trajectory and gripper controllers, shared by the physics thread and the action servers.

Goals arrive on executor threads and are checked at once (so a refused goal is refused at its request),
then start at the next physics step from the state measured there; the physics thread runs
:meth:`ArmControllers.step` and commands what it returns, and the servers wait for their goal's end.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from r2s2r_sim.controllers.gripper import GripperAction, GripperActionConfig, GripperEnd, GripperReading
from r2s2r_sim.controllers.joint_trajectory import (
    PREEMPTED,
    ControllerState,
    ErrorCode,
    GoalEnd,
    GoalError,
    GoalStatus,
    JointTrajectoryController,
    TrajectoryControllerConfig,
    TrajectoryGoal,
)
from r2s2r_sim.world.sim_world import SimWorld

__all__ = ["STATE_RATE_HZ", "ArmControllers", "Commands", "RESET_MESSAGE"]

RESET_MESSAGE = "Current goal cancelled: the episode was reset."
# How often an idle controller is stepped for its state topic (joint_trajectory_controller's former
# state_publish_rate default); a running goal steps it at every physics step.
STATE_RATE_HZ = 50.0


@dataclass(frozen=True)
class Commands:
    """What the controllers command at one physics step (None: leave the last command)."""

    arm: np.ndarray | None = None
    gripper: float | None = None


class ArmControllers:
    """The controllers of one arm; thread-safe (see the module docstring).

    Args:
        joint_names: the joints of the measured state, in its order.
        arm_joints: the trajectory controller's joints (a subset of ``joint_names``), in command order.
        gripper_joint: the joint the gripper action reads (None: no gripper action).
        clock: the controllers' time now (s): the sim time, which goals are checked against.
        trajectory: the trajectory controller's constraints (default: joint_trajectory_controller's).
        gripper: the gripper action's parameters (default: gripper_action_controller's).
    """

    def __init__(
        self,
        joint_names: Sequence[str],
        arm_joints: Sequence[str],
        gripper_joint: str | None,
        clock: Callable[[], float],
        *,
        trajectory: TrajectoryControllerConfig | None = None,
        gripper: GripperActionConfig | None = None,
    ) -> None:
        names = list(joint_names)
        self.arm_joints = tuple(arm_joints)
        self._arm_index = np.array([names.index(j) for j in self.arm_joints])
        self.gripper_joint = gripper_joint
        self._grip_index = None if gripper_joint is None else names.index(gripper_joint)
        self._clock = clock
        config = trajectory if trajectory is not None else TrajectoryControllerConfig(joints=self.arm_joints)
        if config.joints != self.arm_joints:
            raise ValueError(f"trajectory joints {config.joints} are not the arm's {self.arm_joints}")
        self._trajectory = JointTrajectoryController(config)
        self._gripper = GripperAction(gripper)
        self._cv = threading.Condition()
        self._next_id = 1
        self._queued: tuple[int, TrajectoryGoal] | None = None
        self._queued_gripper: tuple[int, float, float] | None = None
        self._cancel: set[int] = set()
        self._ends: dict[int, GoalEnd | GripperEnd] = {}
        self._unwatched: set[int] = set()  # goals whose end nobody waits for
        self.state: ControllerState | None = None  # the trajectory controller's state at the last step
        self.gripper_reading: GripperReading | None = None

    @classmethod
    def for_world(cls, world: SimWorld, clock: Callable[[], float]) -> ArmControllers:
        """The controllers of ``world``'s arm (its gripper's first joint for the gripper action)."""
        grippers = world.gripper_joint_names
        return cls(world.joint_names, world.arm_joint_names, grippers[0] if grippers else None, clock)

    @property
    def has_gripper(self) -> bool:
        """Whether the arm has a gripper the gripper action drives."""
        return self._grip_index is not None

    @property
    def busy(self) -> bool:
        """Whether a goal runs or waits (the physics thread steps the controllers every step then)."""
        return (
            self._queued is not None
            or self._queued_gripper is not None
            or self._trajectory.active_goal is not None
            or self._gripper.active_goal is not None
            or bool(self._cancel)
        )

    # ------------------------------------------------------------------------------------ the servers

    def check_trajectory(self, goal: TrajectoryGoal) -> None:
        """Check ``goal`` now, as a goal response does.

        Raises:
            GoalError: the goal is refused (see :meth:`JointTrajectoryController.validate`).
        """
        with self._cv:
            self._trajectory.validate(goal, self._clock())

    def submit_trajectory(self, goal: TrajectoryGoal, *, result: bool = True) -> int:
        """Check ``goal`` now and start it at the next step (replacing a queued one); returns its id.

        ``result``: whether someone waits for its end (:meth:`wait_end`); a topic's trajectory has none.

        Raises:
            GoalError: the goal is refused (see :meth:`JointTrajectoryController.validate`).
        """
        with self._cv:
            self._trajectory.validate(goal, self._clock())
            goal_id = self._new_id()
            if not result:
                self._unwatched.add(goal_id)
            if self._queued is not None:  # never started: preempted before its first step
                self._end(GoalEnd(self._queued[0], GoalStatus.CANCELED, ErrorCode.INVALID_GOAL, PREEMPTED))
            self._queued = (goal_id, goal)
            return goal_id

    def submit_gripper(self, position: float, max_effort: float) -> int:
        """Start a gripper goal at the next step; returns its id.

        Raises:
            ValueError: no gripper, or a non-finite goal.
        """
        if self._grip_index is None:
            raise ValueError("the arm has no gripper")
        if not (math.isfinite(position) and math.isfinite(max_effort)):
            raise ValueError(f"gripper goal must be finite: position {position}, max_effort {max_effort}")
        with self._cv:
            goal_id = self._new_id()
            if self._queued_gripper is not None:
                self._end(GripperEnd(self._queued_gripper[0], GoalStatus.CANCELED, _nan_reading()))
            self._queued_gripper = (goal_id, position, max_effort)
            return goal_id

    def cancel(self, goal_id: int) -> None:
        """Ask for goal ``goal_id`` (trajectory or gripper) to be canceled at the next step."""
        with self._cv:
            self._cancel.add(goal_id)

    def wait_end(self, goal_id: int, timeout_s: float) -> GoalEnd | GripperEnd | None:
        """Goal ``goal_id``'s end, waiting at most ``timeout_s`` for it; None while it runs."""
        with self._cv:
            self._cv.wait_for(lambda: goal_id in self._ends, timeout_s)
            return self._ends.pop(goal_id, None)

    # ------------------------------------------------------------------------------------ the physics

    def step(
        self, now: float, positions: np.ndarray, velocities: np.ndarray, efforts: np.ndarray
    ) -> Commands:
        """One physics step at ``now`` (s) with the measured state in ``joint_names`` order."""
        arm_pos, arm_vel = positions[self._arm_index], velocities[self._arm_index]
        with self._cv:
            self._start_queued(now, arm_pos, arm_vel)
            for goal_id in sorted(self._cancel):
                self._cancel_now(goal_id, positions, efforts)
            self._cancel.clear()
            arm, state, end = self._trajectory.update(now, arm_pos, arm_vel)
            self.state = state
            if end is not None:
                self._end(end)
            gripper = self._step_gripper(now, positions, velocities, efforts)
            return Commands(arm, gripper)

    def reset(self) -> None:
        """The sim was reset: running and queued goals end as canceled, the arm keeps the reset's command."""
        with self._cv:
            for end in (self._trajectory.stop(RESET_MESSAGE), self._gripper.stop()):
                if end is not None:
                    self._end(end)
            if self._queued is not None:
                self._end(
                    GoalEnd(self._queued[0], GoalStatus.CANCELED, ErrorCode.INVALID_GOAL, RESET_MESSAGE)
                )
            if self._queued_gripper is not None:
                self._end(GripperEnd(self._queued_gripper[0], GoalStatus.CANCELED, _nan_reading()))
            self._queued = self._queued_gripper = None
            self._cancel.clear()

    # ---------------------------------------------------------------------------------------- private

    def _new_id(self) -> int:
        goal_id = self._next_id
        self._next_id += 1
        return goal_id

    def _end(self, end: GoalEnd | GripperEnd) -> None:
        if end.goal_id in self._unwatched:
            self._unwatched.discard(end.goal_id)
            return
        self._ends[end.goal_id] = end
        self._cv.notify_all()

    def _start_queued(self, now: float, arm_pos: np.ndarray, arm_vel: np.ndarray) -> None:
        if self._queued is None:
            return
        (goal_id, goal), self._queued = self._queued, None
        try:
            _, preempted = self._trajectory.start(goal, now, arm_pos, arm_vel, goal_id=goal_id)
        except GoalError as err:  # valid when it came, stale now (its stamped end has passed)
            self._end(GoalEnd(goal_id, GoalStatus.ABORTED, err.code, str(err)))
            return
        if preempted is not None:
            self._end(preempted)

    def _cancel_now(self, goal_id: int, positions: np.ndarray, efforts: np.ndarray) -> None:
        end: GoalEnd | GripperEnd | None = self._trajectory.cancel(goal_id)
        if end is None and self._grip_index is not None:
            i = self._grip_index
            end = self._gripper.cancel(goal_id, float(positions[i]), float(efforts[i]))
        if end is not None:
            self._end(end)

    def _step_gripper(
        self, now: float, positions: np.ndarray, velocities: np.ndarray, efforts: np.ndarray
    ) -> float | None:
        """Start a queued gripper goal (its position is the command) and judge the running one."""
        if self._grip_index is None:
            return None
        i = self._grip_index
        self.gripper_reading = GripperReading(float(positions[i]), float(efforts[i]))
        command = None
        if self._queued_gripper is not None:
            (goal_id, position, max_effort), self._queued_gripper = self._queued_gripper, None
            _, preempted = self._gripper.start(position, max_effort, now, goal_id=goal_id)
            if preempted is not None:
                self._end(preempted)
            command = position
        end = self._gripper.update(now, float(positions[i]), float(velocities[i]), float(efforts[i]))
        if end is not None:
            self._end(end)
        return command


def _nan_reading() -> GripperReading:
    return GripperReading(math.nan, math.nan)
