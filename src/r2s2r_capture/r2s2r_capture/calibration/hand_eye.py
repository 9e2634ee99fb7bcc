"""Eye-to-hand calibration: a fixed camera and a ChArUco board on the arm's flange, solved jointly.

Frames: ``T_a_b`` is the pose of frame ``b`` in frame ``a`` (it maps points from ``b`` to ``a``).  ``world``
is the frame the arm's forward kinematics is expressed in (the robot base, REP-103: x forward, y left, z
up); ``flange`` is the arm's tool flange; ``camera`` is the OpenCV optical frame (x right, y down, z
forward); ``board`` is the ChArUco board frame of
:class:`~r2s2r_capture.calibration.charuco.CharucoBoardSpec`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import cv2
import numpy as np
from scipy.optimize import least_squares
from scipy.spatial.transform import Rotation

from r2s2r_capture.calibration.camera import (
    BoardDetection,
    IntrinsicsResult,
    board_pose_in_camera,
    pose_matrix,
)
from r2s2r_capture.calibration.charuco import DEFAULT_BOARD, CharucoBoardSpec
from r2s2r_capture.errors import CalibrationError

__all__ = [
    "HandEyeResult",
    "HandEyeView",
    "check_hand_eye_views",
    "plan_hand_eye_poses",
    "rotation_spread_deg",
    "solve_hand_eye",
]

_AXIS_NAMES = ("x", "y", "z")
# A principal rotation axis within ~25 deg of a flange axis is named after it in messages.
_NAMED_AXIS_COS = 0.9
# Vogel's spiral: successive tilt directions a golden angle apart cover the cone evenly for any count.
_GOLDEN_ANGLE = math.pi * (3.0 - math.sqrt(5.0))
# Step of the rolls' low-discrepancy sequence; irrational and unrelated to the golden angle, so a pose's roll
# does not follow from its tilt direction.
_ROLL_STEP = math.sqrt(2.0) - 1.0


def _rigid(T: object, what: str) -> np.ndarray:
    """``T`` as a float (4, 4) rigid transform, or an error naming ``what``."""
    M = np.asarray(T, dtype=np.float64)
    if M.shape != (4, 4) or not np.all(np.isfinite(M)):
        raise CalibrationError(f"{what} must be a finite (4, 4) transform: got shape {M.shape}")
    R = M[:3, :3]
    if not np.allclose(R.T @ R, np.eye(3), atol=1e-6) or np.linalg.det(R) < 0 or np.any(M[3] != (0, 0, 0, 1)):
        raise CalibrationError(
            f"{what} is not a rigid transform (rotation block not orthonormal, or last row)"
        )
    return M


@dataclasses.dataclass(frozen=True, kw_only=True)
class HandEyeView:
    """One view of an eye-to-hand capture: where the flange was and what the fixed camera saw of the board.

    Attributes:
        T_world_flange: flange pose in the world (4, 4, m), from the arm's forward kinematics at the joint
            state recorded with the image.
        detection: the board corners found in the image
            (:func:`~r2s2r_capture.calibration.camera.detect_board`); the refinement fits these pixels, so a
            view needs them.
        T_camera_board: the board pose in the camera from solvePnP, when the caller has it already; None:
            computed from ``detection`` with the given intrinsics.
        name: the view's name in results and errors.
    """

    T_world_flange: np.ndarray
    detection: BoardDetection
    T_camera_board: np.ndarray | None = None
    name: str = "view"

    def __post_init__(self) -> None:
        """Check both poses are rigid transforms and the detection is consistent (errors name the view)."""
        object.__setattr__(self, "T_world_flange", _rigid(self.T_world_flange, f"{self.name} T_world_flange"))
        if self.T_camera_board is not None:
            object.__setattr__(
                self, "T_camera_board", _rigid(self.T_camera_board, f"{self.name} T_camera_board")
            )
        det = self.detection
        if det.corners_px.shape != (len(det), 2):
            raise CalibrationError(
                f"{self.name} detection: corners_px must be ({len(det)}, 2) for {len(det)} ids, "
                f"got {det.corners_px.shape}"
            )


@dataclasses.dataclass(frozen=True)
class HandEyeResult:
    """An eye-to-hand calibration.

    Attributes:
        T_world_camera: camera (optical frame) pose in the world (4, 4, m).
        T_flange_board: board pose on the flange (4, 4, m).
        rms_px: RMS reprojection error over every corner used (px), after the joint refinement.
        initial_rms_px: the same error at the closed-form estimate the refinement started from (px).
        per_view_rms_px: RMS reprojection error of each used view (px), in the order of ``view_names``.
        view_names: names of the used views.
        n_views: views used.
        n_corners: corners used over all views.
    """

    T_world_camera: np.ndarray
    T_flange_board: np.ndarray
    rms_px: float
    initial_rms_px: float
    per_view_rms_px: tuple[float, ...]
    view_names: tuple[str, ...]
    n_views: int
    n_corners: int


def rotation_spread_deg(T_world_flange: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """How far the flange rotates, and about which axes, over a set of poses.

    The rotation of each pose relative to the first, as a rotation vector in the first pose's flange
    frame, is projected on the principal axes of those vectors; a spread is the range of one projection
    (including the first pose's zero).  Eye-to-hand calibration needs two axes with a large spread: the
    motions about a single axis leave a translation along it (and a rotation about it) unobservable.

    Returns:
        ``(axes, spread_deg)``: unit axes (3, 3) as rows, in the first pose's flange frame, largest spread
        first, and their spreads (3,) in degrees.
    """
    poses = [_rigid(T, f"T_world_flange[{i}]") for i, T in enumerate(T_world_flange)]
    if len(poses) < 2:
        return np.eye(3), np.zeros(3)
    R0 = poses[0][:3, :3]
    rotvecs = Rotation.from_matrix(np.stack([R0.T @ T[:3, :3] for T in poses[1:]])).as_rotvec()
    _, _, Vt = np.linalg.svd(rotvecs, full_matrices=True)
    proj = np.vstack([np.zeros((1, 3)), rotvecs @ Vt.T])
    spread = np.degrees(proj.max(axis=0) - proj.min(axis=0))
    order = np.argsort(-spread)
    return Vt[order], spread[order]


def _axis_words(axis: np.ndarray) -> tuple[str, str]:
    """The axis in words (``"z"`` or ``"(0.71, 0.71, 0.00)"``), and the rotations that would complement it."""
    k = int(np.argmax(np.abs(axis)))
    if abs(axis[k]) >= _NAMED_AXIS_COS:
        others = [n for i, n in enumerate(_AXIS_NAMES) if i != k]
        return _AXIS_NAMES[k], f"tilt about {others[0]} or {others[1]}"
    vec = ", ".join(f"{v:.2f}" for v in axis)
    return f"({vec})", "tilt about an axis perpendicular to it"


def _check_rotations(poses: Sequence[np.ndarray], min_rotation_deg: float) -> None:
    axes, spread = rotation_spread_deg(poses)
    if spread[0] < min_rotation_deg:
        raise CalibrationError(
            f"the flange rotations span no axis: at most {spread[0]:.1f} deg, need {min_rotation_deg:g} deg "
            "about each of two axes; add poses that tilt about two axes, e.g. x and y"
        )
    if spread[1] < min_rotation_deg:
        axis, fix = _axis_words(axes[0])
        raise CalibrationError(
            f"the flange rotations span only one axis (about {axis} of the flange, {spread[0]:.1f} deg; "
            f"{spread[1]:.1f} deg about any other, need {min_rotation_deg:g} deg); add poses that {fix}"
        )


def check_hand_eye_views(
    views: Sequence[HandEyeView],
    *,
    min_views: int = 5,
    min_corners: int = 8,
    min_rotation_deg: float = 10.0,
) -> tuple[HandEyeView, ...]:
    """The views a solve can use, after checking they make the calibration observable.

    A view counts when it shows at least ``min_corners`` corners.  The counted views' flange rotations must
    spread at least ``min_rotation_deg`` about each of two independent axes (:func:`rotation_spread_deg`).

    Raises:
        CalibrationError: bad thresholds, fewer than ``min_views`` counted views (the message gives every
            view's corner count), or rotations about fewer than two axes (the message names the axis
            spanned and the tilts to add).
    """
    if min_views < 3 or min_corners < 6 or not min_rotation_deg > 0:
        raise CalibrationError(
            "min_views must be >= 3, min_corners >= 6 and min_rotation_deg > 0: got "
            f"{min_views}, {min_corners} and {min_rotation_deg}"
        )
    usable = tuple(v for v in views if len(v.detection) >= min_corners)
    if len(usable) < min_views:
        counts = ", ".join(f"{v.name}: {len(v.detection)}" for v in views) or "none"
        raise CalibrationError(
            f"{len(usable)} of {len(views)} views have >= {min_corners} board corners; need {min_views} such "
            f"views (corners per view: {counts}); add flange poses where the camera sees the whole board"
        )
    _check_rotations([v.T_world_flange for v in usable], min_rotation_deg)
    return usable


def _closed_form(
    T_world_flange: list[np.ndarray], T_camera_board: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """``(T_world_camera, T_flange_board)`` from the robot-world/hand-eye closed form ``A X = Z B``.

    OpenCV's ``calibrateRobotWorldHandEye`` solves ``cTw wTb = cTg gTb`` for a camera on the gripper and a
    fixed target.  Eye-to-hand swaps the roles: the board is what moves with the gripper and the camera is
    what stays put, so ``A = T_board_camera``, ``B = T_flange_world``, ``X = T_camera_world`` and
    ``Z = T_board_flange``.  OpenCV 5.0's Python bindings lack the function; Shah's Kronecker solution
    (Shah 2013, J. Mech. Robot. 5(3), the method OpenCV uses by default) is computed here then.
    """
    A = [np.linalg.inv(T) for T in T_camera_board]
    B = [np.linalg.inv(T) for T in T_world_flange]
    if hasattr(cv2, "calibrateRobotWorldHandEye"):
        R_x, t_x, R_z, t_z = cv2.calibrateRobotWorldHandEye(
            [a[:3, :3] for a in A],
            [a[:3, 3] for a in A],
            [b[:3, :3] for b in B],
            [b[:3, 3] for b in B],
            method=cv2.CALIB_ROBOT_WORLD_HAND_EYE_SHAH,
        )
        X, Z = pose_matrix(R_x, t_x), pose_matrix(R_z, t_z)
    else:
        X, Z = _shah(A, B)
    return np.linalg.inv(X), np.linalg.inv(Z)


def _nearest_rotation(M: np.ndarray) -> np.ndarray:
    U, _, Vt = np.linalg.svd(M)
    return U @ np.diag([1.0, 1.0, np.linalg.det(U @ Vt)]) @ Vt


def _shah(A: list[np.ndarray], B: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(X, Z)`` with ``A_i X = Z B_i``: rotations from the top singular pair, translations by least squares.

    ``R_A R_X R_B^T = R_Z`` reads ``kron(R_B, R_A) vec(R_X) = vec(R_Z)`` (column-major ``vec``), so the
    sum of the Kronecker products has ``vec(R_X)``, ``vec(R_Z)`` as its top right and left singular vectors.
    """
    T = sum(np.kron(b[:3, :3], a[:3, :3]) for a, b in zip(A, B, strict=True))
    U, _, Vt = np.linalg.svd(T)
    R_x, R_z = Vt[0].reshape(3, 3, order="F"), U[:, 0].reshape(3, 3, order="F")
    sign = np.sign(np.linalg.det(R_x))  # the singular pair's sign is arbitrary; the rotations' is not
    R_x, R_z = _nearest_rotation(sign * R_x), _nearest_rotation(sign * R_z)
    # R_A t_X - t_Z = R_Z t_B - t_A, stacked over the views.
    C = np.vstack([np.hstack([a[:3, :3], -np.eye(3)]) for a in A])
    d = np.concatenate([R_z @ b[:3, 3] - a[:3, 3] for a, b in zip(A, B, strict=True)])
    t, *_ = np.linalg.lstsq(C, d, rcond=None)
    return pose_matrix(R_x, t[:3]), pose_matrix(R_z, t[3:])


@dataclasses.dataclass(frozen=True)
class _Corners:
    """Every used corner, flattened: its view, its board point (m) and its pixel."""

    view: np.ndarray  # (n,) int
    board_m: np.ndarray  # (n, 3)
    pixels: np.ndarray  # (n, 2)
    R_world_flange: np.ndarray  # (views, 3, 3)
    t_world_flange: np.ndarray  # (views, 3)


def _corners(views: Sequence[HandEyeView], board: CharucoBoardSpec) -> _Corners:
    points = board.corners_m()
    return _Corners(
        view=np.concatenate([np.full(len(v.detection), i) for i, v in enumerate(views)]),
        board_m=np.vstack([points[v.detection.ids] for v in views]),
        pixels=np.vstack([v.detection.corners_px for v in views]),
        R_world_flange=np.stack([v.T_world_flange[:3, :3] for v in views]),
        t_world_flange=np.stack([v.T_world_flange[:3, 3] for v in views]),
    )


def _reprojection(
    T_world_camera: np.ndarray, T_flange_board: np.ndarray, c: _Corners, K: np.ndarray, D: np.ndarray
) -> np.ndarray:
    """Pixel residuals (n, 2) of every corner through flange, board and camera poses."""
    in_flange = c.board_m @ T_flange_board[:3, :3].T + T_flange_board[:3, 3]
    in_world = np.einsum("nij,nj->ni", c.R_world_flange[c.view], in_flange) + c.t_world_flange[c.view]
    in_camera = (in_world - T_world_camera[:3, 3]) @ T_world_camera[:3, :3]
    proj, _ = cv2.projectPoints(in_camera, np.zeros(3), np.zeros(3), K, D)
    return proj.reshape(-1, 2) - c.pixels


def _perturbed(T: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``T`` rotated by rotation vector ``x[:3]`` (in its parent frame) and moved by ``x[3:]`` (m)."""
    return pose_matrix(Rotation.from_rotvec(x[:3]).as_matrix() @ T[:3, :3], T[:3, 3] + x[3:])


def _refine(
    T_world_camera: np.ndarray,
    T_flange_board: np.ndarray,
    c: _Corners,
    K: np.ndarray,
    D: np.ndarray,
    f_scale_px: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Both poses fitted to every corner at once, with a soft-L1 loss so a few bad corners weigh little.

    The parameters are small corrections to the start poses, which keeps the rotation vectors far from
    their singularity at pi.
    """

    def residuals(x: np.ndarray) -> np.ndarray:
        return _reprojection(
            _perturbed(T_world_camera, x[:6]), _perturbed(T_flange_board, x[6:]), c, K, D
        ).ravel()

    fit = least_squares(residuals, np.zeros(12), loss="soft_l1", f_scale=f_scale_px, x_scale="jac")
    if not fit.success or not np.all(np.isfinite(fit.x)):
        raise CalibrationError(f"the hand-eye refinement did not converge: {fit.message}")
    return _perturbed(T_world_camera, fit.x[:6]), _perturbed(T_flange_board, fit.x[6:])


def _rms(residuals: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.sum(residuals**2, axis=1))))


