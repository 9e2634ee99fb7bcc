"""Replay over real DDS between processes: recorded QoS reaches latched subscribers; no start race."""

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from r2s2r_capture.bags.reader import BagReader
from r2s2r_capture.bags.writer import BagWriter, TopicSpec, load_typestore
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

pytestmark = pytest.mark.integration
EDGE = Path(__file__).resolve().parents[1] / "data" / "bags" / "edge"

LATCHED_LISTENER = textwrap.dedent("""
    import json, sys, time, rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String
    from tf2_msgs.msg import TFMessage
    rclpy.init()
    node = rclpy.create_node("latched_listener")
    # tf2's static listener QoS (tf2_ros StaticListenerQoS): reliable, transient local, depth 100
    qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
    static, chatter = [], []
    def on_tf(m):
        for t in m.transforms:
            v = t.transform.translation
            static.append([t.header.frame_id, t.child_frame_id, v.x, v.y, v.z])
    node.create_subscription(TFMessage, "/tf_static", on_tf, qos)
    node.create_subscription(String, "/chatter", lambda m: chatter.append(m.data), qos)
    print("READY", flush=True)
    want_static, want_chatter = int(sys.argv[1]), int(sys.argv[2])
    end = time.monotonic() + 60  # bounded: a loaded machine can take long to start the player
    while time.monotonic() < end and (len(static) < want_static or len(chatter) < want_chatter):
        rclpy.spin_once(node, timeout_sec=0.05)
    print("GOT " + json.dumps({"static": static, "chatter": chatter}), flush=True)
    # A node shuts its context down itself: left to interpreter exit, DDS teardown can hang.
    node.destroy_node()
    rclpy.try_shutdown()
""")


def _got(processes, proc) -> dict:  # type: ignore[no-untyped-def]
    return json.loads(processes.wait_for_line(proc, "GOT ", timeout_s=90)[4:])


