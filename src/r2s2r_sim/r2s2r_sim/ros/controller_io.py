"""The controllers' ROS side: joint_trajectory_controller's and gripper_action_controller's endpoints.

Beside the forward command topics, a node serving
:class:`~r2s2r_sim.controllers.arm_controllers.ArmControllers` offers what ros2_control's controllers
offer: the ``follow_joint_trajectory`` action, the ``joint_trajectory`` and ``controller_state`` topics,
and the ``gripper_command`` action (names, types and QoS from the interface profile): a
``GripperCommand`` as gripper_action_controller serves it, or a ``ParallelGripperCommand`` as
parallel_gripper_action_controller does (one position, the effort limit optional, the joint's state in the
feedback and result). Goals are checked
when they are sent: a refused one is rejected at the goal response, as joint_trajectory_controller does,
and the node logs its error code. A goal runs in the sim's time; feedback follows every
``FEEDBACK_PERIOD_S`` of wall time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import GoalEvent, ServerGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectoryPoint

from r2s2r_sim.controllers.arm_controllers import ArmControllers
from r2s2r_sim.controllers.gripper import GripperEnd, GripperReading
from r2s2r_sim.controllers.joint_trajectory import (
    ControllerState,
    GoalEnd,
    GoalError,
    GoalStatus,
    JointTolerance,
    TrajectoryGoal,
)
from r2s2r_sim.controllers.trajectory import TrajectoryPoint
from r2s2r_sim.interface import Interface
from r2s2r_sim.ros import conversions as conv
from r2s2r_sim.ros.driver_io import interface_publisher, subscribe_topics
from r2s2r_sim.ros.params import spin_multithreaded
from r2s2r_sim.ros.qos import interface_class

__all__ = [
    "FEEDBACK_PERIOD_S",
    "GOAL_THREADS",
    "ControllerServers",
    "GripperMessages",
    "spin_serving_goals",
    "trajectory_goal",
]

FEEDBACK_PERIOD_S = 0.05  # joint_trajectory_controller's default action_monitor_rate, 20 Hz
# Each goal waits for its end on an executor thread (rclpy resumes a waiting coroutine in a busy loop). At
# most a running and a queued goal per action wait at once, so a node serving them spins this many more.
GOAL_THREADS = 4


def spin_serving_goals(node: Node) -> None:
    """Spin a node that serves the controllers: its two threads, and one for each goal that may wait."""
    spin_multithreaded(node, num_threads=2 + GOAL_THREADS)


def _seconds(duration: Any) -> float:
    return duration.sec + duration.nanosec * 1e-9


def _array(values: Sequence[float]) -> np.ndarray | None:
    return np.asarray(values, dtype=np.float64) if len(values) else None


def trajectory_goal(trajectory: Any, goal: Any = None) -> TrajectoryGoal:
    """The core's goal from a ``trajectory_msgs/JointTrajectory`` and, for an action, its goal message."""
    points = tuple(
        TrajectoryPoint(
            _seconds(p.time_from_start),
            np.asarray(p.positions, dtype=np.float64),
            _array(p.velocities),
            _array(p.accelerations),
        )
        for p in trajectory.points
    )

    def tolerances(msgs: Any) -> tuple[JointTolerance, ...]:
        return tuple(JointTolerance(t.name, t.position, t.velocity, t.acceleration) for t in msgs)

    return TrajectoryGoal(
        joint_names=tuple(trajectory.joint_names),
        points=points,
        start_time=conv.time_to_ns(trajectory.header.stamp) * 1e-9,
        path_tolerance=() if goal is None else tolerances(goal.path_tolerance),
        goal_tolerance=() if goal is None else tolerances(goal.goal_tolerance),
        goal_time_tolerance=0.0 if goal is None else _seconds(goal.goal_time_tolerance),
    )


