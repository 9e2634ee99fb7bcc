"""Camera calibration from ChArUco views: intrinsics, CameraInfo YAML, fixed and hand-eye extrinsics."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import yaml

from r2s2r_capture.calibration.charuco import DEFAULT_BOARD, CharucoBoardSpec
from r2s2r_capture.errors import CalibrationError, refuse_existing

__all__ = [
    "extrinsics_from_known_poses",
    "known_pose_std",
    "BoardDetection",
    "ExtrinsicsResult",
    "IntrinsicsResult",
    "board_pose_in_camera",
    "calibrate_intrinsics",
    "detect_board",
    "fixed_camera_extrinsics",
    "hand_eye_calibration",
    "load_images",
    "read_camera_info_yaml",
    "pose_matrix",
    "rotation_angle_deg",
    "write_camera_info_yaml",
]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")
# Largest image we accept (pixels): guards against decoding absurd files into memory.
MAX_IMAGE_PIXELS = 50_000_000


@dataclasses.dataclass(frozen=True)
class BoardDetection:
    """ChArUco corners found in one image: pixel positions (n, 2) and corner ids (n,) into the board."""

    corners_px: np.ndarray
    ids: np.ndarray
    image_size: tuple[int, int]  # (width, height)

    def __len__(self) -> int:
        """Number of detected corners."""
        return int(self.ids.size)


@dataclasses.dataclass(frozen=True)
class IntrinsicsResult:
    """Pinhole + plumb_bob calibration of one camera.

    Attributes:
        camera_matrix: K (3, 3), pixels.
        distortion: plumb_bob ``(k1, k2, p1, p2, k3)``.
        image_size: ``(width, height)`` in pixels.
        rms_px: overall RMS reprojection error (px).
        per_view_rms_px: RMS reprojection error of each used view (px).
        view_names: names of the used views, in the order of ``per_view_rms_px``.
        n_views: number of views used.
        n_corners: corners used over all views.
        std_fx_fy_px: standard errors of fx and fy (px) from the calibration's residuals
            (``cv2.calibrateCameraExtended``'s ``stdDeviationsIntrinsics``).
    """

    camera_matrix: np.ndarray
    distortion: np.ndarray
    image_size: tuple[int, int]
    rms_px: float
    per_view_rms_px: tuple[float, ...]
    view_names: tuple[str, ...]
    n_views: int
    n_corners: int
    std_fx_fy_px: tuple[float, float] = (0.0, 0.0)


@dataclasses.dataclass(frozen=True)
class ExtrinsicsResult:
    """Camera pose in the world: ``T_world_camera`` (4, 4), optical frame (x right, y down, z forward)."""

    T_world_camera: np.ndarray
    rms_px: float
    n_corners: int


def _as_gray(image: np.ndarray, name: str) -> np.ndarray:
    img = np.asarray(image)
    if img.ndim == 3 and img.shape[2] == 3:
        return cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    if img.ndim == 3 and img.shape[2] == 4:
        return cv2.cvtColor(img, cv2.COLOR_RGBA2GRAY)
    if img.ndim == 2:
        return img
    raise CalibrationError(f"image {name}: expected (H, W), (H, W, 3) or (H, W, 4), got shape {img.shape}")


def detect_board(
    image: np.ndarray, board: CharucoBoardSpec = DEFAULT_BOARD, *, name: str = "image"
) -> BoardDetection:
    """Detect ChArUco corners (sub-pixel) with ``cv2.aruco.CharucoDetector``; may return 0 corners.

    Args:
        image: uint8 grey or RGB image.
        board: the board that was photographed.
        name: image name used in error messages.
    """
    gray = _as_gray(image, name)
    if gray.dtype != np.uint8:
        raise CalibrationError(f"image {name}: expected uint8 pixels, got {gray.dtype}")
    detector = cv2.aruco.CharucoDetector(board.cv_board())
    corners, ids, _, _ = detector.detectBoard(gray)
    size = (int(gray.shape[1]), int(gray.shape[0]))
    if ids is None or corners is None or len(ids) == 0:
        return BoardDetection(np.zeros((0, 2)), np.zeros((0,), dtype=np.int32), size)
    return BoardDetection(
        np.asarray(corners, dtype=np.float64).reshape(-1, 2), np.asarray(ids, dtype=np.int32).ravel(), size
    )


def load_images(folder: str | Path) -> list[tuple[str, np.ndarray]]:
    """Read every image in ``folder`` (sorted by name) as grey uint8.

    Raises:
        CalibrationError: not a folder, no images, an unreadable or oversized image.
    """
    root = Path(folder)
    if not root.is_dir():
        raise CalibrationError(f"images folder {root} does not exist or is not a folder")
    paths = sorted(p for p in root.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
    if not paths:
        raise CalibrationError(f"images folder {root} holds no images ({', '.join(IMAGE_SUFFIXES)})")
    out = []
    for path in paths:
        img = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
        if img is None:
            raise CalibrationError(f"image {path} cannot be decoded")
        if img.size > MAX_IMAGE_PIXELS:
            raise CalibrationError(f"image {path} has {img.size} pixels; the limit is {MAX_IMAGE_PIXELS}")
        out.append((path.name, img))
    return out


def calibrate_intrinsics(
    images: Sequence[np.ndarray] | Sequence[tuple[str, np.ndarray]],
    board: CharucoBoardSpec = DEFAULT_BOARD,
    *,
    min_views: int = 5,
    min_corners: int = 8,
    flags: int = cv2.CALIB_FIX_K3,
) -> IntrinsicsResult:
    """Calibrate K and plumb_bob distortion from ChArUco views with ``cv2.calibrateCamera``.

    Views with fewer than ``min_corners`` corners are skipped.

    Args:
        images: images, or ``(name, image)`` pairs (names appear in the result and in errors).
        board: the board that was photographed.
        min_views: views with enough corners needed (at least 3).
        min_corners: corners a view needs to count (at least 6, for a homography plus margin).
        flags: ``cv2.CALIB_*`` flags; the default fixes k3 = 0 like ROS camera_calibration (two radial
            terms), since k3 is poorly constrained by board views and extrapolates badly at the image corners.

    Raises:
        CalibrationError: different image sizes, or fewer than ``min_views`` usable views (the message
            gives the corner count of every view).
    """
    if min_views < 3 or min_corners < 6:
        raise CalibrationError(
            f"min_views must be >= 3 and min_corners >= 6: got {min_views} and {min_corners}"
        )
    named: list[tuple[str, np.ndarray]] = [
        item if isinstance(item, tuple) else (f"view{i:03d}", item) for i, item in enumerate(images)
    ]
    board_points = board.corners_m()
    object_points, image_points, names, counts = [], [], [], []
    size: tuple[int, int] | None = None
    for name, image in named:
        det = detect_board(image, board, name=name)
        if size is None:
            size = det.image_size
        elif det.image_size != size:
            raise CalibrationError(
                f"image {name} is {det.image_size[0]}x{det.image_size[1]}, the first was "
                f"{size[0]}x{size[1]}; all views must come from one camera mode"
            )
        counts.append(f"{name}: {len(det)}")
        if len(det) < min_corners:
            continue
        object_points.append(board_points[det.ids].astype(np.float32))
        image_points.append(det.corners_px.astype(np.float32).reshape(-1, 1, 2))
        names.append(name)
    if len(names) < min_views or size is None:
        raise CalibrationError(
            f"{len(names)} of {len(named)} views have >= {min_corners} board corners; need {min_views} such "
            f"views (corners per view: {', '.join(counts) or 'none'}); record more views of the whole board"
        )
    rms, K, D, _, _, std_intrinsics, _, per_view = cv2.calibrateCameraExtended(
        object_points, image_points, size, None, None, flags=flags
    )
    return IntrinsicsResult(
        camera_matrix=np.asarray(K, dtype=np.float64),
        distortion=np.asarray(D, dtype=np.float64).ravel()[:5],
        image_size=size,
        rms_px=float(rms),
        per_view_rms_px=tuple(float(e) for e in np.asarray(per_view).ravel()),
        view_names=tuple(names),
        n_views=len(names),
        n_corners=int(sum(len(p) for p in image_points)),
        std_fx_fy_px=(float(std_intrinsics.ravel()[0]), float(std_intrinsics.ravel()[1])),
    )


def _matrix(rows: int, cols: int, values: np.ndarray) -> dict[str, object]:
    return {
        "rows": rows,
        "cols": cols,
        "data": [float(v) for v in np.asarray(values, dtype=np.float64).ravel()],
    }


def write_camera_info_yaml(
    result: IntrinsicsResult, path: str | Path, *, camera_name: str = "camera"
) -> Path:
    """Write a ROS CameraInfo YAML (camera_calibration_parsers format); never overwrites.

    Raises:
        CalibrationError: ``path`` exists.
    """
    out = refuse_existing(path, CalibrationError)
    K = result.camera_matrix
    P = np.zeros((3, 4))
    P[:3, :3] = K
    doc = {
        "image_width": int(result.image_size[0]),
        "image_height": int(result.image_size[1]),
        "camera_name": camera_name,
        "camera_matrix": _matrix(3, 3, K),
        "distortion_model": "plumb_bob",
        "distortion_coefficients": _matrix(1, 5, result.distortion),
        "rectification_matrix": _matrix(3, 3, np.eye(3)),
        "projection_matrix": _matrix(3, 4, P),
    }
    header = (
        f"# r2s2r calibrate: {result.n_views} views, {result.n_corners} corners, "
        f"RMS reprojection error {result.rms_px:.4f} px\n"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("x", encoding="utf-8") as f:
        f.write(header)
        yaml.safe_dump(doc, f, sort_keys=False, default_flow_style=None)
    return out


def read_camera_info_yaml(path: str | Path) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    """Read K (3, 3), D (5,) and ``(width, height)`` from a CameraInfo YAML.

    Raises:
        CalibrationError: missing file, or a missing/ill-shaped field (named).
    """
    src = Path(path)
    try:
        doc = yaml.safe_load(src.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise CalibrationError(f"camera info {src} cannot be read: {err}") from err
    if not isinstance(doc, dict):
        raise CalibrationError(f"camera info {src}: expected a mapping at top level")
    try:
        K = np.asarray(doc["camera_matrix"]["data"], dtype=np.float64).reshape(3, 3)
        D = np.asarray(doc["distortion_coefficients"]["data"], dtype=np.float64).ravel()
        size = (int(doc["image_width"]), int(doc["image_height"]))
    except (KeyError, TypeError, ValueError) as err:
        raise CalibrationError(f"camera info {src}: field {err} missing or malformed") from err
    return K, D, size


def pose_matrix(R: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The 4x4 homogeneous transform of rotation ``R`` (3x3) and translation ``t`` (3, m)."""
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = np.asarray(t, dtype=np.float64).ravel()
    return T


def board_pose_in_camera(
    detection: BoardDetection,
    camera_matrix: np.ndarray,
    distortion: np.ndarray | None,
    board: CharucoBoardSpec = DEFAULT_BOARD,
    *,
    min_corners: int = 6,
) -> tuple[np.ndarray, float]:
    """Board pose ``T_camera_board`` (4, 4) by ``cv2.solvePnP`` (iterative, refined), and its RMS error (px).

    Raises:
        CalibrationError: fewer than ``min_corners`` corners, or PnP failure.
    """
    if len(detection) < min_corners:
        raise CalibrationError(f"board pose needs >= {min_corners} corners, the view has {len(detection)}")
    obj = board.corners_m()[detection.ids]
    D = np.zeros(5) if distortion is None else np.asarray(distortion, dtype=np.float64)
    ok, rvec, tvec = cv2.solvePnP(obj, detection.corners_px, camera_matrix, D, flags=cv2.SOLVEPNP_ITERATIVE)
    if not ok:
        raise CalibrationError(f"solvePnP failed on {len(detection)} corners")
    rvec, tvec = cv2.solvePnPRefineLM(obj, detection.corners_px, camera_matrix, D, rvec, tvec)
    proj, _ = cv2.projectPoints(obj, rvec, tvec, camera_matrix, D)
    rms = float(np.sqrt(np.mean(np.sum((proj.reshape(-1, 2) - detection.corners_px) ** 2, axis=1))))
    R, _ = cv2.Rodrigues(rvec)
    return pose_matrix(R, tvec), rms


def fixed_camera_extrinsics(
    image: np.ndarray,
    camera_matrix: np.ndarray,
    distortion: np.ndarray | None,
    T_world_board: np.ndarray,
    board: CharucoBoardSpec = DEFAULT_BOARD,
) -> ExtrinsicsResult:
    """Pose of a fixed camera from one view of the board lying at a known world pose.

    Args:
        image: view of the board.
        camera_matrix: the camera's K (3, 3).
        distortion: the camera's plumb_bob coefficients (None: no distortion).
        T_world_board: board frame (see :class:`CharucoBoardSpec`) in the world, (4, 4), metres.
        board: the board in the view.

    Raises:
        CalibrationError: board not found with enough corners.
    """
    det = detect_board(image, board)
    T_camera_board, rms = board_pose_in_camera(det, camera_matrix, distortion, board)
    T_world_camera = np.asarray(T_world_board, dtype=np.float64) @ np.linalg.inv(T_camera_board)
    return ExtrinsicsResult(T_world_camera=T_world_camera, rms_px=rms, n_corners=len(det))


def _log_rot(R: np.ndarray) -> np.ndarray:
    rvec, _ = cv2.Rodrigues(np.asarray(R, dtype=np.float64))
    return rvec.ravel()


def _park_martin(A: list[np.ndarray], B: list[np.ndarray]) -> np.ndarray:
    """Solve AX = XB (Park & Martin 1994, IEEE T-RA 10(5)); A, B are relative motions (4, 4)."""
    M = np.zeros((3, 3))
    for a, b in zip(A, B, strict=True):
        M += np.outer(_log_rot(b[:3, :3]), _log_rot(a[:3, :3]))
    w, V = np.linalg.eigh(M.T @ M)
    if np.min(w) <= 1e-12:
        raise CalibrationError("hand-eye motions are degenerate: rotate the gripper about two different axes")
    R = V @ np.diag(w**-0.5) @ V.T @ M.T
    C = np.vstack([a[:3, :3] - np.eye(3) for a in A])
    d = np.concatenate([R @ b[:3, 3] - a[:3, 3] for a, b in zip(A, B, strict=True)])
    t, *_ = np.linalg.lstsq(C, d, rcond=None)
    return pose_matrix(R, t)


def hand_eye_calibration(
    T_base_gripper: Sequence[np.ndarray], T_camera_board: Sequence[np.ndarray]
) -> np.ndarray:
    """Wrist-camera pose in the gripper frame, ``T_gripper_camera`` (4, 4), from paired poses.

    Uses ``cv2.calibrateHandEye`` (Park) where the OpenCV build has it; OpenCV 5.0 dropped it from the main
    module, so the same Park & Martin closed form is computed here otherwise.

    Args:
        T_base_gripper: gripper poses in the robot base from forward kinematics, one per view.
        T_camera_board: board poses in the camera (:func:`board_pose_in_camera`), same views.

    Raises:
        CalibrationError: fewer than 3 pose pairs, mismatched counts, or degenerate motion.
    """
    if len(T_base_gripper) != len(T_camera_board):
        raise CalibrationError(
            "hand-eye needs one gripper pose per board pose: "
            f"got {len(T_base_gripper)} and {len(T_camera_board)}"
        )
    if len(T_base_gripper) < 3:
        raise CalibrationError(
            f"hand-eye needs >= 3 views at different gripper poses, got {len(T_base_gripper)}"
        )
    gripper = [np.asarray(T, dtype=np.float64) for T in T_base_gripper]
    target = [np.asarray(T, dtype=np.float64) for T in T_camera_board]
    if hasattr(cv2, "calibrateHandEye"):
        R, t = cv2.calibrateHandEye(
            [g[:3, :3] for g in gripper],
            [g[:3, 3] for g in gripper],
            [c[:3, :3] for c in target],
            [c[:3, 3] for c in target],
            method=cv2.CALIB_HAND_EYE_PARK,
        )
        return pose_matrix(R, t)
    # A_i = gripper motion i -> i+1 (in gripper frame), B_i = camera motion (in camera frame); A X = X B.
    A, B = [], []
    for i in range(len(gripper) - 1):
        A.append(np.linalg.inv(gripper[i + 1]) @ gripper[i])
        B.append(target[i + 1] @ np.linalg.inv(target[i]))
    return _park_martin(A, B)


def rotation_angle_deg(R: np.ndarray) -> float:
    """Angle (degrees) of a rotation matrix; used for pose errors."""
    return math.degrees(float(np.linalg.norm(_log_rot(R))))


def _known_pose_points(
    views: Sequence[tuple[np.ndarray, np.ndarray]], board: CharucoBoardSpec
) -> tuple[np.ndarray, np.ndarray]:
    """World points and detected pixels of every board corner seen in the known-pose views."""
    obj, img = [np.zeros((0, 3))], [np.zeros((0, 2))]
    corners = board.corners_m()
    for T_world_board, rgb in views:
        det = detect_board(rgb, board)
        if len(det) == 0:
            continue
        pts = corners[det.ids]
        obj.append(pts @ T_world_board[:3, :3].T + T_world_board[:3, 3])
        img.append(det.corners_px)
    return np.vstack(obj), np.vstack(img)


def _solve_known_pose(
    P: np.ndarray, U: np.ndarray, K: np.ndarray, D: np.ndarray, n_views: int
) -> tuple[np.ndarray, np.ndarray]:
    n = len(P)
    if n < 6:
        raise CalibrationError(
            f"the board at its known pose shows {n} corners in {n_views} views, at least 6 needed: record "
            "the board_known_pose phase with the whole board in view"
        )
    ok, rvec, tvec = cv2.solvePnP(P, U, K, D, flags=cv2.SOLVEPNP_ITERATIVE)
    if not ok:
        raise CalibrationError(f"solvePnP failed on {n} known-pose corners")
    return cv2.solvePnPRefineLM(P, U, K, D, rvec, tvec)


def _camera_in_world(rvec: np.ndarray, tvec: np.ndarray) -> np.ndarray:
    R, _ = cv2.Rodrigues(rvec)
    T_camera_world = np.eye(4)
    T_camera_world[:3, :3], T_camera_world[:3, 3] = R, np.ravel(tvec)
    return np.linalg.inv(T_camera_world)


def extrinsics_from_known_poses(
    views: Sequence[tuple[np.ndarray, np.ndarray]], K: np.ndarray, D: np.ndarray, board: CharucoBoardSpec
) -> tuple[np.ndarray, float, int]:
    """``T_world_camera`` (optical frame) from views of the board at known world poses: one joint PnP.

    Returns:
        ``(T_world_camera, rms_px, n_corners)``.

    Raises:
        CalibrationError: fewer than 6 corners in all views together, or PnP failure.
    """
    P, U = _known_pose_points(views, board)
    rvec, tvec = _solve_known_pose(P, U, K, D, len(views))
    proj, _ = cv2.projectPoints(P, rvec, tvec, K, D)
    rms = float(np.sqrt(np.mean(np.sum((proj.reshape(-1, 2) - U) ** 2, axis=1))))
    return _camera_in_world(rvec, tvec), rms, len(P)


def known_pose_std(
    views: Sequence[tuple[np.ndarray, np.ndarray]], K: np.ndarray, D: np.ndarray, board: CharucoBoardSpec
) -> tuple[float, float]:
    """Standard errors of the camera pose of :func:`extrinsics_from_known_poses`: position (m), angle (rad).

    The PnP's least-squares covariance ``s^2 (J^T J)^-1`` (``J`` from ``cv2.projectPoints``, ``s^2`` the
    reprojection residual variance), carried to the camera's position in the world by a finite-difference
    Jacobian; each figure is the largest over the three axes.  It counts the corner noise only, not an
    error in the board's known pose.

    Raises:
        CalibrationError: as :func:`extrinsics_from_known_poses`.
    """
    P, U = _known_pose_points(views, board)
    rvec, tvec = _solve_known_pose(P, U, K, D, len(views))
    proj, jac = cv2.projectPoints(P, rvec, tvec, K, D)
    res = proj.reshape(-1) - U.reshape(-1)
    J = jac[:, :6]
    s2 = float(res @ res) / max(res.size - 6, 1)
    cov = s2 * np.linalg.pinv(J.T @ J)
    x0 = np.concatenate([np.ravel(rvec), np.ravel(tvec)])
    eps = 1e-6
    Jc = np.empty((3, 6))
    for k in range(6):
        dx = np.zeros(6)
        dx[k] = eps
        hi = _camera_in_world(x0[:3] + dx[:3], x0[3:] + dx[3:])[:3, 3]
        lo = _camera_in_world(x0[:3] - dx[:3], x0[3:] - dx[3:])[:3, 3]
        Jc[:, k] = (hi - lo) / (2 * eps)
    pos = Jc @ cov @ Jc.T
    return float(np.sqrt(np.max(np.diag(pos)))), float(np.sqrt(np.max(np.diag(cov)[:3])))
