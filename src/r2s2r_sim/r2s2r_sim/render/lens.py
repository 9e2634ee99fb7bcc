"""Lens distortion drawn onto MuJoCo's pinhole renders: the plumb_bob (Brown-Conrady) model of ROS and OpenCV.

MuJoCo draws ideal pinhole images.  A camera with distortion coefficients ``D`` is drawn in two steps:

1. every output pixel centre is undistorted with ``cv2.undistortPoints`` (the iterative inverse of the
   plumb_bob model, run to 1e-10) to its normalized ray ``(x, y)``; this is the inverse of the maps that
   ``cv2.initUndistortRectifyMap`` builds (those map *undistorted* pixels to *distorted* ones; drawing
   needs the opposite direction);
2. a pinhole render that contains all of those rays is resampled through ``map = K_render (x, y, 1)`` with
   ``cv2.remap``: bilinear for colour, nearest-neighbour for depth (z-depth along the optical axis does not
   depend on the intrinsics, so depth stays aligned to colour and never mixes foreground and background).

A point ``P`` in the optical frame then lands at ``cv2.projectPoints(P, K, D)`` in the drawn image, which
is what a consumer of the published ``CameraInfo`` (``K``, ``D``) expects.  Used by the sim's camera frames
and by the emulated camera alike.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

__all__ = ["distort", "distortion_maps", "has_distortion", "pinhole_margin", "undistorted_rays"]


def has_distortion(d: np.ndarray | tuple[float, ...] | None) -> bool:
    """Whether ``D`` bends any ray (None, empty or all zeros: an ideal pinhole)."""
    return d is not None and len(d) > 0 and bool(np.any(np.asarray(d, dtype=np.float64) != 0.0))


def undistorted_rays(k: np.ndarray, d: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Normalized rays ``(x, y)`` (each ``height x width``) of every pixel centre of the distorted image."""
    u, v = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    pts = np.stack([u.ravel(), v.ravel()], axis=1).reshape(-1, 1, 2)
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-10)
    d = np.asarray(d, dtype=np.float64)
    rays = cv2.undistortPoints(pts, np.asarray(k, dtype=np.float64), d, None, None, None, criteria)
    rays = rays.reshape(height, width, 2)
    return rays[..., 0], rays[..., 1]


def pinhole_margin(k: np.ndarray, d: np.ndarray, width: int, height: int) -> tuple[int, int]:
    """Pixels ``(mx, my)`` to add on each side of a ``width x height`` pinhole render with intrinsics ``k``.

    With that margin the render contains the ray of every pixel of the distorted image, plus 2 px for
    interpolation, so barrel distortion shows no black border.
    """
    x, y = undistorted_rays(k, d, width, height)
    u = k[0, 0] * x + k[0, 2]
    v = k[1, 1] * y + k[1, 2]
    mx = max(0.0, -float(np.min(u)), float(np.max(u)) - (width - 1))
    my = max(0.0, -float(np.min(v)), float(np.max(v)) - (height - 1))
    return math.ceil(mx + 2.0), math.ceil(my + 2.0)


def distortion_maps(
    k: np.ndarray, d: np.ndarray, width: int, height: int, render_k: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``cv2.remap`` maps from a pinhole render with intrinsics ``render_k`` to the distorted image.

    Returns:
        ``map_x``, ``map_y``: float32 ``height x width``; output pixel ``(u, v)`` samples the render at
        ``(map_x[v, u], map_y[v, u])``.
    """
    x, y = undistorted_rays(k, d, width, height)
    map_x = render_k[0, 0] * x + render_k[0, 1] * y + render_k[0, 2]
    map_y = render_k[1, 1] * y + render_k[1, 2]
    return map_x.astype(np.float32), map_y.astype(np.float32)


def distort(
    rgb: np.ndarray, depth: np.ndarray, map_x: np.ndarray, map_y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Resample a pinhole ``rgb`` (bilinear) and its aligned ``depth`` (nearest) through the maps."""
    out_rgb = cv2.remap(rgb, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    out_depth = cv2.remap(
        depth, map_x, map_y, cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT, borderValue=0
    )
    return out_rgb, out_depth
