"""The ChArUco board of the emulated capture: a mocap plane in a copy of the world, moved between views.

The board exists in the emulated world through a *capture variant* of the world (:func:`board_world`): a
copy of the world folder whose scene gains a textured ``plane`` geom on a mocap body (no collisions).  The
hand-held views' poses (:func:`held_board_poses`) stand in for the person who moves the board.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.worlds import world_path

from r2s2r_capture.calibration.charuco import CharucoBoardSpec, write_board_png

__all__ = [
    "BOARD_BODY",
    "BOARD_LIFT",
    "BOARD_PARKED",
    "board_world",
    "held_board_poses",
    "matrix_quat",
    "rotation",
]

BOARD_BODY = "r2s2r_capture_board"
BOARD_PARKED = np.array([0.0, 0.0, -5.0])  # below the floor: out of every view
BOARD_LIFT = 0.0005  # m above the table top (no z-fighting)


def _board_editor(texture: Path, board: CharucoBoardSpec) -> Callable[[mujoco.MjSpec], None]:
    """An edit adding the board to a scene: its texture, material and a mocap plane parked out of view."""

    def edit(spec: mujoco.MjSpec) -> None:
        spec.add_texture(name=BOARD_BODY, type=mujoco.mjtTexture.mjTEXTURE_2D, file=str(texture))
        mat = spec.add_material(name=BOARD_BODY, specular=0.0, shininess=0.0)
        mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = BOARD_BODY
        body = spec.worldbody.add_body(name=BOARD_BODY, mocap=True, pos=BOARD_PARKED)
        w, h = board.size_m
        body.add_geom(
            name=BOARD_BODY,
            type=mujoco.mjtGeom.mjGEOM_PLANE,
            size=[w / 2, h / 2, 0.01],
            material=BOARD_BODY,
            contype=0,
            conaffinity=0,
        )

    return edit


def board_world(world: str | Path, board: CharucoBoardSpec, root: Path) -> Path:
    """Copy the world folder to ``root/world`` and add the board (texture + mocap plane) to its scene."""
    src = world_path(world)
    dst = root / "world"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    cfg = load_world_config(dst)
    scene_path = Path(cfg.scene)
    write_board_png(board, scene_path.parent / f"{BOARD_BODY}.png", px_per_square=160)
    texture = Path(f"{BOARD_BODY}.png")  # relative to the scene file: stays inside the world folder
    spec = mujoco.MjSpec.from_file(str(scene_path))
    _board_editor(texture, board)(spec)
    spec.compile()
    scene_path.write_text(spec.to_xml(), encoding="utf-8")
    return dst


def rotation(axis: str, a: float) -> np.ndarray:
    """The rotation by ``a`` (rad) about the ``x``, ``y`` or ``z`` axis."""
    c, s = math.cos(a), math.sin(a)
    if axis == "x":
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == "y":
        return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def matrix_quat(R: np.ndarray) -> np.ndarray:
    """MuJoCo's quaternion (w, x, y, z) of rotation matrix ``R``."""
    q = np.empty(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(R, dtype=np.float64).ravel())
    return q


def held_board_poses(
    board: CharucoBoardSpec, K: np.ndarray, size: tuple[int, int], n: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """``T_camera_board`` of ``n`` hand-held views: 0.45-0.8 m away, tilted, spread over the image."""
    w_m, h_m = board.size_m
    width, height = size
    poses = []
    for i in range(n):
        tilt = math.radians(15 + 25 * rng.random())
        ax, ay = (tilt, 0.3 * tilt) if i % 2 else (0.3 * tilt, tilt)
        R = (
            rotation("z", rng.uniform(-0.4, 0.4))
            @ rotation("x", ax * rng.choice([-1, 1]))
            @ rotation("y", ay * rng.choice([-1, 1]))
        )
        d = rng.uniform(0.55, 0.9)
        # Board centre at a pixel spread over the image (the corners reach the borders in some views).
        u = width / 2 + rng.uniform(-0.2, 0.2) * width
        v = height / 2 + rng.uniform(-0.2, 0.2) * height
        centre = d * np.array([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], 1.0])
        T = np.eye(4)
        T[:3, :3] = R
        T[:3, 3] = centre - R @ np.array([w_m / 2, h_m / 2, 0.0])  # board origin is its top-left corner
        poses.append(T)
    return poses