def test_compressed_bag_replay_reaches_transient_local_subscribers(processes, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """/tf_static keeps its recorded transient-local QoS; recorded-volatile /chatter latched by override."""
    overrides = tmp_path / "qos.yaml"
    overrides.write_text("/chatter: {durability: transient_local}\n")
    listener = processes.start([sys.executable, "-c", LATCHED_LISTENER, "1", "10"])
    assert listener.stdout.readline().strip() == "READY"
    player = processes.start(
        [
            "player_node",
            "--ros-args",
            "-p",
            f"bag:={EDGE / 'file_compressed'}",
            "-p",
            f"qos_overrides:={overrides}",
            "-p",
            "wait_for_subscribers:=2",  # both of the listener's subscriptions, bounded by wait_timeout_s
            "-p",
            "wait_timeout_s:=60.0",
        ]
    )
    log = player.communicate(timeout=120)[0]
    assert player.returncode == 0, log
    assert "/tf_static: reliable, transient_local, keep_last 1 (recorded)" in log
    assert "/chatter: reliable, transient_local, keep_last 1000 (override of recorded)" in log
    assert "/tf_static: published 1" in log and "/chatter: published 10" in log
    got = _got(processes, listener)
    assert got["static"] == [["world", "camera_link", 0.5, -0.25, 1.25]]
    assert got["chatter"] == [f"m{i}" for i in range(10)]


def test_recorded_graph_replay_gives_a_static_listener_its_transforms(processes) -> None:  # type: ignore[no-untyped-def]
    """The committed recording of the real-mode graph: /tf_static reaches a tf2-style static listener."""
    bag = EDGE.parent / "real_emulated_2ep"
    with BagReader(bag) as reader:
        recorded = [
            (t.header.frame_id, t.child_frame_id)
            for msg in reader.messages(["/tf_static"])
            for t in reader.deserialize(msg).transforms
        ]
    assert ("world", "base_link") in recorded
    listener = processes.start([sys.executable, "-c", LATCHED_LISTENER, str(len(recorded)), "0"])
    assert listener.stdout.readline().strip() == "READY"
    player = processes.start(
        [
            "player_node",
            "--ros-args",
            "-p",
            f"bag:={bag}",
            "-p",
            "topics:=['/tf_static']",
            "-p",
            "wait_for_subscribers:=1",
            "-p",
            "wait_timeout_s:=60.0",
        ]
    )
    log = player.communicate(timeout=120)[0]
    assert player.returncode == 0, log
    assert "/tf_static: published 1" in log
    pairs = [(parent, child) for parent, child, *_ in _got(processes, listener)["static"]]
    assert pairs == recorded


def test_wait_for_subscribers_times_out_naming_what_it_waited_for(processes) -> None:  # type: ignore[no-untyped-def]
    player = processes.start(
        [
            "player_node",
            "--ros-args",
            "-p",
            f"bag:={EDGE / 'message_compressed'}",
            "-p",
            "wait_for_subscribers:=1",
            "-p",
            "wait_timeout_s:=1.0",
        ]
    )
    log = player.communicate(timeout=60)[0]
    assert player.returncode == 1, log
    assert "waited 1 s for 1 subscription(s) on the replayed topics" in log
    assert "0 matched; not replaying" in log


RELIABLE_LISTENER = textwrap.dedent("""
    import json, sys, time, rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String
    rclpy.init()
    node = rclpy.create_node("race_listener")
    got = []
    node.create_subscription(String, "/chatter", lambda m: got.append(m.data),
                             QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE))
    print("READY", flush=True)
    want = int(sys.argv[1])
    end = time.monotonic() + 90
    while time.monotonic() < end and len(got) < want:
        rclpy.spin_once(node, timeout_sec=0.05)
    print("GOT " + json.dumps({"got": got}), flush=True)
""")
# A busy core that ends on its own, at the lowest priority: it takes every idle cycle from this test's
# processes, not the cores the rest of a parallel suite needs (a burner at normal priority had starved the
# suite's other DDS graphs into timeouts), and one the teardown missed must not outlive the test.
BURNER = "import os, time\nos.nice(19)\nend = time.monotonic() + 150\nwhile time.monotonic() < end: pass"


@pytest.mark.parametrize("wait", ["wait_for_subscribers"])
def test_no_start_race_on_a_loaded_machine(processes, tmp_path: Path, wait: str) -> None:  # type: ignore[no-untyped-def]
    """A reliable subscriber already running gets every message of the first second, with every core busy.

    Told how many subscriptions to wait for, the player cannot start early. Its default (wait for the
    subscriptions discovery has shown it within a window) cannot promise that on a loaded machine, where
    discovery itself can take longer than the window; the README says so.
    """
    ts = load_typestore()
    string = ts.types["std_msgs/msg/String"]
    never = QosTime(0, 0)
    recorded = Qos(
        QosHistory.UNKNOWN,
        0,
        QosReliability.RELIABLE,
        QosDurability.VOLATILE,
        never,
        never,
        QosLiveliness.AUTOMATIC,
        never,
        False,
    )
    bag = tmp_path / "race"
    n = 150  # 1.5 s at 100 Hz
    with BagWriter(bag, typestore=ts) as writer:
        h = writer.add_topic(
            TopicSpec(topic="/chatter", msgtype="std_msgs/msg/String", offered_qos_profiles=(recorded,))
        )
        for i in range(n):
            writer.write(
                h,
                10**9 + i * 10_000_000,
                bytes(ts.serialize_cdr(string(data=f"m{i}"), "std_msgs/msg/String")),
            )
    listener = processes.start([sys.executable, "-c", RELIABLE_LISTENER, str(n)])
    assert listener.stdout.readline().strip() == "READY"
    # Then a CPU burner on every core until the player is done (each ends on its own after 150 s at most).
    burners = [processes.start([sys.executable, "-c", BURNER]) for _ in range(os.cpu_count() or 2)]
    player = processes.start(
        [
            "player_node",
            "--ros-args",
            "-p",
            f"bag:={bag}",
            *(
                ["-p", "wait_for_subscribers:=1", "-p", "wait_timeout_s:=60.0"]
                if wait != "visible subscribers"
                else []
            ),
        ]
    )
    try:
        log = player.communicate(timeout=120)[0]
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert player.returncode == 0, log
    got = _got(processes, listener)["got"]
    first_second = [f"m{i}" for i in range(100)]
    lost = sorted(set(first_second) - set(got), key=lambda s: int(s[1:]))
    assert not lost, f"lost {len(lost)} of the first second's 100 messages: {lost[:10]}...\n{log}"
    assert got == [f"m{i}" for i in range(n)]
