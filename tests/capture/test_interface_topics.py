"""The capture, real2sim and the recorder take their topic names from the selected interface profile."""

from __future__ import annotations

from pathlib import Path

import pytest
from r2s2r_capture.procedures.session import PHASE_TOPIC, topic_names
from r2s2r_sim.interface import InterfaceError


def test_capture_topics_follow_the_profile(tmp_path: Path) -> None:
    default = topic_names("camera")
    assert default["color_image"] == ("/camera/camera/color/image_raw", "sensor_msgs/msg/Image")
    assert default["depth_image"][0] == "/camera/camera/aligned_depth_to_color/image_raw"
    assert default["color_info"][0] == "/camera/camera/color/camera_info"
    assert default["phase"] == (PHASE_TOPIC, "std_msgs/msg/String")
    assert topic_names("camera", "sensor_data")["color_image"][0] == "/camera/color/image_raw"
    own = tmp_path / "mine.yaml"
    own.write_text("extends: realsense2_camera\ntopics: {joint_states: {name: /arm/joint_states}}\n")
    assert topic_names("wrist", str(own))["joint_states"][0] == "/arm/joint_states"
    assert topic_names("wrist", str(own))["color_image"][0] == "/camera/wrist/color/image_raw"
    with pytest.raises(InterfaceError, match="no such profile"):
        topic_names("camera", "nope")


def test_recorder_interface_topics_cover_the_driver_topics_per_camera() -> None:
    pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed; run `make setup`")
    from r2s2r_capture.ros.recorder_node import interface_topics
    from r2s2r_sim.interface import load_interface

    names = interface_topics(load_interface(), ["camera", "wrist"])
    assert "/camera/camera/color/image_raw" in names
    assert "/camera/wrist/aligned_depth_to_color/camera_info" in names
    assert {
        "/joint_states",
        "/tf",
        "/tf_static",
        "/robot_description",
        "/r2s2r/episode_outcome",
        "/forward_position_controller/commands",
        "/gripper_controller/commands",
        "/joint_trajectory_controller/joint_trajectory",
        "/joint_trajectory_controller/controller_state",
    } <= set(names)
    assert "/clock" not in names and len(names) == len(set(names)) == 9 + 4 * 2
