"""Textures from posed RGB-D frames: what a fixed, calibrated camera saw on a flat surface of the scene.

A :class:`Surface` is a rectangle in the world, ``origin + s U + t V`` for ``s, t`` in ``[0, 1]``, seen from
the side its normal ``U x V`` points to.  :func:`project_texture` samples every frame at each texel's
projection (through the calibrated ``K`` and plumb_bob ``D``, on the raw, distorted frames, so no
undistortion resamples the colours twice) and keeps a sample only where the frame's depth agrees with the
surface there: a texel hidden behind an object or the arm, or outside the view, is not seen.  Texel row
``r``, column ``c`` lies at ``s = (c + 0.5) / W``, ``t = (r + 0.5) / H``: the PNG's top-left corner is the
surface's ``origin``, which is how MuJoCo maps a mesh's texture coordinates (``(0, 0)`` at the image's
first row).  Unseen texels are filled from the seen ones around them, and the rest with their mean colour.

Conventions as in :mod:`r2s2r_capture.reconstruction.scene`: depth in metres (0 = no data), RGB uint8,
``T_world_camera`` maps the optical frame (z forward, x right, y down) into the world.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from r2s2r_capture.errors import ReconstructionError

__all__ = ["Surface", "Texture", "project_texture", "texel_pixels"]

# A frame's depth must agree with the surface within this (m) plus this fraction of the distance: the
# fitted primitives and the TSDF's plane sit a few mm off the surface the sensor sees.
_DEPTH_TOL_M = 0.012
_DEPTH_TOL_FRACTION = 0.02
_MAX_TEXELS = 2048  # per side: a 2 mm texel over a 4 m floor


@dataclass(frozen=True, eq=False)
class Surface:
    """A textured rectangle: ``origin + s u + t v``, ``s, t`` in ``[0, 1]``, facing ``u x v``.

    Attributes:
        name: what it is (a texture file and a geom are named after it).
        origin: the corner at texture coordinate (0, 0) (m, world).
        u: the edge along the texture's columns (m, world).
        v: the edge along its rows (m, world).
    """

    name: str
    origin: np.ndarray
    u: np.ndarray
    v: np.ndarray

    @property
    def normal(self) -> np.ndarray:
        """Unit normal, the side the texture is seen from."""
        n = np.cross(self.u, self.v)
        return n / np.linalg.norm(n)

    def texels(self, texel_m: float) -> tuple[int, int]:
        """``(width, height)`` of its texture at about ``texel_m`` per texel."""
        w = int(np.clip(math.ceil(np.linalg.norm(self.u) / texel_m), 2, _MAX_TEXELS))
        h = int(np.clip(math.ceil(np.linalg.norm(self.v) / texel_m), 2, _MAX_TEXELS))
        return w, h

    def points(self, width: int, height: int) -> np.ndarray:
        """World points of the texel centres, (height, width, 3)."""
        s = (np.arange(width) + 0.5) / width
        t = (np.arange(height) + 0.5) / height
        return self.origin + s[None, :, None] * self.u + t[:, None, None] * self.v


@dataclass(frozen=True, eq=False)
class Texture:
    """A projected texture: RGB uint8 (H, W, 3) and which texels some frame saw (H, W) bool."""

    rgb: np.ndarray
    seen: np.ndarray

    @property
    def seen_fraction(self) -> float:
        """Fraction of the texels seen."""
        return float(np.mean(self.seen))


def texel_pixels(
    points: np.ndarray, K: np.ndarray, D: np.ndarray, T_world_camera: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Distorted pixel coordinates (..., 2) of world ``points`` (..., 3) and their depth along the axis (...).

    The plumb_bob model of ``cv2.projectPoints``, written out in numpy: the same pixels, without its
    per-point cost on the million texels of a floor.  Points behind the camera get pixels far outside.
    """
    T = np.asarray(T_world_camera, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    k1, k2, p1, p2, k3 = (float(v) for v in np.asarray(D, dtype=np.float64).ravel()[:5])
    pc = (points - T[:3, 3]) @ T[:3, :3]
    z = pc[..., 2]
    ahead = z > 1e-6
    safe = np.where(ahead, z, 1.0)
    x, y = pc[..., 0] / safe, pc[..., 1] / safe
    r2 = x * x + y * y
    radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))
    xd = x * radial + 2.0 * p1 * x * y + p2 * (r2 + 2.0 * x * x)
    yd = y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * x * y
    u = np.where(ahead, K[0, 0] * xd + K[0, 1] * yd + K[0, 2], -1.0e6)
    v = np.where(ahead, K[1, 1] * yd + K[1, 2], -1.0e6)
    return np.stack([u, v], axis=-1), z


