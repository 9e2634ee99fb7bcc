"""The sim node's trajectory and gripper controllers over DDS, as ros2_control's serve them on a real arm."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed; run `make setup`")
pytest.importorskip("control_msgs", reason="control_msgs is not built; run `make setup`")

from builtin_interfaces.msg import Duration  # noqa: E402
from control_msgs.action import FollowJointTrajectory, GripperCommand  # noqa: E402
from control_msgs.msg import JointTolerance  # noqa: E402
from r2s2r_sim.interface import load_interface  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from ros_probe import RosProbe, open_probe, wait_for  # noqa: E402
from std_srvs.srv import SetBool  # noqa: E402
from trajectory_msgs.msg import JointTrajectoryPoint  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PARAMS = REPO / "config" / "sim_node.yaml"
IFACE = load_interface()
STARTUP_S = 60.0
GOAL_S = 60.0  # a bound for a loaded machine: the trajectories below take 1-3 s of sim time
SUCCEEDED, CANCELED, ABORTED = 4, 5, 6  # action_msgs/GoalStatus
Result = FollowJointTrajectory.Result


class Probe(RosProbe):
    """An action client of the sim node's controllers, recording feedback and the controller state."""

    def __init__(self, domain_id: int) -> None:
        super().__init__(domain_id, "controller_probe", IFACE)
        fjt = IFACE.action_spec("follow_joint_trajectory")
        self.trajectory = ActionClient(self.node, FollowJointTrajectory, fjt.name)
        self.gripper = ActionClient(self.node, GripperCommand, IFACE.action_spec("gripper_command").name)
        self.state = self.record("controller_state")
        self.feedback: list[Any] = []

    def current(self) -> tuple[list[str], np.ndarray]:
        """The arm's joints and positions, from the controller state topic."""
        msg = wait_for(lambda: self.msgs(self.state), STARTUP_S, "the controller state")[-1][1]
        return list(msg.joint_names), np.array(msg.feedback.positions)

    def send(self, client: ActionClient, goal: Any) -> Any:
        """Send ``goal``; its goal handle once the server has answered."""
        assert client.wait_for_server(timeout_sec=STARTUP_S), "the action server did not appear"
        future = client.send_goal_async(goal, feedback_callback=self._on_feedback)
        wait_for(future.done, GOAL_S, "the goal response")
        return future.result()

    def result(self, handle: Any) -> Any:
        """The goal's result response (status and result), waiting for its end."""
        future = handle.get_result_async()
        wait_for(future.done, GOAL_S, "the goal's result")
        return future.result()

    def _on_feedback(self, msg: Any) -> None:
        with self.lock:
            self.feedback.append(msg.feedback)


