"""The shipped world graph under ``launch_pytest``: bring-up, the driver topics, and a clean shutdown.

``launch_pytest`` (the real Jazzy plugin, installed by ``make test`` from ``../shared``) runs
``world.launch.py`` from the package's share folder in this process's launch service; the test then waits
for the sim's joint states and clock on the interface's topics (event-bounded waits), and after the launch
service has shut the graph down, checks that every launched node exited 0 on its SIGINT.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ros2_tools import MISSING, requires_ros2_tools

pytestmark = [pytest.mark.integration, requires_ros2_tools]

if MISSING:
    pytest.skip(MISSING, allow_module_level=True)

import launch_pytest  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from launch.actions import IncludeLaunchDescription, RegisterEventHandler, SetEnvironmentVariable  # noqa: E402
from launch.event_handlers import OnProcessExit  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from r2s2r_sim.interface import load_interface  # noqa: E402
from r2s2r_sim.world.sim_world import SimWorld  # noqa: E402
from r2s2r_sim.worlds import world_path  # noqa: E402
from ros_probe import RosProbe, open_probe, wait_for  # noqa: E402

from launch import LaunchDescription  # noqa: E402

WORLD = "tabletop-pick-v1"
STARTUP_S = 300.0  # MuJoCo, the renderer and DDS discovery on a loaded 2-core machine


def _stamp(msg: Any) -> int:
    return int(msg.clock.sec) * 10**9 + int(msg.clock.nanosec)


@pytest.fixture
def exit_codes() -> dict[str, int]:
    """Exit code per launched process, filled by the launch description's OnProcessExit handler."""
    return {}


@launch_pytest.fixture
def world_graph(ros_env: dict[str, str], exit_codes: dict[str, int]) -> Any:
    """world.launch.py in sim mode without the evaluator, in the test's own DDS domain."""
    launch_file = Path(get_package_share_directory("r2s2r_sim")) / "launch" / "world.launch.py"
    env = [
        SetEnvironmentVariable(k, ros_env[k])
        for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE", "PYTHONUNBUFFERED", "MUJOCO_GL")
    ]
    record = OnProcessExit(
        on_exit=lambda event, _ctx: exit_codes.update({event.action.name: event.returncode})
    )
    return LaunchDescription(
        [
            *env,
            RegisterEventHandler(record),
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(str(launch_file)),
                # No evaluator: the graph serves until the test is done and launch_pytest shuts it down.
                launch_arguments={"mode": "sim", "world": WORLD, "evaluate": "false"}.items(),
            ),
            launch_pytest.actions.ReadyToTest(),
        ]
    )


@pytest.mark.launch(fixture=world_graph)
def test_world_graph_serves_the_driver_topics_and_shuts_down_cleanly(
    ros_env: dict[str, str], exit_codes: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> Any:
    probe_gen = open_probe(
        lambda d: RosProbe(d, "launch_pytest_probe", load_interface()), ros_env, monkeypatch
    )
    probe = next(probe_gen)
    try:
        joints = probe.record("joint_states")
        clock = probe.record("clock")
        wait_for(lambda: len(probe.msgs(joints)) >= 5, STARTUP_S, f"5 messages on {joints}")
        # Lockstep holds sim time at 0 until the policy node has answered its first observation.
        wait_for(
            lambda: len({_stamp(m) for _, m in probe.msgs(clock)}) >= 2,
            STARTUP_S,
            f"sim time moving on {clock}",
        )
    finally:
        next(probe_gen, None)
    arm = list(SimWorld(world_path(WORLD)).arm_joint_names)
    names = list(probe.msgs(joints)[-1][1].name)
    assert names[: len(arm)] == arm, names
    stamps = [_stamp(m) for _, m in probe.msgs(clock)]
    assert stamps == sorted(stamps) and stamps[-1] > stamps[0]  # sim time moves forward
    yield  # launch_pytest shuts the graph down (SIGINT to every process), then resumes here
    assert exit_codes, "no launched process reported an exit"
    assert {name.rsplit("-", 1)[0] for name in exit_codes} >= {"sim_node", "policy_node"}, exit_codes
    assert all(code == 0 for code in exit_codes.values()), exit_codes