def project_texture(
    surface: Surface,
    frames: Sequence[tuple[np.ndarray, np.ndarray]],
    K: np.ndarray,
    D: np.ndarray,
    T_world_camera: np.ndarray,
    *,
    texel_m: float,
    depth_test: bool = True,
) -> Texture:
    """The texture ``frames`` (raw RGB, depth in m) show on ``surface``, averaged over the frames that see it.

    ``depth_test=False`` takes every pixel the surface projects to (a backdrop behind everything, whose
    texels in front of something are hidden by it anyway).

    Raises:
        ReconstructionError: no frames, or a frame whose colour and depth differ in size.
    """
    if not frames:
        raise ReconstructionError(f"appearance: {surface.name}: no RGB-D frames to project")
    width, height = surface.texels(texel_m)
    points = surface.points(width, height)
    uv, z = texel_pixels(points, K, D, T_world_camera)
    camera = np.asarray(T_world_camera, dtype=np.float64)[:3, 3]
    facing = (camera - points) @ surface.normal > 0.0
    mx, my = uv[..., 0].astype(np.float32), uv[..., 1].astype(np.float32)
    total = np.zeros((height, width, 3))
    count = np.zeros((height, width))
    for rgb, depth in frames:
        if rgb.shape[:2] != depth.shape:
            raise ReconstructionError(
                f"appearance: a frame's colour {rgb.shape[:2]} and depth {depth.shape} differ in size"
            )
        colour = cv2.remap(rgb, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        seen_depth = cv2.remap(
            depth.astype(np.float32), mx, my, cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT, borderValue=0
        )
        h, w = depth.shape
        inside = (uv[..., 0] >= 0) & (uv[..., 0] <= w - 1) & (uv[..., 1] >= 0) & (uv[..., 1] <= h - 1)
        tol = _DEPTH_TOL_M + _DEPTH_TOL_FRACTION * z
        ok = inside & facing
        if depth_test:
            ok &= (seen_depth > 0) & (np.abs(seen_depth - z) <= tol)
        total[ok] += colour[ok]
        count[ok] += 1
    seen = count > 0
    rgb = np.zeros((height, width, 3))
    rgb[seen] = total[seen] / count[seen][:, None]
    return Texture(rgb=_fill_unseen(rgb, seen), seen=seen)


def _fill_unseen(rgb: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """Unseen texels from the seen ones nearby (normalised convolution), the rest with the seen mean.

    Nothing seen leaves the texture mid grey; the caller keeps the flat colour for such a surface.
    """
    if not np.any(seen):
        return np.full(rgb.shape, 128, dtype=np.uint8)
    out = rgb.copy()
    mean = rgb[seen].mean(axis=0)
    sigma = 0.02 * max(seen.shape)
    rest = ~seen
    if sigma >= 0.5:
        # Normalised convolution, on a texture shrunk to a few texels per sigma (a wide blur is slow).
        h, w = seen.shape
        shrink = max(1, int(sigma // 4))
        small = (max(1, w // shrink), max(1, h // shrink))
        weight = cv2.resize(seen.astype(np.float32), small, interpolation=cv2.INTER_AREA)
        colour = cv2.resize((rgb * seen[..., None]).astype(np.float32), small, interpolation=cv2.INTER_AREA)
        weight = cv2.resize(cv2.GaussianBlur(weight, (0, 0), sigma / shrink), (w, h))
        colour = cv2.resize(cv2.GaussianBlur(colour, (0, 0), sigma / shrink), (w, h))
        near = (weight > 1e-3) & ~seen
        out[near] = colour[near] / weight[near][:, None]
        rest = ~seen & ~near
    out[rest] = mean
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)
