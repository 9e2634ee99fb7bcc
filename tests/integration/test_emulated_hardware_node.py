"""The emulated hardware node (a stand-in for an arm driver + RealSense) as a process, checked over DDS."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed; run `make setup`")

from r2s2r_sim.hardware.profile import load_hardware_profile  # noqa: E402
from r2s2r_sim.interface import load_interface  # noqa: E402
from r2s2r_sim.ros import conversions as conv  # noqa: E402
from r2s2r_sim.ros.qos import interface_class, qos_profile  # noqa: E402
from ros_probe import RosProbe, open_probe, wait_for  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PARAMS = REPO / "config" / "emulated_hardware_node.yaml"
PROFILE = load_hardware_profile(REPO / "config" / "emulated_hardware" / "ideal_profile.yaml")
IFACE = load_interface()
CAMERA = PROFILE.camera.name
NODE = "emulated_hardware"
STARTUP_S = 60.0
# What the sim node has and real drivers do not: /clock, the task checker's outcomes, the lockstep ack.
SIM_ONLY = {"clock", "episode_outcome", "policy_heartbeat"}
COMMANDS = {"arm_command", "gripper_command", "joint_trajectory"}
# Between the policy node and the evaluator (or the sim node): a driver neither publishes nor reads it.
POLICY_SIDE = {"policy_done"}


class Probe(RosProbe):
    """A ROS node in this process, in the test's DDS domain, recording (receipt time, message)."""

    def __init__(self, domain_id: int) -> None:
        super().__init__(domain_id, "emulated_hardware_probe", IFACE)

    def subscribe(self, key: str, camera: str | None = None) -> str:
        return self.record(key, camera, clock=time.time, headers_only=True)

    def call(self, srv_type: Any, name: str, request: Any, timeout: float = 20.0) -> Any:
        return self.call_service(srv_type, name, request, timeout)


