"""Interface conformance with the standard ROS 2 tools, run with launch_testing's own runner.

The checks live in ``world_cli_conformance_launch.py`` (launch_testing's shape: a launch description
with ``ReadyToTest``, active tests, post-shutdown exit codes). launch_testing's and launch_pytest's
pytest plugins in Jazzy do not load under this suite's pytest 9 (hook arguments and fixture internals
that pytest 8.4+ removed; pyproject.toml disables them), so the file runs under ``launch_test`` in a
subprocess with this test's own ROS domain, and its JUnit report is checked case by case.
"""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from ros2_tools import requires_ros2_tools, stop_daemon

pytestmark = [pytest.mark.integration, requires_ros2_tools]

LAUNCH_TEST = Path(__file__).with_name("world_cli_conformance_launch.py")
EXPECTED = {
    "test_node_list_shows_the_sim_node",
    "test_topic_list_has_the_driver_topics_with_their_types",
    "test_topic_info_verbose_shows_the_declared_qos",
    "test_topic_echo_once_gives_the_worlds_joint_state",
    "test_topic_hz_measures_the_joint_states",
    "test_param_get_set_describe",
    "test_service_call_resets_the_episode",
    "test_exit_codes",
}


def test_standard_ros2_tools_against_the_running_sim(ros_env: dict[str, str], tmp_path: Path) -> None:
    report = tmp_path / "conformance.xml"
    try:
        proc = subprocess.run(
            ["launch_test", "--junit-xml", str(report), str(LAUNCH_TEST)],
            env=ros_env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    finally:
        stop_daemon(ros_env)
    out = proc.stdout + proc.stderr
    assert report.is_file(), f"launch_test wrote no report (rc {proc.returncode}): {out[-6000:]}"
    cases = {case.get("name"): case for case in ET.parse(report).getroot().iter("testcase")}
    assert set(cases) == EXPECTED, f"ran {sorted(cases)}; output: {out[-3000:]}"
    bad = {name: [child.tag for child in case] for name, case in cases.items() if len(case)}
    assert not bad, f"failed, errored or skipped: {bad}; output: {out[-6000:]}"
    assert proc.returncode == 0, out[-6000:]