def solve_hand_eye(
    views: Sequence[HandEyeView],
    intrinsics: IntrinsicsResult,
    board: CharucoBoardSpec = DEFAULT_BOARD,
    *,
    min_views: int = 5,
    min_corners: int = 8,
    min_rotation_deg: float = 10.0,
    f_scale_px: float = 1.0,
) -> HandEyeResult:
    """Camera pose in the world and board pose on the flange, from views of the board moved by the arm.

    Checks observability first (:func:`check_hand_eye_views`), then solves OpenCV's robot-world/hand-eye
    closed form (``cv2.calibrateRobotWorldHandEye``, Shah's method, with the eye-to-hand roles) from each
    view's solvePnP pose, then refines both poses jointly on every corner's reprojection error
    (``scipy.optimize.least_squares``, soft-L1 loss): the closed form weighs each view's PnP pose alike,
    however far or oblique the board was.

    Args:
        views: the captured views (flange pose + board detection).
        intrinsics: the fixed camera's calibration (``camera_matrix``, ``distortion``).
        board: the board on the flange.
        min_views: views with ``min_corners`` corners needed.
        min_corners: corners a view needs to count.
        min_rotation_deg: spread the flange rotations need about each of two axes (deg).
        f_scale_px: residual (px) beyond which the loss grows linearly rather than quadratically.

    Raises:
        CalibrationError: the checks of :func:`check_hand_eye_views`, a failed PnP (the view named), or a
            refinement that does not converge.
    """
    if not (math.isfinite(f_scale_px) and f_scale_px > 0):
        raise CalibrationError(f"f_scale_px must be > 0 px: got {f_scale_px}")
    used = check_hand_eye_views(
        views, min_views=min_views, min_corners=min_corners, min_rotation_deg=min_rotation_deg
    )
    K = np.asarray(intrinsics.camera_matrix, dtype=np.float64)
    D = np.asarray(intrinsics.distortion, dtype=np.float64)
    T_camera_board = []
    for v in used:
        if v.T_camera_board is not None:
            T_camera_board.append(v.T_camera_board)
            continue
        try:
            T_camera_board.append(board_pose_in_camera(v.detection, K, D, board, min_corners=min_corners)[0])
        except CalibrationError as err:
            raise CalibrationError(f"{v.name}: {err}") from err
    T_wc0, T_fb0 = _closed_form([v.T_world_flange for v in used], T_camera_board)
    corners = _corners(used, board)
    T_wc, T_fb = _refine(T_wc0, T_fb0, corners, K, D, f_scale_px)
    res = _reprojection(T_wc, T_fb, corners, K, D)
    return HandEyeResult(
        T_world_camera=T_wc,
        T_flange_board=T_fb,
        rms_px=_rms(res),
        initial_rms_px=_rms(_reprojection(T_wc0, T_fb0, corners, K, D)),
        per_view_rms_px=tuple(_rms(res[corners.view == i]) for i in range(len(used))),
        view_names=tuple(v.name for v in used),
        n_views=len(used),
        n_corners=len(corners.view),
    )


