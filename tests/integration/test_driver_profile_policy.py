"""Driver profiles end to end: the reference pick succeeds in sim through the trajectory controller's topic
and the gripper action under the driver's names, sending nothing on the forward topics; the emulated
hardware serves those names too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed; run `make setup`")
pytest.importorskip("control_msgs", reason="control_msgs is not built; run `make setup`")

from action_msgs.msg import GoalStatusArray  # noqa: E402
from r2s2r_eval.episodes.results import ResultsStore  # noqa: E402
from r2s2r_sim.interface import load_interface  # noqa: E402
from r2s2r_sim.ros.qos import interface_class  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from ros_probe import RosProbe, open_probe  # noqa: E402

pytestmark = pytest.mark.integration

EPISODE_S = 540.0  # a bound for a loaded 2-core machine; the episode takes about 10 s of sim time
SUCCEEDED, ABORTED = 4, 6  # action_msgs/GoalStatus: a grasp that stalls on the object is aborted


class CommandProbe(RosProbe):
    """Records the forward and trajectory command topics and the gripper action's goal statuses."""

    def __init__(self, domain_id: int, profile: str) -> None:
        super().__init__(domain_id, "command_probe", load_interface(profile))
        self.forward = [self.record("arm_command"), self.record("gripper_command")]
        self.trajectory = self.record("joint_trajectory")
        self.gripper_action = self.iface.action_spec("gripper_command").name
        self.statuses: dict[bytes, int] = {}
        # rclpy's action status publisher: reliable, transient local, keep last 1.
        qos = QoSProfile(
            depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        self.node.create_subscription(
            GoalStatusArray, f"{self.gripper_action}/_action/status", self._on_status, qos
        )

    def _on_status(self, msg: Any) -> None:
        with self.lock:
            for status in msg.status_list:
                self.statuses[bytes(status.goal_info.goal_id.uuid)] = int(status.status)


# The UR profile, and the one whose gripper action is a ParallelGripperCommand (sent and served as such).
@pytest.fixture(params=["ur_robot_driver", "kortex_parallel_gripper"])
def probe(request: Any, ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    yield from open_probe(lambda domain: CommandProbe(domain, request.param), ros_env, monkeypatch)


@pytest.mark.timeout(int(EPISODE_S) + 60)
def test_reference_policy_succeeds_through_the_trajectory_path(  # type: ignore[no-untyped-def]
    processes, probe: CommandProbe, tmp_path: Path
) -> None:
    profile = f"interface:={probe.iface.profile}"
    db = tmp_path / "results.sqlite"
    sim = processes.start(
        ["sim_node", "--ros-args", "-p", profile, "-p", "lockstep:=true", "-p", "control_rate_hz:=10.0"]
    )
    policy = processes.start(
        ["policy_node", "--ros-args", "-p", profile, "-p", "use_sim_time:=true", "-p", "autostart:=false"]
    )
    evaluator = processes.start(
        [
            "evaluator_node",
            "--ros-args",
            "-p",
            profile,
            "-p",
            "episodes:=1",
            "-p",
            "seed0:=1",
            "-p",
            f"results:={db}",
            "-p",
            f"episode_timeout_s:={EPISODE_S}",
            "-p",
            "service_timeout_s:=60.0",
        ]
    )
    try:
        out, _ = evaluator.communicate(timeout=EPISODE_S)
    except Exception:
        evaluator.kill()
        raise
    assert evaluator.returncode == 0, out
    assert "evaluator: 1 episodes, 1 succeeded" in out, out
    assert sim.poll() is None and policy.poll() is None
    with ResultsStore(db) as store:
        rows = list(store.rows())
    assert [(r.success, r.reason, r.policy) for r in rows] == [(True, "success", "reference")]

    for name in probe.forward:
        assert probe.msgs(name) == [], f"{name} received forward commands on a trajectory profile"
    points = [msg for _, msg in probe.msgs(probe.trajectory)]
    assert len(points) > 10, f"too few trajectory messages on {probe.trajectory}: {len(points)}"
    assert all(len(m.points) == 1 and m.points[0].time_from_start.nanosec == 100_000_000 for m in points)
    with probe.lock:
        ended = [s for s in probe.statuses.values() if s in (SUCCEEDED, ABORTED)]
    # At least the opening at the start and the closing on the object went to the gripper action.
    assert len(ended) >= 2, f"gripper goals on {probe.gripper_action}: {probe.statuses}"


DRIVER_PROFILES = ["franka_ros2", "kortex", "kortex_parallel_gripper", "ur_robot_driver", "xarm_ros2"]


@pytest.mark.parametrize("probe", DRIVER_PROFILES, indirect=True)
def test_emulated_hardware_serves_a_driver_profiles_controllers(processes: Any, probe: CommandProbe) -> None:
    """The emulated arm's trajectory and gripper actions answer under the driver's names."""
    params = Path(__file__).resolve().parents[2] / "config" / "emulated_hardware_node.yaml"
    proc = processes.start(
        [
            "emulated_hardware_node",
            "--ros-args",
            "--params-file",
            str(params),
            "-p",
            f"interface:={probe.iface.profile}",
        ]
    )
    for key in ("follow_joint_trajectory", "gripper_command"):
        spec = probe.iface.action_spec(key)
        name = spec.name
        client = ActionClient(probe.node, interface_class(spec.type), name)
        assert client.wait_for_server(timeout_sec=60.0), f"no {name} action server on the emulated hardware"
    assert proc.poll() is None
