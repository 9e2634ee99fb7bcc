"""The committed real-mode bags (tests/data/bags, made by make_bags.py on the EMULATED HARDWARE) replay in CI.

* they open, and every message deserialises;
* the reference policy's perception finds the cube in the recorded frames where the emulator's stand-in
  ground truth (``/emulated_hardware/ground_truth/cube_pose``, stamped like each frame) says it was;
* the evaluator's outcome reconstruction rebuilds the recorded episodes from ``/r2s2r/episode_outcome``;
* (integration) played by our player and recorded by our recorder, every message comes back byte for byte.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import cv2
import numpy as np
import pytest
from r2s2r_capture.bags.reader import BagReader
from r2s2r_eval.episodes.evaluation import outcomes_from_records
from r2s2r_eval.nodes.conversions import (
    TfTree,
    camera_info_to_k,
    depth_image_to_metres,
    rgb_image_to_array,
)
from r2s2r_eval.policies.reference.perception import estimate_cube
from r2s2r_eval.policies.reference.policy import scene_model
from r2s2r_sim.worlds import world_path

REPO = Path(__file__).resolve().parents[2]
BAGS = REPO / "tests" / "data" / "bags"
BAG = BAGS / "real_emulated_2ep"


def _camera_topic(suffix: str) -> str:
    """The bag's camera topic ending in ``suffix``, under whichever interface profile it was recorded."""
    with BagReader(BAG) as bag:
        found = [t for t in bag.topics if t.endswith(suffix)]
    assert len(found) == 1, f"{BAG}: topics ending in {suffix}: {found}"
    return found[0]


COLOR, DEPTH = _camera_topic("/color/image_raw"), _camera_topic("/aligned_depth_to_color/image_raw")
COLOR_INFO = _camera_topic("/color/camera_info")
TRUTH = "/emulated_hardware/ground_truth/cube_pose"
OUTCOME = "/r2s2r/episode_outcome"
# The policy ignores the lens distortion D (it reads K only): a few mm of error at the image centre.
MAX_ERROR_M = 0.02


def _stamp(msg: object) -> tuple[int, int]:
    s = msg.header.stamp  # type: ignore[attr-defined]
    return int(s.sec), int(s.nanosec)


def test_committed_bags_open_and_stay_small() -> None:
    size = sum(p.stat().st_size for p in BAGS.rglob("*") if p.is_file())
    assert size <= 5 * 2**20, f"{BAGS} holds {size} bytes"
    with BagReader(BAG) as bag:
        assert not bag.notes and not bag.undeserializable
        counts = {t: i.message_count for t, i in bag.topics.items()}
        for topic in (
            COLOR,
            DEPTH,
            COLOR_INFO,
            TRUTH,
            OUTCOME,
            "/joint_states",
            "/tf",
            "/tf_static",
            "/forward_position_controller/commands",
            "/gripper_controller/commands",
        ):
            assert counts.get(topic, 0) > 0, counts
        assert sum(1 for _ in bag.messages()) == bag.message_count
        for msg in bag.messages():
            bag.deserialize(msg)
        # The recorder stored the publishers' QoS in the metadata (ros2 bag record does).
        qos = {
            e["topic_metadata"]["name"]: e["topic_metadata"]["offered_qos_profiles"]
            for e in bag.metadata["topics_with_message_count"]
        }  # type: ignore[index]
        assert all(qos.values()), qos


def _frames(bag: BagReader) -> list[dict[str, object]]:
    """Per colour frame: the messages with its stamp, decoded by rclpy as the policy node receives them."""
    from geometry_msgs.msg import PoseStamped  # rclpy types only where needed
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import CameraInfo, Image
    from tf2_msgs.msg import TFMessage

    classes = {COLOR: Image, DEPTH: Image, COLOR_INFO: CameraInfo, TRUTH: PoseStamped}
    by_stamp: dict[tuple[int, int], dict[str, object]] = defaultdict(dict)
    tf = TfTree()
    for msg in bag.messages(["/tf_static", *classes]):
        if msg.topic == "/tf_static":
            tf.add(deserialize_message(msg.data, TFMessage))
        else:
            m = deserialize_message(msg.data, classes[msg.topic])
            by_stamp[_stamp(m)][msg.topic] = m
    frames = [dict(f, tf=tf) for f in by_stamp.values() if COLOR in f]
    assert frames and all(len(f) == 5 for f in frames), [sorted(f) for f in frames]
    return frames


