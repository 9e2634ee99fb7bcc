"""Standard ROS consumers against the running sim node, written the way their authors write them.

A node that subscribes with ``create_subscription(Image, topic, cb, 10)`` (RViz's image display, image_view)
must get frames on realsense2_camera's Jazzy names; RViz's RobotModel and TF displays must get the latched
``/robot_description`` and a transform for every link of it, which must be where MuJoCo has the bodies.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed; run `make setup`")
urdf = pytest.importorskip("urdf_parser_py.urdf", reason="urdf-parser-py is not installed; run `make setup`")

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from r2s2r_eval.nodes.conversions import TfTree  # noqa: E402
from r2s2r_sim.interface import load_interface  # noqa: E402
from r2s2r_sim.ros import conversions as conv  # noqa: E402
from r2s2r_sim.world.sim_world import SimWorld  # noqa: E402
from r2s2r_sim.worlds import world_path  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from ros_probe import RosProbe, open_probe, wait_for  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402
from transforms3d import affines, quaternions  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PARAMS = REPO / "config" / "sim_node.yaml"
STARTUP_S = 90.0


class Consumers(RosProbe):
    """Subscriptions as third-party tools make them (plain depth-10 defaults; RViz's latched description)."""

    def __init__(self, domain_id: int) -> None:
        super().__init__(domain_id, "driver_conventions_probe", load_interface())
        self.got: dict[str, list[Any]] = {}

    def plain(self, msg_type: Any, topic: str, qos: Any = 10) -> str:
        self.got[topic] = []

        def keep(msg: Any, topic: str = topic) -> None:
            with self.lock:
                bucket = self.got[topic]
                bucket.append(msg)
                if len(bucket) > 400:
                    del bucket[:200]

        self.node.create_subscription(msg_type, topic, keep, qos)
        return topic

    def all(self, topic: str) -> list[Any]:
        with self.lock:
            return list(self.got[topic])


@pytest.fixture
def consumers(ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    yield from open_probe(Consumers, ros_env, monkeypatch)


def _drain(proc: subprocess.Popen[str]) -> list[str]:
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        lines.extend(line.rstrip() for line in proc.stdout)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _matrix(pos: np.ndarray, quat_wxyz: np.ndarray) -> np.ndarray:
    return affines.compose(pos, quaternions.quat2mat(quat_wxyz), np.ones(3))


def test_default_qos_image_subscriber_and_rviz_get_what_the_hardware_gives(
    processes: Any, consumers: Consumers
) -> None:
    sim = processes.start(["sim_node", "--ros-args", "--params-file", str(PARAMS), "-p", "real_time:=true"])
    log = _drain(sim)
    color = consumers.plain(Image, "/camera/camera/color/image_raw")
    depth = consumers.plain(Image, "/camera/camera/aligned_depth_to_color/image_raw")
    info = consumers.plain(CameraInfo, "/camera/camera/color/camera_info")
    latched = QoSProfile(
        depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
    )
    description = consumers.plain(String, "/robot_description", latched)
    static = consumers.plain(TFMessage, "/tf_static", latched)
    tf = consumers.plain(TFMessage, "/tf", 100)
    js = consumers.plain(JointState, "/joint_states")
    diagnostics = consumers.plain(DiagnosticArray, "/diagnostics")
    wait_for(
        lambda: (
            all(len(consumers.all(t)) >= 3 for t in (color, depth, info, tf, js, diagnostics))
            and consumers.all(description)
            and consumers.all(static)
        ),
        STARTUP_S,
        "frames, the robot description and transforms:\n" + "\n".join(log[-30:]),
    )

    # Images: realsense2_camera's names, encodings and the colour optical frame, on a plain subscriber.
    rgb, dep = consumers.all(color)[-1], consumers.all(depth)[-1]
    assert (rgb.encoding, rgb.width, rgb.height) == ("rgb8", 640, 480)
    assert (dep.encoding, dep.width, dep.height) == ("16UC1", 640, 480)
    assert rgb.header.frame_id == dep.header.frame_id == consumers.all(info)[-1].header.frame_id
    assert rgb.header.frame_id == "camera_color_optical_frame"
    assert conv.image_to_numpy(rgb).std() > 1.0, "a rendered scene, not a blank frame"
    pubs = consumers.node.get_publishers_info_by_topic(color)
    assert [p.qos_profile.reliability for p in pubs] == [ReliabilityPolicy.RELIABLE]

    # The robot description parses, and every link has a transform, from /tf_static or /tf.
    robot = urdf.URDF.from_xml_string(consumers.all(description)[-1].data)
    tree = TfTree()
    for msg in consumers.all(static):
        tree.add(msg)
    fixed = {t.child_frame_id for m in consumers.all(static) for t in m.transforms}
    moving = {t.child_frame_id for m in consumers.all(tf) for t in m.transforms}
    links = {link.name for link in robot.links}
    missing = links - {robot.get_root()} - fixed - moving
    assert not missing, f"links without a transform: {missing}"
    assert {
        "camera_link",
        "camera_color_frame",
        "camera_color_optical_frame",
        "camera_depth_frame",
        "camera_depth_optical_frame",
        "base_link",
        "ee_link",
    } <= fixed
    assert {j.child for j in robot.joints if j.type != "fixed"} == moving

    # The transforms put every link where MuJoCo has its body: take a /tf message and the joint state of
    # the same stamp, pose the world at that state and compare world poses through the TF chain.
    states = {conv.time_to_ns(m.header.stamp): m for m in consumers.all(js)}
    sample = next(
        m for m in reversed(consumers.all(tf)) if conv.time_to_ns(m.transforms[0].header.stamp) in states
    )
    state = states[conv.time_to_ns(sample.transforms[0].header.stamp)]
    tree.add(sample)
    world = SimWorld(world_path("tabletop-pick-v1"))
    model, data = world.model, world.data
    for name, position in zip(state.name, state.position, strict=True):
        data.qpos[model.joint(name).qposadr[0]] = position
    mujoco.mj_kinematics(model, data)
    for link in robot.links:
        if link.name == "ee_link":
            site = model.site("ee_site").id
            want = affines.compose(data.site_xpos[site], data.site_xmat[site].reshape(3, 3), np.ones(3))
        else:
            body = model.body(link.name).id
            want = _matrix(data.xpos[body], data.xquat[body])
        np.testing.assert_allclose(tree.lookup("world", link.name), want, atol=1e-5, err_msg=link.name)
    # And the camera: its optical frame through the realsense2_camera tree is MuJoCo's camera.
    pos, quat = world.camera_pose("camera")
    np.testing.assert_allclose(tree.lookup("world", rgb.header.frame_id), _matrix(pos, quat), atol=1e-6)
    np.testing.assert_allclose(
        tree.lookup("camera_color_optical_frame", "camera_depth_optical_frame"), np.eye(4), atol=1e-9
    )

    # /diagnostics, about once a second: the sim's real-time factor, camera rate, drops, lockstep, episodes.
    (status,) = consumers.all(diagnostics)[-1].status
    values = {v.key: v.value for v in status.values}
    assert status.name == "sim_node: simulation" and status.hardware_id == "tabletop-pick-v1"
    assert status.level in (DiagnosticStatus.OK, DiagnosticStatus.WARN), status.message
    assert float(values["real_time_factor"]) > 0 and float(values["camera_rate_hz"]) > 0, values
    assert {"frames_dropped", "lockstep_wait_fraction", "episodes"} <= set(values)
    sim.send_signal(2)
    assert sim.wait(timeout=60) == 0, "\n".join(log[-30:])


def test_sensor_data_profile_serves_best_effort_images_under_the_camera_name(
    processes: Any, consumers: Consumers
) -> None:
    sim = processes.start(
        [
            "sim_node",
            "--ros-args",
            "--params-file",
            str(PARAMS),
            "-p",
            "real_time:=true",
            "-p",
            "interface:=sensor_data",
        ]
    )
    log = _drain(sim)
    best_effort = QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT)
    color = consumers.plain(Image, "/camera/color/image_raw", best_effort)
    wait_for(
        lambda: consumers.all(color),
        STARTUP_S,
        "a frame on /camera/color/image_raw:\n" + "\n".join(log[-30:]),
    )
    pubs = consumers.node.get_publishers_info_by_topic(color)
    assert [p.qos_profile.reliability for p in pubs] == [ReliabilityPolicy.BEST_EFFORT]
    assert not consumers.node.get_publishers_info_by_topic("/camera/camera/color/image_raw")
    sim.send_signal(2)
    assert sim.wait(timeout=30) == 0


def test_unknown_interface_stops_the_node_naming_the_parameter(processes: Any) -> None:
    sim = processes.start(["sim_node", "--ros-args", "-p", "interface:=nope"])
    out = sim.communicate(timeout=120)[0]
    assert sim.returncode == 1, out
    assert "parameter interface: interface 'nope': no such profile" in out, out


def test_evaluator_reports_its_progress_on_diagnostics(processes: Any, consumers: Consumers) -> None:
    # No sim runs: the evaluator waits for the reset service, and says so on /diagnostics meanwhile.
    params = REPO / "config" / "evaluator_node.yaml"
    proc = processes.start(
        [
            "evaluator_node",
            "--ros-args",
            "--params-file",
            str(params),
            "-p",
            "episodes:=4",
            "-p",
            "service_timeout_s:=120.0",
            "-p",
            "world:=my-world",
        ]
    )
    log = _drain(proc)
    diagnostics = consumers.plain(DiagnosticArray, "/diagnostics")
    wait_for(
        lambda: consumers.all(diagnostics), STARTUP_S, "/diagnostics from the evaluator:\n" + "\n".join(log)
    )
    (status,) = consumers.all(diagnostics)[-1].status
    values = {v.key: v.value for v in status.values}
    assert (status.name, status.hardware_id, status.level) == (
        "evaluator_node: evaluation",
        "my-world",
        DiagnosticStatus.OK,
    )
    assert values == {
        "episodes_planned": "4",
        "episodes_with_outcome": "0",
        "episodes_succeeded": "0",
        "episodes_failed": "0",
        "current_seed": "none",
    }
    assert status.message == "0/4 episodes done, between episodes"


def test_a_world_with_a_lens_and_noisy_joints_is_served_as_its_hardware_reports(
    processes: Any, consumers: Consumers, tmp_path: Path
) -> None:
    """A world that declares its camera's lens and its joint readings' noise (as real2sim writes them):
    camera_info carries that D, and /joint_states of the arm holding still scatter with that std."""
    import shutil

    import yaml

    folder = tmp_path / "world"
    shutil.copytree(world_path("tabletop-pick-v1"), folder)
    raw = yaml.safe_load((folder / "world.yaml").read_text())
    d = [-0.058, 0.071, 0.0006, -0.0009, -0.023]
    raw["cameras"][0]["distortion"] = {
        "model": "plumb_bob",
        **dict(zip(("k1", "k2", "p1", "p2", "k3"), d, strict=True)),
    }
    raw["robot"]["joint_state_noise"] = {"position_std": 0.002, "velocity_std": 0.0}
    (folder / "world.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    sim = processes.start(["sim_node", "--ros-args", "--params-file", str(PARAMS), "-p", f"world:={folder}"])
    log = _drain(sim)
    info = consumers.plain(CameraInfo, "/camera/camera/color/camera_info")
    js = consumers.plain(JointState, "/joint_states", 100)
    wait_for(
        lambda: consumers.all(info) and len(consumers.all(js)) >= 200,
        STARTUP_S,
        "camera_info and 200 joint states:\n" + "\n".join(log[-30:]),
    )
    assert consumers.all(info)[-1].distortion_model == "plumb_bob"
    np.testing.assert_allclose(consumers.all(info)[-1].d, d)
    positions = np.array([m.position for m in consumers.all(js)[-200:]])
    # The arm holds its home pose (it moves far less than 0.2 mm); the readings scatter by the noise.
    assert np.allclose(np.std(positions, axis=0), 0.002, rtol=0.25), np.std(positions, axis=0)
    sim.send_signal(2)
    assert sim.wait(timeout=60) == 0, "\n".join(log[-30:])
