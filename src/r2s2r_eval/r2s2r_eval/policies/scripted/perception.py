"""World points of a coloured blob in one RGB-D frame, and a geom's colour from the world's MJCF."""

from __future__ import annotations

import mujoco
import numpy as np

from r2s2r_eval.policies.reference.perception import segment_colour

__all__ = ["blob_points", "geom_colour"]

_MIN_PIXELS = 30


def blob_points(
    rgb: np.ndarray,
    depth: np.ndarray,
    k: np.ndarray,
    camera_pose: np.ndarray,
    colour: tuple[float, float, float],
) -> np.ndarray | None:
    """World points (N x 3, m) of the largest blob of ``colour`` with valid depth; None under 30 pixels.

    Args:
        rgb: HxWx3 uint8.
        depth: HxW float32 metres, NaN where invalid.
        k: 3x3 intrinsics.
        camera_pose: 4x4 pose of the optical frame in the world.
        colour: RGB in [0, 1].
    """
    mask = segment_colour(rgb, colour) & np.isfinite(depth)
    v, u = np.nonzero(mask)
    if u.size < _MIN_PIXELS:
        return None
    z = depth[v, u].astype(np.float64)
    pts = np.stack([(u - k[0, 2]) * z / k[0, 0], (v - k[1, 2]) * z / k[1, 1], z], axis=1)
    return np.asarray(pts @ camera_pose[:3, :3].T + camera_pose[:3, 3])


def geom_colour(model: mujoco.MjModel, geom: str) -> tuple[float, float, float]:
    """RGB in [0, 1] of a geom (its material's when it has one).

    Raises:
        ValueError: no such geom.
    """
    gid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, geom)
    if gid < 0:
        raise ValueError(f"no geom {geom!r} in the world model")
    rgba = model.geom_rgba[gid]
    if int(model.geom_matid[gid]) >= 0:
        rgba = model.mat_rgba[model.geom_matid[gid]]
    return float(rgba[0]), float(rgba[1]), float(rgba[2])
