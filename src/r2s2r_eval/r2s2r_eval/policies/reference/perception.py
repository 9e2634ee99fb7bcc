"""Colour segmentation of the cube and its pose estimate from RGB-D; numpy and OpenCV only."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np

__all__ = ["CubeEstimate", "PixelFilter", "estimate_cube", "segment_colour"]

# OpenCV hue is 0..179 (degrees / 2).  A hue window of +-8 (16 deg) and saturation above 60 % of the
# object's keeps the red cube under the scene's shading and refuses the brown table (hue ~14, sat ~0.45).
_HUE_TOL = 8
_SAT_FRACTION = 0.6
_MIN_VALUE = 30
_MIN_PIXELS = 30
# Points within this height (m) of the highest cube point belong to its top face.
_TOP_FACE_BAND_M = 0.006
# Blobs tried, largest first; one whose top face is wider than this many cube edges is something else of a
# similar colour (e.g. an orange arm), not the cube.
_MAX_BLOBS = 5
_MAX_EXTENT_EDGES = 1.6


@dataclass(frozen=True)
class CubeEstimate:
    """Cube pose estimate in the world frame.

    Attributes:
        position: centre (m), shape (3,).
        yaw: rotation about world z (rad) modulo pi/2, in [-pi/4, pi/4).
        pixels: number of segmented pixels with valid depth.
    """

    position: np.ndarray
    yaw: float
    pixels: int


def _hsv_of(rgb: tuple[float, float, float]) -> np.ndarray:
    pixel = (
        np.clip(np.round(np.array(rgb, dtype=np.float64) * 255.0), 0, 255).astype(np.uint8).reshape(1, 1, 3)
    )
    return cv2.cvtColor(pixel, cv2.COLOR_RGB2HSV).reshape(3).astype(np.int32)


# Pixels (rows, columns) -> which of them show something known not to be the object (e.g. the arm).
PixelFilter = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _colour_blobs(
    rgb: np.ndarray, colour: tuple[float, float, float], drop: PixelFilter | None = None
) -> list[np.ndarray]:
    """Masks (HxW bool) of the connected blobs of ``colour`` in ``rgb``, largest first.

    ``drop`` takes pixels out before the blobs are formed: an arm of the cube's colour that touches the cube
    in the image would otherwise make one blob of both, too wide to be the cube.
    """
    target = _hsv_of(colour)
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV).astype(np.int32)
    dh = np.abs(hsv[..., 0] - target[0])
    dh = np.minimum(dh, 180 - dh)  # hue is circular
    mask = (dh <= _HUE_TOL) & (hsv[..., 1] >= _SAT_FRACTION * target[1]) & (hsv[..., 2] >= _MIN_VALUE)
    if drop is not None and mask.any():
        v, u = np.nonzero(mask)
        dropped = drop(v, u)
        mask[v[dropped], u[dropped]] = False
    mask8 = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask8, connectivity=8)
    order = 1 + np.argsort(-stats[1:, cv2.CC_STAT_AREA])
    return [np.asarray(labels == int(i)) for i in order[:_MAX_BLOBS]]


def segment_colour(rgb: np.ndarray, colour: tuple[float, float, float]) -> np.ndarray:
    """Mask (HxW bool) of the largest connected blob of ``colour`` (linear RGB in [0, 1]) in ``rgb``."""
    blobs = _colour_blobs(rgb, colour)
    return blobs[0] if blobs else np.zeros(rgb.shape[:2], dtype=bool)


def estimate_cube(
    rgb: np.ndarray,
    depth: np.ndarray,
    k: np.ndarray,
    camera_pose: np.ndarray,
    colour: tuple[float, float, float],
    half_size: float,
    *,
    reject: Callable[[np.ndarray], bool] | None = None,
    drop: PixelFilter | None = None,
) -> CubeEstimate | None:
    """Estimate the pose of a cube of ``colour`` from one aligned RGB-D frame.

    Blobs of the colour are tried largest first.  A blob's pixels are back-projected through ``k`` with
    their depth and moved to the world with ``camera_pose``; the points near the highest one form the top
    face, whose minimum-area rectangle gives the horizontal centre and the yaw; the centre height is the top
    face minus ``half_size``.  A blob whose top face is wider than 1.6 cube edges is not the cube.

    Args:
        rgb: HxWx3 uint8.
        depth: HxW float32 metres, NaN where invalid.
        k: 3x3 intrinsics.
        camera_pose: 4x4 pose of the optical frame in the world.
        colour: the cube's RGB in [0, 1].
        half_size: half the cube's edge (m).
        reject: says of a blob's estimated centre (world, m) that it is something else (e.g. a part of an
            arm of the cube's colour); the next blob is tried.
        drop: takes pixels out of the colour mask before it is split into blobs (see ``_colour_blobs``).

    Returns:
        The estimate, or None when no blob of at least 30 pixels with valid depth has the cube's size.
    """
    for blob in _colour_blobs(rgb, colour, drop):
        found = _estimate_blob(blob & np.isfinite(depth), depth, k, camera_pose, half_size)
        if found is not None and not (reject is not None and reject(found.position)):
            return found
    return None


def _estimate_blob(
    mask: np.ndarray, depth: np.ndarray, k: np.ndarray, camera_pose: np.ndarray, half_size: float
) -> CubeEstimate | None:
    """The cube estimate from one blob, or None when it is too small or too wide to be the cube."""
    v, u = np.nonzero(mask)
    if u.size < _MIN_PIXELS:
        return None
    z = depth[v, u].astype(np.float64)
    pts = np.stack([(u - k[0, 2]) * z / k[0, 0], (v - k[1, 2]) * z / k[1, 1], z], axis=1)
    world = pts @ camera_pose[:3, :3].T + camera_pose[:3, 3]
    top_z = float(np.percentile(world[:, 2], 98))
    top = world[world[:, 2] >= top_z - _TOP_FACE_BAND_M]
    if len(top) < 5:
        top = world
    (cx, cy), (w, h), angle = cv2.minAreaRect((top[:, :2] * 1000.0).astype(np.float32))
    if max(w, h) / 1000.0 > _MAX_EXTENT_EDGES * 2.0 * half_size:
        return None
    yaw = math.radians(angle)
    yaw = (yaw + math.pi / 4) % (math.pi / 2) - math.pi / 4
    centre = np.array([cx / 1000.0, cy / 1000.0, top_z - half_size])
    return CubeEstimate(position=centre, yaw=yaw, pixels=int(u.size))
