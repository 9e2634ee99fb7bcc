"""The standard ROS 2 tools see the sim as they see a driver: ros2 node/topic/param/service (launch_testing).

Run by ``test_ros2_cli_conformance.py`` with launch_testing's own runner (``launch_test FILE``) in an
isolated ROS domain. It brings up the shipped ``world.launch.py``, found through the ament index as
``ros2 launch`` finds it, with the sim node alone and paced to the wall clock so topics flow without a
policy; the active tests run the real ``ros2`` command line against it; the post-shutdown test checks
every process's exit code. The file name does not match pytest's test patterns on purpose.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import threading
import unittest
from pathlib import Path

import launch_testing
import launch_testing.actions
import launch_testing.asserts
import yaml
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare
from r2s2r_sim.interface import load_interface
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.worlds import world_path

import launch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ros2_tools import ros2, ros2_until, stop_daemon  # noqa: E402

IFACE = load_interface()
WORLD = "tabletop-pick-v1"
SEED = 4
WAIT_S = 180.0  # DDS discovery and the sim node's start-up on a loaded machine


def generate_test_description() -> launch.LaunchDescription:
    """The shipped launch file, sim node only, publishing on wall-clock pacing."""
    shipped = PathJoinSubstitution([FindPackageShare("r2s2r_sim"), "launch", "world.launch.py"])
    arguments = {
        "mode": "sim",
        "world": WORLD,
        "run_policy": "false",
        "evaluate": "false",
        "lockstep": "false",
        "real_time": "true",
        "seed": str(SEED),
    }
    return launch.LaunchDescription(
        [
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(shipped), launch_arguments=arguments.items()
            ),
            launch_testing.actions.ReadyToTest(),
        ]
    )


def _env() -> dict[str, str]:
    return dict(os.environ)  # the test's ROS_DOMAIN_ID, given to launch_test by the pytest wrapper


def _topics(stdout: str) -> dict[str, str]:
    # `ros2 topic list -t` prints "/name [pkg/msg/Type]" per line.
    found = {}
    for line in stdout.splitlines():
        match = re.fullmatch(r"(\S+) \[(\S+)\]", line.strip())
        if match:
            found[match.group(1)] = match.group(2)
    return found


class TestStandardTools(unittest.TestCase):
    """Active tests: they run while the graph is up."""

    @classmethod
    def tearDownClass(cls) -> None:
        stop_daemon(_env())  # `ros2 node list` and `ros2 param` start a daemon in this domain

    def test_node_list_shows_the_sim_node(self) -> None:
        nodes = ros2_until(
            ["node", "list"],
            _env(),
            lambda out: out.split() if "/sim_node" in out.split() else None,
            timeout=WAIT_S,
            what="/sim_node in the node list",
        )
        self.assertIn("/sim_node", nodes)

    def test_topic_list_has_the_driver_topics_with_their_types(self) -> None:
        keys = ("joint_states", "tf", "tf_static", "clock")
        wanted = {IFACE.topic(k): IFACE.topic_spec(k).type for k in keys}
        topics = ros2_until(
            ["topic", "list", "-t", "--no-daemon"],
            _env(),
            lambda out: _topics(out) if set(wanted) <= set(_topics(out)) else None,
            timeout=WAIT_S,
            what=f"topics {sorted(wanted)}",
        )
        for name, type_name in wanted.items():
            self.assertEqual(topics[name], type_name, name)

    def test_topic_info_verbose_shows_the_declared_qos(self) -> None:
        spec, name = IFACE.topic_spec("joint_states"), IFACE.topic("joint_states")
        out = ros2_until(
            ["topic", "info", "-v", "--no-daemon", name],
            _env(),
            lambda out: out if "Node name: sim_node" in out else None,
            timeout=WAIT_S,
            what=f"sim_node as publisher of {name}",
        )
        self.assertIn(f"Type: {spec.type}", out)
        publisher = out[out.index("Node name: sim_node") :]
        self.assertIn("Endpoint type: PUBLISHER", publisher)
        self.assertIn(f"Reliability: {spec.qos.reliability.name}", publisher)
        self.assertIn(f"Durability: {spec.qos.durability.name}", publisher)

    def test_topic_echo_once_gives_the_worlds_joint_state(self) -> None:
        name = IFACE.topic("joint_states")
        msg = ros2_until(
            ["topic", "echo", "--once", "--no-daemon", name],
            _env(),
            lambda out: yaml.safe_load(out.split("\n---")[0]) if out.strip() else None,
            timeout=WAIT_S,
            what=f"one message on {name}",
        )
        robot = load_world_config(world_path(WORLD)).robot
        joints = [*robot.arm_joints, *(robot.gripper.joints if robot.gripper else ())]
        self.assertEqual(msg["name"], joints)
        self.assertEqual(len(msg["position"]), len(joints))
        self.assertTrue(all(math.isfinite(float(p)) for p in msg["position"]), msg["position"])

    def test_topic_hz_measures_the_joint_states(self) -> None:
        # `ros2 topic hz` runs until stopped: read its output up to the first rate report.
        name = IFACE.topic("joint_states")
        proc = subprocess.Popen(
            ["ros2", "topic", "hz", "--window", "50", name],
            env=_env(),
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        lines: list[str] = []
        rate: list[float] = []

        def read() -> None:
            for line in proc.stdout:  # type: ignore[union-attr]
                lines.append(line.rstrip())
                match = re.match(r"average rate: ([0-9.]+)", line.strip())
                if match:
                    rate.append(float(match.group(1)))
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout=WAIT_S)
        proc.send_signal(2)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self.assertTrue(rate, f"no 'average rate' from `ros2 topic hz {name}` in {WAIT_S} s: {lines[-10:]}")
        self.assertGreater(rate[0], 1.0, lines[-10:])

    def test_param_get_set_describe(self) -> None:
        env = _env()
        got = ros2_until(
            ["param", "get", "/sim_node", "seed"],
            env,
            lambda out: out.strip() if "value is" in out else None,
            timeout=WAIT_S,
            what="the seed parameter of /sim_node",
        )
        self.assertEqual(got, f"Integer value is: {SEED}")  # the launch argument seed:=4
        refused = ros2(["param", "set", "/sim_node", "seed", "5"], env)
        self.assertIn("Setting parameter failed", refused.stdout + refused.stderr)
        self.assertIn("read-only", refused.stdout + refused.stderr)
        again = ros2(["param", "get", "/sim_node", "seed"], env)
        self.assertEqual(again.stdout.strip(), f"Integer value is: {SEED}")
        accepted = ros2(["param", "set", "/sim_node", "use_sim_time", "false"], env)
        self.assertEqual(accepted.stdout.strip(), "Set parameter successful", accepted)
        described = ros2(["param", "describe", "/sim_node", "seed"], env).stdout
        self.assertIn("Type: integer", described)
        self.assertIn("Read only: true", described)
        self.assertRegex(described, r"Description: \S")

    def test_service_call_resets_the_episode(self) -> None:
        service, srv_type = IFACE.service("reset_episode"), IFACE.service_spec("reset_episode").type
        out = ros2_until(
            ["service", "call", service, srv_type, "{variation_seed: 9}"],
            _env(),
            lambda out: out if "response:" in out else None,
            timeout=WAIT_S,
            what=f"a response from {service}",
        )
        response = out[out.index("response:") :]
        self.assertIn("success=True", response)
        self.assertIn(f"world_id='{WORLD}'", response)
        self.assertRegex(response, r"world_hash='[0-9a-f]{64}'")
        self.assertRegex(response, r"variation_hash='[0-9a-f]+'")


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    """After the graph is stopped (SIGINT from launch), every process exited cleanly."""

    def test_exit_codes(self, proc_info: launch_testing.ProcInfoHandler) -> None:
        self.assertEqual(proc_info.process_names(), ["sim_node-1"])
        launch_testing.asserts.assertExitCodes(proc_info)
