"""Eye-to-hand calibration on synthetic views: known camera and board-on-flange, corners by projectPoints."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
from r2s2r_capture.calibration.camera import BoardDetection, IntrinsicsResult, rotation_angle_deg
from r2s2r_capture.calibration.charuco import DEFAULT_BOARD
from r2s2r_capture.calibration.hand_eye import (
    HandEyeResult,
    HandEyeView,
    check_hand_eye_views,
    plan_hand_eye_poses,
    rotation_spread_deg,
    solve_hand_eye,
)
from r2s2r_capture.errors import CalibrationError
from scipy.spatial.transform import Rotation

W, H = 640, 480
# A RealSense-like 640x480 colour stream: ~55 deg horizontal field of view, mild barrel distortion.
K = np.array([[615.0, 0.0, 321.5], [0.0, 615.0, 238.7], [0.0, 0.0, 1.0]])
D = np.array([0.08, -0.15, 0.001, -0.0005, 0.0])
INTRINSICS = IntrinsicsResult(
    camera_matrix=K,
    distortion=D,
    image_size=(W, H),
    rms_px=0.0,
    per_view_rms_px=(),
    view_names=(),
    n_views=0,
    n_corners=0,
)
CAMERA_POS = np.array([1.25, 0.35, 0.75])
FLANGE_POS = np.array([0.45, 0.0, 0.35])  # where the camera looks; the nominal flange pose sits there


def _T(R: np.ndarray, t: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, t
    return T


def _looking(z: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Rotation whose z axis is ``z`` and whose y axis is as close to ``up`` as possible."""
    z = z / np.linalg.norm(z)
    y = up - (up @ z) * z
    y /= np.linalg.norm(y)
    return np.column_stack([np.cross(y, z), y, z])


def _truth() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(T_world_camera, T_flange_board, T_world_flange_nominal)`` of the synthetic cell."""
    # Optical frame: z toward the flange, y down (world -z), x right.
    T_world_camera = _T(_looking(FLANGE_POS - CAMERA_POS, np.array([0.0, 0.0, -1.0])), CAMERA_POS)
    # Board 6 cm out on the flange face, printed side toward flange +z (board z is into the board),
    # turned 0.4 rad and 1-2 cm off the flange axis.
    w, h = DEFAULT_BOARD.size_m
    R_fb = Rotation.from_euler("zx", [0.4, math.pi]).as_matrix()
    T_flange_board = _T(R_fb, np.array([0.01, -0.02, 0.06]) - R_fb @ np.array([w / 2, h / 2, 0.0]))
    # Nominal flange: z toward the camera (so the board faces it), a slight turn about the line of sight.
    R_nominal = _looking(CAMERA_POS - FLANGE_POS, np.array([0.0, 0.3, 1.0]))
    return T_world_camera, T_flange_board, _T(R_nominal, FLANGE_POS)


def _views(
    flanges: list[np.ndarray], sigma_px: float = 0.0, seed: int = 0, with_pnp: bool = False
) -> list[HandEyeView]:
    """The fixed camera's views of the board at each flange pose, all corners, ``sigma_px`` pixel noise."""
    T_world_camera, T_flange_board, _ = _truth()
    rng = np.random.default_rng(seed)
    points = DEFAULT_BOARD.corners_m()
    views = []
    for i, T_world_flange in enumerate(flanges):
        T_camera_board = np.linalg.inv(T_world_camera) @ T_world_flange @ T_flange_board
        in_camera = points @ T_camera_board[:3, :3].T + T_camera_board[:3, 3]
        assert np.all(in_camera[:, 2] > 0.3), "the synthetic board must stay in front of the camera"
        px, _ = cv2.projectPoints(
            points, cv2.Rodrigues(T_camera_board[:3, :3])[0], T_camera_board[:3, 3], K, D
        )
        px = px.reshape(-1, 2) + rng.normal(0.0, sigma_px, (len(points), 2))
        assert np.all((px > 0) & (px < (W, H))), "the synthetic board must stay in the image"
        det = BoardDetection(px, np.arange(len(points), dtype=np.int32), (W, H))
        views.append(
            HandEyeView(
                T_world_flange=T_world_flange,
                detection=det,
                T_camera_board=T_camera_board if with_pnp and i % 2 else None,
                name=f"view{i:02d}",
            )
        )
    return views


def _errors(result: HandEyeResult) -> tuple[float, float, float, float]:
    """Camera position (mm) and angle (deg) errors, then the same for the board on the flange."""
    T_world_camera, T_flange_board, _ = _truth()
    cam_mm = 1000 * float(np.linalg.norm(result.T_world_camera[:3, 3] - T_world_camera[:3, 3]))
    cam_deg = rotation_angle_deg(result.T_world_camera[:3, :3].T @ T_world_camera[:3, :3])
    board_mm = 1000 * float(np.linalg.norm(result.T_flange_board[:3, 3] - T_flange_board[:3, 3]))
    board_deg = rotation_angle_deg(result.T_flange_board[:3, :3].T @ T_flange_board[:3, :3])
    return cam_mm, cam_deg, board_mm, board_deg


