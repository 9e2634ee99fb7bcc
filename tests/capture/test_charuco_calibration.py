"""ChArUco board and camera calibration, checked on board views rendered by MuJoCo (known K and poses)."""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import dataclasses  # noqa: E402
import math  # noqa: E402
from pathlib import Path  # noqa: E402

import cv2  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402
from r2s2r_capture.calibration import camera as cal  # noqa: E402
from r2s2r_capture.calibration.charuco import (  # noqa: E402
    DEFAULT_BOARD,
    CharucoBoardSpec,
    board_pose_in_plane_geom,
    write_board_pdf,
    write_board_png,
)
from r2s2r_capture.errors import CalibrationError  # noqa: E402
from r2s2r_sim.render.renderer import RgbdRenderer, camera_intrinsics  # noqa: E402
from transforms3d.euler import euler2mat, euler2quat  # noqa: E402

W, H, FOVY = 640, 480, 50.0
CAM_POS = np.array([0.05, -0.02, 0.6])


def _scene_xml(texture: Path, board: CharucoBoardSpec) -> str:
    w, h = board.size_m
    # Camera looks straight down (-z world); a slight yaw so the pose is not axis aligned.
    return f"""<mujoco>
  <visual><global offwidth="{W}" offheight="{H}"/>
    <headlight ambient="1 1 1" diffuse="0 0 0" specular="0 0 0"/></visual>
  <asset><texture name="board" type="2d" file="{texture}"/>
    <material name="board" texture="board" specular="0" shininess="0"/></asset>
  <worldbody>
    <geom name="backdrop" type="plane" size="2 2 0.01" pos="0 0 -0.3" rgba="0.5 0.5 0.5 1"/>
    <body name="board" mocap="true">
      <geom name="board" type="plane" size="{w / 2} {h / 2} 0.01" material="board"/>
    </body>
    <camera name="cam" pos="{CAM_POS[0]} {CAM_POS[1]} {CAM_POS[2]}" euler="0 0 0.1" fovy="{FOVY}"/>
  </worldbody>
</mujoco>"""