class GripperMessages:
    """The two gripper actions' goal, feedback and result layouts over one gripper core.

    ``ParallelGripperCommand`` carries a ``sensor_msgs/JointState``: parallel_gripper_action_controller
    rejects a goal without exactly one position and reports the joint's position and effort as ``state``.
    """

    def __init__(self, action_type: Any, joint: str) -> None:
        self.type = action_type
        self.parallel = action_type.__name__ == "ParallelGripperCommand"
        self._joint = joint

    def command(self, goal: Any) -> tuple[float, float]:
        """The goal's (position, max effort).

        Raises:
            ValueError: not one position (parallel), or not finite; the message says which.
        """
        command = goal.command
        if self.parallel:
            if len(command.position) != 1:
                raise ValueError(f"expects 1 position value, got {len(command.position)}")
            position = float(command.position[0])
            effort = float(command.effort[0]) if len(command.effort) else 0.0
        else:
            position, effort = command.position, command.max_effort
        if not (math.isfinite(position) and math.isfinite(effort)):
            raise ValueError(f"not finite ({position}, {effort})")
        return position, effort

    def fill(self, msg: Any, reading: GripperReading) -> Any:
        """Put ``reading`` into a feedback or result message; returns it."""
        if self.parallel:
            msg.state.name = [self._joint]
            msg.state.position = [reading.position]
            msg.state.effort = [reading.effort]
        else:
            msg.position, msg.effort = reading.position, reading.effort
        return msg


def _point(positions: np.ndarray, velocities: np.ndarray, accelerations: np.ndarray | None = None) -> Any:
    point = JointTrajectoryPoint()
    point.positions = positions.tolist()
    point.velocities = velocities.tolist()
    if accelerations is not None:
        point.accelerations = accelerations.tolist()
    return point


