"""The policy node's command output, through the path its interface profile names (``command``).

``forward``: Float64MultiArray on ``arm_command`` and ``gripper_command`` (forward_command_controller).
``trajectory``: a one-point JointTrajectory on ``joint_trajectory`` each control period and a GripperCommand
(or ParallelGripperCommand, as the profile's action type says) goal on the ``gripper_command`` action when
the gripper target changes
(:class:`r2s2r_eval.episodes.command_plan.TrajectoryCommandPlan` decides what; this module only sends it).
"""

from __future__ import annotations

from typing import Any, Protocol

from builtin_interfaces.msg import Duration
from r2s2r_sim.interface import CommandPath, Interface
from r2s2r_sim.ros.qos import interface_class, qos_profile
from rclpy.action import ActionClient
from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from r2s2r_eval.episodes.command_plan import TrajectoryCommandPlan
from r2s2r_eval.nodes.conversions import action_to_messages
from r2s2r_eval.policy import Action

__all__ = ["CommandSender", "ForwardSender", "TrajectorySender", "command_sender"]


class CommandSender(Protocol):
    """Sends one action's arm and gripper commands."""

    def send(self, action: Action, *, first: bool) -> None:
        """Send ``action``, the policy's or the held command; ``first``: the episode's first action."""


def _publisher(node: Node, iface: Interface, key: str) -> Any:
    spec = iface.topic_spec(key)
    return node.create_publisher(interface_class(spec.type), iface.topic(key), qos_profile(spec.qos))


class ForwardSender:
    """The forward command topics: both commands every time."""

    def __init__(self, node: Node, iface: Interface) -> None:
        self._arm_pub = _publisher(node, iface, "arm_command")
        self._grip_pub = _publisher(node, iface, "gripper_command")

    def send(self, action: Action, *, first: bool) -> None:
        """Publish the arm and gripper command messages."""
        arm, grip = action_to_messages(action)
        self._arm_pub.publish(arm)
        self._grip_pub.publish(grip)


class TrajectorySender:
    """The trajectory controller's topic and the gripper action; see the module docstring."""

    def __init__(self, node: Node, iface: Interface, plan: TrajectoryCommandPlan, gripper_joint: str) -> None:
        self._plan = plan
        self._gripper_joint = gripper_joint
        self._log = node.get_logger()
        self._traj_pub = _publisher(node, iface, "joint_trajectory")
        spec = iface.action_spec("gripper_command")
        self._grip_type = interface_class(spec.type)
        self._grip_name = spec.name
        self._grip_client = ActionClient(node, self._grip_type, spec.name)
        self._warned = False

    def send(self, action: Action, *, first: bool) -> None:
        """Stream the arm point; send a gripper goal if the target changed (and the server is there)."""
        point = self._plan.arm_point(action)
        msg = JointTrajectory()  # header stamp zero: the controller starts it on receipt
        msg.joint_names = list(point.joint_names)
        sec = int(point.time_from_start)
        nanosec = round((point.time_from_start - sec) * 1e9)
        msg.points = [
            JointTrajectoryPoint(
                positions=list(point.positions), time_from_start=Duration(sec=sec, nanosec=nanosec)
            )
        ]
        self._traj_pub.publish(msg)
        goal = self._plan.gripper_goal(action, first=first)
        if goal is None:
            return
        if not self._grip_client.server_is_ready():
            # Not a wait: the policy's period is the deadline; the next changed target tries again.
            if not self._warned:
                self._log.warning(f"gripper action {self._grip_name} has no server yet: goal not sent")
                self._warned = True
            self._plan.forget_gripper()
            return
        request = self._grip_type.Goal()
        if self._grip_type.__name__ == "ParallelGripperCommand":  # a sensor_msgs/JointState command
            request.command.name = [self._gripper_joint]
            request.command.position = [goal.position]
            request.command.effort = [goal.max_effort]
        else:
            request.command.position = goal.position
            request.command.max_effort = goal.max_effort
        self._grip_client.send_goal_async(request).add_done_callback(self._on_goal_response)

    def _on_goal_response(self, future: Any) -> None:
        handle = future.result()
        if handle is not None and not handle.accepted:
            self._log.warning(f"gripper action {self._grip_name} rejected a goal")


def command_sender(
    node: Node,
    iface: Interface,
    *,
    arm_joints: tuple[str, ...],
    period: float,
    gripper_range: tuple[float, float],
    gripper_max_effort: float,
    gripper_joint: str = "",
) -> CommandSender:
    """The sender for ``iface.command``: forward topics, or the trajectory topic and gripper action.

    ``gripper_joint`` names the joint a ParallelGripperCommand goal commands.
    """
    if iface.command is CommandPath.TRAJECTORY:
        plan = TrajectoryCommandPlan(
            arm_joints=arm_joints, period=period, gripper_range=gripper_range, max_effort=gripper_max_effort
        )
        return TrajectorySender(node, iface, plan, gripper_joint)
    return ForwardSender(node, iface)
