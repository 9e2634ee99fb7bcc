"""The joint trajectory and gripper action cores against joint_trajectory_controller's semantics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from r2s2r_sim.controllers.arm_controllers import RESET_MESSAGE, ArmControllers
from r2s2r_sim.controllers.gripper import GripperAction, GripperActionConfig, GripperEnd
from r2s2r_sim.controllers.joint_trajectory import (
    ErrorCode,
    GoalEnd,
    GoalError,
    GoalStatus,
    JointTolerance,
    JointTrajectoryController,
    StateTolerance,
    TrajectoryControllerConfig,
    TrajectoryGoal,
)
from r2s2r_sim.controllers.trajectory import Trajectory, TrajectoryPoint

JOINTS = ("shoulder", "elbow")


def point(t: float, pos: list[float], vel: list[float] | None = None, acc: list[float] | None = None):
    return TrajectoryPoint(
        t,
        np.array(pos),
        None if vel is None else np.array(vel),
        None if acc is None else np.array(acc),
    )


def controller(**kwargs) -> JointTrajectoryController:
    return JointTrajectoryController(TrajectoryControllerConfig(joints=JOINTS, **kwargs))


ZERO = np.zeros(2)

# ------------------------------------------------------------------------------------------- the spline


def test_linear_between_points_and_from_the_start_state() -> None:
    traj = Trajectory(10.0, point(0.0, [0.0, 1.0]), [point(1.0, [1.0, 1.0]), point(3.0, [0.0, 2.0])])
    s = traj.sample(10.5)  # half way from the start state to the first point
    np.testing.assert_allclose(s.positions, [0.5, 1.0])
    np.testing.assert_allclose(s.velocities, [1.0, 0.0])
    s = traj.sample(12.0)
    np.testing.assert_allclose(s.positions, [0.5, 1.5])
    np.testing.assert_allclose(s.velocities, [-0.5, 0.5])
    assert s.before_last_point
    assert traj.end_time == 13.0


def test_holds_the_start_before_and_the_last_point_after() -> None:
    traj = Trajectory(10.0, point(0.0, [0.2, 0.3]), [point(1.0, [1.0, 1.0], [0.0, 0.0])])
    before = traj.sample(9.0)
    np.testing.assert_allclose(before.positions, [0.2, 0.3])
    np.testing.assert_allclose(before.velocities, ZERO)
    after = traj.sample(20.0)
    np.testing.assert_allclose(after.positions, [1.0, 1.0])
    assert not after.before_last_point


def test_cubic_when_velocities_are_given() -> None:
    # From rest at 0 to rest at 1 in 2 s: p = 3 s^2 - 2 s^3 with s = t / 2, so p(1) = 0.5, v(1) = 0.75.
    traj = Trajectory(0.0, point(0.0, [0.0, 0.0], [0.0, 0.0]), [point(2.0, [1.0, -1.0], [0.0, 0.0])])
    s = traj.sample(1.0)
    np.testing.assert_allclose(s.positions, [0.5, -0.5])
    np.testing.assert_allclose(s.velocities, [0.75, -0.75])
    s = traj.sample(0.5)  # s = 0.25: 3/16 - 2/64
    np.testing.assert_allclose(s.positions[0], 0.15625)
    np.testing.assert_allclose(traj.sample(2.0).velocities, ZERO)


def test_cubic_meets_the_given_velocities_at_the_points() -> None:
    pts = [point(1.0, [1.0, 0.0], [0.5, -0.2]), point(2.5, [2.0, 1.0], [0.0, 0.0])]
    traj = Trajectory(0.0, point(0.0, [0.0, 0.0], [0.0, 0.0]), pts)
    eps = 1e-7
    s = traj.sample(1.0 - eps)
    np.testing.assert_allclose(s.positions, [1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(s.velocities, [0.5, -0.2], atol=1e-5)
    s = traj.sample(1.0 + eps)
    np.testing.assert_allclose(s.velocities, [0.5, -0.2], atol=1e-5)


def test_quintic_when_accelerations_are_given() -> None:
    # Rest to rest with zero accelerations: p = 10 s^3 - 15 s^4 + 6 s^5; at s = 0.5, p = 0.5, v = 1.875 / T.
    traj = Trajectory(
        0.0,
        point(0.0, [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]),
        [point(2.0, [1.0, 2.0], [0.0, 0.0], [0.0, 0.0])],
    )
    s = traj.sample(1.0)
    np.testing.assert_allclose(s.positions, [0.5, 1.0])
    np.testing.assert_allclose(s.velocities, [0.9375, 1.875])
    np.testing.assert_allclose(s.accelerations, ZERO, atol=1e-12)
    s = traj.sample(0.5)  # s = 0.25
    np.testing.assert_allclose(s.positions[0], 10 * 0.25**3 - 15 * 0.25**4 + 6 * 0.25**5)


# ----------------------------------------------------------------------------------------- validation


def goal(names=JOINTS, points=None, **kwargs) -> TrajectoryGoal:
    if points is None:
        points = (point(1.0, [1.0, 2.0]),)
    return TrajectoryGoal(tuple(names), tuple(points), **kwargs)


@pytest.mark.parametrize(
    ("bad", "code", "match"),
    [
        (goal(names=()), ErrorCode.INVALID_JOINTS, "names no joints"),
        (goal(names=("shoulder", "wrist")), ErrorCode.INVALID_JOINTS, r"joints \['wrist'\] are not"),
        (goal(names=("shoulder",), points=(point(1.0, [1.0]),)), ErrorCode.INVALID_JOINTS, "lacks.*elbow"),
        (goal(names=("elbow", "elbow")), ErrorCode.INVALID_JOINTS, "names a joint twice"),
        (goal(points=()), ErrorCode.INVALID_GOAL, "no points"),
        (
            goal(points=(point(1.0, [0, 0]), point(1.0, [1, 1]))),
            ErrorCode.INVALID_GOAL,
            "points 0 and 1 is not strictly increasing",
        ),
        (
            goal(points=(point(2.0, [0, 0]), point(1.0, [1, 1]))),
            ErrorCode.INVALID_GOAL,
            "not strictly increasing",
        ),
        (goal(points=(point(1.0, [0.0]),)), ErrorCode.INVALID_GOAL, "1 positions for 2 joints"),
        (goal(points=(point(1.0, [0, 0], [1.0]),)), ErrorCode.INVALID_GOAL, "1 velocities for 2 joints"),
        (goal(points=(point(1.0, [0, math.nan]),)), ErrorCode.INVALID_GOAL, "non-finite positions"),
        (goal(points=(point(-1.0, [0, 0]),)), ErrorCode.INVALID_GOAL, "must be >= 0"),
        (goal(start_time=5.0), ErrorCode.OLD_HEADER_TIMESTAMP, "ends at 6.000 s, before now"),
    ],
)
def test_invalid_goals_are_refused_with_their_code(bad: TrajectoryGoal, code: ErrorCode, match: str) -> None:
    ctl = controller()
    with pytest.raises(GoalError, match=match) as info:
        ctl.start(bad, 10.0, ZERO, ZERO)
    assert info.value.code is code
    assert ctl.active_goal is None


def test_joints_in_any_order_are_mapped_to_the_robots() -> None:
    ctl = controller()
    ctl.start(goal(names=("elbow", "shoulder"), points=(point(1.0, [2.0, 1.0]),)), 0.0, ZERO, ZERO)
    command, state, end = ctl.update(0.5, ZERO, ZERO)
    np.testing.assert_allclose(command, [0.5, 1.0])
    np.testing.assert_allclose(state.position_error, [0.5, 1.0])
    assert end is None


def test_a_stamped_goal_starts_at_its_stamp() -> None:
    ctl = controller()
    ctl.start(goal(start_time=12.0), 10.0, ZERO, ZERO)
    command, _, _ = ctl.update(11.0, ZERO, ZERO)  # not started yet: holds the start state
    np.testing.assert_allclose(command, ZERO)
    command, _, _ = ctl.update(12.5, ZERO, ZERO)
    np.testing.assert_allclose(command, [0.5, 1.0])


# --------------------------------------------------------------------------------- running and ending


def test_succeeds_at_the_end_within_the_goal_tolerance() -> None:
    ctl = controller(goal=(StateTolerance(position=0.05),) * 2)
    goal_id, preempted = ctl.start(goal(), 0.0, ZERO, ZERO)
    assert preempted is None
    _, _, end = ctl.update(0.99, np.array([0.99, 1.98]), ZERO)
    assert end is None
    _, _, end = ctl.update(1.0, np.array([0.9, 2.0]), ZERO)  # 0.1 off: not yet
    assert end is None and ctl.active_goal == goal_id
    command, state, end = ctl.update(1.1, np.array([0.97, 2.01]), ZERO)
    assert end is not None
    assert (end.goal_id, end.status, end.code) == (goal_id, GoalStatus.SUCCEEDED, ErrorCode.SUCCESSFUL)
    np.testing.assert_allclose(command, [1.0, 2.0])
    np.testing.assert_allclose(state.position_error, [0.03, -0.01], atol=1e-12)
    # Idle afterwards: no command, the reference stays at the last point.
    command, state, end = ctl.update(2.0, np.array([1.0, 2.0]), ZERO)
    assert command is None and end is None
    np.testing.assert_allclose(state.desired.positions, [1.0, 2.0])


def test_stopped_velocity_tolerance_keeps_a_moving_arm_from_succeeding() -> None:
    ctl = controller(stopped_velocity_tolerance=0.01)
    ctl.start(goal(), 0.0, ZERO, ZERO)
    _, _, end = ctl.update(1.0, np.array([1.0, 2.0]), np.array([0.05, 0.0]))
    assert end is None
    _, _, end = ctl.update(1.01, np.array([1.0, 2.0]), np.array([0.005, 0.0]))
    assert end is not None and end.status is GoalStatus.SUCCEEDED


def test_path_tolerance_violation_aborts_and_holds() -> None:
    ctl = controller(path=(StateTolerance(position=0.1),) * 2)
    ctl.start(goal(), 0.0, ZERO, ZERO)
    _, _, end = ctl.update(0.5, np.array([0.45, 1.0]), ZERO)
    assert end is None
    actual = np.array([0.2, 1.0])  # 0.3 behind on the shoulder
    command, _, end = ctl.update(0.6, actual, ZERO)
    assert end is not None
    assert (end.status, end.code) == (GoalStatus.ABORTED, ErrorCode.PATH_TOLERANCE_VIOLATED)
    np.testing.assert_allclose(command, actual)  # held where it is
    assert ctl.update(0.7, actual, ZERO)[0] is None


def test_goal_tolerances_override_and_erase_the_defaults() -> None:
    ctl = controller(path=(StateTolerance(position=0.1),) * 2)
    # The goal widens the shoulder's path tolerance and erases the elbow's.
    g = goal(
        path_tolerance=(JointTolerance("shoulder", position=0.5), JointTolerance("elbow", position=-1.0))
    )
    ctl.start(g, 0.0, ZERO, ZERO)
    _, _, end = ctl.update(0.5, np.array([0.1, -3.0]), ZERO)
    assert end is None
    _, _, end = ctl.update(0.6, np.array([0.0, 0.0]), ZERO)  # shoulder 0.6 off: over 0.5
    assert end is not None and end.code is ErrorCode.PATH_TOLERANCE_VIOLATED


def test_an_invalid_goal_tolerance_falls_back_to_the_defaults() -> None:
    ctl = controller(path=(StateTolerance(position=0.1),) * 2)
    ctl.start(goal(path_tolerance=(JointTolerance("wrist", position=5.0),)), 0.0, ZERO, ZERO)
    _, _, end = ctl.update(0.5, np.array([0.0, 1.0]), ZERO)  # shoulder 0.5 off the default 0.1
    assert end is not None and end.code is ErrorCode.PATH_TOLERANCE_VIOLATED


def test_goal_time_tolerance_aborts_a_late_arm() -> None:
    ctl = controller(goal=(StateTolerance(position=0.01),) * 2)
    ctl.start(goal(goal_time_tolerance=0.5), 0.0, ZERO, ZERO)
    actual = np.array([0.8, 2.0])
    assert ctl.update(1.4, actual, ZERO)[2] is None  # 0.4 s late: still allowed
    command, _, end = ctl.update(1.6, actual, ZERO)
    assert end is not None
    assert (end.status, end.code) == (GoalStatus.ABORTED, ErrorCode.GOAL_TOLERANCE_VIOLATED)
    assert "exceeding by 0.100000 seconds" in end.message
    np.testing.assert_allclose(command, actual)


def test_without_a_goal_time_a_late_arm_keeps_the_goal_running() -> None:
    ctl = controller(goal=(StateTolerance(position=0.01),) * 2)
    ctl.start(goal(), 0.0, ZERO, ZERO)
    assert ctl.update(100.0, np.array([0.8, 2.0]), ZERO)[2] is None
    assert ctl.active_goal is not None


def test_a_new_goal_preempts_the_running_one() -> None:
    ctl = controller()
    first, _ = ctl.start(goal(points=(point(2.0, [2.0, 2.0]),)), 0.0, ZERO, ZERO)
    ctl.update(1.0, np.array([1.0, 1.0]), ZERO)
    second, preempted = ctl.start(goal(points=(point(1.0, [0.0, 0.0]),)), 1.0, np.array([1.0, 1.0]), ZERO)
    assert preempted is not None and second == first + 1
    assert (preempted.goal_id, preempted.status, preempted.code) == (
        first,
        GoalStatus.CANCELED,
        ErrorCode.INVALID_GOAL,
    )
    assert preempted.message == "Current goal cancelled due to new incoming action."
    command, _, _ = ctl.update(1.5, np.array([1.0, 1.0]), ZERO)  # from where the arm was, to the new point
    np.testing.assert_allclose(command, [0.5, 0.5])


def test_a_refused_goal_leaves_the_running_one_running() -> None:
    ctl = controller()
    first, _ = ctl.start(goal(), 0.0, ZERO, ZERO)
    with pytest.raises(GoalError):
        ctl.start(goal(names=("wrist", "elbow")), 0.1, ZERO, ZERO)
    assert ctl.active_goal == first


def test_cancel_holds_where_the_arm_is() -> None:
    ctl = controller()
    goal_id, _ = ctl.start(goal(), 0.0, ZERO, ZERO)
    assert ctl.cancel(goal_id + 1) is None
    end = ctl.cancel(goal_id)
    assert end is not None and end.status is GoalStatus.CANCELED
    actual = np.array([0.3, 0.4])
    command, state, _ = ctl.update(0.5, actual, ZERO)
    np.testing.assert_allclose(command, actual)
    np.testing.assert_allclose(state.desired.positions, actual)
    assert ctl.update(0.6, actual, ZERO)[0] is None


def test_config_is_checked() -> None:
    with pytest.raises(ValueError, match="unique"):
        TrajectoryControllerConfig(joints=("a", "a"))
    with pytest.raises(ValueError, match="path must have one tolerance per joint"):
        TrajectoryControllerConfig(joints=JOINTS, path=(StateTolerance(),))
    with pytest.raises(ValueError, match="goal_time"):
        TrajectoryControllerConfig(joints=JOINTS, goal_time=-1.0)


# ---------------------------------------------------------------------------------------------- gripper


def test_gripper_reaches_its_goal() -> None:
    grip = GripperAction()
    goal_id, _ = grip.start(0.02, 10.0, now=0.0)
    assert grip.update(0.1, position=0.05, velocity=-0.1, effort=1.0) is None
    end = grip.update(0.2, position=0.025, velocity=-0.1, effort=2.5)
    assert end is not None and end.goal_id == goal_id
    assert end.status is GoalStatus.SUCCEEDED
    assert (end.result.position, end.result.effort, end.result.reached_goal, end.result.stalled) == (
        0.025,
        2.5,
        True,
        False,
    )


@pytest.mark.parametrize(("allow", "status"), [(False, GoalStatus.ABORTED), (True, GoalStatus.SUCCEEDED)])
def test_gripper_stalls_on_an_object(allow: bool, status: GoalStatus) -> None:
    grip = GripperAction(GripperActionConfig(stall_timeout=0.5, allow_stalling=allow))
    grip.start(0.0, 10.0, now=0.0)
    assert grip.update(0.4, position=0.03, velocity=-0.05, effort=5.0) is None  # moving
    assert grip.update(0.8, position=0.03, velocity=0.0, effort=5.0) is None  # still 0.4 s
    end = grip.update(0.95, position=0.03, velocity=0.0, effort=5.0)  # still 0.55 s
    assert end is not None and end.status is status
    assert end.result.stalled and not end.result.reached_goal


def test_gripper_goal_is_preempted_and_canceled() -> None:
    grip = GripperAction()
    first, _ = grip.start(0.0, 1.0, now=0.0)
    second, preempted = grip.start(0.04, 1.0, now=0.1)
    assert preempted is not None and preempted.goal_id == first and preempted.status is GoalStatus.CANCELED
    assert grip.target == 0.04
    assert grip.cancel(first, 0.01, 0.0) is None
    end = grip.cancel(second, 0.01, 0.0)
    assert end is not None and end.status is GoalStatus.CANCELED and end.result.position == 0.01
    assert grip.update(1.0, 0.01, 0.0, 0.0) is None


def test_gripper_refuses_non_finite_goals_and_config() -> None:
    with pytest.raises(ValueError, match="must be finite"):
        GripperAction().start(math.nan, 1.0, now=0.0)
    with pytest.raises(ValueError, match="stall_timeout must be a finite number > 0"):
        GripperActionConfig(stall_timeout=0.0)


# ------------------------------------------------------------------------ the controllers of one arm


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def arm() -> tuple[ArmControllers, Clock]:
    clock = Clock()
    # The measured state's order puts the gripper between the arm joints: the arm is picked by name.
    return ArmControllers(("shoulder", "finger", "elbow"), JOINTS, "finger", clock), clock


STATE = (np.zeros(3), np.zeros(3), np.zeros(3))


def test_arm_controllers_start_goals_at_the_next_step_and_report_their_end() -> None:
    ctl, clock = arm()
    assert not ctl.busy
    goal_id = ctl.submit_trajectory(goal())
    assert ctl.busy and ctl.wait_end(goal_id, 0.0) is None
    commands = ctl.step(0.5, *STATE)  # started at 0.5 from the measured state
    np.testing.assert_allclose(commands.arm, [0.0, 0.0])
    commands = ctl.step(1.0, *STATE)
    np.testing.assert_allclose(commands.arm, [0.5, 1.0])
    ctl.step(1.5, np.array([1.0, 0.0, 2.0]), np.zeros(3), np.zeros(3))
    end = ctl.wait_end(goal_id, 0.0)
    assert isinstance(end, GoalEnd) and end.status is GoalStatus.SUCCEEDED
    assert ctl.wait_end(goal_id, 0.0) is None  # handed out once
    assert not ctl.busy


def test_arm_controllers_refuse_at_submission_and_preempt_queued_goals() -> None:
    ctl, clock = arm()
    clock.t = 10.0
    with pytest.raises(GoalError) as info:
        ctl.submit_trajectory(goal(start_time=5.0))
    assert info.value.code is ErrorCode.OLD_HEADER_TIMESTAMP
    first = ctl.submit_trajectory(goal())
    second = ctl.submit_trajectory(goal())
    end = ctl.wait_end(first, 0.0)
    assert (
        isinstance(end, GoalEnd) and end.code is ErrorCode.INVALID_GOAL and end.status is GoalStatus.CANCELED
    )
    ctl.step(10.0, *STATE)
    ctl.cancel(second)
    ctl.step(10.1, *STATE)
    end = ctl.wait_end(second, 0.0)
    assert isinstance(end, GoalEnd) and end.status is GoalStatus.CANCELED


def test_a_topic_trajectory_has_no_result_and_preempts_an_action_goal() -> None:
    ctl, _ = arm()
    action = ctl.submit_trajectory(goal())
    ctl.step(0.0, *STATE)
    topic = ctl.submit_trajectory(goal(), result=False)
    ctl.step(0.1, *STATE)
    end = ctl.wait_end(action, 0.0)
    assert isinstance(end, GoalEnd) and end.message == "Current goal cancelled due to new incoming action."
    ctl.step(5.0, np.array([1.0, 0.0, 2.0]), np.zeros(3), np.zeros(3))
    assert ctl.wait_end(topic, 0.0) is None and not ctl.busy  # ended, and nobody is told


def test_arm_controllers_gripper_goal_and_reset() -> None:
    ctl, _ = arm()
    goal_id = ctl.submit_gripper(0.02, 5.0)
    commands = ctl.step(
        0.0, np.array([0.0, 0.04, 0.0]), np.array([0.0, -0.1, 0.0]), np.array([0.0, 1.0, 0.0])
    )
    assert commands.gripper == 0.02 and commands.arm is None
    assert ctl.gripper_reading is not None and ctl.gripper_reading.position == 0.04
    ctl.step(0.5, np.array([0.0, 0.021, 0.0]), np.zeros(3), np.array([0.0, 2.0, 0.0]))
    end = ctl.wait_end(goal_id, 0.0)
    assert isinstance(end, GripperEnd) and end.result.reached_goal and end.result.effort == 2.0
    running = ctl.submit_trajectory(goal())
    ctl.step(0.6, *STATE)
    ctl.reset()
    end = ctl.wait_end(running, 0.0)
    assert isinstance(end, GoalEnd) and end.message == RESET_MESSAGE and not ctl.busy
    with pytest.raises(ValueError, match="finite"):
        ctl.submit_gripper(math.inf, 1.0)
    no_gripper = ArmControllers(JOINTS, JOINTS, None, Clock())
    with pytest.raises(ValueError, match="no gripper"):
        no_gripper.submit_gripper(0.0, 1.0)