def test_exact_views_recover_camera_and_board() -> None:
    flanges = plan_hand_eye_poses(_truth()[2], 15)
    # Half the views come with their solvePnP pose (here the true one): the solve must take it as given.
    result = solve_hand_eye(_views(flanges, with_pnp=True), INTRINSICS, DEFAULT_BOARD)
    cam_mm, cam_deg, board_mm, board_deg = _errors(result)
    print(f"exact: camera {cam_mm:.4f} mm {cam_deg:.5f} deg; board {board_mm:.4f} mm {board_deg:.5f} deg")
    assert cam_mm < 1.0 and cam_deg < 0.1
    assert board_mm < 1.0 and board_deg < 0.1
    assert result.rms_px < 1e-3 and max(result.per_view_rms_px) < 1e-3
    assert result.n_views == 15 and result.n_corners == 15 * DEFAULT_BOARD.n_corners
    assert result.view_names[0] == "view00" and len(result.per_view_rms_px) == 15


@pytest.mark.parametrize("seed", [1, 2])
def test_noisy_views_recover_camera(seed: int) -> None:
    flanges = plan_hand_eye_poses(_truth()[2], 15)
    result = solve_hand_eye(_views(flanges, sigma_px=0.3, seed=seed), INTRINSICS, DEFAULT_BOARD)
    cam_mm, cam_deg, board_mm, board_deg = _errors(result)
    print(
        f"0.3 px noise, seed {seed}: camera {cam_mm:.3f} mm {cam_deg:.4f} deg; board {board_mm:.3f} mm "
        f"{board_deg:.4f} deg; RMS {result.rms_px:.3f} px (closed form {result.initial_rms_px:.3f} px)"
    )
    assert cam_mm < 5.0 and cam_deg < 0.5
    assert board_mm < 5.0 and board_deg < 0.5
    # The fitted residual is the pixel noise: RMS of a 2-D N(0, 0.3^2) offset is 0.3 * sqrt(2).
    assert 0.3 < result.rms_px < 0.5, result.rms_px


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_refinement_improves_on_the_closed_form(seed: int) -> None:
    flanges = plan_hand_eye_poses(_truth()[2], 12, max_tilt_deg=20.0)
    result = solve_hand_eye(_views(flanges, sigma_px=0.5, seed=seed), INTRINSICS, DEFAULT_BOARD)
    print(f"seed {seed}: closed form {result.initial_rms_px:.3f} px, refined {result.rms_px:.3f} px")
    assert result.rms_px < result.initial_rms_px


def test_a_few_wild_corners_barely_move_the_result() -> None:
    views = _views(plan_hand_eye_poses(_truth()[2], 15), sigma_px=0.3, seed=6)
    for v in views[:3]:
        v.detection.corners_px[5] += (25.0, -30.0)  # a corner matched to the wrong place
    cam_mm, cam_deg, _, _ = _errors(solve_hand_eye(views, INTRINSICS, DEFAULT_BOARD))
    print(f"3 wild corners: camera {cam_mm:.3f} mm {cam_deg:.4f} deg")
    assert cam_mm < 5.0 and cam_deg < 0.5


def test_rotation_about_one_flange_axis_is_refused() -> None:
    T0 = _truth()[2]
    rolls = [
        T0 @ _T(Rotation.from_euler("z", a, degrees=True).as_matrix(), np.zeros(3)) for a in range(-30, 31, 6)
    ]
    views = _views(rolls)
    with pytest.raises(
        CalibrationError,
        match=r"span only one axis \(about z of the flange, 60\.0 deg; 0\.0 deg about any other, "
        r"need 10 deg\); add poses that tilt about x or y",
    ):
        solve_hand_eye(views, INTRINSICS, DEFAULT_BOARD)
    # The same poses plus two tilts about flange x pass the check.
    tilts = [T0 @ _T(Rotation.from_euler("x", a, degrees=True).as_matrix(), np.zeros(3)) for a in (-12, 12)]
    assert len(check_hand_eye_views(_views(rolls + tilts))) == len(rolls) + 2


def test_rotation_about_one_oblique_axis_is_refused() -> None:
    # Turning only the base joint: one rotation axis (world z), oblique in the flange frame.
    T0 = _truth()[2]
    turns = [
        _T(Rotation.from_euler("z", a, degrees=True).as_matrix(), np.zeros(3)) @ T0 for a in (-8, -4, 0, 4, 8)
    ]
    with pytest.raises(
        CalibrationError, match=r"span only one axis \(about \(.+\) of the flange.+perpendicular"
    ):
        check_hand_eye_views(_views(turns))


def test_translation_only_is_refused() -> None:
    T0 = _truth()[2]
    shifts = [_T(T0[:3, :3], T0[:3, 3] + d) for d in np.linspace(-0.05, 0.05, 6)[:, None] * (0.0, 1.0, 0.5)]
    with pytest.raises(CalibrationError, match=r"span no axis: at most 0\.0 deg.+tilt about two axes"):
        solve_hand_eye(_views(shifts), INTRINSICS, DEFAULT_BOARD)


