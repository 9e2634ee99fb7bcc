"""The nodes' ``--help`` detection: only the node's own arguments count, never what follows ``--ros-args``."""

from __future__ import annotations

import pytest

ros_params = pytest.importorskip("r2s2r_sim.ros.params", reason="needs rclpy (the ROS 2 wheels)")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--help"], True),
        (["-h"], True),
        (["-h", "--ros-args", "-p", "world:=x"], True),
        ([], False),
        (["--ros-args", "-p", "world:=x"], False),
        (["--ros-args", "--help"], False),  # a ROS argument, for rcl to answer
    ],
)
def test_help_is_requested_only_before_the_ros_arguments(argv: list[str], expected: bool) -> None:
    assert ros_params.help_requested(argv) is expected


def test_help_request_reads_sys_argv_when_no_arguments_are_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.argv", ["player_node", "--help"])
    assert ros_params.help_requested(None) is True
    monkeypatch.setattr("sys.argv", ["player_node"])
    assert ros_params.help_requested(None) is False