@pytest.fixture
def probe(ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    yield from open_probe(Probe, ros_env, monkeypatch)


class Log:
    """The sim node's output, drained on a thread so that the node never blocks on a full pipe."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with self._lock:
                self.lines.append(line)

    def has(self, text: str) -> bool:
        with self._lock:
            return any(text in line for line in self.lines)


@pytest.fixture
def sim(processes: Any) -> Log:
    args = ["sim_node", "--ros-args", "--params-file", str(PARAMS)]
    for param in ("real_time:=true", "cameras_enabled:=false", "joint_state_rate_hz:=100.0"):
        args += ["-p", param]
    return Log(processes.start(args))


def _duration(seconds: float) -> Duration:
    return Duration(sec=int(seconds), nanosec=round((seconds % 1) * 1e9))


def trajectory_goal(
    names: list[str], targets: list[np.ndarray], times: list[float], **tolerances: Any
) -> FollowJointTrajectory.Goal:
    goal = FollowJointTrajectory.Goal()
    goal.trajectory.joint_names = names
    for target, t in zip(targets, times, strict=True):
        goal.trajectory.points.append(
            JointTrajectoryPoint(
                positions=target.tolist(), velocities=[0.0] * len(names), time_from_start=_duration(t)
            )
        )
    for field in ("path_tolerance", "goal_tolerance"):
        if field in tolerances:
            setattr(goal, field, [JointTolerance(name=n, position=tolerances[field]) for n in names])
    goal.goal_time_tolerance = _duration(tolerances.get("goal_time_tolerance", 0.0))
    return goal


def test_a_trajectory_goal_reaches_its_end_within_tolerance(sim: Log, probe: Probe) -> None:
    names, start = probe.current()
    assert len(names) == 6
    target = start + np.linspace(0.1, 0.2, len(names))
    # Joints in reverse order: the controller maps them to the robot's.
    goal = trajectory_goal(names[::-1], [target[::-1]], [1.0], goal_tolerance=0.02, goal_time_tolerance=5.0)
    handle = probe.send(probe.trajectory, goal)
    assert handle.accepted
    response = probe.result(handle)
    assert response.status == SUCCEEDED, response.result.error_string
    assert response.result.error_code == Result.SUCCESSFUL
    with probe.lock:
        feedback = list(probe.feedback)
    assert feedback, "no feedback during the goal"
    assert list(feedback[-1].joint_names) == names
    np.testing.assert_allclose(feedback[-1].desired.positions, target, atol=1e-9)
    _, reached = probe.current()
    np.testing.assert_allclose(reached, target, atol=0.02)


def test_unknown_joints_are_rejected_as_invalid_joints(sim: Log, probe: Probe) -> None:
    names, start = probe.current()
    goal = trajectory_goal([*names[:-1], "no_such_joint"], [start], [1.0])
    handle = probe.send(probe.trajectory, goal)
    assert not handle.accepted
    # joint_trajectory_controller rejects at the goal response, which carries no code: the node logs it.
    line = "rejected a follow_joint_trajectory goal (-2): INVALID_JOINTS"
    wait_for(lambda: sim.has(line), STARTUP_S, "the rejection's log line")


def test_a_path_tolerance_violation_aborts_the_goal(sim: Log, probe: Probe) -> None:
    names, start = probe.current()
    # 0.3 rad in 0.3 s with a path tolerance of 0.1 mrad: a position servo lags more than that.
    goal = trajectory_goal(names, [start + 0.3], [0.3], path_tolerance=1e-4)
    handle = probe.send(probe.trajectory, goal)
    assert handle.accepted
    response = probe.result(handle)
    assert response.status == ABORTED
    assert response.result.error_code == Result.PATH_TOLERANCE_VIOLATED, response.result.error_string


def test_a_new_goal_preempts_the_running_one(sim: Log, probe: Probe) -> None:
    names, start = probe.current()
    slow = probe.send(probe.trajectory, trajectory_goal(names, [start + 0.3], [20.0]))
    assert slow.accepted
    wait_for(lambda: probe.feedback, GOAL_S, "feedback of the first goal")
    quick = probe.send(probe.trajectory, trajectory_goal(names, [start], [0.5], goal_time_tolerance=5.0))
    assert quick.accepted
    first = probe.result(slow)
    assert first.status == CANCELED
    assert first.result.error_code == Result.INVALID_GOAL
    assert first.result.error_string == "Current goal cancelled due to new incoming action."
    second = probe.result(quick)
    assert second.status == SUCCEEDED, second.result.error_string


def test_a_gripper_goal_reaches_its_position(sim: Log, probe: Probe) -> None:
    goal = GripperCommand.Goal()
    goal.command.position, goal.command.max_effort = 0.02, 10.0  # each finger 2 cm open
    handle = probe.send(probe.gripper, goal)
    assert handle.accepted
    response = probe.result(handle)
    assert response.status == SUCCEEDED
    assert response.result.reached_goal and not response.result.stalled
    assert abs(response.result.position - 0.02) < 0.01


def test_the_emulated_hardware_serves_the_same_trajectory_action(processes: Any, probe: Probe) -> None:
    # The stand-in for a real arm runs the controller on the wall clock, with its profile's latency.
    params = REPO / "config" / "emulated_hardware_node.yaml"
    Log(processes.start(["emulated_hardware_node", "--ros-args", "--params-file", str(params)]))
    names, start = probe.current()
    target = start + 0.1
    handle = probe.send(probe.trajectory, trajectory_goal(names, [target], [1.0], goal_tolerance=0.03))
    assert handle.accepted
    response = probe.result(handle)
    assert response.status == SUCCEEDED, response.result.error_string
    _, reached = probe.current()
    np.testing.assert_allclose(reached, target, atol=0.03)


def test_goals_waiting_on_a_paused_sim_leave_its_services_answering(sim: Log, probe: Probe) -> None:
    # Each waiting goal holds an executor thread; the services must still get one, or the sim cannot resume.
    names, start = probe.current()
    pause = IFACE.service_spec("pause")
    assert probe.call_service(SetBool, pause.name, SetBool.Request(data=True)).success
    trajectory = probe.send(probe.trajectory, trajectory_goal(names, [start + 0.05], [0.5]))
    grip = GripperCommand.Goal()
    grip.command.position, grip.command.max_effort = 0.03, 10.0
    gripper = probe.send(probe.gripper, grip)
    assert trajectory.accepted and gripper.accepted
    assert probe.call_service(SetBool, pause.name, SetBool.Request(data=False)).success
    assert probe.result(trajectory).status == SUCCEEDED
    assert probe.result(gripper).status == SUCCEEDED
