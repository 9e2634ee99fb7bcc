"""The setup's correction of the ROS wheels' CMake exports, and the built interfaces in the venv."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import fix_ros_cmake_exports  # noqa: E402

WHEEL_EXPORT = (
    "set_target_properties(std_msgs::std_msgs__rosidl_generator_py PROPERTIES\n"
    '  INTERFACE_INCLUDE_DIRECTORIES "/opt/python/cp311-cp311/include/python3.11;'
    '/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include"\n)\n'
)


def test_build_machine_paths_are_rewritten_to_this_interpreter(tmp_path: Path) -> None:
    cmake = tmp_path / "share" / "std_msgs" / "cmake"
    cmake.mkdir(parents=True)
    export = cmake / "export_std_msgs__rosidl_generator_pyExport.cmake"
    export.write_text(WHEEL_EXPORT)
    untouched = cmake / "std_msgsConfig.cmake"
    untouched.write_text("# nothing to fix\n")
    assert fix_ros_cmake_exports.fix(tmp_path) == [export]
    text = export.read_text()
    assert "/opt/python" not in text
    assert f'"{sysconfig.get_paths()["include"]};{numpy.get_include()}"' in text
    # Idempotent: a second run finds nothing to change.
    assert fix_ros_cmake_exports.fix(tmp_path) == []


def test_installed_venv_has_no_build_machine_paths_left() -> None:
    fixed = fix_ros_cmake_exports.fix(Path(sys.prefix))
    assert fixed == [], f"make setup left wheel build paths in {fixed}"


def test_interfaces_round_trip_through_serialization() -> None:
    # The colcon-built typesupport (C extension + Fast DDS CDR) is what crosses processes.
    from rclpy.serialization import deserialize_message, serialize_message
    from tf2_msgs.msg import TFMessage

    from r2s2r_msgs.msg import EpisodeOutcome, Metric

    out = EpisodeOutcome(
        policy_id="p",
        variation_seed=2**63,
        success=True,
        metrics=[Metric(name="object_to_target_m", value=0.012)],
    )
    back = deserialize_message(serialize_message(out), EpisodeOutcome)
    assert back == out
    assert TFMessage.__module__.startswith("tf2_msgs.msg")


def test_vendored_control_msgs_actions_round_trip() -> None:
    # The actions real arm drivers serve, built from vendor/control_msgs by make setup.
    from control_msgs.action import FollowJointTrajectory, GripperCommand
    from rclpy.serialization import deserialize_message, serialize_message

    goal = FollowJointTrajectory.Goal()
    goal.trajectory.joint_names = ["shoulder", "elbow"]
    goal.goal_time_tolerance.sec = 1
    assert deserialize_message(serialize_message(goal), FollowJointTrajectory.Goal) == goal
    result = FollowJointTrajectory.Result(error_code=FollowJointTrajectory.Result.INVALID_JOINTS)
    assert result.error_code == -2
    command = GripperCommand.Goal()
    command.command.position, command.command.max_effort = 0.02, 10.0
    assert deserialize_message(serialize_message(command), GripperCommand.Goal) == command


def test_env_script_gives_the_same_environment() -> None:
    proc = subprocess.run(
        [
            "bash",
            "-c",
            "source ./env.sh && python -c 'import r2s2r_msgs.srv, tf2_msgs.msg; "
            'import os; print(os.environ["MUJOCO_GL"])\'',
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() in {"egl", "osmesa", "glfw"}
