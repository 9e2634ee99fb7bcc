"""The driver profiles of interface.yaml: each loads, names its controllers and keeps the camera side."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from r2s2r_sim.interface import CommandPath, InterfaceError, available_profiles, load_interface
from r2s2r_sim.paths import config_dir

# profile -> (trajectory controller, gripper action) as the cited driver files name them.
DRIVERS = {
    "ur_robot_driver": ("scaled_joint_trajectory_controller", "/gripper_action_controller/gripper_cmd"),
    "franka_ros2": ("fr3_arm_controller", "/franka_gripper/gripper_action"),
    "xarm_ros2": ("xarm7_traj_controller", "/xarm_gripper/gripper_action"),
    "kortex": ("joint_trajectory_controller", "/robotiq_gripper_controller/gripper_cmd"),
}
CAMERA_KEYS = ("color_image", "color_info", "depth_image", "depth_info")


def _raw_profiles() -> dict:
    return yaml.safe_load((config_dir() / "interface.yaml").read_text(encoding="utf-8"))["profiles"]


@pytest.mark.parametrize("name", sorted(DRIVERS))
def test_driver_profile_names_its_controllers(name: str) -> None:
    controller, gripper_action = DRIVERS[name]
    iface = load_interface(name)
    assert iface.profile == name and name in available_profiles()
    assert iface.command is CommandPath.TRAJECTORY
    assert iface.topic("joint_trajectory") == f"/{controller}/joint_trajectory"
    assert iface.topic("controller_state") == f"/{controller}/controller_state"
    fjt = iface.action_spec("follow_joint_trajectory")
    assert (fjt.name, fjt.type) == (
        f"/{controller}/follow_joint_trajectory",
        "control_msgs/action/FollowJointTrajectory",
    )
    grip = iface.action_spec("gripper_command")
    assert (grip.name, grip.type) == (gripper_action, "control_msgs/action/GripperCommand")
    assert iface.topic("joint_states") == "/joint_states"


@pytest.mark.parametrize("name", sorted(DRIVERS))
def test_driver_profile_extends_the_camera_profile(name: str) -> None:
    assert _raw_profiles()[name]["extends"] == "realsense2_camera"
    iface, camera = load_interface(name), load_interface("realsense2_camera")
    for key in CAMERA_KEYS:
        assert iface.topic_spec(key) == camera.topic_spec(key), key
    assert iface.frames == camera.frames
    assert iface.services == camera.services


@pytest.mark.parametrize("name", sorted(DRIVERS))
def test_driver_profile_cites_where_its_names_come_from(name: str) -> None:
    """Every driver profile's block in interface.yaml names the driver's repository and a config file."""
    text = (config_dir() / "interface.yaml").read_text(encoding="utf-8")
    block = _block(text, name)
    repo = {
        "ur_robot_driver": "UniversalRobots/Universal_Robots_ROS2_Driver",
        "franka_ros2": "frankaemika/franka_ros2",
        "xarm_ros2": "xArm-Developer/xarm_ros2",
        "kortex": "Kinovarobotics/ros2_kortex",
    }[name]
    assert repo in block and ".yaml:" in block


def _block(text: str, name: str) -> str:
    """The lines of profile ``name`` in the catalogue, up to the next profile."""
    lines = text.splitlines()
    start = lines.index(f"  {name}:")
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith("  ") and lines[i][2] not in " #"),
        len(lines),
    )
    return "\n".join(lines[start:end])


def test_the_camera_profiles_keep_the_forward_path() -> None:
    assert load_interface("realsense2_camera").command is CommandPath.FORWARD
    assert load_interface("sensor_data").command is CommandPath.FORWARD


def test_a_user_file_inherits_and_overrides_the_command_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("extends: ur_robot_driver\n", encoding="utf-8")
    assert load_interface(path).command is CommandPath.TRAJECTORY
    path.write_text("extends: ur_robot_driver\ncommand: forward\n", encoding="utf-8")
    assert load_interface(path).command is CommandPath.FORWARD


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            "extends: realsense2_camera\ncommand: servo\n",
            r"command: must be one of \['forward', 'trajectory'\]",
        ),
        (
            "command: trajectory\ntopics:\n  joint_states:\n"
            "    {name: /joint_states, type: sensor_msgs/msg/JointState, qos: default}\n",
            r"command: 'trajectory' needs topics.joint_trajectory",
        ),
    ],
)
def test_a_bad_command_path_is_refused(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InterfaceError, match=match):
        load_interface(path)


def test_the_parallel_gripper_profile_is_kortex_with_a_parallel_gripper_command() -> None:
    raw = _raw_profiles()["kortex_parallel_gripper"]
    assert raw["extends"] == "kortex"
    iface, kortex = load_interface("kortex_parallel_gripper"), load_interface("kortex")
    grip = iface.action_spec("gripper_command")
    assert (grip.name, grip.type) == (
        "/robotiq_gripper_controller/gripper_cmd",
        "control_msgs/action/ParallelGripperCommand",
    )
    assert iface.action_spec("follow_joint_trajectory") == kortex.action_spec("follow_joint_trajectory")
    block = _block((config_dir() / "interface.yaml").read_text(encoding="utf-8"), "kortex_parallel_gripper")
    assert "Kinovarobotics/ros2_kortex" in block and "parallel_gripper_action_controller" in block
