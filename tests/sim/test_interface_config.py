"""interface.yaml loading (no rclpy) and the pure message conversions of ros_conversions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from r2s2r_sim.interface import (
    Durability,
    InterfaceError,
    Reliability,
    available_profiles,
    load_interface,
)
from r2s2r_sim.paths import config_dir

GOOD = {
    "topics": {
        "joint_states": {
            "name": "/joint_states",
            "type": "sensor_msgs/msg/JointState",
            "qos": {"reliability": "reliable", "durability": "volatile", "depth": 10},
        },
        "color_image": {
            "name": "/{camera}/color/image_raw",
            "type": "sensor_msgs/msg/Image",
            "qos": {"reliability": "best_effort", "durability": "volatile", "depth": 5},
        },
    },
    "services": {"pause": {"name": "/r2s2r/pause", "type": "std_srvs/srv/SetBool"}},
}


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "interface.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data), encoding="utf-8")
    return path


def _with(path: list[str], value: object) -> dict:
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


_DELETE = object()


def _write_own(tmp_path: Path) -> Path:
    image = {
        "name": "/camera/{camera}/color/image_raw",
        "type": "sensor_msgs/msg/Image",
        "qos": "system_default",
    }
    return _write(tmp_path, {"topics": {"color_image": image}})


def test_shipped_default_is_the_realsense2_camera_jazzy_profile(tmp_path: Path) -> None:
    iface = load_interface()
    assert iface.source == config_dir() / "interface.yaml"
    assert iface.profile == "realsense2_camera" and list(available_profiles())[0] == "realsense2_camera"
    assert iface.topic("joint_states") == "/joint_states"
    # rs_launch.py: camera_namespace "camera", camera_name the node name; align_depth.enable.
    assert iface.topic("color_image", "camera") == "/camera/camera/color/image_raw"
    assert iface.topic("color_info", "camera") == "/camera/camera/color/camera_info"
    assert iface.topic("depth_image", "camera") == "/camera/camera/aligned_depth_to_color/image_raw"
    assert iface.topic("depth_image", "wrist") == "/camera/wrist/aligned_depth_to_color/image_raw"
    # image_qos SYSTEM_DEFAULT; info_qos DEFAULT; our subscribers ask what create_subscription(.., 10) asks.
    image = iface.topic_spec("color_image")
    assert image.qos.preset == "system_default" and image.qos.reliability is Reliability.SYSTEM_DEFAULT
    assert (image.subscription_qos.reliability, image.subscription_qos.depth) == (Reliability.RELIABLE, 1)
    # Without a subscription_qos of its own, a system_default topic is subscribed with depth 10.
    assert load_interface(_write_own(tmp_path)).topic_spec("color_image").subscription_qos.depth == 10
    info = iface.topic_spec("color_info").qos
    assert (info.reliability, info.durability, info.depth) == (Reliability.RELIABLE, Durability.VOLATILE, 10)
    assert iface.topic_spec("tf_static").qos.durability is Durability.TRANSIENT_LOCAL
    assert iface.topic_spec("robot_description").qos.durability is Durability.TRANSIENT_LOCAL
    assert iface.topic("diagnostics") == "/diagnostics"
    assert iface.frame("world") == "world" and iface.frame("base") == "base_link"
    assert iface.frame("camera_link", "camera") == "camera_link"
    assert iface.frame("camera_depth_optical_frame", "camera") == "camera_depth_optical_frame"
    assert iface.service("reset_episode") == "/r2s2r/reset_episode"
    assert iface.service_spec("step").type == "std_srvs/srv/Trigger"


def test_sensor_data_profile_extends_the_default_and_overrides_only_the_camera_topics() -> None:
    base, iface = load_interface(), load_interface("sensor_data")
    assert iface.profile == "sensor_data"
    assert iface.topic("color_image", "camera") == "/camera/color/image_raw"
    assert iface.topic("depth_info", "wrist") == "/wrist/aligned_depth_to_color/camera_info"
    assert iface.topic_spec("color_image").qos.reliability is Reliability.BEST_EFFORT
    assert iface.topic_spec("color_image").subscription_qos == iface.topic_spec("color_image").qos
    assert iface.topic_spec("color_info").qos == base.topic_spec("color_info").qos  # inherited
    assert iface.frames == base.frames and set(iface.topics) == set(base.topics)


def test_user_interface_file_extends_a_shipped_profile(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "extends": "realsense2_camera",
            "frames": {"base": "arm_base"},
            "topics": {"joint_states": {"name": "/arm/joint_states"}, "color_image": {"qos": "sensor_data"}},
        },
    )
    iface = load_interface(path)
    assert iface.profile == str(path) and iface.source == path
    assert iface.topic("joint_states") == "/arm/joint_states"
    assert iface.topic_spec("joint_states").type == "sensor_msgs/msg/JointState"
    assert iface.topic("color_image", "camera") == "/camera/camera/color/image_raw"
    assert iface.topic_spec("color_image").qos.reliability is Reliability.BEST_EFFORT
    assert iface.frame("base") == "arm_base" and iface.frame("world") == "world"
    assert load_interface(str(path)).topics == iface.topics  # a str path works like a Path


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"extends": "nope", "topics": {}}, r"<top level>\.extends: no profile 'nope' in .*interface\.yaml"),
        (
            {"topics": {"a": {"name": "/a", "type": "std_msgs/msg/String", "qos": "fast"}}},
            r"topics\.a\.qos: unknown QoS preset 'fast' "
            r"\(presets: \['default', 'sensor_data', 'system_default'\]",
        ),
        ({"topics": {}, "frames": {"world": "/world"}}, r"frames\.world: must be a tf2 frame id"),
        (
            {"default": "b", "profiles": {"a": {"topics": {}}}},
            r"default: no profile 'b' \(profiles: \['a'\]\)",
        ),
        (
            {"default": "a", "profiles": {"a": {"extends": "b", "topics": {}}, "b": {"extends": "a"}}},
            r"profiles\.a\.extends: profiles extend each other in a cycle",
        ),
    ],
)
def test_bad_profiles_are_refused_naming_the_field(tmp_path: Path, data: dict, match: str) -> None:
    with pytest.raises(InterfaceError, match=match):
        load_interface(_write(tmp_path, data))


def test_unknown_profile_name_lists_the_profiles() -> None:
    with pytest.raises(
        InterfaceError,
        match=r"interface 'nope': no such profile .*\['franka_ros2', 'kortex', 'kortex_parallel_gripper', "
        r"'realsense2_camera', 'sensor_data', 'ur_robot_driver', 'xarm_ros2'\]",
    ):
        load_interface("nope")


def test_frame_lookup_errors() -> None:
    iface = load_interface()
    with pytest.raises(InterfaceError, match=r"frames\.nope: no such frame \(frames: \["):
        iface.frame("nope")
    with pytest.raises(InterfaceError, match=r"frames\.camera_link: .* needs a camera name"):
        iface.frame("camera_link")


def test_topic_lookup_errors(tmp_path: Path) -> None:
    iface = load_interface(_write(tmp_path, GOOD))
    with pytest.raises(
        InterfaceError, match=r"interface\.yaml: topics\.nope: no such topic \(topics: \['color_image'"
    ):
        iface.topic("nope")
    with pytest.raises(InterfaceError, match=r"topics\.color_image: .* needs a camera name"):
        iface.topic("color_image")
    with pytest.raises(InterfaceError, match=r"topics\.joint_states: .* has no \{camera\} placeholder"):
        iface.topic("joint_states", "camera")
    with pytest.raises(InterfaceError, match=r"services\.reset: no such service \(services: \['pause'\]\)"):
        iface.service("reset")


@pytest.mark.parametrize(
    ("path", "value", "match"),
    [
        (
            ["topics", "joint_states", "qos", "reliability"],
            "fast",
            r"topics\.joint_states\.qos\.reliability: "
            r"must be one of \['reliable', 'best_effort'\], got 'fast'",
        ),
        (
            ["topics", "joint_states", "qos", "durability"],
            "forever",
            r"topics\.joint_states\.qos\.durability",
        ),
        (
            ["topics", "joint_states", "qos", "depth"],
            0,
            r"topics\.joint_states\.qos\.depth: must be an integer >= 1",
        ),
        (["topics", "joint_states", "qos", "depth"], _DELETE, r"topics\.joint_states\.qos\.depth: required"),
        (["topics", "joint_states", "qos"], _DELETE, r"topics\.joint_states\.qos: required field is missing"),
        (
            ["topics", "joint_states", "qos", "history"],
            "all",
            r"topics\.joint_states\.qos: unknown key\(s\) \['history'\]",
        ),
        (
            ["topics", "joint_states", "type"],
            "JointState",
            r"topics\.joint_states\.type: must look like 'package/msg/Name'",
        ),
        (
            ["topics", "joint_states", "name"],
            "joint_states",
            r"topics\.joint_states\.name: must be an absolute ROS name",
        ),
        (
            ["topics", "joint_states", "name"],
            5,
            r"topics\.joint_states\.name: must be a non-empty string, got 5",
        ),
        (["topics", "joint_states"], ["a"], r"topics\.joint_states: must be a mapping, got list"),
        (
            ["services", "pause", "type"],
            "std_srvs/msg/SetBool",
            r"services\.pause\.type: must look like 'package/srv/Name'",
        ),
        (["topics"], _DELETE, r"topics: required field is missing"),
        (["extra"], 1, r"<top level>: unknown key\(s\) \['extra'\]"),
    ],
)
def test_malformed_interface_names_file_and_key(
    tmp_path: Path, path: list[str], value: object, match: str
) -> None:
    file = _write(tmp_path, _with(path, value))
    with pytest.raises(InterfaceError, match=match) as info:
        load_interface(file)
    assert str(info.value).startswith(str(file))


def test_unreadable_interface_files(tmp_path: Path) -> None:
    with pytest.raises(InterfaceError, match=r"missing\.yaml: interface file not found"):
        load_interface(tmp_path / "missing.yaml")
    with pytest.raises(InterfaceError, match=r"interface\.yaml: not valid YAML"):
        load_interface(_write(tmp_path, "topics: [unclosed"))
    with pytest.raises(InterfaceError, match=r"interface\.yaml: <top level>: must be a mapping, got list"):
        load_interface(_write(tmp_path, "- a\n- b\n"))


# ------------------------------------------------------------------------------------- conversions

conv = pytest.importorskip("r2s2r_sim.ros.conversions", reason="ROS 2 message packages are not installed")


def test_time_round_trip() -> None:
    stamp = conv.time_msg(12_345_678_901)
    assert (stamp.sec, stamp.nanosec) == (12, 345_678_901)
    assert conv.time_to_ns(stamp) == 12_345_678_901
    d = conv.duration_msg(1.5)
    assert (d.sec, d.nanosec) == (1, 500_000_000)


def test_camera_info_fields() -> None:
    k = np.array([[500.0, 0.0, 319.5], [0.0, 500.0, 239.5], [0.0, 0.0, 1.0]])
    info = conv.camera_info_msg(k, 640, 480, conv.time_msg(5), "camera_color_optical_frame")
    assert info.header.frame_id == "camera_color_optical_frame" and conv.time_to_ns(info.header.stamp) == 5
    assert (info.width, info.height, info.distortion_model) == (640, 480, "plumb_bob")
    assert list(info.d) == [0.0] * 5
    np.testing.assert_array_equal(conv.camera_info_to_k(info), k)
    np.testing.assert_array_equal(np.reshape(info.r, (3, 3)), np.eye(3))
    np.testing.assert_array_equal(np.reshape(info.p, (3, 4)), np.hstack([k, np.zeros((3, 1))]))
    with pytest.raises(ValueError, match=r"K must be a finite 3x3 matrix"):
        conv.camera_info_msg(np.eye(2), 640, 480, conv.time_msg(0), "f")


def test_images_round_trip_and_depth_in_mm() -> None:
    from r2s2r_sim.render.renderer import depth_to_uint16_mm

    rgb = np.random.default_rng(0).integers(0, 255, (4, 5, 3), dtype=np.uint8)
    msg = conv.rgb_image_msg(rgb, conv.time_msg(7), "cam")
    assert (msg.encoding, msg.width, msg.height, msg.step, msg.is_bigendian) == ("rgb8", 5, 4, 15, 0)
    np.testing.assert_array_equal(conv.image_to_numpy(msg), rgb)

    depth_m = np.array([[0.0, 1.0, 1.0004, 1.0006], [np.nan, 65.6, 0.0015, 2.5]], dtype=np.float32)
    mm = depth_to_uint16_mm(depth_m)
    np.testing.assert_array_equal(mm, [[0, 1000, 1000, 1001], [0, 65535, 2, 2500]])
    dmsg = conv.depth_image_msg(mm, conv.time_msg(7), "cam")
    assert (dmsg.encoding, dmsg.step) == ("16UC1", 8)
    np.testing.assert_array_equal(conv.image_to_numpy(dmsg), mm)
    with pytest.raises(ValueError, match=r"expected an HxW uint16 array"):
        conv.depth_image_msg(depth_m, conv.time_msg(0), "cam")
    with pytest.raises(ValueError, match=r"expected an HxWx3 uint8 array"):
        conv.rgb_image_msg(rgb[..., 0], conv.time_msg(0), "cam")
    msg.encoding = "yuv422"
    with pytest.raises(ValueError, match=r"unsupported encoding 'yuv422'"):
        conv.image_to_numpy(msg)


def test_optical_frame_is_rep103() -> None:
    from transforms3d import quaternions as tq

    # Link axes: x forward, y left, z up. Optical axes: z forward, x right, y down.
    q = conv.LINK_TO_OPTICAL_WXYZ
    np.testing.assert_allclose(tq.rotate_vector([0, 0, 1], q), [1, 0, 0], atol=1e-12)  # optical z = link x
    np.testing.assert_allclose(tq.rotate_vector([1, 0, 0], q), [0, -1, 0], atol=1e-12)  # optical x = -link y
    np.testing.assert_allclose(tq.rotate_vector([0, 1, 0], q), [0, 0, -1], atol=1e-12)  # optical y = -link z
    # A camera whose optical z looks along world +x (level): its link frame is the world frame.
    optical = tq.mat2quat(np.array([[0, 0, 1], [-1, 0, 0], [0, -1, 0]], dtype=float))
    pos, link_q = conv.camera_link_pose(np.array([1.0, 2.0, 3.0]), optical)
    np.testing.assert_allclose(pos, [1, 2, 3])
    assert abs(abs(link_q[0]) - 1.0) < 1e-12
    tf = conv.transform_msg("world", "camera_link", pos, link_q, conv.time_msg(3))
    assert (tf.header.frame_id, tf.child_frame_id) == ("world", "camera_link")
    assert (tf.transform.translation.x, tf.transform.rotation.w) == (1.0, pytest.approx(abs(link_q[0])))


def test_relative_pose() -> None:
    from transforms3d import quaternions as tq

    yaw90 = tq.axangle2quat([0, 0, 1], np.pi / 2)
    pos, quat = conv.relative_pose(np.array([1.0, 0, 0]), yaw90, np.array([1.0, 1.0, 0.5]), yaw90)
    np.testing.assert_allclose(pos, [1.0, 0.0, 0.5], atol=1e-12)
    np.testing.assert_allclose(np.abs(quat), [1, 0, 0, 0], atol=1e-12)


def test_joint_state_commands_and_outcome() -> None:
    from std_msgs.msg import Float64MultiArray, MultiArrayDimension

    js = conv.joint_state_msg(conv.time_msg(2), ["a", "b"], np.array([1.0, 2.0]), np.zeros(2), np.ones(2))
    assert list(js.name) == ["a", "b"] and list(js.position) == [1.0, 2.0] and list(js.effort) == [1.0, 1.0]
    with pytest.raises(ValueError, match=r"velocity has 1 values for 2 joint names"):
        conv.joint_state_msg(conv.time_msg(2), ["a", "b"], np.zeros(2), np.zeros(1), np.zeros(2))
    cmd = conv.command_array(Float64MultiArray(data=[0.1, float("nan")]))
    assert cmd.dtype == np.float64 and cmd.shape == (2,) and np.isnan(cmd[1])
    two_d = Float64MultiArray(data=[0.0] * 4)
    two_d.layout.dim = [MultiArrayDimension(size=2), MultiArrayDimension(size=2)]
    with pytest.raises(conv.CommandError, match=r"2-dimensional layout"):
        conv.command_array(two_d)
    out = conv.episode_outcome_msg(
        stamp=conv.time_msg(9),
        episode_index=2,
        policy_id="p",
        world_id="w",
        variation_seed=5,
        world_hash="h",
        success=True,
        failure_reason="success",
        duration_s=1.25,
        metrics={"b": 2.0, "a": 1.0},
    )
    assert out.success and out.failure_reason == "" and out.variation_seed == 5
    assert (out.duration.sec, out.duration.nanosec) == (1, 250_000_000)
    assert [(m.name, m.value) for m in out.metrics] == [("a", 1.0), ("b", 2.0)]


def test_variation_hash_and_qos_helpers() -> None:
    from r2s2r_sim.ros.qos import interface_class, qos_profile
    from r2s2r_sim.ros.sim_node import variation_hash
    from rclpy.qos import DurabilityPolicy, ReliabilityPolicy, qos_profile_system_default

    a = variation_hash("abc", "", 1)
    assert a == variation_hash("abc", "", 1) and len(a) == 64
    assert (
        len({a, variation_hash("abc", "", 2), variation_hash("abd", "", 1), variation_hash("abc", "x", 1)})
        == 4
    )
    iface = load_interface()
    profile = qos_profile(iface.topic_spec("tf_static").qos)
    assert profile.durability == DurabilityPolicy.TRANSIENT_LOCAL and profile.depth == 1
    assert qos_profile(iface.topic_spec("color_image").qos) == qos_profile_system_default
    assert qos_profile(load_interface("sensor_data").topic_spec("color_image").qos).reliability == (
        ReliabilityPolicy.BEST_EFFORT
    )
    from sensor_msgs.msg import Image

    assert interface_class("sensor_msgs/msg/Image") is Image
    with pytest.raises(InterfaceError, match=r"'sensor_msgs/msg/Nope': sensor_msgs\.msg has no Nope"):
        interface_class("sensor_msgs/msg/Nope")
    with pytest.raises(InterfaceError, match=r"cannot import no_such_pkg\.msg"):
        interface_class("no_such_pkg/msg/X")
    with pytest.raises(InterfaceError, match=r"expected 'package/msg/Name'"):
        interface_class("Image")


def test_actions_are_read_and_merged_by_entry(tmp_path: Path) -> None:
    iface = load_interface()
    fjt = iface.action_spec("follow_joint_trajectory")
    assert (fjt.name, fjt.type) == (
        "/joint_trajectory_controller/follow_joint_trajectory",
        "control_msgs/action/FollowJointTrajectory",
    )
    assert iface.action_spec("gripper_command").type == "control_msgs/action/GripperCommand"
    # A user file that extends a shipped profile renames one action and keeps the other.
    own = {"extends": "realsense2_camera", "actions": {"gripper_command": {"name": "/hand/gripper_cmd"}}}
    mine = load_interface(_write(tmp_path, own))
    assert mine.action_spec("gripper_command").name == "/hand/gripper_cmd"
    assert mine.action_spec("follow_joint_trajectory") == fjt
    with pytest.raises(InterfaceError, match=r"actions\.nope: no such action \(actions: \['follow_joint"):
        iface.action_spec("nope")


def test_a_malformed_action_is_refused_naming_it(tmp_path: Path) -> None:
    bad = _with(["actions"], {"move": {"name": "/move", "type": "control_msgs/msg/GripperCommand"}})
    with pytest.raises(InterfaceError, match=r"actions\.move\.type: must look like 'package/action/Name'"):
        load_interface(_write(tmp_path, bad))
