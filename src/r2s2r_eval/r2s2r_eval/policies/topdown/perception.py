"""Depth-only object finding: the highest blob above the table plane, from one depth image."""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

__all__ = ["Blob", "WORKSPACE_X", "WORKSPACE_Y", "highest_blob"]

# Where objects are looked for (world frame, m): in front of the arm, clear of the bin (y >= 0.28).
WORKSPACE_X = (0.2, 0.8)
WORKSPACE_Y = (-0.4, 0.25)
_MAX_ABOVE_TABLE_M = 0.15  # higher points are the arm, not objects
_MIN_PIXELS = 30
_TOP_BAND_M = 0.006


@dataclass(frozen=True)
class Blob:
    """The chosen blob, world frame.

    Attributes:
        centre: (x, y) of its top face (m).
        top_z: height of its top (m, 98th percentile of its points).
        yaw: yaw of its top face's minimum-area rectangle about world z (rad), modulo pi/2 in [-pi/4, pi/4).
        table_z: height of the table plane (m).
        pixels: pixels of the blob.
        blobs: number of blobs found above the table.
    """

    centre: np.ndarray
    top_z: float
    yaw: float
    table_z: float
    pixels: int
    blobs: int


def highest_blob(
    depth: np.ndarray, k: np.ndarray, camera_pose: np.ndarray, *, min_height: float
) -> Blob | None:
    """The blob whose top is highest above the table plane, or None when no blob is found.

    Depth pixels are back-projected through ``k`` and ``camera_pose`` (optical frame in the world); the
    table plane's height is the median height of the workspace points; pixels between ``min_height`` and
    15 cm above it form a mask whose 8-connected components (>= 30 pixels) are the blobs.
    """
    h, w = depth.shape
    v, u = np.mgrid[0:h, 0:w]
    z = depth.astype(np.float64)
    valid = np.isfinite(z) & (z > 0)
    zc = np.where(valid, z, 0.0)
    pts = np.stack([(u - k[0, 2]) * zc / k[0, 0], (v - k[1, 2]) * zc / k[1, 1], zc], axis=-1)
    world = pts @ camera_pose[:3, :3].T + camera_pose[:3, 3]
    x, y, hz = world[..., 0], world[..., 1], world[..., 2]
    region = (
        valid & (x >= WORKSPACE_X[0]) & (x <= WORKSPACE_X[1]) & (y >= WORKSPACE_Y[0]) & (y <= WORKSPACE_Y[1])
    )
    if region.sum() < _MIN_PIXELS:
        return None
    table_z = float(np.median(hz[region]))
    above = region & (hz >= table_z + min_height) & (hz <= table_z + _MAX_ABOVE_TABLE_M)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(above.astype(np.uint8), connectivity=8)
    best: tuple[float, int] | None = None
    n_blobs = 0
    for label in range(1, count):
        if stats[label, cv2.CC_STAT_AREA] < _MIN_PIXELS:
            continue
        n_blobs += 1
        top = float(np.percentile(hz[labels == label], 98))
        if best is None or top > best[0]:
            best = (top, label)
    if best is None:
        return None
    top_z, label = best
    mask = labels == label
    face = mask & (hz >= top_z - _TOP_BAND_M)
    xy = np.stack([x[face], y[face]], axis=1)
    if len(xy) < 5:
        xy = np.stack([x[mask], y[mask]], axis=1)
    (cx, cy), _, angle = cv2.minAreaRect((xy * 1000.0).astype(np.float32))
    yaw = (math.radians(angle) + math.pi / 4) % (math.pi / 2) - math.pi / 4
    return Blob(
        centre=np.array([cx / 1000.0, cy / 1000.0]),
        top_z=top_z,
        yaw=yaw,
        table_z=table_z,
        pixels=int(mask.sum()),
        blobs=n_blobs,
    )
