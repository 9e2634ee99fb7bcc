"""Recorder benchmark: ``python -m r2s2r_capture.bench.recorder [--duration 10]`` (not a timed test).

Starts a synthetic publisher (a stand-in for a RealSense at 640x480 RGB + 16UC1 depth at 30 Hz and an arm
driver at 500 Hz joint states) and ``recorder_node`` as separate processes in an isolated DDS domain, then:

1. throughput: SIGINT after ``--duration`` s; compares each topic's sent count with the bag's count (drops),
   reports MB/s written and the recorder's CPU time;
2. crash loss: SIGKILL after ``--duration`` s; opens the unfinished bag and reports how much of the data sent
   before the kill is missing (messages and seconds);
3. player timing: replays the throughput bag with ``player_node`` (in a child process, rate 1, no
   subscribers) and reports the median and p99 of publish time minus scheduled time (ms; the publish time
   is taken when ``publish`` returns, the schedule is ``t0 + (t - start) / rate`` as the player computes it).

``python -m r2s2r_capture.bench.recorder publish --duration S`` runs only the synthetic publisher, printing
``SENT {json}`` at the end (used by the integration tests).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from r2s2r_sim.ros.dds import use_large_data_transport

from r2s2r_capture.bags.playback import PlayerConfig
from r2s2r_capture.bags.reader import BagReader

TOPICS = {"/camera/color/image_raw": 30.0, "/camera/depth/image_raw": 30.0, "/joint_states": 500.0}


def publish(duration: float, scale: float = 1.0) -> dict[str, int]:
    """Publish the synthetic streams for ``duration`` s; returns the sent count per topic."""
    import rclpy
    import rclpy.duration
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image, JointState

    use_large_data_transport()  # the stand-in camera uses the same Fast DDS fix as the sim node
    rclpy.init()
    node = rclpy.create_node("synthetic_sensors")
    qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
    rgb = Image(height=480, width=640, encoding="rgb8", step=640 * 3, data=bytes(640 * 480 * 3))
    depth = Image(height=480, width=640, encoding="16UC1", step=640 * 2, data=bytes(640 * 480 * 2))
    js = JointState(name=[f"joint_{i}" for i in range(7)], position=[0.0] * 7, velocity=[0.0] * 7)
    pubs = {t: node.create_publisher(Image if "image" in t else JointState, t, qos) for t in TOPICS}
    msgs = {"/camera/color/image_raw": rgb, "/camera/depth/image_raw": depth, "/joint_states": js}
    sent = dict.fromkeys(TOPICS, 0)
    # wait for the recorder to subscribe (it discovers every 0.5 s)
    t_wait = time.monotonic()
    while any(p.get_subscription_count() == 0 for p in pubs.values()) and time.monotonic() - t_wait < 10:
        time.sleep(0.05)
    time.sleep(0.3)
    t0 = time.monotonic()
    due = dict.fromkeys(TOPICS, t0)
    try:
        while (now := time.monotonic()) - t0 < duration:
            for topic, hz in TOPICS.items():
                if now >= due[topic]:
                    msg = msgs[topic]
                    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns(), 1_000_000_000)
                    pubs[topic].publish(msg)
                    sent[topic] += 1
                    due[topic] += 1.0 / (hz * scale)
            time.sleep(max(0.0, min(due.values()) - time.monotonic()))
    finally:
        print("SENT " + json.dumps(sent), flush=True)
        if rclpy.ok():
            for p in pubs.values():  # reliable: let the last fragments reach the recorder before exiting
                p.wait_for_all_acked(rclpy.duration.Duration(seconds=2.0))
        node.destroy_node()
        rclpy.try_shutdown()
    return sent


def _env() -> dict[str, str]:
    env = dict(
        os.environ,
        ROS_DOMAIN_ID=str(90 + os.getpid() % 10),
        ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
        PYTHONUNBUFFERED="1",
    )
    env.pop("ROS_LOCALHOST_ONLY", None)
    return env


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_once(out: Path, duration: float, kill: bool, storage: str = "mcap") -> dict[str, object]:
    """One recorder run; returns sent/bag counts and figures."""
    env = _env()
    rec = subprocess.Popen(
        [
            "recorder_node",
            "--ros-args",
            "-p",
            f"output:={out}",
            "-p",
            f"storage:={storage}",
            "-p",
            "topics:=[" + ",".join(f"'{t}'" for t in TOPICS) + "]",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    pub = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "r2s2r_capture.bench.recorder",
            "publish",
            "--duration",
            str(duration + (5 if kill else 0)),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    result: dict[str, object] = {"storage": storage, "duration_s": duration}
    if kill:
        time.sleep(duration + 3)  # publisher waits up to ~1 s for discovery, then publishes
        kill_ns = time.time_ns()
        cpu = _cpu_s(rec.pid)
        rec.send_signal(signal.SIGKILL)
        rec.wait()
        pub.send_signal(signal.SIGINT)
        pub_out = pub.communicate(timeout=30)[0]
    else:
        pub_out = pub.communicate(timeout=duration + 60)[0]
        time.sleep(0.5)
        cpu = _cpu_s(rec.pid)
        rec.send_signal(signal.SIGINT)
        rec_out = rec.communicate(timeout=60)[0]
        result["recorder_exit"] = rec.returncode
        result["recorder_summary"] = rec_out.strip().splitlines()[-1:] if rec_out else []
    sent = json.loads(next(line for line in pub_out.splitlines() if line.startswith("SENT "))[5:])
    with BagReader(out) as bag:
        counts = {t: bag.topics[t].message_count if t in bag.topics else 0 for t in TOPICS}
        last_ns = bag.end_ns or 0
        result["notes"] = bag.notes
    size = sum(p.stat().st_size for p in out.iterdir())
    result.update(sent=sent, bag=counts, bag_bytes=size, recorder_cpu_s=round(cpu, 2))
    if kill:
        result["loss_window_s"] = round((kill_ns - last_ns) / 1e9, 3)
    else:
        result["drops"] = {t: sent[t] - counts[t] for t in TOPICS}
        result["throughput_MB_s"] = round(size / 1e6 / duration, 1)
        result["recorder_cpu_pct"] = round(100 * cpu / (duration + 2), 1)
    return result


def player_timing(bag: Path) -> dict[str, float]:
    """Replay ``bag`` with a :class:`PlayerNode` in this process; the player's timing error figures (ms).

    The node's publishers and its reader are wrapped (nothing in the player changes): each publish is timed
    when it returns and compared with ``t0 + (t - start) / rate``, ``t0`` taken as the player starts a pass.
    """
    import numpy as np
    import rclpy

    from r2s2r_capture.ros.player_node import PlayerNode  # imports rclpy: only when this part runs

    errors: list[float] = []
    rclpy.init()
    try:
        node = PlayerNode(PlayerConfig(bag=bag))
        play_once = node._play_once

        def timed_play_once(reader, pubs, start):  # type: ignore[no-untyped-def]
            current = [0]
            read = reader.messages

            def messages(topics=None):  # type: ignore[no-untyped-def]
                for msg in read(topics):
                    current[0] = msg.timestamp_ns
                    yield msg

            t0 = time.monotonic()
            rate = node.config.rate

            class Timed:
                def __init__(self, pub: object) -> None:
                    self.pub = pub

                def publish(self, data: bytes) -> None:
                    self.pub.publish(data)  # type: ignore[attr-defined]
                    errors.append(time.monotonic() - (t0 + (current[0] - start) / 1e9 / rate))

            reader.messages = messages
            play_once(reader, {t: Timed(p) for t, p in pubs.items()}, start)

        node._play_once = timed_play_once  # type: ignore[method-assign]
        node.play()
        node.destroy_node()
    finally:
        rclpy.try_shutdown()
    ms = np.asarray(errors) * 1e3
    if not ms.size:
        return {"messages": 0}
    return {
        "messages": int(ms.size),
        "median_ms": round(float(np.median(ms)), 3),
        "p99_ms": round(float(np.percentile(ms, 99)), 3),
        "max_ms": round(float(ms.max()), 3),
    }


def run_player(bag: Path) -> dict[str, float]:
    """Player timing in a child process (its own rclpy context and DDS domain)."""
    out = subprocess.run(
        [sys.executable, "-m", "r2s2r_capture.bench.recorder", "play-timing", "--bag", str(bag)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    ).stdout
    line = next((x for x in out.splitlines() if x.startswith("TIMING ")), None)
    return json.loads(line[7:]) if line else {"error": out[-500:]}  # type: ignore[dict-item]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or only the synthetic publisher)."""
    parser = argparse.ArgumentParser(prog="bench_recorder", description=__doc__)
    parser.add_argument("mode", nargs="?", default="bench", choices=["bench", "publish", "play-timing"])
    parser.add_argument("--bag", type=Path, help="play-timing mode: the bag to replay")
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--scale", type=float, default=1.0, help="publisher rate factor (publish mode)")
    parser.add_argument("--out", default="out/bench_recorder.json", help="JSON report (overwritten)")
    ns = parser.parse_args(argv)
    if ns.mode == "publish":
        publish(ns.duration, ns.scale)
        return 0
    if ns.mode == "play-timing":
        print("TIMING " + json.dumps(player_timing(ns.bag)), flush=True)
        return 0
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["throughput"] = run_once(Path(tmp) / "bench", ns.duration, kill=False)
        results["player_timing"] = run_player(Path(tmp) / "bench")
        results["sigkill"] = run_once(Path(tmp) / "killed", ns.duration, kill=True)
    tp, sk = results["throughput"], results["sigkill"]
    print(f"{'topic':32} {'sent':>7} {'in bag':>7} {'drops':>6}")
    for t in TOPICS:
        print(f"{t:32} {tp['sent'][t]:>7} {tp['bag'][t]:>7} {tp['drops'][t]:>6}")  # type: ignore[index]
    print(f"throughput {tp['throughput_MB_s']} MB/s, recorder CPU {tp['recorder_cpu_pct']} % of one core")
    lost = {t: sk["sent"][t] - sk["bag"][t] for t in TOPICS}  # type: ignore[index]
    print(
        f"SIGKILL: bag holds {sk['bag']}; data up to {sk['loss_window_s']} s before the kill is missing; "
        f"sent-but-not-in-bag incl. after-kill sends: {lost}"
    )
    pt = results["player_timing"]
    print(
        f"player timing (publish - scheduled, {pt.get('messages')} messages): "
        f"median {pt.get('median_ms')} ms, p99 {pt.get('p99_ms')} ms, max {pt.get('max_ms')} ms"
    )
    Path(ns.out).parent.mkdir(parents=True, exist_ok=True)
    Path(ns.out).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
