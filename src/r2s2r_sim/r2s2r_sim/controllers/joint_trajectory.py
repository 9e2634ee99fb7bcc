"""The joint trajectory controller's core: goal validation, tolerances, preemption and the goal's end.

It does what ros2_controllers' joint_trajectory_controller (Jazzy) does for a position-commanded arm:

* a goal names every controller joint once, in any order (mapped to the robot's); its points have strictly
  increasing ``time_from_start``; a non-zero header stamp starts it then, else on receipt; a goal that
  would end before it is received is refused (``OLD_HEADER_TIMESTAMP``);
* each update samples the trajectory (:mod:`r2s2r_sim.controllers.trajectory`) for the position command,
  with error = desired - actual;
* before the last point's time the path tolerance holds, else the goal aborts (``PATH_TOLERANCE_VIOLATED``)
  and the arm holds where it is; from then on the goal succeeds once every joint is within the goal
  tolerance, and aborts (``GOAL_TOLERANCE_VIOLATED``) if it is not within ``goal_time_tolerance`` (0: no
  limit) after that time;
* a tolerance of 0 is not checked; a goal's tolerance of 0 keeps the default and -1 erases it; a goal with
  another negative tolerance, or one for an unknown joint, runs on the defaults;
* a new goal cancels the running one (error ``INVALID_GOAL``, "Current goal cancelled due to new incoming
  action."), as does a cancel request, after which the arm holds where it is.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from r2s2r_sim.controllers.trajectory import Sample, Trajectory, TrajectoryPoint

__all__ = [
    "ERASE",
    "ControllerState",
    "ErrorCode",
    "GoalEnd",
    "GoalError",
    "GoalStatus",
    "JointTolerance",
    "JointTrajectoryController",
    "StateTolerance",
    "TrajectoryControllerConfig",
    "TrajectoryGoal",
]

ERASE = -1.0  # a goal tolerance of -1 erases the default (control_msgs/JointTolerance)
PREEMPTED = "Current goal cancelled due to new incoming action."
CANCELED = "Goal cancelled by the client."
SUCCEEDED = "Goal successfully reached!"
PATH_VIOLATED = "Aborted due to path tolerance violation"


class ErrorCode(enum.IntEnum):
    """``control_msgs/action/FollowJointTrajectory`` result error codes."""

    SUCCESSFUL = 0
    INVALID_GOAL = -1
    INVALID_JOINTS = -2
    OLD_HEADER_TIMESTAMP = -3
    PATH_TOLERANCE_VIOLATED = -4
    GOAL_TOLERANCE_VIOLATED = -5


class GoalStatus(enum.Enum):
    """How a goal ended (the action's terminal states)."""

    SUCCEEDED = "succeeded"
    ABORTED = "aborted"
    CANCELED = "canceled"


class GoalError(ValueError):
    """A goal refused at validation; ``code`` is the error code a real controller's result would carry."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code


@dataclass(frozen=True)
class StateTolerance:
    """Largest |error| allowed per joint (rad or m, rad/s or m/s, ...); 0: not checked."""

    position: float = 0.0
    velocity: float = 0.0
    acceleration: float = 0.0


@dataclass(frozen=True)
class JointTolerance:
    """A goal's tolerance for one joint (control_msgs/JointTolerance): 0 keeps the default, -1 erases it."""

    name: str
    position: float = 0.0
    velocity: float = 0.0
    acceleration: float = 0.0


@dataclass(frozen=True)
class TrajectoryGoal:
    """A FollowJointTrajectory goal (or a joint_trajectory message) in the goal's own joint order.

    ``start_time`` is its header stamp (s of the controller's clock; 0: start on receipt) and each point's
    arrays follow ``joint_names``.
    """

    joint_names: tuple[str, ...]
    points: tuple[TrajectoryPoint, ...]
    start_time: float = 0.0
    path_tolerance: tuple[JointTolerance, ...] = ()
    goal_tolerance: tuple[JointTolerance, ...] = ()
    goal_time_tolerance: float = 0.0


@dataclass(frozen=True, kw_only=True)
class TrajectoryControllerConfig:
    """The controller's joints and default constraints (joint_trajectory_controller's ``constraints``).

    Args:
        joints: the controller's joints, in the robot's order.
        path: per-joint path tolerance (default: none checked).
        goal: per-joint goal tolerance (default: none checked); every joint's goal velocity tolerance is at
            least ``stopped_velocity_tolerance``.
        stopped_velocity_tolerance: rad/s or m/s (JTC default 0.01).
        goal_time: s allowed after the last point to get within the goal tolerance (0: no limit).
    """

    joints: tuple[str, ...]
    path: tuple[StateTolerance, ...] | None = None
    goal: tuple[StateTolerance, ...] | None = None
    stopped_velocity_tolerance: float = 0.01
    goal_time: float = 0.0

    def __post_init__(self) -> None:
        if not self.joints or len(set(self.joints)) != len(self.joints):
            raise ValueError(f"joints must be unique and not empty, got {list(self.joints)}")
        n = len(self.joints)
        for field in ("path", "goal"):
            value = getattr(self, field)
            if value is not None and len(value) != n:
                raise ValueError(f"{field} must have one tolerance per joint ({n}), got {len(value)}")
        if self.stopped_velocity_tolerance < 0.0 or self.goal_time < 0.0:
            raise ValueError(
                "stopped_velocity_tolerance and goal_time must be >= 0, got "
                f"{self.stopped_velocity_tolerance} and {self.goal_time}"
            )

    def default_path(self) -> tuple[StateTolerance, ...]:
        """The default path tolerance of each joint."""
        return self.path if self.path is not None else (StateTolerance(),) * len(self.joints)

    def default_goal(self) -> tuple[StateTolerance, ...]:
        """The default goal tolerance of each joint, with the stopped velocity tolerance applied."""
        goal = self.goal if self.goal is not None else (StateTolerance(),) * len(self.joints)
        return tuple(
            dataclasses.replace(t, velocity=max(t.velocity, self.stopped_velocity_tolerance)) for t in goal
        )


@dataclass(frozen=True)
class ControllerState:
    """What the controller state topic and the action feedback carry, in the controller's joint order."""

    time: float
    desired: Sample
    actual_positions: np.ndarray
    actual_velocities: np.ndarray

    @property
    def position_error(self) -> np.ndarray:
        """Desired minus actual positions."""
        return self.desired.positions - self.actual_positions

    @property
    def velocity_error(self) -> np.ndarray:
        """Desired minus actual velocities."""
        return self.desired.velocities - self.actual_velocities


@dataclass(frozen=True)
class GoalEnd:
    """A goal's end: its terminal status, result error code and error string."""

    goal_id: int
    status: GoalStatus
    code: ErrorCode
    message: str


@dataclass
class _Active:
    goal_id: int
    trajectory: Trajectory
    path: tuple[StateTolerance, ...]
    goal: tuple[StateTolerance, ...]
    goal_time: float


class JointTrajectoryController:
    """A position-commanded joint trajectory controller; see the module docstring.

    The caller calls :meth:`update` once per physics step with the measured state and commands the
    returned positions when they are not ``None`` (no trajectory, or one that has ended: the last command
    stands).
    """

    def __init__(self, config: TrajectoryControllerConfig) -> None:
        self.config = config
        self._index = {name: i for i, name in enumerate(config.joints)}
        self._active: _Active | None = None
        self._hold_pending = False  # a canceled goal: the next update holds the arm where it is
        self._next_id = 1
        self._last: Sample | None = None  # the last desired state (the state topic's reference when idle)

    @property
    def active_goal(self) -> int | None:
        """The id of the running goal, if any."""
        return None if self._active is None else self._active.goal_id

    def validate(self, goal: TrajectoryGoal, now: float) -> tuple[TrajectoryPoint, ...]:
        """Check ``goal`` at time ``now`` (s) and return its points in the controller's joint order.

        Raises:
            GoalError: with ``INVALID_JOINTS`` (joints empty, repeated, unknown or missing),
                ``INVALID_GOAL`` (no points, times not increasing, arrays of the wrong size, non-finite
                values) or ``OLD_HEADER_TIMESTAMP`` (a stamped goal that ends before ``now``).
        """
        names = goal.joint_names
        if not names:
            raise GoalError(ErrorCode.INVALID_JOINTS, "the trajectory names no joints")
        if len(set(names)) != len(names):
            raise GoalError(ErrorCode.INVALID_JOINTS, f"the trajectory names a joint twice: {list(names)}")
        unknown = [n for n in names if n not in self._index]
        if unknown:
            raise GoalError(
                ErrorCode.INVALID_JOINTS,
                f"joints {unknown} are not the controller's (joints: {list(self.config.joints)})",
            )
        missing = [n for n in self.config.joints if n not in names]
        if missing:
            raise GoalError(
                ErrorCode.INVALID_JOINTS, f"the trajectory lacks the controller's joints {missing}"
            )
        if not goal.points:
            raise GoalError(ErrorCode.INVALID_GOAL, "the trajectory has no points")
        if goal.start_time > 0.0 and goal.start_time + goal.points[-1].time_from_start < now:
            raise GoalError(
                ErrorCode.OLD_HEADER_TIMESTAMP,
                f"the trajectory starts at {goal.start_time:.3f} s and ends at "
                f"{goal.start_time + goal.points[-1].time_from_start:.3f} s, before now ({now:.3f} s)",
            )
        order = np.array([names.index(j) for j in self.config.joints])
        points = tuple(_reordered(p, i, order, len(names)) for i, p in enumerate(goal.points))
        for i in range(1, len(points)):
            if points[i].time_from_start <= points[i - 1].time_from_start:
                raise GoalError(
                    ErrorCode.INVALID_GOAL,
                    f"time_from_start of points {i - 1} and {i} is not strictly increasing "
                    f"({points[i - 1].time_from_start} s, {points[i].time_from_start} s)",
                )
        return points

    def start(
        self,
        goal: TrajectoryGoal,
        now: float,
        positions: np.ndarray,
        velocities: np.ndarray,
        *,
        goal_id: int | None = None,
    ) -> tuple[int, GoalEnd | None]:
        """Validate and run ``goal`` from the measured state; returns its id and the goal it preempted.

        ``goal_id`` names the goal (default: the next number); a caller that numbers goals itself gives it.

        Raises:
            GoalError: see :meth:`validate`; the running goal, if any, keeps running.
        """
        points = self.validate(goal, now)
        path, goal_tol = self._tolerances(goal)
        preempted = self._end(GoalStatus.CANCELED, ErrorCode.INVALID_GOAL, PREEMPTED, hold=False)
        start_time = goal.start_time if goal.start_time > 0.0 else now
        start = TrajectoryPoint(0.0, np.asarray(positions, dtype=np.float64), np.asarray(velocities))
        goal_time = goal.goal_time_tolerance if goal.goal_time_tolerance > 0.0 else self.config.goal_time
        if goal_id is None:
            goal_id = self._next_id
        self._next_id = max(self._next_id, goal_id) + 1
        self._active = _Active(goal_id, Trajectory(start_time, start, points), path, goal_tol, goal_time)
        return goal_id, preempted

    def cancel(self, goal_id: int) -> GoalEnd | None:
        """Cancel goal ``goal_id`` if it is running; the arm then holds where it is."""
        if self._active is None or self._active.goal_id != goal_id:
            return None
        return self._end(GoalStatus.CANCELED, ErrorCode.SUCCESSFUL, CANCELED, hold=True)

    def stop(self, message: str) -> GoalEnd | None:
        """End the running goal as canceled (``INVALID_GOAL``, ``message``): the sim was reset under it."""
        # A reset placed the arm: it keeps the reset's command.
        return self._end(GoalStatus.CANCELED, ErrorCode.INVALID_GOAL, message, hold=False)

    def update(
        self, now: float, positions: np.ndarray, velocities: np.ndarray
    ) -> tuple[np.ndarray | None, ControllerState, GoalEnd | None]:
        """One control step at ``now`` (s) with the measured state, in the controller's joint order.

        Returns:
            the positions to command (None: leave the last command), the controller state, and the goal
            that ended at this step, if one did.
        """
        positions = np.asarray(positions, dtype=np.float64)
        velocities = np.asarray(velocities, dtype=np.float64)
        active = self._active
        if active is None:
            command = self._hold_here(positions) if self._hold_pending else None
            desired = self._last if self._last is not None else _still(positions)
            return command, ControllerState(now, desired, positions, velocities), None
        desired = active.trajectory.sample(now)
        self._last = desired
        state = ControllerState(now, desired, positions, velocities)
        if desired.before_last_point:
            if not _within(state, active.path):
                end = self._end(
                    GoalStatus.ABORTED, ErrorCode.PATH_TOLERANCE_VIOLATED, PATH_VIOLATED, hold=False
                )
                return self._hold_here(positions), state, end
            return desired.positions, state, None
        if _within(state, active.goal):
            end = self._end(GoalStatus.SUCCEEDED, ErrorCode.SUCCESSFUL, SUCCEEDED, hold=False)
            return desired.positions, state, end
        late = now - active.trajectory.end_time
        if active.goal_time > 0.0 and late > active.goal_time:
            end = self._end(
                GoalStatus.ABORTED,
                ErrorCode.GOAL_TOLERANCE_VIOLATED,
                f"Aborted due to goal_time_tolerance exceeding by {late - active.goal_time:.6f} seconds",
                hold=False,
            )
            return self._hold_here(positions), state, end
        return desired.positions, state, None

    # ------------------------------------------------------------------------------------------ private

    def _hold_here(self, positions: np.ndarray) -> np.ndarray:
        """Hold the arm where it is (ros2_controllers' set_hold_position): the command to send once."""
        self._hold_pending = False
        self._last = _still(positions)
        return self._last.positions.copy()

    def _end(self, status: GoalStatus, code: ErrorCode, message: str, *, hold: bool) -> GoalEnd | None:
        """End the running goal (none: None); ``hold``: the next update holds the arm where it is then."""
        active, self._active = self._active, None
        if active is None:
            return None
        self._hold_pending = hold
        return GoalEnd(active.goal_id, status, code, message)

    def _tolerances(
        self, goal: TrajectoryGoal
    ) -> tuple[tuple[StateTolerance, ...], tuple[StateTolerance, ...]]:
        """The goal's path and goal tolerances over the defaults (all defaults if the goal's are invalid)."""
        path, goal_tol = self.config.default_path(), self.config.default_goal()
        try:
            return _override(path, goal.path_tolerance, self._index), _override(
                goal_tol, goal.goal_tolerance, self._index
            )
        except ValueError:
            return path, goal_tol


def _reordered(point: TrajectoryPoint, index: int, order: np.ndarray, n: int) -> TrajectoryPoint:
    """``point`` in the controller's joint order, its sizes and values checked."""

    def field(values: np.ndarray | None, what: str, required: bool) -> np.ndarray | None:
        if values is None or (len(values) == 0 and not required):
            return None
        array = np.asarray(values, dtype=np.float64)
        if array.shape != (n,):
            raise GoalError(ErrorCode.INVALID_GOAL, f"point {index} has {len(array)} {what} for {n} joints")
        if not np.all(np.isfinite(array)):
            raise GoalError(ErrorCode.INVALID_GOAL, f"point {index} has non-finite {what}")
        return array[order]

    if not math.isfinite(point.time_from_start) or point.time_from_start < 0.0:
        raise GoalError(
            ErrorCode.INVALID_GOAL,
            f"point {index} has time_from_start {point.time_from_start} (must be >= 0)",
        )
    positions = field(point.positions, "positions", True)
    assert positions is not None
    return TrajectoryPoint(
        point.time_from_start,
        positions,
        field(point.velocities, "velocities", False),
        field(point.accelerations, "accelerations", False),
    )


def _resolve(default: float, value: float) -> float:
    """A goal's tolerance over the default: 0 keeps it, -1 erases it (0), other negatives are invalid."""
    if value > 0.0:
        return value
    if value == 0.0:
        return default
    if value == ERASE:
        return 0.0
    raise ValueError(f"tolerance {value} (must be >= 0 or -1)")


def _override(
    defaults: tuple[StateTolerance, ...], goal: Sequence[JointTolerance], index: dict[str, int]
) -> tuple[StateTolerance, ...]:
    """``defaults`` with the goal's per-joint tolerances; ``ValueError`` for an unknown joint or value."""
    out = list(defaults)
    for tol in goal:
        if tol.name not in index:
            raise ValueError(f"tolerance for unknown joint {tol.name!r}")
        i = index[tol.name]
        d = out[i]
        out[i] = StateTolerance(
            _resolve(d.position, tol.position),
            _resolve(d.velocity, tol.velocity),
            _resolve(d.acceleration, tol.acceleration),
        )
    return tuple(out)


def _within(state: ControllerState, tolerances: Sequence[StateTolerance]) -> bool:
    """Whether every joint's position and velocity error is within its tolerance (0: not checked)."""
    pos_err, vel_err = np.abs(state.position_error), np.abs(state.velocity_error)
    for i, tol in enumerate(tolerances):
        if tol.position > 0.0 and pos_err[i] > tol.position:
            return False
        if tol.velocity > 0.0 and vel_err[i] > tol.velocity:
            return False
    return True


def _still(positions: np.ndarray) -> Sample:
    zero = np.zeros_like(positions)
    return Sample(np.asarray(positions, dtype=np.float64).copy(), zero, zero.copy(), before_last_point=False)
