"""The sim node as a separate process, checked from this process over DDS: the real drivers' interface."""

from __future__ import annotations

import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed; run `make setup`")

from r2s2r_eval.nodes.conversions import TfTree  # noqa: E402
from r2s2r_sim.interface import load_interface  # noqa: E402
from r2s2r_sim.ros import conversions as conv  # noqa: E402
from r2s2r_sim.ros.qos import interface_class, qos_profile  # noqa: E402
from ros_probe import RosProbe, open_probe, wait_for  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from transforms3d import quaternions as tq  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PARAMS = REPO / "config" / "sim_node.yaml"
MARKER_WORLD = REPO / "tests" / "worlds" / "marker"
IFACE = load_interface()
CAMERA = "camera"
NS = 1_000_000_000
STARTUP_S = 60.0


class Output:
    """Drains a process's stdout on a thread (the child never blocks on a full pipe); lines are searchable."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._lock:
                self.lines.append(line.rstrip())

    def text(self) -> str:
        with self._lock:
            return "\n".join(self.lines)

    def count(self, pattern: str) -> int:
        with self._lock:
            return sum(1 for line in self.lines if re.search(pattern, line))

    def wait_for(self, pattern: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.count(pattern):
                return
            if self.proc.poll() is not None:
                self._thread.join(timeout=2.0)
                if self.count(pattern):
                    return
                break
            time.sleep(0.02)
        raise AssertionError(f"no line matching {pattern!r} in the sim node's output:\n{self.text()[-3000:]}")


class Probe(RosProbe):
    """A ROS node in this process, in the test's DDS domain, recording what it receives."""

    def __init__(self, domain_id: int) -> None:
        super().__init__(domain_id, "sim_interface_probe", IFACE)

    def subscribe(self, key: str, camera: str | None = None, *, keep: int = 100_000) -> str:
        """Record messages of an interface topic with its declared QoS; keep the last ``keep`` messages."""
        return self.record(key, camera, keep=keep)

    def count(self, name: str) -> int:
        with self.lock:
            return len(self.received[name])

    def last(self, name: str) -> Any:
        with self.lock:
            return self.received[name][-1][1]

    def publisher(self, key: str) -> Any:
        spec = IFACE.topic_spec(key)
        return self.node.create_publisher(interface_class(spec.type), IFACE.topic(key), qos_profile(spec.qos))

    def call(self, key: str, request: Any, timeout: float = 20.0) -> Any:
        spec = IFACE.service_spec(key)
        return self.call_service(interface_class(spec.type), spec.name, request, timeout)


def stamp_ns(msg: Any) -> int:
    return conv.time_to_ns(msg.header.stamp)


