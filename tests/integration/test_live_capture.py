"""Live capture over DDS against the emulated hardware node in its own process, then real2sim on the bag.

The node serves the capture variant of the pick world (the board as a mocap body) with its EMULATED-ONLY
board stand-in; ``r2s2r capture --yes`` runs the phases in another process (6 board views, the board on
the flange through the hand-eye poses, 1 RGB-D frame, a 4 s excitation inside the envelope).
real2sim must then find the camera within a few mm and tenths of a degree of the profile's truth and the
objects within 10 mm of the emulated scene.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed; run `make setup`")
os.environ.setdefault("MUJOCO_GL", "egl")

from r2s2r_capture.bags.reader import BagReader  # noqa: E402
from r2s2r_capture.bench import random_profile as R  # noqa: E402
from r2s2r_capture.bench import real2sim as B  # noqa: E402
from r2s2r_capture.procedures.capture_config import CAPTURE_BOARD, PHASE_TOPIC, topic_names  # noqa: E402
from r2s2r_capture.procedures.emulated_board import BOARD_BODY, board_world  # noqa: E402
from r2s2r_capture.procedures.session import scene_truth  # noqa: E402
from r2s2r_capture.real2sim.pipeline import Real2SimConfig, real2sim  # noqa: E402
from r2s2r_capture.sysid.joint_motion import read_joint_motion, reference_topic  # noqa: E402
from r2s2r_sim.hardware.emulated_arm import EmulatedArm  # noqa: E402
from r2s2r_sim.hardware.profile import load_hardware_profile  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

PROFILE = R.IDEAL_PROFILE
CAPTURE_S = 400  # the whole capture on a loaded 2-core machine; it takes about a minute alone


def _capture(processes: Any, r2s2r_exe: str, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    envelope = tmp_path / "envelope.yaml"
    # Joint states cross DDS between two Python processes on a loaded machine, and the stand-in's physics
    # may fall behind the wall clock there (0.5-1 s gaps seen with the rest of the suite beside it): the
    # default bounds (50 ms staleness, 0.2 rad tracking, 1 rad/s measured) are for a driver on its own cores;
    # the stand-in skipping ahead to catch the wall clock up is a burst of speed of its servos (1.8 rad/s
    # seen; the plan stays under 0.6 rad/s, and the monitor's own tests are below).
    envelope.write_text(
        "envelope:\n  state_timeout_s: 5.0\n  tracking_error_rad: 0.5\n  velocity_cap_rad_s: 3.0\n",
        encoding="utf-8",
    )
    args = [
        r2s2r_exe, "capture", "--out", str(tmp_path / "bag"), "--yes", "--board-views", "6",
        "--scene-frames", "1", "--excitation-s", "4", "--envelope", str(envelope), *extra,
    ]  # fmt: skip
    return subprocess.run(  # list arguments, no shell
        args, env=processes.env, text=True, capture_output=True, timeout=CAPTURE_S, check=False
    )


def _start_cell(processes: Any, tmp_path: Path, *params: str) -> Path:
    world = board_world("tabletop-pick-v1", CAPTURE_BOARD, tmp_path)
    args = ["-p", f"world:={world}", "-p", f"profile:={PROFILE}", "-p", f"capture_board:={BOARD_BODY}"]
    processes.start(["emulated_hardware_node", "--ros-args", *args, *[a for p in params for a in ("-p", p)]])
    return world


@pytest.fixture
def board_cell(tmp_path: Path, processes: Any) -> Path:
    """The emulated hardware node serving the board variant of the pick world, with the board stand-in."""
    return _start_cell(processes, tmp_path)


def test_live_capture_then_real2sim_finds_camera_and_objects(
    board_cell: Path, processes: Any, r2s2r_exe: str, tmp_path: Path
) -> None:
    run = _capture(processes, r2s2r_exe, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "EMULATED-ONLY stand-in" in run.stdout

    bag = tmp_path / "bag"
    names = topic_names("camera")
    counts: dict[str, int] = {}
    marks = []
    with BagReader(bag) as reader:
        for m in reader.messages():
            counts[m.topic] = counts.get(m.topic, 0) + 1
            if m.topic == PHASE_TOPIC:
                marks.append(json.loads(reader.deserialize(m).data))
    # The camera's pose by hand-eye calibration (the default): the board on the flange, one frame per pose.
    views = [m for m in marks if m["phase"] == "hand_eye" and m["event"] == "start" and "index" in m]
    assert len(views) >= 5, marks
    assert not any(m["phase"] == "board_known_pose" for m in marks)
    assert all(len(m["q"]) == len(m["joints"]) == 6 for m in views)
    # One colour frame per view taken, depth only in the scene phase, joint states and commands throughout.
    assert counts[names["color_image"][0]] == 6 + len(views) + 1
    assert counts[names["depth_image"][0]] == 1
    assert counts[names["arm_command"][0]] > 4 * 100
    assert counts[names["joint_states"][0]] > 100
    phases = [(m["phase"], m["event"]) for m in marks]
    assert phases[:2] == [("board_intrinsics", "start"), ("board_intrinsics", "end")]
    assert phases[-4:] == [
        ("scene", "start"),
        ("scene", "end"),
        ("excitation", "start"),
        ("excitation", "end"),
    ]

    result = real2sim([bag], tmp_path / "identified", config=Real2SimConfig(max_iters=5, report=False))
    profile = load_hardware_profile(PROFILE)
    truth = scene_truth(EmulatedArm(board_cell, profile, seed=0))
    errors = B.compare(result, profile, truth)
    assert errors["camera_position_mm"] < 5.0, errors
    assert errors["camera_rotation_deg"] < 0.3, errors
    assert errors["objects"], f"no object matched the scene: {result.objects}"
    for body, err in errors["objects"].items():
        assert err["position_mm"] < 10.0, (body, err)
    # The excitation reached the bag as commands the arm followed.
    motion = result.sysid
    assert np.isfinite(list(motion["fitted"].values())).all()


def test_live_capture_refuses_an_excitation_outside_the_envelope_before_the_board_phases(
    board_cell: Path, processes: Any, r2s2r_exe: str, tmp_path: Path
) -> None:
    envelope = tmp_path / "tight.yaml"
    envelope.write_text("envelope:\n  velocity_cap_rad_s: 0.05\n  state_timeout_s: 5.0\n", encoding="utf-8")
    run = _capture(processes, r2s2r_exe, tmp_path, "--envelope", str(envelope))
    assert run.returncode == 2, run.stdout + run.stderr
    assert "refused before anything moved" in run.stderr
    assert "velocity_cap_rad_s" in run.stderr
    assert "board_intrinsics" not in run.stdout  # no board view was asked for


def test_ctrl_c_in_the_excitation_leaves_the_arm_holding_and_the_bag_valid(
    board_cell: Path, processes: Any, tmp_path: Path
) -> None:
    envelope = tmp_path / "envelope.yaml"
    envelope.write_text(
        "envelope:\n  state_timeout_s: 5.0\n  tracking_error_rad: 0.5\n  velocity_cap_rad_s: 3.0\n",
        encoding="utf-8",
    )
    bag = tmp_path / "bag"
    proc = processes.start(
        [
            "r2s2r",
            "capture",
            "--out",
            str(bag),
            "--yes",
            "--board-views",
            "3",
            "--scene-frames",
            "1",
            "--excitation-s",
            "20",
            "--envelope",
            str(envelope),
            "--extrinsics",
            "known-pose",  # the quicker way to the excitation
        ]  # fmt: skip
    )
    processes.wait_for_line(proc, "scene:", timeout_s=CAPTURE_S)  # the excitation comes next
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130

    names = topic_names("camera")
    commands, states, marks = [], [], []
    with BagReader(bag) as reader:  # closed and valid: it opens and reads to the end
        for m in reader.messages():
            if m.topic == names["arm_command"][0]:
                commands.append(np.array(reader.deserialize(m).data))
            elif m.topic == names["joint_states"][0]:
                js = reader.deserialize(m)
                states.append(dict(zip(js.name, js.position, strict=True)))
            elif m.topic == PHASE_TOPIC:
                marks.append(json.loads(reader.deserialize(m).data)["phase"])
    assert {"board_intrinsics", "board_known_pose", "scene"} <= set(marks)
    assert "excitation" not in marks or marks.count("excitation") == 1  # never ended: it was interrupted
    # The last command sent is the hold: where the arm was measured, not where the plan was going.
    arm = EmulatedArm(board_cell, load_hardware_profile(PROFILE), seed=0).world.arm_joint_names
    measured = np.array([states[-1][n] for n in arm])
    assert commands, "no hold command was sent"
    np.testing.assert_allclose(commands[-1], measured, atol=0.05)


def test_live_capture_through_the_trajectory_controller_of_a_driver_profile(
    processes: Any, r2s2r_exe: str, tmp_path: Path
) -> None:
    profile = "ur_robot_driver"  # command: trajectory (scaled_joint_trajectory_controller)
    _start_cell(processes, tmp_path, f"interface:={profile}")
    run = _capture(
        processes,
        r2s2r_exe,
        tmp_path,
        "--interface",
        profile,
        "--board-views",
        "3",
        "--extrinsics",
        "known-pose",
    )
    assert run.returncode == 0, run.stdout + run.stderr
    window = []
    with BagReader(tmp_path / "bag") as reader:
        for m in reader.messages([PHASE_TOPIC]):
            if json.loads(reader.deserialize(m).data)["phase"] == "excitation":
                window.append(m.timestamp_ns * 1e-9)
    joints = ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3")
    motion = read_joint_motion(tmp_path / "bag", joints, window=(window[0], window[-1]), interface=profile)
    # The commands are the controller's own reference, read back from the wire's bytes in the bag; the arm
    # followed it: it moved as far as the reference did.
    assert motion is not None and motion.source == reference_topic(profile), motion and motion.source
    np.testing.assert_allclose(np.ptp(motion.q, axis=0), np.ptp(motion.q_cmd, axis=0), rtol=0.25)
    assert np.ptp(motion.q_cmd, axis=0).min() > 0.2
