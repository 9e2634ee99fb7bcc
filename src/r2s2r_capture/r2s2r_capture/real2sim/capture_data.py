"""What ``r2s2r real2sim`` reads from capture bag(s), and the check that they hold enough of it.

The bag(s) are read with :class:`~r2s2r_capture.bags.reader.BagReader`; phases are cut by the
``/r2s2r/capture/phase`` markers (:mod:`r2s2r_capture.procedures.session`).  All inputs are checked here,
before any slow stage: no board views, no board at a known pose, too few RGB-D frames, or a missing or
static excitation is an error saying what to record.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from r2s2r_capture.bags.reader import BagReader
from r2s2r_capture.errors import BagError, CalibrationError, IdentificationError, ReconstructionError
from r2s2r_capture.procedures.session import PHASE_TOPIC, board_from_json, topic_names
from r2s2r_capture.real2sim.frames import camera_topics, depth_m, image_array
from r2s2r_capture.sysid.joint_motion import JointMotion, read_joint_motion

__all__ = ["CaptureData", "check_capture", "read_capture"]


@dataclasses.dataclass(frozen=True)
class CaptureData:
    """What :func:`read_capture` found in the bag(s)."""

    board: Any
    board_views: list[tuple[str, np.ndarray]]
    known_views: list[tuple[np.ndarray, np.ndarray]]  # (T_world_board, rgb)
    hand_eye_views: list[tuple[dict[str, float], np.ndarray]]  # (measured arm joint positions by name, rgb)
    scene_frames: list[tuple[np.ndarray, np.ndarray]]  # (rgb, depth m)
    image_size: tuple[int, int]
    motion: JointMotion | None

    def board_images(self) -> list[tuple[str, np.ndarray]]:
        """Every image of the board the fixed camera took, named: hand-held, on the flange, at known poses.

        All of them constrain the intrinsics; the flange's poses add tilts the hand-held views may lack.
        """
        return [
            *self.board_views,
            *((f"hand_eye{i:03d}", rgb) for i, (_, rgb) in enumerate(self.hand_eye_views)),
            *((f"known_pose{i:03d}", rgb) for i, (_, rgb) in enumerate(self.known_views)),
        ]


def read_capture(
    bags: Sequence[str | Path],
    arm_joints: Sequence[str],
    *,
    camera: str = "camera",
    interface: str = "",
    reference: bool = True,
) -> CaptureData:
    """Collect board views, known-pose views, scene frames and the excitation from capture bag(s).

    Args:
        bags: the capture bag(s).
        arm_joints: the arm's joints, the columns of the excitation's motion.
        camera: ROS camera name (the ``{camera}`` of the interface's topic names).
        interface: topic interface profile or file the bags follow (empty: the default profile).
        reference: the excitation's commands are the trajectory controller's reference where the bag has
            it (:func:`~r2s2r_capture.sysid.joint_motion.read_joint_motion`); False: the set-points sent.

    Raises:
        BagError: unreadable bag, or no capture phase markers.
    """
    names = topic_names(camera, interface)
    raw_color, raw_depth, info = (names[key][0] for key in ("color_image", "depth_image", "color_info"))
    board = None
    views: list[tuple[str, np.ndarray]] = []
    known: list[tuple[np.ndarray, np.ndarray]] = []
    hand_eye: list[tuple[dict[str, float], np.ndarray]] = []
    scene: list[tuple[np.ndarray, np.ndarray]] = []
    size: tuple[int, int] | None = None
    motion: JointMotion | None = None
    for bag in bags:
        phase: dict[str, Any] | None = None
        pending_rgb: tuple[int, np.ndarray] | None = None
        excitation: list[float] = []
        markers = 0
        with BagReader(bag) as reader:
            color, depth = camera_topics(reader.topics, raw_color, raw_depth)
            for m in reader.messages([PHASE_TOPIC, color, depth, info]):
                msg = reader.deserialize(m)
                if m.topic == PHASE_TOPIC:
                    markers += 1
                    try:
                        mark = json.loads(msg.data)
                    except ValueError as err:
                        raise BagError(f"bag {bag}: {PHASE_TOPIC}: not JSON: {err}") from err
                    if "board" in mark and board is None:
                        board = board_from_json(mark["board"])
                    phase = mark if mark.get("event") == "start" else None
                    if mark.get("phase") == "excitation":
                        excitation.append(m.timestamp_ns * 1e-9)
                    continue
                if m.topic == info:
                    size = (int(msg.width), int(msg.height))
                    continue
                if phase is None:
                    continue
                name = phase.get("phase")
                img = image_array(msg, f"bag {bag}: {m.topic}")
                if m.topic == color:
                    if name == "board_intrinsics":
                        views.append((f"{Path(bag).name}@{m.timestamp_ns}", img))
                    elif name == "board_known_pose":
                        known.append((np.asarray(phase["T_world_board"], dtype=np.float64), img))
                    elif name == "hand_eye" and "q" in phase:
                        hand_eye.append((_joint_positions(phase, f"bag {bag}: {PHASE_TOPIC}"), img))
                    elif name == "scene":
                        pending_rgb = (m.timestamp_ns, img)
                elif m.topic == depth and name == "scene" and pending_rgb is not None:
                    scene.append((pending_rgb[1], depth_m(img)))
                    pending_rgb = None
        if markers == 0:
            raise BagError(
                f"bag {bag}: no {PHASE_TOPIC} markers; record it with `r2s2r capture` (see "
                "r2s2r_capture.procedures.session for the phases)"
            )
        if len(excitation) >= 2 and motion is None:
            motion = read_joint_motion(
                bag,
                arm_joints,
                window=(excitation[0], excitation[-1]),
                interface=interface,
                reference=reference,
            )
    if size is None and views:
        size = (views[0][1].shape[1], views[0][1].shape[0])
    return CaptureData(board, views, known, hand_eye, scene, size or (0, 0), motion)


def _joint_positions(mark: dict[str, Any], where: str) -> dict[str, float]:
    """A hand-eye view marker's measured arm joint positions by name (BagError naming what is wrong)."""
    joints, q = mark.get("joints"), mark.get("q")
    if not isinstance(joints, list) or not isinstance(q, list) or len(joints) != len(q):
        raise BagError(
            f"{where}: hand_eye view {mark.get('index')}: 'joints' and 'q' must be lists of one length"
        )
    return {str(n): float(v) for n, v in zip(joints, q, strict=True)}


def check_capture(data: CaptureData, *, min_board_views: int, min_scene_frames: int) -> None:
    """Refuse unusable input before any slow stage, saying what to record.

    Raises:
        CalibrationError: fewer than ``min_board_views`` hand-held board views, or no known-pose view.
        ReconstructionError: fewer than ``min_scene_frames`` RGB-D frames of the scene.
        IdentificationError: no excitation, or an arm joint that does not move in it.
    """
    if data.board is None or len(data.board_views) < min_board_views:
        raise CalibrationError(
            f"the capture has {len(data.board_views)} hand-held board views, at least "
            f"{min_board_views} are needed: record the board_intrinsics phase (move the ChArUco board "
            "in front of the camera at several distances and tilts)"
        )
    if not data.known_views and not data.hand_eye_views:
        raise CalibrationError(
            "the capture has no view for the camera's pose: record the hand_eye phase (board on the flange, "
            "`r2s2r capture --extrinsics hand-eye`) or the board_known_pose phase (board flat on the table "
            "at "
            "a pose you know, T_world_board in the phase marker)"
        )
    if len(data.scene_frames) < min_scene_frames:
        raise ReconstructionError(
            f"the capture has {len(data.scene_frames)} RGB-D scene frames, at least "
            f"{min_scene_frames} "
            "needed: record the scene phase (colour + aligned depth, board removed)"
        )
    m = data.motion
    if m is None or m.t.size < 40:
        raise IdentificationError(
            "the capture has no excitation (arm commands with joint states): record the excitation phase "
            "(r2s2r_capture.sysid.recording.excitation_trajectory sent to the arm)"
        )
    span_cmd, span_q = np.ptp(m.q_cmd, axis=0), np.ptp(m.q, axis=0)
    static = [n for n, a, b in zip(m.joint_names, span_cmd, span_q, strict=True) if a < 0.05 or b < 0.02]
    if static:
        raise IdentificationError(
            f"the arm is static in the excitation: joints {static} move less than 0.05 rad; record an "
            "excitation trajectory that moves every arm joint "
            "(r2s2r_capture.sysid.recording.excitation_trajectory)"
        )
