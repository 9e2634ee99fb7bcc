"""Regenerate the committed real-mode bags in this folder from the EMULATED HARDWARE (not a robot).

Usage (from the repository root, after ``source env.sh``; about 2 minutes, needs rendering)::

    python tests/data/bags/make_bags.py            # refuses to overwrite; --force replaces the outputs

What it does, reproducibly (fixed seeds 0 and 1, the shipped default hardware profile):

1. Starts ``r2s2r record`` (our recorder_node, MCAP) on the driver topics, the commands, the episode
   outcome, the policy's done signal and the emulator's STAND-IN ground truth
   ``/emulated_hardware/ground_truth/cube_pose`` (real hardware has no such topic).
2. Runs the world graph exactly as ``r2s2r launch world mode:=real emulate_hardware:=true episodes:=2``
   resolves it (same executables and parameters), plus ``ground_truth:=true`` for the emulator and the
   reference policy (its ``done`` property ends an episode when the script is done). The evaluator
   resets and judges through the emulator's stand-in services and publishes
   each judged outcome on ``/r2s2r/episode_outcome``.
3. Learns the interface signature of that FULL recording (all rates as recorded) ->
   ``real_emulated_signature.yaml``, the reference of the signature gate.
4. Keeps the committed bag small (<= 5 MB): ``real_emulated_2ep/`` holds a subset of the recorded messages,
   byte for byte (no message is re-encoded): per episode ONE colour + depth frame (the first after the
   episode's reset + 0.5 s, when the arm is home and the policy perceives) with its two camera infos;
   joint states decimated to 25 Hz, /tf to 25 Hz; every command, tf_static, robot description,
   ground-truth pose, done signal and episode outcome.  Rates in this subset are therefore NOT the
   hardware's: use the signature file.  Record on a quiet machine: the signature's rates are what the
   emulator sustained during the recording.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from r2s2r_capture.bags.reader import BagReader
from r2s2r_capture.bags.signature import signature_of_bag
from r2s2r_capture.bags.writer import BagWriter, TopicSpec
from r2s2r_eval.episodes.evaluation import outcomes_from_records
from r2s2r_sim.graph.launcher import Launcher
from r2s2r_sim.graph.node_graph import load_graph, resolve
from r2s2r_sim.interface import load_interface
from rosbags.rosbag2.metadata import parse_qos

HERE = Path(__file__).resolve().parent
BAG_NAME = "real_emulated_2ep"
SIGNATURE_NAME = "real_emulated_signature.yaml"
EPISODES = 2
MAX_COMMITTED_BYTES = 5 * 2**20
GROUND_TRUTH = "/emulated_hardware/ground_truth/cube_pose"
OUTCOME = "/r2s2r/episode_outcome"
# Names of the default interface profile (realsense2_camera's Jazzy conventions), camera "camera".
IFACE = load_interface()
COLOR, DEPTH = IFACE.topic("color_image", "camera"), IFACE.topic("depth_image", "camera")
COLOR_INFO, DEPTH_INFO = IFACE.topic("color_info", "camera"), IFACE.topic("depth_info", "camera")
TOPICS = [
    IFACE.topic("joint_states"),
    IFACE.topic("arm_command"),
    IFACE.topic("gripper_command"),
    COLOR,
    COLOR_INFO,
    DEPTH,
    DEPTH_INFO,
    IFACE.topic("tf"),
    IFACE.topic("tf_static"),
    IFACE.topic("robot_description"),
    OUTCOME,
    "/policy_node/episode_done",
    GROUND_TRUTH,
]
DECIMATE_HZ = {"/joint_states": 25.0, "/tf": 25.0}
FRAME_AFTER_RESET_S = 0.5


def record_full(out: Path, results: Path, env: dict[str, str]) -> None:
    """Record two real-mode episodes on the emulated hardware into ``out`` (full rates)."""
    rec = subprocess.Popen(
        ["r2s2r", "record", "-o", str(out), *TOPICS],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    time.sleep(3.0)
    given = {
        "mode": "real",
        "emulate_hardware": "true",
        "episodes": str(EPISODES),
        "seed": "0",
        "results": str(results),
        "policy": "reference",
    }
    nodes = []
    for node in resolve(load_graph("world"), given):
        if node.name == "emulated_hardware":
            node = dataclasses.replace(node, parameters={**node.parameters, "ground_truth": True})
        nodes.append(node)
    code = Launcher(nodes, env=env).run()
    time.sleep(1.0)
    rec.send_signal(signal.SIGINT)
    log = rec.communicate(timeout=120)[0].decode()
    print(log[-2000:])
    if code != 0 or rec.returncode != 0:
        raise SystemExit(f"make_bags: graph exit {code}, recorder exit {rec.returncode}")


def decimate(full: Path, out: Path) -> None:
    """Write the small committed subset of ``full`` to ``out`` (messages copied byte for byte)."""
    with BagReader(full) as bag:
        outcomes = outcomes_from_records(bag.deserialize(m) for m in bag.messages([OUTCOME]))
        if len(outcomes) != EPISODES:
            raise SystemExit(f"make_bags: expected {EPISODES} episode outcomes, found {len(outcomes)}")
        # Episode k ran from its reset (end - duration) to its outcome; take one frame after each reset.
        wanted_after = [o.stamp_s - o.duration_s + FRAME_AFTER_RESET_S for o in outcomes]
        keep_stamps: set[tuple[int, int]] = set()
        for msg in bag.messages([COLOR]):
            m = bag.deserialize(msg)
            t = m.header.stamp.sec + m.header.stamp.nanosec * 1e-9
            if wanted_after and t >= wanted_after[0]:
                keep_stamps.add((m.header.stamp.sec, m.header.stamp.nanosec))
                wanted_after.pop(0)
        start = outcomes[0].stamp_s - outcomes[0].duration_s - 1.0
        qos = {
            e["topic_metadata"]["name"]: parse_qos(e["topic_metadata"].get("offered_qos_profiles") or "")
            for e in (bag.metadata or {}).get("topics_with_message_count", [])
        }
        last: dict[str, int] = {}
        with BagWriter(out) as writer:
            handles = {
                t: writer.add_topic(
                    TopicSpec(topic=t, msgtype=i.msgtype, offered_qos_profiles=tuple(qos.get(t, ())))
                )
                for t, i in sorted(bag.topics.items())
            }
            for msg in bag.messages():
                if msg.topic not in ("/tf_static", "/robot_description") and msg.timestamp_ns < start * 1e9:
                    continue
                if msg.topic in (COLOR, DEPTH, COLOR_INFO, DEPTH_INFO):
                    stamp = bag.deserialize(msg).header.stamp
                    if (stamp.sec, stamp.nanosec) not in keep_stamps:
                        continue
                elif msg.topic in DECIMATE_HZ:
                    period = int(1e9 / DECIMATE_HZ[msg.topic])
                    if msg.timestamp_ns - last.get(msg.topic, -period) < period:
                        continue
                    last[msg.topic] = msg.timestamp_ns
                writer.write(handles[msg.topic], msg.timestamp_ns, msg.data)


def main() -> int:
    """Regenerate the bag and the signature in this folder."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--force", action="store_true", help="replace existing outputs")
    parser.add_argument("--keep", type=Path, help="also keep the full recording at this path")
    ns = parser.parse_args()
    bag_out, sig_out = HERE / BAG_NAME, HERE / SIGNATURE_NAME
    if (bag_out.exists() or sig_out.exists()) and not ns.force:
        raise SystemExit(f"make_bags: {bag_out} or {sig_out} exists; pass --force to replace them")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")]))
    env.setdefault("MUJOCO_GL", "egl")
    with tempfile.TemporaryDirectory(prefix="r2s2r-make-bags-") as tmp:
        full = Path(tmp) / "full"
        record_full(full, Path(tmp) / "results.sqlite", env)
        signature = signature_of_bag(full)
        signature["source"] = "make_bags.py: full recording of real-mode episodes on the emulated hardware"
        if bag_out.exists():
            shutil.rmtree(bag_out)
        decimate(full, bag_out)
        sig_out.write_text(yaml.safe_dump(signature, sort_keys=False, default_flow_style=None, width=110))
        if ns.keep:
            shutil.copytree(full, ns.keep)
    size = sum(p.stat().st_size for p in HERE.rglob("*") if p.is_file())
    print(f"make_bags: wrote {bag_out} and {sig_out}; folder {size / 2**20:.2f} MiB")
    if size > MAX_COMMITTED_BYTES:
        raise SystemExit(f"make_bags: {HERE} holds {size} bytes, more than {MAX_COMMITTED_BYTES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