@pytest.fixture
def probe(ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    yield from open_probe(Probe, ros_env, monkeypatch)


def start_sim(processes: Any, *params: str) -> Output:
    args = ["sim_node", "--ros-args", "--params-file", str(PARAMS)]
    for param in params:
        args += ["-p", param]
    return Output(processes.start(args))


def stop(out: Output) -> int:
    """Ctrl-C the node and return its exit code; a crash or a hang fails with the node's output."""
    out.proc.send_signal(2)
    try:
        code = out.proc.wait(timeout=60)  # a bound for a loaded machine; idle it takes ~0.2 s
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the sim node did not exit 60 s after Ctrl-C:\n{out.text()[-6000:]}") from None
    out._thread.join(timeout=5.0)
    if code < 0:
        raise AssertionError(f"the sim node died of signal {-code} after Ctrl-C:\n{out.text()[-12000:]}")
    return code


# ------------------------------------------------------------------------------------------------ tests


def test_topics_types_qos_frames_and_rates(processes: Any, probe: Probe) -> None:
    out = start_sim(processes, "real_time:=true")
    js = probe.subscribe("joint_states")
    clock = probe.subscribe("clock")
    tf = probe.subscribe("tf")
    tf_static = probe.subscribe("tf_static")
    color = probe.subscribe("color_image", CAMERA, keep=3)
    depth = probe.subscribe("depth_image", CAMERA, keep=3)
    color_info = probe.subscribe("color_info", CAMERA)
    depth_info = probe.subscribe("depth_info", CAMERA)
    wait_for(
        lambda: all(probe.count(n) for n in (js, clock, tf, tf_static, color, depth, color_info, depth_info)),
        STARTUP_S,
        "every topic's first message",
    )

    # Names and types, as interface.yaml declares them.
    topics = dict(probe.node.get_topic_names_and_types())
    for key, spec in IFACE.topics.items():
        name = IFACE.topic(key, CAMERA if spec.per_camera else None)
        assert name in topics, f"{key}: {name} not in the graph ({sorted(topics)})"
        assert spec.type in topics[name], f"{name}: type {topics[name]}, expected {spec.type}"
    # QoS of the sim node's endpoints.
    published = ("joint_states", "clock", "tf", "tf_static", "episode_outcome") + tuple(
        k for k, s in IFACE.topics.items() if s.per_camera
    )
    for key in published:
        spec = IFACE.topic_spec(key)
        name = IFACE.topic(key, CAMERA if spec.per_camera else None)
        infos = [i for i in probe.node.get_publishers_info_by_topic(name) if i.node_name == "sim_node"]
        assert len(infos) == 1, f"{name}: sim_node publishers {infos}"
        qos = infos[0].qos_profile
        assert (qos.reliability, qos.durability) == probe.offered_qos(key), f"{name}: {qos}"
    for key in ("arm_command", "gripper_command", "policy_heartbeat"):
        name = IFACE.topic(key)
        subs = [i for i in probe.node.get_subscriptions_info_by_topic(name) if i.node_name == "sim_node"]
        assert len(subs) == 1, f"{name}: sim_node subscriptions {subs}"
    services = dict(probe.node.get_service_names_and_types())
    for spec in IFACE.services.values():
        assert spec.type in services.get(spec.name, []), f"service {spec.name}: {services.get(spec.name)}"

    # Rates (wall clock, real_time pacing) over 3 s windows after a 1.5 s warm-up (the first frames compile
    # shaders). Up to five consecutive windows: the machine has 2 shared cores, and a burst of load from
    # other processes (a training next to this test) may starve several; the node must sustain the rates in
    # a window of its own.
    def rates_in(t0: float, window: float) -> dict[str, float]:
        rates = {}
        for name in (js, color, depth, clock):
            times = [t for t, _ in probe.msgs(name) if t0 <= t <= t0 + window]
            rates[name] = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 2 else 0.0
        clocks = [(t, conv.time_to_ns(m.clock)) for t, m in probe.msgs(clock) if t0 <= t <= t0 + window]
        assert all(b[1] > a[1] for a, b in zip(clocks, clocks[1:], strict=False)), "/clock must increase"
        rates["rtf"] = (clocks[-1][1] - clocks[0][1]) / NS / (clocks[-1][0] - clocks[0][0])
        # Joint states per second of sim time (their stamps): the node's schedule, whatever the load.
        stamps = [conv.time_to_ns(m.header.stamp) for t, m in probe.msgs(js) if t0 <= t <= t0 + window]
        rates["js_sim"] = (len(stamps) - 1) / ((stamps[-1] - stamps[0]) / NS) if len(stamps) > 2 else 0.0
        return rates

    # The camera is bounded by CPU rendering, not by the node: on a busy 2-core machine it drops frames
    # (counted, and reported on /diagnostics) rather than falling behind, so it must flow and never exceed
    # its 15 Hz; joint states flow at no more than 500 per second of sim time (a physics loop that fell
    # behind publishes once per catch-up); real-time pacing never runs ahead of the wall clock. How close to
    # real time a loaded machine gets is `make bench`'s measure, not this test's.
    def within(rates: dict[str, float]) -> bool:
        return (
            0 < rates["js_sim"] <= 500.0 * 1.02
            and 0 < rates[js] <= 500.0 * 1.10
            and 0 < rates[color] <= 15.0 * 1.10
            and 0 < rates[depth] <= 15.0 * 1.10
            and 0 < rates["rtf"] <= 1.10
        )

    windows = []
    start = time.monotonic() + 1.5
    for k in range(5):
        t0 = start + 3.0 * k
        wait_for(lambda t0=t0: time.monotonic() > t0 + 3.0, 10, "the measurement window")
        windows.append(rates_in(t0, 3.0))
        if within(windows[-1]):
            break
    assert within(windows[-1]), (windows, out.text()[-2000:])

    # Joint states: names and finite values; stamps are sim time (/clock).
    state = probe.last(js)
    assert list(state.name) == [
        "shoulder_pan",
        "shoulder_lift",
        "elbow",
        "wrist_1",
        "wrist_2",
        "wrist_3",
        "left_finger",
        "right_finger",
    ]
    assert len(state.position) == len(state.velocity) == len(state.effort) == 8
    assert np.all(np.isfinite(state.position))

    # Images: encodings, sizes, frames; colour and aligned depth share stamps.
    rgb, dep = probe.last(color), probe.last(depth)
    assert (rgb.encoding, rgb.width, rgb.height, rgb.step) == ("rgb8", 640, 480, 640 * 3)
    assert (dep.encoding, dep.width, dep.height, dep.step) == ("16UC1", 640, 480, 640 * 2)
    assert rgb.header.frame_id == dep.header.frame_id == "camera_color_optical_frame"
    color_stamps = {stamp_ns(m) for _, m in probe.msgs(color)}
    depth_stamps = {stamp_ns(m) for _, m in probe.msgs(depth)}
    assert len(color_stamps & depth_stamps) >= 0.9 * len(color_stamps)
    for name in (color_info, depth_info):
        info = probe.last(name)
        assert info.header.frame_id == "camera_color_optical_frame"
        assert (info.width, info.height, info.distortion_model) == (640, 480, "plumb_bob")
        assert list(info.d) == [0.0] * 5 and info.k[0] > 0 and info.k[8] == 1.0
        assert list(info.p[:3]) == list(info.k[:3]) and info.p[3] == 0.0
    assert conv.image_to_numpy(dep).max() > 0, "the depth image has no valid pixels"

    # TF: static world -> base_link, the fixed end-effector link and realsense2_camera's chain; the arm's
    # moving links on /tf (test_driver_conventions checks every link against MuJoCo).
    static = {(t.header.frame_id, t.child_frame_id) for t in probe.last(tf_static).transforms}
    assert {
        ("world", "base_link"),
        ("wrist_3_link", "gripper_link"),
        ("gripper_link", "ee_link"),
        ("world", "camera_link"),
        ("camera_link", "camera_color_frame"),
        ("camera_color_frame", "camera_color_optical_frame"),
    } <= static
    dynamic = {(t.header.frame_id, t.child_frame_id) for _, m in probe.msgs(tf) for t in m.transforms}
    assert {("base_link", "shoulder_link"), ("gripper_link", "left_finger_link")} <= dynamic
    assert stop(out) == 0


def _marker_pixels(rgb: np.ndarray, channel: int) -> tuple[float, float]:
    img = rgb.astype(np.float64)
    others = np.delete(img, channel, axis=2).max(axis=2)
    weight = np.clip(img[..., channel] - others - 60.0, 0.0, None)
    assert weight.sum() > 0, f"marker of channel {channel} not visible"
    vs, us = np.indices(weight.shape)
    return float((us * weight).sum() / weight.sum()), float((vs * weight).sum() / weight.sum())


def test_marker_projection_and_depth(processes: Any, probe: Probe) -> None:
    from r2s2r_sim.world.sim_world import SimWorld

    world = SimWorld(MARKER_WORLD)  # the true marker poses and radii, from the same files
    out = start_sim(processes, f"world:={MARKER_WORLD}", "real_time:=true")
    tf_static = probe.subscribe("tf_static")
    color = probe.subscribe("color_image", CAMERA, keep=30)
    depth = probe.subscribe("depth_image", CAMERA, keep=30)
    info = probe.subscribe("color_info", CAMERA)

    def pair() -> tuple[Any, Any] | None:
        depths = {stamp_ns(m): m for _, m in probe.msgs(depth) if m.data}
        for _, m in reversed(probe.msgs(color)):
            if m.data and stamp_ns(m) in depths:
                return m, depths[stamp_ns(m)]
        return None

    rgb_msg, depth_msg = wait_for(
        lambda: probe.count(tf_static) and probe.count(info) and pair(),
        STARTUP_S,
        "tf_static, camera_info and a colour/depth pair",
    )
    k = conv.camera_info_to_k(probe.last(info))
    frames = {t.child_frame_id: t for t in probe.last(tf_static).transforms}
    # realsense2_camera's chain: world -> camera_link -> camera_color_frame -> camera_color_optical_frame.
    assert frames["camera_link"].header.frame_id == "world"
    assert frames["camera_color_frame"].header.frame_id == "camera_link"
    assert frames["camera_color_optical_frame"].header.frame_id == "camera_color_frame"
    tree = TfTree()
    tree.add(probe.last(tf_static))
    optical = tree.lookup("world", "camera_color_optical_frame")
    cam_pos, cam_q = optical[:3, 3], tq.mat2quat(optical[:3, :3])
    rgb = conv.image_to_numpy(rgb_msg)
    depth_m = conv.image_to_numpy(depth_msg).astype(np.float64) / 1000.0
    for name, channel in (("marker_red", 0), ("marker_green", 1), ("marker_blue", 2)):
        centre = world.body_pose(name)[0]
        radius = float(world.model.geom(f"{name}_geom").size[0])
        c = tq.rotate_vector(centre - cam_pos, tq.qinverse(cam_q))  # marker centre in the optical frame
        projected = (k @ c)[:2] / c[2]
        seen = np.array(_marker_pixels(rgb, channel))
        assert np.linalg.norm(projected - seen) < 1.0, f"{name}: projected {projected}, seen at {seen}"
        # Depth at the nearest pixel: where that pixel's ray meets the sphere, along the optical axis.
        u, v = (int(round(x)) for x in projected)
        ray = np.linalg.solve(k, [u, v, 1.0])
        b, a = ray @ c, ray @ ray
        t = (b - np.sqrt(b * b - a * (c @ c - radius**2))) / a
        assert 0.8 < t < 1.3, f"{name}: marker should be ~1 m away, is {t:.3f} m"
        assert depth_m[v, u] == pytest.approx(t, abs=0.002), f"{name}: depth {depth_m[v, u]} vs true {t}"
    assert stop(out) == 0


def test_commands_pause_step_reset_and_outcome(processes: Any, probe: Probe) -> None:
    from std_srvs.srv import SetBool, Trigger

    from r2s2r_msgs.srv import ResetEpisode

    out = start_sim(
        processes,
        f"world:={MARKER_WORLD}",
        "real_time:=true",
        "cameras_enabled:=false",
        "policy_id:=test-policy",
    )
    js = probe.subscribe("joint_states")
    clock = probe.subscribe("clock")
    outcomes = probe.subscribe("episode_outcome")
    arm = probe.publisher("arm_command")
    grip = probe.publisher("gripper_command")
    wait_for(
        lambda: probe.count(js) and arm.get_subscription_count() and grip.get_subscription_count(),
        STARTUP_S,
        "joint states and the command subscriptions",
    )

    def pos() -> np.ndarray:
        return np.array(probe.last(js).position)

    home = pos()[:6]
    # A valid target is tracked.
    target = home.copy()
    target[0] = 0.5
    arm.publish(Float64MultiArray(data=target.tolist()))
    wait_for(lambda: abs(pos()[0] - 0.5) < 0.02, 20, "shoulder_pan to reach 0.5 rad")
    # NaN, inf and wrong-length commands are refused and never integrated.
    bad_nan = target.copy()
    bad_nan[1] = float("nan")
    arm.publish(Float64MultiArray(data=bad_nan.tolist()))
    arm.publish(Float64MultiArray(data=[0.1, 0.2]))
    grip.publish(Float64MultiArray(data=[float("inf")]))
    grip.publish(Float64MultiArray(data=[0.01, 0.02]))
    out.wait_for(r"refused arm command")
    out.wait_for(r"refused gripper command")
    seen_after = len(probe.msgs(js))
    wait_for(lambda: len(probe.msgs(js)) > seen_after + 100, 10, "more joint states")
    after = np.array([m.position for _, m in probe.msgs(js)[seen_after:]])
    assert np.all(np.isfinite(after))
    assert np.allclose(after[:, :6], target, atol=0.03), "the refused commands moved the arm"
    # Out-of-range values are clamped: gripper 0.2 -> 0.04 (fully open), not the 0.045 joint limit.
    grip.publish(Float64MultiArray(data=[0.0]))
    wait_for(lambda: pos()[6] < 0.005, 20, "the gripper to close")
    grip.publish(Float64MultiArray(data=[0.2]))
    out.wait_for(r"clamped gripper command")
    wait_for(
        lambda: abs(pos()[6] - 0.04) < 0.002 and abs(probe.last(js).velocity[6]) < 1e-3,
        20,
        "the gripper to settle at its clamped opening 0.04 m",
    )
    arm.publish(Float64MultiArray(data=[10.0, *target[1:]]))
    out.wait_for(r"clamped arm command")
    wait_for(lambda: pos()[0] > 2.85, 20, "shoulder_pan to move to its 2.9 rad limit")
    assert max(m.position[0] for _, m in probe.msgs(js)) < 2.9 + 0.01

    # Pause: no physics; step: exactly one control period (0.1 s), published with the returned stamp.
    assert probe.call("pause", SetBool.Request(data=True)).success

    def step() -> np.ndarray:
        resp = probe.call("step", Trigger.Request())
        assert resp.success, resp.message
        sec, nsec = re.fullmatch(r"stamp (\d+)\.(\d{9})", resp.message).groups()
        stamp = int(sec) * NS + int(nsec)
        msg = wait_for(
            lambda: next((m for _, m in reversed(probe.msgs(js)) if stamp_ns(m) == stamp), None),
            10,
            f"joint states stamped {stamp}",
        )
        return np.concatenate([msg.position, msg.velocity])

    def reset(seed: int) -> Any:
        resp = probe.call("reset_episode", ResetEpisode.Request(variation_seed=seed))
        assert resp.success, resp.message
        return resp

    r1 = reset(7)
    assert r1.world_id == "marker-test-v1" and len(r1.world_hash) == 64 and len(r1.variation_hash) == 64
    a1 = step()
    c1 = max(conv.time_to_ns(m.clock) for _, m in probe.msgs(clock))
    a2 = step()
    c2 = max(conv.time_to_ns(m.clock) for _, m in probe.msgs(clock))
    assert c2 - c1 == 100_000_000, "step must advance exactly one control period"
    r2 = reset(7)
    b1, b2 = step(), step()
    assert (r1.world_hash, r1.variation_hash) == (r2.world_hash, r2.variation_hash)
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    assert reset(8).variation_hash != r1.variation_hash
    refused = probe.call("reset_episode", ResetEpisode.Request(variation_seed=1, variation_config="x: 1"))
    assert not refused.success and "variation_config" in refused.message
    resp = probe.call("pause", SetBool.Request(data=False))
    assert resp.success
    assert not probe.call("step", Trigger.Request()).success, "step must refuse while running"

    # The outcome: published once per episode (timeout 1.5 s in this world), then held until the next reset.
    r9 = reset(9)
    first = wait_for(
        lambda: [m for _, m in probe.msgs(outcomes) if m.variation_seed == 9], 20, "the outcome"
    )[0]
    assert (first.world_id, first.world_hash, first.policy_id) == (
        "marker-test-v1",
        r9.world_hash,
        "test-policy",
    )
    assert not first.success and first.failure_reason == "timeout"
    assert first.duration.sec + first.duration.nanosec / NS == pytest.approx(1.5, abs=0.003)
    assert {m.name for m in first.metrics} >= {"object_to_target_m"}
    end = conv.time_to_ns(first.header.stamp)
    wait_for(
        lambda: max(conv.time_to_ns(m.clock) for _, m in probe.msgs(clock)) > end + 1_500_000_000,
        10,
        "1.5 s more of sim time",
    )
    assert len([m for _, m in probe.msgs(outcomes) if m.variation_seed == 9]) == 1
    reset(10)
    second = wait_for(lambda: [m for _, m in probe.msgs(outcomes) if m.variation_seed == 10], 20, "outcome 2")
    assert second[0].episode_index == first.episode_index + 1
    assert stop(out) == 0


def test_lockstep_waits_for_the_policy_ack(processes: Any, probe: Probe) -> None:
    out = start_sim(
        processes,
        f"world:={MARKER_WORLD}",
        "lockstep:=true",
        "real_time:=false",
        "camera_rate_hz:=10.0",
        "control_rate_hz:=10.0",
    )
    js = probe.subscribe("joint_states")
    clock = probe.subscribe("clock")
    frame_keys = ("color_image", "depth_image", "color_info", "depth_info")
    frame = [probe.subscribe(key, CAMERA, keep=3) for key in frame_keys]
    ack = probe.publisher("policy_heartbeat")
    wait_for(
        lambda: probe.count(js) and ack.get_subscription_count(), STARTUP_S, "joint states, ack subscriber"
    )

    def newest_clock() -> int:
        return max(conv.time_to_ns(m.clock) for _, m in probe.msgs(clock))

    def republished() -> tuple[int] | None:
        # The pending observation is the stamp published more than once: joint states at intermediate ticks
        # of the first period may still be arriving when the first message is seen.
        stamps = [stamp_ns(m) for _, m in probe.msgs(js)]
        repeated = [s for s in set(stamps) if stamps.count(s) > 1]
        return (max(repeated),) if repeated else None

    (obs,) = wait_for(republished, STARTUP_S, "the first observation, republished while the node waits")
    for i in range(3):
        # Without an ack the node republishes the same observation (every 0.5 s) and does not advance.
        n = sum(1 for _, m in probe.msgs(js) if stamp_ns(m) == obs)
        wait_for(
            lambda n=n, obs=obs: sum(1 for _, m in probe.msgs(js) if stamp_ns(m) == obs) > n,
            20,
            "the pending observation to be republished",
        )
        assert newest_clock() == obs, f"round {i}: /clock advanced without an ack"
        # The observation's images and camera infos were published before the node started waiting, and
        # are re-sent with the joint states (best effort: one may be lost, the policy must still get it).
        for name in frame:
            wait_for(
                lambda obs=obs, name=name: sum(stamp_ns(m) == obs for _, m in probe.msgs(name)) >= 2,
                20,
                f"the observation's {name} and its re-send",
            )
        ack.publish(conv.time_msg(obs - 1))  # an older stamp is not an ack for this observation
        ack.publish(conv.time_msg(obs))
        new = obs + 100_000_000
        wait_for(
            lambda new=new: any(stamp_ns(m) == new for _, m in probe.msgs(js)), 20, "the next observation"
        )
        obs = new
    out.wait_for(r"lockstep: waiting for the policy")
    assert stop(out) == 0


@pytest.mark.parametrize(
    ("param", "message"),
    [
        (
            "joint_state_rate_hz:=5000.0",
            r"parameter joint_state_rate_hz: .*allowed: a floating-point number in \[1.0, 1000.0\]",
        ),
        ("use_sim_time:=true", r"parameter use_sim_time: got true, allowed: false"),
        ("control_rate_hz:=15.0", r"parameter control_rate_hz: .*integer multiple of the world timestep"),
        ("world:=no-such-world", r"parameter world: unknown world 'no-such-world'"),
        ("seed:=abc", r"parameter seed: .*allowed: an integer"),
        ("render_profile:=pretty", r"parameter render_profile: got 'pretty', allowed: .*\['fast', 'full'\]"),
    ],
)
def test_invalid_parameters_stop_the_node(processes: Any, param: str, message: str) -> None:
    out = start_sim(processes, param)
    assert out.proc.wait(timeout=60) == 1
    out._thread.join(timeout=5.0)
    assert re.search(message, out.text()), out.text()
