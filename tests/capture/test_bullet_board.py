"""The capture's ChArUco board drawn by the Bullet unit's renderer, where the capture's calibration needs it.

The board is a textured plane on a mocap body; the Bullet unit draws it as a textured quad placed at the
mocap pose at each render.  Every inner corner must be detected, with the id the board's layout gives it,
with no offset and within a pixel and a half of where the unit's camera (the profile's intrinsics,
distortion and pose) projects it.  The MuJoCo unit, drawn the same way, is the control.
"""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import mujoco
import numpy as np
import pytest
from r2s2r_capture.calibration.camera import detect_board
from r2s2r_capture.calibration.charuco import board_pose_in_plane_geom
from r2s2r_capture.procedures.capture_config import CAPTURE_BOARD
from r2s2r_capture.procedures.emulated_board import BOARD_BODY, board_world
from r2s2r_sim.hardware.emulated_arm import EmulatedArm
from r2s2r_sim.hardware.profile import load_hardware_profile
from r2s2r_sim.hardware.shipped_profiles import profile_path
from r2s2r_sim.world.kinematics import mat_to_quat

os.environ.setdefault("MUJOCO_GL", "egl")


def _pose(pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    rot = np.empty(9)
    mujoco.mju_quat2Mat(rot, quat)
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = rot.reshape(3, 3), pos
    return T


def _tilt(ax: float, ay: float) -> np.ndarray:
    rx = np.array([[1, 0, 0], [0, np.cos(ax), -np.sin(ax)], [0, np.sin(ax), np.cos(ax)]])
    ry = np.array([[np.cos(ay), 0, np.sin(ay)], [0, 1, 0], [-np.sin(ay), 0, np.cos(ay)]])
    return rx @ ry


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return board_world("tabletop-pick-v1", CAPTURE_BOARD, tmp_path_factory.mktemp("board"))


@pytest.mark.parametrize("profile", ["ideal", "bullet"])
@pytest.mark.parametrize("view", [(0.03, -0.02, 0.6, 0.3, 0.0), (-0.06, 0.04, 0.75, -0.2, 0.35)])
def test_the_board_is_drawn_where_the_camera_sees_it(world: Path, profile: str, view: tuple) -> None:
    unit = load_hardware_profile(profile_path(profile))
    arm = EmulatedArm(world, unit, seed=0)
    w, d = arm.world, arm.world.data
    cam = _pose(*w.camera_pose(arm.mjcf_camera))  # optical frame: z forward, y down
    x, y, z, ax, ay = view
    # The plane's textured side (+z) faces the camera, tilted.
    geom = np.eye(4)
    geom[:3, :3] = cam[:3, :3] @ np.diag([1.0, -1.0, -1.0]) @ _tilt(ax, ay)
    geom[:3, 3] = cam[:3, :3] @ np.array([x, y, z]) + cam[:3, 3]
    body = mujoco.mj_name2id(w.model, mujoco.mjtObj.mjOBJ_BODY, BOARD_BODY)
    mocap = int(w.model.body_mocapid[body])
    d.mocap_pos[mocap], d.mocap_quat[mocap] = geom[:3, 3], mat_to_quat(geom[:3, :3])
    mujoco.mj_forward(w.model, d)
    with arm.camera_renderer() as camera:
        rgb = camera.render(d)[0]
    found = detect_board(rgb, CAPTURE_BOARD)
    assert len(found.ids) == CAPTURE_BOARD.n_corners, f"{profile}: {len(found.ids)} corners"
    # Where the unit's camera projects each corner (the board's frame in the plane geom, per MuJoCo's map).
    T_cam_board = np.linalg.inv(cam) @ geom @ board_pose_in_plane_geom(CAPTURE_BOARD)
    rvec, _ = cv2.Rodrigues(T_cam_board[:3, :3])
    k, dist = unit.camera.intrinsics.k(), unit.camera.distortion.d()
    points = CAPTURE_BOARD.corners_m()[found.ids]
    expected = cv2.projectPoints(points, rvec, T_cam_board[:3, 3], k, dist)[0].reshape(-1, 2)
    error = np.linalg.norm(found.corners_px - expected, axis=1)
    bias = np.linalg.norm((found.corners_px - expected).mean(axis=0))
    # No offset (the tiny renderer's pixel convention is accounted for); it draws without anti-aliasing,
    # so its corners scatter more than MuJoCo's.
    assert bias < 0.25 and np.median(error) < 0.8 and error.max() < 1.5, (profile, bias, np.round(error, 2))