class ControllerServers:
    """The trajectory and gripper endpoints of ``node`` over ``controllers``; see the module docstring."""

    def __init__(
        self,
        node: Node,
        iface: Interface,
        controllers: ArmControllers,
        on_streamed: Callable[[], None] | None = None,
    ) -> None:
        """``on_streamed`` is called for each trajectory taken from the topic (a lockstep sim counts them)."""
        self._node = node
        self._controllers = controllers
        self._on_streamed = on_streamed
        self._log = node.get_logger()
        group = ReentrantCallbackGroup()  # goals wait for their end while other goals and cancels arrive
        fjt = iface.action_spec("follow_joint_trajectory")
        self._fjt_type = interface_class(fjt.type)
        self._servers = [
            ActionServer(
                node,
                self._fjt_type,
                fjt.name,
                execute_callback=self._execute_trajectory,
                goal_callback=self._check_trajectory,
                cancel_callback=lambda _request: CancelResponse.ACCEPT,
                callback_group=group,
            )
        ]
        if controllers.has_gripper:
            grip = iface.action_spec("gripper_command")
            assert controllers.gripper_joint is not None
            self._grip = GripperMessages(interface_class(grip.type), controllers.gripper_joint)
            self._servers.append(
                ActionServer(
                    node,
                    self._grip.type,
                    grip.name,
                    execute_callback=self._execute_gripper,
                    goal_callback=self._check_gripper,
                    cancel_callback=lambda _request: CancelResponse.ACCEPT,
                    callback_group=group,
                )
            )
        subscribe_topics(node, iface, (("joint_trajectory", self._on_trajectory),), group)
        self._state_pub = interface_publisher(node, iface, "controller_state")
        self._state_type = interface_class(iface.topic_spec("controller_state").type)

    # ------------------------------------------------------------------------------------ trajectory

    def _check_trajectory(self, request: Any) -> GoalResponse:
        try:
            self._controllers.check_trajectory(trajectory_goal(request.trajectory, request))
        except GoalError as err:
            self._log.warning(f"rejected a follow_joint_trajectory goal ({err.code.value}): {err}")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _on_trajectory(self, msg: Any) -> None:
        """A trajectory on the topic replaces the running one, as an action goal would, with no result."""
        try:
            self._controllers.submit_trajectory(trajectory_goal(msg), result=False)
        except GoalError as err:
            self._log.warning(f"ignored a joint_trajectory message ({err.code.value}): {err}")
        if self._on_streamed is not None:  # a refused message is an answer too: lockstep must not wait on it
            self._on_streamed()

    def _execute_trajectory(self, handle: ServerGoalHandle) -> Any:
        result = self._fjt_type.Result()
        try:
            goal_id = self._controllers.submit_trajectory(
                trajectory_goal(handle.request.trajectory, handle.request)
            )
        except GoalError as err:  # valid at the goal response, stale by now
            result.error_code, result.error_string = err.code.value, str(err)
            handle.abort()
            return result
        end = self._wait(handle, goal_id, self._trajectory_feedback)
        if end is None:
            result.error_string = "the node is shutting down"
            handle.abort()
            return result
        assert isinstance(end, GoalEnd)
        result.error_code, result.error_string = end.code.value, end.message
        _finish(handle, end.status)
        return result

    def _trajectory_feedback(self, handle: ServerGoalHandle) -> None:
        state = self._controllers.state
        if state is None:
            return
        feedback = self._fjt_type.Feedback()
        feedback.header.stamp = conv.time_msg(round(state.time * 1e9))
        feedback.joint_names = list(self._controllers.arm_joints)
        feedback.desired = _point(
            state.desired.positions, state.desired.velocities, state.desired.accelerations
        )
        feedback.actual = _point(state.actual_positions, state.actual_velocities)
        feedback.error = _point(state.position_error, state.velocity_error)
        handle.publish_feedback(feedback)

    def publish_state(self, state: ControllerState, stamp: Any) -> None:
        """Publish the controller state (reference, feedback, error and output) with ``stamp``."""
        msg = self._state_type()
        msg.header.stamp = stamp
        msg.joint_names = list(self._controllers.arm_joints)
        desired = state.desired
        msg.reference = _point(desired.positions, desired.velocities, desired.accelerations)
        msg.feedback = _point(state.actual_positions, state.actual_velocities)
        msg.error = _point(state.position_error, state.velocity_error)
        msg.output = _point(desired.positions, desired.velocities)  # position-commanded: the reference
        self._state_pub.publish(msg)

    # --------------------------------------------------------------------------------------- gripper

    def _check_gripper(self, request: Any) -> GoalResponse:
        try:
            self._grip.command(request)
        except ValueError as err:
            self._log.warning(f"rejected a gripper goal: {err}")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _execute_gripper(self, handle: ServerGoalHandle) -> Any:
        goal_id = self._controllers.submit_gripper(*self._grip.command(handle.request))
        end = self._wait(handle, goal_id, self._gripper_feedback)
        result = self._grip.type.Result()
        if end is None:
            handle.abort()
            return result
        assert isinstance(end, GripperEnd)
        reading = end.result
        if math.isnan(reading.position) and self._controllers.gripper_reading is not None:
            now = self._controllers.gripper_reading  # ended before it ran: the gripper as it is
            reading = GripperReading(now.position, now.effort, reading.stalled, reading.reached_goal)
        self._grip.fill(result, reading)
        result.stalled, result.reached_goal = reading.stalled, reading.reached_goal
        _finish(handle, end.status)
        return result

    def _gripper_feedback(self, handle: ServerGoalHandle) -> None:
        reading = self._controllers.gripper_reading
        if reading is not None:
            handle.publish_feedback(self._grip.fill(self._grip.type.Feedback(), reading))

    # ---------------------------------------------------------------------------------------- common

    def _wait(self, handle: ServerGoalHandle, goal_id: int, feedback: Any) -> GoalEnd | GripperEnd | None:
        """Wait for goal ``goal_id``'s end, sending feedback and passing on a cancel request.

        The goal runs as long as the sim's time says (a paused or lockstep sim holds it); each wait is one
        feedback period, and the node's shutdown ends it (None).
        """
        canceling = False
        while self._node.context.ok():
            if handle.is_cancel_requested and not canceling:
                self._controllers.cancel(goal_id)
                canceling = True
            end = self._controllers.wait_end(goal_id, FEEDBACK_PERIOD_S)
            if end is not None:
                return end
            feedback(handle)
        return None


def _finish(handle: ServerGoalHandle, status: GoalStatus) -> None:
    """Put the goal in its terminal state; a preempted goal is canceled without a client's request.

    rclcpp's ``canceled()`` moves an executing goal through CANCELING itself; rclpy's needs the event.
    """
    if status is GoalStatus.SUCCEEDED:
        handle.succeed()
    elif status is GoalStatus.ABORTED:
        handle.abort()
    else:
        if not handle.is_cancel_requested:
            handle._update_state(GoalEvent.CANCEL_GOAL)
        handle.canceled()