@pytest.fixture
def probe(ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    yield from open_probe(Probe, ros_env, monkeypatch)


def _stamp_s(msg: Any) -> float:
    return conv.time_to_ns(msg.header.stamp) / 1e9


def test_emulated_hardware_serves_the_real_driver_interface(processes: Any, probe: Probe) -> None:
    started = time.time()
    proc = processes.start(["emulated_hardware_node", "--ros-args", "--params-file", str(PARAMS)])
    names = {
        key: probe.subscribe(key, CAMERA if spec.per_camera else None)
        for key, spec in IFACE.topics.items()
        if key not in SIM_ONLY | COMMANDS | POLICY_SIDE
    }
    wait_for(lambda: all(probe.msgs(n) for n in names.values()), STARTUP_S, "every driver topic")

    # Topics and types: exactly the real interface minus the sim-only topics; no /clock anywhere.
    topics = dict(probe.node.get_topic_names_and_types())
    assert not probe.node.get_publishers_info_by_topic(IFACE.topic("clock")), "nobody may publish /clock"
    published, subscribed = set(), set()
    for name in topics:
        pubs = [i for i in probe.node.get_publishers_info_by_topic(name) if i.node_name == NODE]
        subs = [i for i in probe.node.get_subscriptions_info_by_topic(name) if i.node_name == NODE]
        published |= {name} if pubs else set()
        subscribed |= {name} if subs else set()
    expect_pub = {
        IFACE.topic(k, CAMERA if s.per_camera else None)
        for k, s in IFACE.topics.items()
        if k not in SIM_ONLY | COMMANDS | POLICY_SIDE
    }
    infrastructure = {"/rosout", "/parameter_events"}  # every rclpy node's own endpoints
    # The controllers' action servers publish their feedback and status on hidden /_action/ topics.
    actions = {name for name in published if "/_action/" in name}
    assert {name.split("/_action/")[0] for name in actions} == {a.name for a in IFACE.actions.values()}
    expect_sub = {IFACE.topic(key) for key in COMMANDS}
    assert published - infrastructure - actions == expect_pub, published ^ expect_pub
    assert subscribed - infrastructure == expect_sub, subscribed ^ expect_sub
    for key, spec in IFACE.topics.items():
        if key in SIM_ONLY | POLICY_SIDE:
            continue
        name = IFACE.topic(key, CAMERA if spec.per_camera else None)
        assert spec.type in topics[name], f"{name}: {topics[name]}"
        if name in published:
            (info,) = [i for i in probe.node.get_publishers_info_by_topic(name) if i.node_name == NODE]
            got = (info.qos_profile.reliability, info.qos_profile.durability)
            assert got == probe.offered_qos(key), name
    services = dict(probe.node.get_service_names_and_types())
    for spec in IFACE.services.values():
        assert spec.name not in services, f"{spec.name}: real hardware has no sim services"
    assert "r2s2r_msgs/srv/ResetEpisode" in services[f"/{NODE}/reset_episode"]
    assert "std_srvs/srv/Trigger" in services[f"/{NODE}/judge"]

    # Wall-clock stamps (not sim time): taken after the node started, and before the message arrived. How
    # long after is the machine's speed, not the interface.
    for key in ("joint_states", "color_image", "depth_image", "color_info"):
        received, msg = probe.msgs(names[key])[-1]
        stamp = _stamp_s(msg)
        assert started - 0.5 <= stamp <= received + 0.05, f"{key}: stamp {stamp}, wall {received}"
    # CameraInfo: the profile's K and non-zero plumb_bob D, for colour and aligned depth.
    for key in ("color_info", "depth_info"):
        info = probe.msgs(names[key])[-1][1]
        assert info.distortion_model == "plumb_bob"
        np.testing.assert_allclose(info.d, PROFILE.camera.distortion.d())
        assert np.any(np.asarray(info.d) != 0)
        np.testing.assert_allclose(np.reshape(info.k, (3, 3)), PROFILE.camera.intrinsics.k())
        assert (info.width, info.height) == (PROFILE.camera.width, PROFILE.camera.height)

    # Rates (wall clock), printed for the report: each stream flows and never exceeds the driver's rate.
    # How close to it a CPU-bound renderer gets is a benchmark's question (make bench), not this test's.
    t0 = time.time()
    counts = {"joint_states": 50, "color_image": 5, "depth_image": 5, "tf": 20}
    for key, n in counts.items():
        wait_for(
            lambda key=key, n=n: len([t for t, _ in probe.msgs(names[key]) if t >= t0]) >= n,
            STARTUP_S,
            f"{n} messages on {names[key]}",
        )
    rates = {}
    for key in counts:
        # Header stamps where there are any (the driver's own timing); /tf by arrival.
        times = [t if key == "tf" else _stamp_s(m) for t, m in probe.msgs(names[key]) if t >= t0]
        rates[key] = (len(times) - 1) / (max(times) - min(times))
    print(f"emulated hardware rates (Hz): {rates}")
    assert 0 < rates["joint_states"] <= 1.1 * PROFILE.driver.joint_state_rate_hz, rates
    assert 0 < rates["color_image"] <= 1.1 * PROFILE.camera.rate_hz, rates

    # A commanded joint target is reached, not before the latency.
    js = names["joint_states"]
    start = np.array(probe.msgs(js)[-1][1].position[:6])
    target = start.copy()
    target[0] += 0.3
    pub = probe.node.create_publisher(
        Float64MultiArray, IFACE.topic("arm_command"), qos_profile(IFACE.topic_spec("arm_command").qos)
    )
    wait_for(lambda: pub.get_subscription_count() > 0, 10.0, "the emulator's arm command subscription")
    sent = time.time()
    pub.publish(Float64MultiArray(data=target.tolist()))
    noise = 6 * PROFILE.driver.position_noise_std_rad
    moved = wait_for(
        lambda: next(
            (
                m
                for _, m in probe.msgs(js)
                if _stamp_s(m) >= sent and m.position[0] - start[0] > noise + 0.002
            ),
            None,
        ),
        5.0,
        "the first joint state that moved",
    )
    delay = _stamp_s(moved) - sent
    print(
        f"command to first motion (joint state stamp - send time): {delay * 1e3:.1f} ms "
        f"(profile latency {PROFILE.driver.command_latency_s * 1e3:.0f} ms)"
    )
    assert delay >= PROFILE.driver.command_latency_s - 0.002
    wait_for(lambda: abs(probe.msgs(js)[-1][1].position[0] - target[0]) < 0.02, 10.0, "joint 0 at target")

    # Stand-in services: the operator's reset and the judge.
    reset_type = interface_class(IFACE.service_spec("reset_episode").type)
    reply = probe.call(reset_type, f"/{NODE}/reset_episode", reset_type.Request(variation_seed=4))
    assert reply.success and reply.world_id == "tabletop-pick-v1" and len(reply.world_hash) == 64
    verdict = probe.call(Trigger, f"/{NODE}/judge", Trigger.Request())
    body = json.loads(verdict.message)
    assert verdict.success is False and body["reason"] == "not_achieved" and body["seed"] == 4
    assert "object_to_target_m" in body["metrics"] and "stand-in" in body["judge"]

    proc.send_signal(2)
    assert proc.wait(timeout=60) == 0  # a bound for a loaded machine; idle it takes ~0.2 s
    assert proc.stdout is not None
    output = proc.stdout.read()
    assert "EMULATED HARDWARE (stand-in for a real arm driver + RealSense; not a robot)" in output
