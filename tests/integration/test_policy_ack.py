"""The policy node's side of the lockstep handshake, against a probe standing in for a lockstep sim."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("rclpy")

from r2s2r_sim.interface import load_interface  # noqa: E402
from r2s2r_sim.ros import conversions as conv  # noqa: E402
from r2s2r_sim.ros.qos import interface_class, qos_profile  # noqa: E402
from r2s2r_sim.world.config import load_world_config  # noqa: E402
from r2s2r_sim.worlds import world_path  # noqa: E402
from ros_probe import RosProbe, open_probe, wait_for  # noqa: E402

pytestmark = pytest.mark.integration

IFACE = load_interface()
HERE = Path(__file__).resolve().parent
STARTUP_S = 60.0


class SimProbe(RosProbe):
    """Publishes /clock and joint states as a lockstep sim does; records the policy's acks."""

    def __init__(self, domain_id: int) -> None:
        super().__init__(domain_id, "lockstep_sim_probe", IFACE)
        self.acks = self.record("policy_heartbeat")
        robot = load_world_config(world_path("tabletop-pick-v1")).robot
        self.joints = (*robot.arm_joints, *(robot.gripper.joints if robot.gripper else ()))
        self._pubs = {key: self._publisher(key) for key in ("joint_states", "clock")}

    def _publisher(self, key: str) -> Any:
        spec = IFACE.topic_spec(key)
        return self.node.create_publisher(interface_class(spec.type), IFACE.topic(key), qos_profile(spec.qos))

    def observe(self, stamp_ns: int) -> None:
        """Publish the observation at ``stamp_ns``: /clock, then the joint state stamped with it."""
        stamp = conv.time_msg(stamp_ns)
        self._pubs["clock"].publish(conv.clock_msg(stamp))
        zero = np.zeros(len(self.joints))
        self._pubs["joint_states"].publish(conv.joint_state_msg(stamp, self.joints, zero, zero, zero))

    def acked(self, stamp_ns: int) -> int:
        return sum(conv.time_to_ns(m) == stamp_ns for _, m in self.msgs(self.acks))


@pytest.fixture
def probe(ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    yield from open_probe(SimProbe, ros_env, monkeypatch)


def test_an_answered_observation_sent_again_is_acknowledged_again(processes: Any, probe: SimProbe) -> None:
    """A sim that re-sends an observation never got its ack; the policy acks again (it used to stay silent).

    A restarted policy's first ack is published before the sim has matched its new publisher, and the ack
    topic is volatile: without this the sim re-sends and the policy ignores, until the evaluator gives up.
    """
    processes.env["PYTHONPATH"] = f"{HERE}{os.pathsep}{processes.env.get('PYTHONPATH', '')}"
    policy = processes.start(
        ["policy_node", "--ros-args", "-p", "use_sim_time:=true", "-p", "policy:=fault_policies:HoldPolicy"]
    )
    obs = 5_000_000_000

    def first_ack() -> int:
        probe.observe(obs)  # re-sent, as the sim does, until the policy has matched and answered
        return probe.acked(obs)

    wait_for(first_ack, STARTUP_S, "the policy's ack of its first observation")
    answered = probe.acked(obs)
    probe.observe(obs)
    wait_for(lambda: probe.acked(obs) > answered, 20.0, "a second ack of the observation sent again")
    later = obs + 100_000_000  # one 10 Hz period on
    probe.observe(later)
    wait_for(lambda: probe.acked(later), 20.0, "the ack of the next observation")
    assert policy.poll() is None