def test_perception_finds_the_cube_where_the_recording_says_it_was() -> None:
    scene = scene_model(world_path("tabletop-pick-v1"))
    with BagReader(BAG) as bag:
        frames = _frames(bag)
    errors, undistorted_errors = [], []
    for f in frames:
        info = f[COLOR_INFO]
        k = camera_info_to_k(info)  # type: ignore[arg-type]
        rgb = rgb_image_to_array(f[COLOR])  # type: ignore[arg-type]
        depth = depth_image_to_metres(f[DEPTH])  # type: ignore[arg-type]
        pose = f["tf"].lookup("world", f[COLOR].header.frame_id)  # type: ignore[attr-defined]
        p = f[TRUTH].pose.position  # type: ignore[attr-defined]
        truth = np.array([p.x, p.y, p.z])
        found = estimate_cube(rgb, depth, k, pose, scene.cube_colour, scene.cube_half_size)
        assert found is not None, "cube not found in a recorded frame"
        errors.append(float(np.linalg.norm(found.position[:2] - truth[:2])))
        # What the policy would see if it undistorted with the recorded D (it does not).
        d = np.asarray(info.d, dtype=np.float64)  # type: ignore[attr-defined]
        rgb_u = cv2.undistort(rgb, k, d)
        depth_u = cv2.undistort(np.nan_to_num(depth, nan=0.0), k, d)
        depth_u[depth_u <= 0] = np.nan
        found_u = estimate_cube(rgb_u, depth_u, k, pose, scene.cube_colour, scene.cube_half_size)
        if found_u is not None:
            undistorted_errors.append(float(np.linalg.norm(found_u.position[:2] - truth[:2])))
    print(
        f"cube xy error vs ground truth: distorted (as the policy sees) {np.round(errors, 4).tolist()} m; "
        f"after undistortion with D {np.round(undistorted_errors, 4).tolist()} m"
    )
    assert max(errors) < MAX_ERROR_M, errors


def test_evaluator_rebuilds_the_recorded_outcomes() -> None:
    with BagReader(BAG) as bag:
        outcomes = outcomes_from_records(bag.deserialize(m) for m in bag.messages([OUTCOME]))
        done = [bag.deserialize(m).data for m in bag.messages(["/policy_node/episode_done"])]
    assert [o.seed for o in outcomes] == [0, 1]
    assert [o.episode_index for o in outcomes] == [0, 1]
    for o in outcomes:
        assert o.world_id == "tabletop-pick-v1" and len(o.world_hash) == 64
        assert o.reason in ("success", "not_achieved", "object_dropped")
        assert o.success == (o.reason == "success")
        assert "object_to_target_m" in o.metrics and 1.0 < o.duration_s < 120.0
    assert done == [0, 1]  # the policy's done signal preceded each judged outcome


def test_outcome_reconstruction_lets_the_last_record_of_a_seed_decide() -> None:
    from types import SimpleNamespace as NS

    def outcome(seed: int, success: bool, reason: str) -> NS:
        return NS(
            variation_seed=seed,
            episode_index=0,
            policy_id="p",
            world_id="w",
            world_hash="h",
            success=success,
            failure_reason=reason,
            duration=NS(sec=1, nanosec=500_000_000),
            metrics=[NS(name="m", value=1.0)],
            header=NS(stamp=NS(sec=2, nanosec=0)),
        )

    rebuilt = outcomes_from_records(
        [outcome(3, False, "policy_error: x"), outcome(3, False, "not_achieved"), outcome(4, True, "")]
    )
    assert [(o.seed, o.success, o.reason, o.duration_s) for o in rebuilt] == [
        (3, False, "not_achieved", 1.5),
        (4, True, "success", 1.5),
    ]


@pytest.mark.integration
def test_player_output_recorded_again_is_byte_identical(processes, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "again"
    with BagReader(BAG) as bag:
        topics = sorted(bag.topics)
        original: dict[str, list[bytes]] = defaultdict(list)
        for msg in bag.messages():
            original[msg.topic].append(msg.data)
    rec = processes.start(
        [
            "recorder_node",
            "--ros-args",
            "-p",
            f"output:={out}",
            "-p",
            "topics:=[" + ",".join(f"'{t}'" for t in topics) + "]",
        ]
    )
    play = processes.start(
        [
            sys.executable,
            "-m",
            "r2s2r_capture.ros.player_node",
            "--ros-args",
            "-p",
            f"bag:={BAG}",
            "-p",
            # The recorder subscribes only once it has seen the player's publishers, so the player's own
            # discovery window cannot promise that every topic is matched: ask for one per topic.
            f"wait_for_subscribers:={len(topics)}",
        ]
    )
    log = play.communicate(timeout=120)[0]
    assert play.returncode == 0, log
    # The player waited for every message to be acknowledged; the recorder takes what arrived before closing.
    rec.send_signal(2)
    rec_log = rec.communicate(timeout=60)[0]
    assert rec.returncode == 0, rec_log
    again: dict[str, list[bytes]] = defaultdict(list)
    with BagReader(out) as bag:
        for msg in bag.messages():
            again[msg.topic].append(msg.data)
    for topic in topics:
        assert len(again[topic]) == len(original[topic]), (topic, log, rec_log)
        assert again[topic] == original[topic], f"{topic}: replayed bytes differ"