def test_too_few_views_are_refused() -> None:
    views = _views(plan_hand_eye_poses(_truth()[2], 6))
    with pytest.raises(CalibrationError, match=r"3 of 3 views have >= 8 board corners; need 5 such views"):
        solve_hand_eye(views[:3], INTRINSICS, DEFAULT_BOARD)
    # Views that show too little of the board do not count, and the message lists every view's count.
    clipped = [
        HandEyeView(
            T_world_flange=v.T_world_flange,
            detection=BoardDetection(v.detection.corners_px[:5], v.detection.ids[:5], (W, H)),
            name=v.name,
        )
        for v in views[:2]
    ]
    with pytest.raises(
        CalibrationError, match=r"4 of 6 views .+ \(corners per view: view00: 5, view01: 5, view02: 24"
    ):
        solve_hand_eye(clipped + views[2:], INTRINSICS, DEFAULT_BOARD)
    with pytest.raises(CalibrationError, match="min_views must be >= 3"):
        check_hand_eye_views(views, min_views=2)


def test_views_must_hold_rigid_poses() -> None:
    det = BoardDetection(np.zeros((2, 2)), np.arange(2, dtype=np.int32), (W, H))
    with pytest.raises(CalibrationError, match="v1 T_world_flange must be a finite \\(4, 4\\) transform"):
        HandEyeView(T_world_flange=np.eye(3), detection=det, name="v1")
    with pytest.raises(CalibrationError, match="v2 T_camera_board is not a rigid transform"):
        HandEyeView(T_world_flange=np.eye(4), detection=det, T_camera_board=2 * np.eye(4), name="v2")
    with pytest.raises(CalibrationError, match=r"v3 detection: corners_px must be \(2, 2\)"):
        HandEyeView(
            T_world_flange=np.eye(4), detection=BoardDetection(np.zeros((3, 2)), det.ids, (W, H)), name="v3"
        )


def test_planned_poses_tilt_about_two_axes_within_the_cone() -> None:
    T0 = _truth()[2]
    poses = plan_hand_eye_poses(T0, 15, max_tilt_deg=25.0, max_roll_deg=20.0, max_shift_m=0.05)
    assert len(poses) == 15
    assert all(np.array_equal(a, b) for a, b in zip(poses, plan_hand_eye_poses(T0, 15), strict=True))
    for T in poses:
        # The tilt is the angle between the flange z axes; the roll turns about z and adds none.
        tilt = math.degrees(math.acos(np.clip(T[:3, 2] @ T0[:3, 2], -1.0, 1.0)))
        assert tilt <= 25.0 + 1e-9
        assert np.linalg.norm(T[:3, 3] - T0[:3, 3]) <= 0.05 + 1e-9
    _, spread = rotation_spread_deg(poses)
    print(f"planned spread about the principal axes: {np.round(spread, 1)} deg")
    assert spread[1] > 30.0 and spread[2] > 10.0


def test_planner_refuses_bad_arguments() -> None:
    T0 = _truth()[2]
    with pytest.raises(CalibrationError, match="n_poses must be >= 4"):
        plan_hand_eye_poses(T0, 3)
    with pytest.raises(CalibrationError, match=r"max_tilt_deg must be in \(0, 60\]: got 0"):
        plan_hand_eye_poses(T0, 10, max_tilt_deg=0)
    with pytest.raises(CalibrationError, match="max_shift_m must be >= 0 m"):
        plan_hand_eye_poses(T0, 10, max_shift_m=-0.1)
    with pytest.raises(CalibrationError, match="T_world_flange_nominal is not a rigid transform"):
        plan_hand_eye_poses(np.diag([1.0, 1.0, -1.0, 1.0]), 10)


def test_opencv_robot_world_hand_eye_gets_eye_to_hand_roles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where OpenCV has calibrateRobotWorldHandEye, it is called with the board as its 'camera'."""
    T_world_camera, T_flange_board, T0 = _truth()
    X, Z = np.linalg.inv(T_world_camera), np.linalg.inv(T_flange_board)  # base2world, gripper2cam
    calls = []

    def fake(
        R_world2cam: list[np.ndarray],
        t_world2cam: list[np.ndarray],
        R_base2gripper: list[np.ndarray],
        t_base2gripper: list[np.ndarray],
        method: int,
    ) -> tuple[np.ndarray, ...]:
        # OpenCV's equation: cTw wTb = cTg gTb, i.e. A X = Z B.
        for Ra, ta, Rb, tb in zip(R_world2cam, t_world2cam, R_base2gripper, t_base2gripper, strict=True):
            np.testing.assert_allclose(_T(Ra, ta) @ X, Z @ _T(Rb, tb), atol=1e-9)
        calls.append(method)
        return X[:3, :3], X[:3, 3:], Z[:3, :3], Z[:3, 3:]

    monkeypatch.setattr(cv2, "calibrateRobotWorldHandEye", fake, raising=False)
    result = solve_hand_eye(_views(plan_hand_eye_poses(T0, 8)), INTRINSICS, DEFAULT_BOARD)
    assert calls == [cv2.CALIB_ROBOT_WORLD_HAND_EYE_SHAH]
    assert result.initial_rms_px < 1e-6  # the outputs were turned back into T_world_camera, T_flange_board
