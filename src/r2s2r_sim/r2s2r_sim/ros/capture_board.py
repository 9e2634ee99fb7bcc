"""EMULATED-ONLY stand-in for the person who moves the calibration board during a capture.

On a real cell a person holds the ChArUco board in front of the camera and lays it on the table; the
emulated hardware has no person, so, when its world has a mocap board body (the capture variant of a world
that ``r2s2r capture --board-world`` writes) and the node is started with ``capture_board:=<body>``, it
offers the read-write parameter ``capture_board_pose``: a JSON object ``{"frame": "world" | "camera" |
"flange", "pose": 4x4}`` that puts that body at ``pose`` in the world or in the camera's optical frame
(REP-103; the person sees where the camera is), or mounts it on the arm's tool site (``robot.ee_site``) at
``pose``, where it then moves with the arm (the person who bolts the board to the flange).  Setting the
parameter is acknowledged once the body is placed, so a frame stamped after the acknowledgement shows it.
A real driver has no such parameter.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import mujoco
import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.node import Node

from r2s2r_sim.world.kinematics import mat_to_quat

__all__ = ["POSE_PARAMETER", "CaptureBoardStandIn"]

POSE_PARAMETER = "capture_board_pose"
_FRAMES = ("world", "camera", "flange")


class CaptureBoardStandIn:
    """Places the world's mocap board body when ``capture_board_pose`` is set; see the module docstring.

    Args:
        node: the emulated hardware node (the parameter is declared on it).
        world: its :class:`~r2s2r_sim.world.sim_world.SimWorld` (the arm's).
        camera: the ROS camera name whose optical frame ``"camera"`` poses are in.
        body: the mocap body's name.
        lock: the physics lock, held while the body moves.

    Raises:
        ValueError: ``body`` is not a mocap body of the world (names the body and the mocap bodies there).
    """

    def __init__(self, node: Node, world: Any, camera: str, body: str, lock: threading.Lock) -> None:
        model = world.model
        bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
        mocap = int(model.body_mocapid[bid]) if bid >= 0 else -1
        if mocap < 0:
            bodies = [model.body(i).name for i in range(model.nbody) if model.body_mocapid[i] >= 0]
            raise ValueError(
                f"parameter capture_board: {body!r} is not a mocap body of world {world.world_id!r} "
                f"(mocap bodies: {bodies}); start the node on the capture variant of the world "
                "(`r2s2r capture --board-world DIR`)"
            )
        self._world, self._camera, self._mocap, self._lock = world, camera, mocap, lock
        self._mount: np.ndarray | None = None
        self.placed = 0
        node.declare_parameter(
            POSE_PARAMETER,
            "",
            ParameterDescriptor(
                description=(
                    "EMULATED-ONLY stand-in for the person who moves the capture board: JSON "
                    '{"frame": "world" | "camera" | "flange", "pose": 4x4 row-major} puts the board body '
                    "there (flange: mounted on the tool site, moving with the arm)"
                ),
                additional_constraints='JSON {"frame": "world" | "camera" | "flange", "pose": 4x4}',
            ),
        )
        node.add_on_set_parameters_callback(self._on_set)
        node.get_logger().warning(
            f"EMULATED-ONLY capture board stand-in: set {POSE_PARAMETER} to move body {body!r} "
            "(a person moves the board on a real cell)"
        )

    def _on_set(self, params: list[Any]) -> SetParametersResult:
        for p in params:
            if p.name != POSE_PARAMETER or not p.value:
                continue
            try:
                frame, T = parse_pose(p.value)
            except ValueError as err:
                return SetParametersResult(successful=False, reason=str(err))
            self.place(frame, T)
        return SetParametersResult(successful=True)

    def place(self, frame: str, T: np.ndarray) -> None:
        """Put the body at ``T`` (4x4) in ``frame``; the next physics step and frame see it."""
        with self._lock:
            self._mount = T if frame == "flange" else None
            if frame == "flange":
                self._follow()
                self.placed += 1
                return
            data = self._world.data
            if frame == "camera":
                pos, quat = self._world.camera_pose(self._camera)
                R = np.empty(9)
                mujoco.mju_quat2Mat(R, quat)
                T_world_camera = np.eye(4)
                T_world_camera[:3, :3], T_world_camera[:3, 3] = R.reshape(3, 3), pos
                T = T_world_camera @ T
            data.mocap_pos[self._mocap] = T[:3, 3]
            data.mocap_quat[self._mocap] = mat_to_quat(T[:3, :3])
            self.placed += 1

    def follow(self) -> None:
        """Keep a board mounted on the flange where the arm's tool site is now; call with the physics lock."""
        if self._mount is not None:
            self._follow()

    def _follow(self) -> None:
        assert self._mount is not None
        pos, quat = self._world.ee_pose()
        R = np.empty(9)
        mujoco.mju_quat2Mat(R, quat)
        T_world_site = np.eye(4)
        T_world_site[:3, :3], T_world_site[:3, 3] = R.reshape(3, 3), pos
        T = T_world_site @ self._mount
        self._world.data.mocap_pos[self._mocap] = T[:3, 3]
        self._world.data.mocap_quat[self._mocap] = mat_to_quat(T[:3, :3])


def parse_pose(text: str) -> tuple[str, np.ndarray]:
    """``(frame, T)`` from the parameter's JSON; ValueError naming what is wrong."""
    try:
        value = json.loads(text)
        frame, T = value["frame"], np.asarray(value["pose"], dtype=np.float64)
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(
            f"{POSE_PARAMETER}: expected JSON {{'frame', 'pose'}}, got {text[:80]!r}: {err}"
        ) from None
    if frame not in _FRAMES:
        raise ValueError(f"{POSE_PARAMETER}: frame must be one of {_FRAMES}, got {frame!r}")
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise ValueError(f"{POSE_PARAMETER}: pose must be a finite 4x4 matrix, got shape {T.shape}")
    R = T[:3, :3]
    if not np.allclose(R @ R.T, np.eye(3), atol=1e-6) or np.linalg.det(R) <= 0:
        raise ValueError(f"{POSE_PARAMETER}: pose's 3x3 block is not a rotation")
    return frame, T