def _board_poses(n: int, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    poses = []
    for i in range(n):
        # Tilts of 15-35 degrees about alternating axes: enough perspective to separate fx from distance.
        tilt = math.radians(15 + 20 * rng.random())
        ax, ay = (tilt, 0.3 * tilt) if i % 2 else (0.3 * tilt, tilt)
        ax *= rng.choice([-1, 1])
        ay *= rng.choice([-1, 1])
        quat = euler2quat(ax, ay, rng.uniform(-0.4, 0.4))
        # 0.3-0.5 m from the camera, spread so that the corners reach the image borders.
        pos = np.array([rng.uniform(-0.12, 0.12), rng.uniform(-0.09, 0.09), rng.uniform(0.1, 0.3)])
        poses.append((pos, quat))
    return poses


@dataclasses.dataclass
class Rendered:
    K: np.ndarray
    views: list[np.ndarray]
    T_world_camera: np.ndarray
    known_view: np.ndarray
    T_world_board: np.ndarray


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    root = tmp_path_factory.mktemp("charuco")
    texture = write_board_png(DEFAULT_BOARD, root / "board.png", px_per_square=150)
    model = mujoco.MjModel.from_xml_string(_scene_xml(texture, DEFAULT_BOARD))
    data = mujoco.MjData(model)
    views = []
    with RgbdRenderer(model, W, H) as renderer:
        for pos, quat in _board_poses(10, np.random.default_rng(3)):
            data.mocap_pos[0], data.mocap_quat[0] = pos, quat
            mujoco.mj_forward(model, data)
            views.append(renderer.render(data, "cam")[0])
        # The known pose used for the fixed-camera extrinsics.
        data.mocap_pos[0], data.mocap_quat[0] = (0.02, 0.01, 0.05), euler2quat(0.2, -0.15, 0.3)
        mujoco.mj_forward(model, data)
        known = renderer.render(data, "cam")[0]
    T_world_geom = np.eye(4)
    T_world_geom[:3, :3] = data.geom("board").xmat.reshape(3, 3)
    T_world_geom[:3, 3] = data.geom("board").xpos
    T_world_camera = np.eye(4)
    # MuJoCo cameras look along -z with y up; the optical frame flips y and z.
    T_world_camera[:3, :3] = data.cam("cam").xmat.reshape(3, 3) @ np.diag([1.0, -1.0, -1.0])
    T_world_camera[:3, 3] = data.cam("cam").xpos
    return Rendered(
        K=camera_intrinsics(model, "cam", W, H),
        views=views,
        T_world_camera=T_world_camera,
        known_view=known,
        T_world_board=T_world_geom @ board_pose_in_plane_geom(DEFAULT_BOARD),
    )


def _distort(image: np.ndarray, K: np.ndarray, D: np.ndarray) -> np.ndarray:
    """What a lens with (K, D) would see: each distorted pixel samples the ideal image where it maps."""
    u, v = np.meshgrid(np.arange(W, dtype=np.float32), np.arange(H, dtype=np.float32))
    pts = np.stack([u.ravel(), v.ravel()], axis=1).reshape(-1, 1, 2)
    ideal = cv2.undistortPoints(pts, K, D, P=K).reshape(H, W, 2)
    return cv2.remap(image, ideal[..., 0], ideal[..., 1], cv2.INTER_LINEAR, borderValue=(255, 255, 255))


# --- board ---------------------------------------------------------------------------------------


def test_board_image_and_files(tmp_path: Path) -> None:
    img = DEFAULT_BOARD.board_image(50)
    assert img.shape == (5 * 50, 7 * 50) and img.dtype == np.uint8
    det = cal.detect_board(np.pad(img, 30, constant_values=255))
    assert len(det) == DEFAULT_BOARD.n_corners
    png = write_board_png(DEFAULT_BOARD, tmp_path / "b.png")
    assert cv2.imread(str(png)).shape[:2] == (5 * 200, 7 * 200)
    with pytest.raises(CalibrationError, match="already exists"):
        write_board_png(DEFAULT_BOARD, png)
    pdf = write_board_pdf(DEFAULT_BOARD, tmp_path / "b.pdf")
    assert pdf.read_bytes().startswith(b"%PDF")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"squares_x": 2}, "squares_x and squares_y must be >= 3"),
        ({"marker_m": 0.05}, "marker_m must be in"),
        ({"square_m": -1.0}, "square_m must be > 0"),
        ({"dictionary": "DICT_NOPE"}, "dictionary 'DICT_NOPE' unknown"),
        ({"squares_x": 20, "squares_y": 20, "dictionary": "DICT_4X4_50"}, "needs 200 markers"),
    ],
)
def test_board_spec_rejects(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(CalibrationError, match=match):
        CharucoBoardSpec(**kwargs)  # type: ignore[arg-type]


# --- intrinsics ---------------------------------------------------------------------------------


def test_intrinsics_from_rendered_views(rendered: Rendered, tmp_path: Path) -> None:
    result = cal.calibrate_intrinsics(rendered.views, DEFAULT_BOARD)
    K, Kt = result.camera_matrix, rendered.K
    assert result.n_views == 10 and result.image_size == (W, H)
    assert abs(K[0, 0] / Kt[0, 0] - 1) < 0.01 and abs(K[1, 1] / Kt[1, 1] - 1) < 0.01
    assert abs(K[0, 2] - Kt[0, 2]) < 3.0 and abs(K[1, 2] - Kt[1, 2]) < 3.0
    assert result.rms_px < 0.5
    assert len(result.per_view_rms_px) == 10 and max(result.per_view_rms_px) < 1.0
    # An ideal pinhole render: distortion stays small.
    assert np.all(np.abs(result.distortion[:2]) < 0.05) and np.all(np.abs(result.distortion[2:4]) < 0.005)

    out = cal.write_camera_info_yaml(result, tmp_path / "cam.yaml", camera_name="realsense")
    doc = yaml.safe_load(out.read_text())
    assert doc["image_width"] == W and doc["camera_name"] == "realsense"
    assert doc["distortion_model"] == "plumb_bob" and doc["camera_matrix"]["rows"] == 3
    assert len(doc["projection_matrix"]["data"]) == 12
    K2, D2, size = cal.read_camera_info_yaml(out)
    np.testing.assert_allclose(K2, K)
    assert size == (W, H) and D2.shape == (5,)
    with pytest.raises(CalibrationError, match="already exists"):
        cal.write_camera_info_yaml(result, out)


def test_intrinsics_recovers_known_distortion(rendered: Rendered) -> None:
    D_true = np.array([-0.12, 0.04, 0.001, -0.0008, 0.0])
    views = [_distort(v, rendered.K, D_true) for v in rendered.views]
    result = cal.calibrate_intrinsics(views, DEFAULT_BOARD)
    np.testing.assert_allclose(result.distortion[:2], D_true[:2], atol=0.02)
    np.testing.assert_allclose(result.distortion[2:4], D_true[2:4], atol=0.001)
    assert abs(result.camera_matrix[0, 0] / rendered.K[0, 0] - 1) < 0.01
    assert result.rms_px < 0.5


def test_too_few_views_names_counts(rendered: Rendered) -> None:
    blank = np.full((H, W), 255, np.uint8)
    with pytest.raises(CalibrationError, match=r"2 of 4 views .* need 5 .*view002: 0"):
        cal.calibrate_intrinsics([*rendered.views[:2], blank, blank], DEFAULT_BOARD)
    with pytest.raises(CalibrationError, match="all views must come from one camera"):
        cal.calibrate_intrinsics([rendered.views[0], np.zeros((10, 10), np.uint8)], DEFAULT_BOARD)


def test_load_images_errors(tmp_path: Path) -> None:
    with pytest.raises(CalibrationError, match="does not exist"):
        cal.load_images(tmp_path / "missing")
    with pytest.raises(CalibrationError, match="holds no images"):
        cal.load_images(tmp_path)
    (tmp_path / "bad.png").write_bytes(b"not a png")
    with pytest.raises(CalibrationError, match="cannot be decoded"):
        cal.load_images(tmp_path)


def test_read_camera_info_errors(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("image_width: 3\n")
    with pytest.raises(CalibrationError, match="missing or malformed"):
        cal.read_camera_info_yaml(bad)


# --- extrinsics ---------------------------------------------------------------------------------


def test_fixed_camera_extrinsics_board_at_known_pose(rendered: Rendered) -> None:
    intr = cal.calibrate_intrinsics(rendered.views, DEFAULT_BOARD)
    ext = cal.fixed_camera_extrinsics(
        rendered.known_view, intr.camera_matrix, intr.distortion, rendered.T_world_board, DEFAULT_BOARD
    )
    err_mm = 1000 * np.linalg.norm(ext.T_world_camera[:3, 3] - rendered.T_world_camera[:3, 3])
    err_deg = cal.rotation_angle_deg(ext.T_world_camera[:3, :3].T @ rendered.T_world_camera[:3, :3])
    print(f"fixed-camera extrinsics error: {err_mm:.2f} mm, {err_deg:.3f} deg")
    assert err_mm < 5.0 and err_deg < 0.5, (err_mm, err_deg)
    assert ext.rms_px < 0.5 and ext.n_corners == DEFAULT_BOARD.n_corners
    with pytest.raises(CalibrationError, match="board pose needs >= 6 corners, the view has 0"):
        cal.fixed_camera_extrinsics(np.full((H, W), 255, np.uint8), rendered.K, None, np.eye(4))


def _T(rot: np.ndarray, t: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = rot, t
    return T


def test_hand_eye_recovers_wrist_camera() -> None:
    rng = np.random.default_rng(0)
    X = _T(euler2mat(0.1, -0.2, 1.4), np.array([0.03, -0.05, 0.08]))  # T_gripper_camera
    T_base_board = _T(euler2mat(0.0, 0.0, 0.5), np.array([0.5, 0.1, 0.0]))
    grippers, boards = [], []
    for _ in range(8):
        G = _T(
            euler2mat(*rng.uniform(-0.6, 0.6, 3)) @ euler2mat(math.pi, 0, 0),
            rng.uniform([0.3, -0.2, 0.3], [0.6, 0.3, 0.5]),
        )
        grippers.append(G)
        boards.append(np.linalg.inv(G @ X) @ T_base_board)
    est = cal.hand_eye_calibration(grippers, boards)
    assert np.linalg.norm(est[:3, 3] - X[:3, 3]) < 1e-6
    assert cal.rotation_angle_deg(est[:3, :3].T @ X[:3, :3]) < 1e-4
    with pytest.raises(CalibrationError, match="one gripper pose per board pose: got 8 and 2"):
        cal.hand_eye_calibration(grippers, boards[:2])
    with pytest.raises(CalibrationError, match=">= 3 views"):
        cal.hand_eye_calibration(grippers[:2], boards[:2])
