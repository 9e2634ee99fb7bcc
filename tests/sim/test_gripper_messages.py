"""The two gripper actions' layouts over the one gripper core, as their ros2_controllers serve them."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed; run `make setup`")
pytest.importorskip("control_msgs", reason="control_msgs is not built; run `make setup`")

from control_msgs.action import GripperCommand, ParallelGripperCommand  # noqa: E402
from r2s2r_sim.controllers.gripper import GripperReading  # noqa: E402
from r2s2r_sim.ros.controller_io import GripperMessages  # noqa: E402


def test_a_gripper_command_goal_gives_its_position_and_effort() -> None:
    msgs = GripperMessages(GripperCommand, "finger_joint")
    goal = GripperCommand.Goal()
    goal.command.position, goal.command.max_effort = 0.03, 20.0
    assert msgs.command(goal) == (0.03, 20.0)
    result = msgs.fill(GripperCommand.Result(), GripperReading(0.029, 4.0))
    assert (result.position, result.effort) == (0.029, 4.0)


def test_a_parallel_goal_needs_exactly_one_position_and_reports_the_joint_state() -> None:
    msgs = GripperMessages(ParallelGripperCommand, "finger_joint")
    goal = ParallelGripperCommand.Goal()
    goal.command.position = [0.02]
    assert msgs.command(goal) == (0.02, 0.0)  # no effort given: the controller's own limit
    goal.command.effort = [15.0]
    assert msgs.command(goal) == (0.02, 15.0)
    goal.command.position = [0.02, 0.02]
    with pytest.raises(ValueError, match="expects 1 position value, got 2"):
        msgs.command(goal)
    goal.command.position = [math.nan]
    with pytest.raises(ValueError, match="not finite"):
        msgs.command(goal)
    feedback = msgs.fill(ParallelGripperCommand.Feedback(), GripperReading(0.018, 3.5))
    assert list(feedback.state.name) == ["finger_joint"]
    assert list(feedback.state.position) == [0.018] and list(feedback.state.effort) == [3.5]
