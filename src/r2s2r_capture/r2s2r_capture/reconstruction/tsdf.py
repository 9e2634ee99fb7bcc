"""TSDF fusion of posed RGB-D frames (Open3D) into a sparse, coloured volume.

Conventions as in :mod:`r2s2r_capture.reconstruction.scene`: depth is metric z-depth in metres (0 = no data),
RGB is uint8, ``K`` is the 3x3 pinhole matrix of the optical frame and ``T_world_camera`` maps optical frame
points into the world frame.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from r2s2r_capture.errors import ReconstructionError

__all__ = ["TsdfScene", "integrate_tsdf", "load_open3d"]


def load_open3d() -> Any:
    """The ``open3d`` module, imported on first use: it is heavy, and `r2s2r --help` stays fast without it."""
    import open3d as o3d

    return o3d


_TILE = 64  # voxels per tile edge (each tile is an Open3D UniformTSDFVolume, one voxel of overlap per side)


@dataclass(frozen=True, eq=False)
class TsdfScene:
    """A fused, sparse TSDF volume with RGB8 colour.

    Open3D's hashed volumes (``ScalableTSDFVolume``, ``t.geometry.VoxelBlockGrid``) integrate nothing with
    the open3d 0.20 CPU wheel this project pins (every extraction is empty, even for a flat test plane), so
    the volume is tiled by hand: ``UniformTSDFVolume`` tiles of ``64^3`` voxels, allocated only where the
    depth points fall (the same idea as the scalable volume's blocks, at a coarser grain).

    Attributes:
        tiles: ``open3d.pipelines.integration.UniformTSDFVolume`` per allocated tile.
        voxel: voxel edge (m).
        n_frames: frames integrated.
    """

    tiles: tuple[object, ...]
    voxel: float
    n_frames: int

    def point_cloud(self):  # open3d.geometry.PointCloud
        """Surface points (zero crossings) with colours, seams between tiles merged."""
        o3d = load_open3d()
        pcd = o3d.geometry.PointCloud()
        for tile in self.tiles:
            pcd += tile.extract_point_cloud()
        return pcd.voxel_down_sample(self.voxel) if len(pcd.points) else pcd

    def triangle_mesh(self):  # open3d.geometry.TriangleMesh
        """Marching-cubes mesh with vertex colours (tiles concatenated, duplicate vertices merged)."""
        o3d = load_open3d()
        mesh = o3d.geometry.TriangleMesh()
        for tile in self.tiles:
            mesh += tile.extract_triangle_mesh()
        mesh.merge_close_vertices(self.voxel * 0.1)
        mesh.compute_vertex_normals()
        return mesh


def _check_K(K: np.ndarray) -> np.ndarray:
    K = np.asarray(K, dtype=np.float64)
    if K.shape != (3, 3) or not np.all(np.isfinite(K)) or K[0, 0] <= 0 or K[1, 1] <= 0:
        raise ReconstructionError(f"K: must be a finite 3x3 pinhole matrix with fx, fy > 0, got {K.tolist()}")
    return K


def _check_pose(T: np.ndarray, i: int) -> np.ndarray:
    T = np.asarray(T, dtype=np.float64)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise ReconstructionError(f"poses[{i}]: must be a finite 4x4 T_world_camera, got shape {T.shape}")
    R = T[:3, :3]
    if not np.allclose(R @ R.T, np.eye(3), atol=1e-4) or np.linalg.det(R) <= 0:
        raise ReconstructionError(f"poses[{i}]: rotation part is not a proper rotation matrix")
    return T


def integrate_tsdf(
    frames: Sequence[tuple[np.ndarray, np.ndarray]],
    K: np.ndarray,
    poses: Sequence[np.ndarray] | np.ndarray,
    *,
    voxel: float = 0.004,
    sdf_trunc: float | None = None,
    depth_trunc: float = 3.0,
    bounds: tuple[Sequence[float], Sequence[float]] | None = None,
    max_tiles: int = 400,
) -> TsdfScene:
    """Fuse posed RGB-D frames into a coloured, sparse TSDF volume (see :class:`TsdfScene`).

    Args:
        frames: ``(rgb uint8 (H, W, 3), depth float (H, W) metres, 0 = no data)`` per frame.
        K: 3x3 pinhole matrix of the optical frame (the same for all frames).
        poses: per frame ``T_world_camera`` (4x4, optical frame in world).
        voxel: TSDF voxel edge (m).
        sdf_trunc: truncation distance (m); default ``3 * voxel``.
        depth_trunc: depth beyond this (m) is ignored.
        bounds: optional world-frame box ``(min xyz, max xyz)``; depth pixels whose points fall outside are
            ignored (keeps floor and room out of the volume).
        max_tiles: refuse scenes needing more tiles than this (memory: ~6 MB per tile).

    Raises:
        ReconstructionError: naming the frame and field at fault.
    """
    o3d = load_open3d()
    K = _check_K(K)
    if len(frames) == 0:
        raise ReconstructionError("frames: no RGB-D frames given; record a sweep of the scene")
    if len(poses) != len(frames):
        raise ReconstructionError(f"poses: {len(poses)} poses for {len(frames)} frames")
    if not (math.isfinite(voxel) and 0.0005 <= voxel <= 0.1):
        raise ReconstructionError(f"voxel: must be in [0.0005, 0.1] m, got {voxel}")
    trunc = 3.0 * voxel if sdf_trunc is None else float(sdf_trunc)
    if not (math.isfinite(trunc) and voxel < trunc < _TILE * voxel / 2):
        raise ReconstructionError(f"sdf_trunc: must be in ({voxel}, {_TILE * voxel / 2}) m, got {trunc}")
    lo = hi = None
    if bounds is not None:
        lo, hi = (np.asarray(b, dtype=np.float64).reshape(3) for b in bounds)
        if not np.all(lo < hi):
            raise ReconstructionError(f"bounds: need min < max per axis, got {lo.tolist()} {hi.tolist()}")
    # Pass 1: check inputs, mask depth, find the tiles the surfaces (+- trunc) fall in.
    tile_len = _TILE * voxel
    prepared = []
    keys: set[tuple[int, int, int]] = set()
    rays_cache: dict[tuple[int, int], np.ndarray] = {}
    offsets = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * trunc
    for i, ((rgb, depth), T) in enumerate(zip(frames, poses, strict=True)):
        rgb = np.asarray(rgb)
        depth = np.asarray(depth)
        if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
            raise ReconstructionError(
                f"frames[{i}].rgb: must be uint8 (H, W, 3), got {rgb.dtype} {rgb.shape}"
            )
        if depth.shape != rgb.shape[:2]:
            raise ReconstructionError(
                f"frames[{i}].depth: shape {depth.shape} does not match rgb {rgb.shape[:2]}"
            )
        T = _check_pose(T, i)
        h, w = depth.shape
        depth = np.nan_to_num(depth.astype(np.float32), nan=0.0, posinf=0.0, neginf=0.0)
        depth[(depth < 0) | (depth > depth_trunc)] = 0.0
        rays = rays_cache.get((h, w))
        if rays is None:
            u, v = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
            rays = np.stack([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], np.ones_like(u)], -1)
            rays_cache[(h, w)] = rays
        pts = (rays * depth[..., None].astype(np.float64)) @ T[:3, :3].T + T[:3, 3]
        valid = depth > 0
        if lo is not None:
            valid &= np.all((pts >= lo) & (pts <= hi), axis=-1)
            depth = np.where(valid, depth, 0.0).astype(np.float32)
        sample = pts[::2, ::2][valid[::2, ::2]]
        for off in offsets:
            keys.update(map(tuple, np.unique(np.floor((sample + off) / tile_len).astype(np.int64), axis=0)))
        prepared.append((np.ascontiguousarray(rgb), np.ascontiguousarray(depth), T))
    if not keys:
        raise ReconstructionError("frames: no valid depth (all zero, beyond depth_trunc or outside bounds)")
    if len(keys) > max_tiles:
        raise ReconstructionError(
            f"bounds: the surfaces span {len(keys)} TSDF tiles of {tile_len:.3f} m, more than max_tiles "
            f"{max_tiles}; give tighter bounds or a coarser voxel"
        )
    # Pass 2: integrate every frame into every tile (tiles overlap by one voxel so seams close).
    tiles = []
    for key in sorted(keys):
        tile = o3d.pipelines.integration.UniformTSDFVolume(
            length=(_TILE + 2) * voxel,
            resolution=_TILE + 2,
            sdf_trunc=trunc,
            color_type=o3d.pipelines.integration.TSDFVolumeColorType.RGB8,
            origin=np.asarray(key, dtype=np.float64) * tile_len - voxel,
        )
        tiles.append(tile)
    for rgb, depth, T in prepared:
        h, w = depth.shape
        intr = o3d.camera.PinholeCameraIntrinsic(w, h, K[0, 0], K[1, 1], K[0, 2], K[1, 2])
        rgbd = o3d.geometry.RGBDImage.create_from_color_and_depth(
            o3d.geometry.Image(rgb),
            o3d.geometry.Image(depth),
            depth_scale=1.0,
            depth_trunc=float(depth_trunc),
            convert_rgb_to_intensity=False,
        )
        extrinsic = np.linalg.inv(T)
        for tile in tiles:
            tile.integrate(rgbd, intr, extrinsic)
    return TsdfScene(tiles=tuple(tiles), voxel=float(voxel), n_frames=len(frames))