def plan_hand_eye_poses(
    T_world_flange_nominal: np.ndarray,
    n_poses: int = 15,
    *,
    max_tilt_deg: float = 25.0,
    max_roll_deg: float = 20.0,
    max_shift_m: float = 0.05,
) -> list[np.ndarray]:
    """Flange poses (``T_world_flange``, 4 x 4) around a nominal one for an eye-to-hand capture to visit.

    The nominal pose holds the board facing the camera, the flange z axis along the line of sight (toward
    the camera or away from it).  Pose ``k`` (0-based, deterministic):

    - tilts the flange about an axis in its own x-y plane, at azimuth ``k`` golden angles and by
      ``max_tilt_deg * sqrt((k + 0.5) / n_poses)``: Vogel's spiral, so the tilts fill the cone evenly and
      span both x and y for any count;
    - rolls it about its z axis by a low-discrepancy fraction of ``+-max_roll_deg`` (a third axis, which
      also turns the board in the image);
    - shifts it within ``max_shift_m`` across the line of sight (flange x-y plane), spreading the board over
      the image without changing its distance much.

    All rotations are about the flange origin, so a board mounted off-axis moves a little more.

    Raises:
        CalibrationError: ``n_poses`` < 4, a tilt outside (0, 60] deg, a roll outside [0, 90] deg or a
            negative shift.
    """
    T0 = _rigid(T_world_flange_nominal, "T_world_flange_nominal")
    if n_poses < 4:
        raise CalibrationError(f"n_poses must be >= 4 (two tilt axes and a spare): got {n_poses}")
    if not (0 < max_tilt_deg <= 60):
        raise CalibrationError(f"max_tilt_deg must be in (0, 60]: got {max_tilt_deg}")
    if not (0 <= max_roll_deg <= 90):
        raise CalibrationError(f"max_roll_deg must be in [0, 90]: got {max_roll_deg}")
    if not (math.isfinite(max_shift_m) and max_shift_m >= 0):
        raise CalibrationError(f"max_shift_m must be >= 0 m: got {max_shift_m}")
    poses = []
    for k in range(n_poses):
        azimuth = k * _GOLDEN_ANGLE
        radius = math.sqrt((k + 0.5) / n_poses)
        tilt_axis = np.array([math.cos(azimuth), math.sin(azimuth), 0.0])
        tilt = Rotation.from_rotvec(math.radians(max_tilt_deg) * radius * tilt_axis)
        roll_fraction = 2.0 * (((k + 0.5) * _ROLL_STEP) % 1.0) - 1.0
        roll = Rotation.from_rotvec([0.0, 0.0, math.radians(max_roll_deg) * roll_fraction])
        shift = max_shift_m * radius * np.array([-math.sin(azimuth), math.cos(azimuth), 0.0])
        poses.append(T0 @ pose_matrix((tilt * roll).as_matrix(), shift))
    return poses
