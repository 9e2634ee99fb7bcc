"""Which solid the reconstruction fits: round objects as upright cylinders, boxes as boxes.

Point clouds are sampled from known surfaces on a table (0.5 mm noise, 4 mm spacing, as the TSDF gives them),
once all round and once only the half a fixed camera sees, so the fit is checked against exact truth.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from r2s2r_capture.reconstruction.scene import PrimitiveKind, SegmentConfig, segment_scene
from r2s2r_capture.reconstruction.tsdf import load_open3d

TABLE_Z = 0.75
STEP = 0.004
RNG = np.random.default_rng(7)


def _table() -> np.ndarray:
    g = np.arange(-0.2, 0.8, STEP)
    x, y = np.meshgrid(g, g - 0.3)
    return np.stack([x.ravel(), y.ravel(), np.full(x.size, TABLE_Z)], axis=1)


def _cylinder(
    centre: tuple[float, float], radius: float, height: float, seen_from: float | None
) -> np.ndarray:
    """Side and top of an upright cylinder; with ``seen_from`` (rad) only the side facing that way."""
    n = max(12, int(2 * math.pi * radius / STEP))
    theta = np.linspace(-math.pi, math.pi, n, endpoint=False)
    if seen_from is not None:
        theta = theta[np.cos(theta - seen_from) > 0.1]
    z = np.arange(TABLE_Z + 0.01, TABLE_Z + height, STEP)
    t, zz = np.meshgrid(theta, z)
    side = np.stack(
        [centre[0] + radius * np.cos(t.ravel()), centre[1] + radius * np.sin(t.ravel()), zz.ravel()], 1
    )
    g = np.arange(-radius, radius, STEP)
    x, y = np.meshgrid(g, g)
    inside = x**2 + y**2 < radius**2
    top = np.stack([centre[0] + x[inside], centre[1] + y[inside], np.full(inside.sum(), TABLE_Z + height)], 1)
    return np.vstack([side, top])


def _box(centre: tuple[float, float], size: tuple[float, float, float], yaw: float) -> np.ndarray:
    """Top and four sides of a box resting on the table."""
    sx, sy, sz = size
    faces = []
    for u, v, fixed_axis, fixed in (
        (np.arange(-sx / 2, sx / 2, STEP), np.arange(-sy / 2, sy / 2, STEP), 2, sz),
        (np.arange(-sy / 2, sy / 2, STEP), np.arange(0.01, sz, STEP), 0, sx / 2),
        (np.arange(-sy / 2, sy / 2, STEP), np.arange(0.01, sz, STEP), 0, -sx / 2),
        (np.arange(-sx / 2, sx / 2, STEP), np.arange(0.01, sz, STEP), 1, sy / 2),
        (np.arange(-sx / 2, sx / 2, STEP), np.arange(0.01, sz, STEP), 1, -sy / 2),
    ):
        a, b = (m.ravel() for m in np.meshgrid(u, v))
        if fixed_axis == 2:
            pts = np.stack([a, b, np.full(a.size, fixed)], 1)
        elif fixed_axis == 0:
            pts = np.stack([np.full(a.size, fixed), a, b], 1)
        else:
            pts = np.stack([a, np.full(a.size, fixed), b], 1)
        faces.append(pts)
    local = np.vstack(faces)
    c, s = math.cos(yaw), math.sin(yaw)
    xy = local[:, :2] @ np.array([[c, s], [-s, c]])
    return np.stack([centre[0] + xy[:, 0], centre[1] + xy[:, 1], TABLE_Z + local[:, 2]], 1)


def _segment(*objects: np.ndarray):
    o3d = load_open3d()
    pts = np.vstack([_table(), *objects])
    pts = pts + RNG.normal(0.0, 0.0005, pts.shape)
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(pts))
    cloud.colors = o3d.utility.Vector3dVector(np.full(pts.shape, 0.5))
    return segment_scene(cloud, SegmentConfig())


def _at(result, xy: tuple[float, float]):
    return min(result.objects, key=lambda o: float(np.linalg.norm(o.position[:2] - np.asarray(xy))))


@pytest.mark.parametrize("seen_from", [None, math.pi], ids=["all_round", "half_seen"])
def test_round_objects_become_cylinders_and_boxes_stay_boxes(seen_from: float | None) -> None:
    puck, can, cube, brick = (0.4, -0.1), (0.1, 0.2), (0.55, 0.25), (0.3, 0.3)
    result = _segment(
        _cylinder(puck, 0.031, 0.04, seen_from),
        _cylinder(can, 0.05, 0.12, seen_from),
        _box(cube, (0.04, 0.04, 0.04), 0.3),
        _box(brick, (0.08, 0.04, 0.05), -0.5),
    )
    assert len(result.objects) == 4
    for xy, radius, height in ((puck, 0.031, 0.04), (can, 0.05, 0.12)):
        obj = _at(result, xy)
        assert obj.primitive is PrimitiveKind.CYLINDER, (xy, obj.primitive, obj.size)
        assert obj.size[0] == pytest.approx(2 * radius, abs=0.004)
        assert obj.size[2] == pytest.approx(height, abs=0.004)
        assert np.linalg.norm(obj.position[:2] - np.asarray(xy)) < 0.003
        assert obj.volume == pytest.approx(math.pi * radius**2 * height, rel=0.25)
    for xy, size in ((cube, (0.04, 0.04, 0.04)), (brick, (0.08, 0.04, 0.05))):
        obj = _at(result, xy)
        assert obj.primitive is PrimitiveKind.BOX, (xy, obj.primitive, obj.size)
        assert sorted(obj.size[:2]) == pytest.approx(sorted(size[:2]), abs=0.005)
