"""World points of a coloured blob in one RGB-D frame, a flat marker's centre, and a geom's colour."""

from __future__ import annotations

import mujoco
import numpy as np

from r2s2r_eval.policies.reference.perception import segment_colour

__all__ = ["blob_points", "flat_marker_centre", "geom_colour"]

_MIN_PIXELS = 30
# Marker points within this height (m) of the blob's median belong to the flat marker (depth noise on a
# table ~1 m away is a few mm); the extent is taken between these percentiles to ignore stray pixels.
_FLAT_BAND_M = 0.015
_EXTENT_PERCENTILES = (1.0, 99.0)


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


def flat_marker_centre(points: np.ndarray | None) -> np.ndarray | None:
    """World centre (x, y, z; m) of a flat marker on the table from its :func:`blob_points`; None if unseen.

    A taped disc has no depth of its own: depth gives the table's height under it, colour its outline.
    The centre is the middle of the blob's extent along world x and y, not the mean of its points: pixels
    are denser on the near half of a tilted view, which would pull a mean towards the camera.
    """
    if points is None:
        return None
    pts = points[np.abs(points[:, 2] - np.median(points[:, 2])) <= _FLAT_BAND_M]
    if len(pts) < _MIN_PIXELS:
        return None
    lo, hi = np.percentile(pts[:, :2], _EXTENT_PERCENTILES, axis=0)
    return np.array([*((lo + hi) / 2.0), float(np.median(pts[:, 2]))])


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
