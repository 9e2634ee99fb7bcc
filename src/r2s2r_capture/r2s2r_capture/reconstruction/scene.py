"""Scene reconstruction from posed RGB-D frames (Open3D): table plane and the objects on it.

Pure Python, no ROS.  Conventions: depth is metric z-depth in metres (0 = no data), RGB is uint8, ``K`` is
the 3x3 pinhole matrix of the optical frame (z forward, x right, y down), ``T_world_camera`` maps optical
frame points into the world frame, and the world z axis points up (gravity along -z).

Pipeline::

    scene = integrate_tsdf(frames, K, poses, voxel=0.004)           # sparse TSDF volume, colour
    result = segment_scene(scene.point_cloud(), SegmentConfig(keepout=RobotKeepOut(center=(0, 0, 0.75))))
    result.table, result.objects                                     # TableEstimate, ReconstructedObject...

The TSDF fusion that makes the point cloud lives in :mod:`r2s2r_capture.reconstruction.tsdf`.

Objects are assumed to rest on the table: each box is extended down to the table plane (the contact strip
is not observable), so heights and centroids refer to the full object.  A round object (a can, a puck)
becomes an upright cylinder where one fits its surface clearly better than the box does: pushed or grasped,
a round side rolls off the fingers where a box's face would not.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

import numpy as np
from r2s2r_sim.ranges import check_fields, within

from r2s2r_capture.errors import ReconstructionError
from r2s2r_capture.reconstruction.tsdf import load_open3d

__all__ = [
    "PrimitiveKind",
    "ReconstructedObject",
    "RobotKeepOut",
    "SceneResult",
    "SegmentConfig",
    "TableEstimate",
    "find_marker",
    "segment_scene",
]


# ------------------------------------------------------------------------------------------ segmentation


class PrimitiveKind(enum.Enum):
    """Collision/visual geometry fitted to an object."""

    BOX = "box"  # the gravity-aligned oriented box fits the surface points
    CYLINDER = "cylinder"  # an upright cylinder fits them clearly better than the box (a can, a puck)
    OPEN_BOX = "open_box"  # a box with an open top (bin, tray): floor + four walls
    MESH = "mesh"  # neither: the convex hull


@dataclass(frozen=True, kw_only=True)
class RobotKeepOut:
    """A vertical cylinder around the robot base; clusters with points inside it are the robot.

    Attributes:
        center: base position (m, world), bottom of the cylinder.
        radius: cylinder radius (m).
        height: cylinder height above ``center`` (m).
    """

    center: tuple[float, float, float]
    radius: float = 0.15
    height: float = 2.0

    def __post_init__(self) -> None:
        if len(self.center) != 3 or not all(math.isfinite(v) for v in self.center):
            raise ReconstructionError(f"keepout.center: must be 3 finite numbers, got {self.center}")
        for name in ("radius", "height"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ReconstructionError(f"keepout.{name}: must be > 0, got {value}")

    def contains(self, points: np.ndarray) -> np.ndarray:
        """Mask of ``points`` (N, 3) inside the cylinder."""
        c = np.asarray(self.center)
        d = np.linalg.norm(points[:, :2] - c[:2], axis=1)
        return (d <= self.radius) & (points[:, 2] >= c[2] - 0.01) & (points[:, 2] <= c[2] + self.height)


@dataclass(frozen=True, kw_only=True)
class SegmentConfig:
    """Parameters of :func:`segment_scene` (lengths in m).

    Attributes:
        voxel: point spacing the cloud is downsampled to.
        plane_distance: RANSAC inlier distance of the table plane.
        max_planes: horizontal/other planes tried before giving up.
        max_tilt_deg: a plane whose normal is within this of world z is horizontal.
        min_height: points lower than this above the table are table (the contact strip is not an object).
        max_height: clusters reaching higher than this above the table are not objects.
        table_margin: object points must lie within the table footprint grown by this.
        cluster_eps: DBSCAN neighbourhood radius.
        cluster_min_points: DBSCAN core point count.
        min_object_points: smaller clusters are noise.
        box_fit_tol: a point fits the box if within this of its surface; ``None`` uses ``2 * voxel``.
        box_fit_fraction: fraction of points that must fit for a :attr:`PrimitiveKind.BOX` (or a
            :attr:`PrimitiveKind.CYLINDER`).
        cylinder_rms_ratio: a cylinder is taken when its RMS surface distance is at most this fraction of
            the box's (either shape's side strays from the other by up to ~0.3 of its half width).
        keepout: the robot; clusters touching it are dropped.
        seed: seed of Open3D's RANSAC.
    """

    voxel: float = within(0.004, "> 0")
    plane_distance: float = within(0.005, "> 0")
    max_planes: int = within(4, ">= 1")
    max_tilt_deg: float = within(10.0, "> 0")
    min_height: float = within(0.008, "> 0")
    max_height: float = within(0.5, "> 0")
    table_margin: float = 0.02
    cluster_eps: float = within(0.012, "> 0")
    cluster_min_points: int = within(10, ">= 1")
    min_object_points: int = within(60, ">= 1")
    box_fit_tol: float | None = None
    box_fit_fraction: float = within(0.9, "(0, 1]")
    cylinder_rms_ratio: float = within(0.7, "(0, 1]")
    keepout: RobotKeepOut | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        check_fields(self, error=ReconstructionError)
        if self.max_height <= self.min_height:
            raise ReconstructionError(
                f"max_height must exceed min_height: got {self.max_height} and {self.min_height}"
            )

    @property
    def fit_tol(self) -> float:
        """Box fit tolerance (m)."""
        return 2.0 * self.voxel if self.box_fit_tol is None else self.box_fit_tol


@dataclass(frozen=True, kw_only=True, eq=False)
class TableEstimate:
    """The table top.

    Attributes:
        height: z of the top surface (m).
        center: (x, y) of the observed top's oriented rectangle (m).
        size: (x, y) extents of that rectangle in its own frame (m).
        yaw: rotation of the rectangle about z (rad).
        color: mean RGB in [0, 1].
        n_points: inlier count.
        floor_height: z of the floor plane if one was seen, else ``None``.
    """

    height: float
    center: tuple[float, float]
    size: tuple[float, float]
    yaw: float
    color: tuple[float, float, float]
    n_points: int
    floor_height: float | None = None


@dataclass(frozen=True, kw_only=True, eq=False)
class ReconstructedObject:
    """One object on the table.

    Attributes:
        name: ``object_<i>``, by decreasing point count.
        position: centre of the fitted gravity-aligned box or cylinder (m, world); it reaches down to the
            table.
        quat: its orientation, wxyz (a yaw about z).
        size: full box extents along its own x, y, z (m); a cylinder's diameter, diameter and height.
        aabb_size: world axis-aligned extents of the points (m).
        color: mean RGB in [0, 1].
        n_points: cluster size.
        primitive: the fitted geometry.
        box_fit: fraction of points within ``fit_tol`` of the box surface.
        wall_thickness: wall thickness of an :attr:`PrimitiveKind.OPEN_BOX` (m), else 0.
        floor_thickness: floor thickness of an :attr:`PrimitiveKind.OPEN_BOX` (m), else 0.
        hull_vertices: convex hull vertices in the object frame (V, 3).
        hull_triangles: hull triangles (F, 3), outward.
    """

    name: str
    position: np.ndarray
    quat: np.ndarray
    size: np.ndarray
    aabb_size: np.ndarray
    color: tuple[float, float, float]
    n_points: int
    primitive: PrimitiveKind
    box_fit: float
    wall_thickness: float = 0.0
    floor_thickness: float = 0.0
    hull_vertices: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    hull_triangles: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), dtype=np.int32))

    @property
    def yaw(self) -> float:
        """Rotation about world z (rad)."""
        w, _, _, z = self.quat
        return 2.0 * math.atan2(z, w)

    @property
    def volume(self) -> float:
        """Volume of the fitted solid (m^3)."""
        if self.primitive is PrimitiveKind.CYLINDER:
            return float(math.pi / 4.0 * self.size[0] ** 2 * self.size[2])
        return float(np.prod(self.size))


@dataclass(frozen=True, kw_only=True, eq=False)
class SceneResult:
    """Output of :func:`segment_scene`.

    Attributes:
        table: the table top.
        objects: objects on it, robot excluded.
        n_robot_clusters: clusters dropped because they touch the robot keep-out.
        n_noise_clusters: clusters dropped as too small.
    """

    table: TableEstimate
    objects: tuple[ReconstructedObject, ...]
    n_robot_clusters: int = 0
    n_noise_clusters: int = 0

    def object(self, name: str) -> ReconstructedObject:
        """The object called ``name``; raises :class:`ReconstructionError` listing the names."""
        for obj in self.objects:
            if obj.name == name:
                return obj
        raise ReconstructionError(f"object: no object {name!r} (objects: {[o.name for o in self.objects]})")


def _min_area_rect(xy: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Minimum-area rectangle of 2-D points: centre, (size_a, size_b), yaw of the ``a`` axis in [0, pi/2)."""
    import cv2

    (cx, cy), _, angle = cv2.minAreaRect(xy.astype(np.float32))
    # The rectangle is symmetric under quarter turns: report the side in [0, pi/2) as ``a`` and refine
    # centre and sizes in float64 (cv2 works in float32).
    yaw = math.radians(angle) % (math.pi / 2.0)
    c, s = math.cos(yaw), math.sin(yaw)
    local = (xy - np.array([cx, cy])) @ np.array([[c, -s], [s, c]])
    # Trimmed extents: single stray surface points at the TSDF's rounded edges would inflate the size.
    lo, hi = np.percentile(local, 0.5, axis=0), np.percentile(local, 99.5, axis=0)
    centre = np.array([cx, cy]) + np.array([[c, -s], [s, c]]) @ ((lo + hi) / 2.0)
    return centre, hi - lo, yaw


def _yaw_quat(yaw: float) -> np.ndarray:
    return np.array([math.cos(yaw / 2.0), 0.0, 0.0, math.sin(yaw / 2.0)])


def _rotz(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _solid_surface_distance(q: np.ndarray) -> np.ndarray:
    """Unsigned distance to a convex solid's surface from each point's excess ``q`` (N, k) over each bound."""
    outside = np.linalg.norm(np.maximum(q, 0.0), axis=1)
    inside = -np.max(q, axis=1)
    return np.where(np.all(q < 0, axis=1), inside, outside)


def _box_surface_distance(local: np.ndarray, half: np.ndarray) -> np.ndarray:
    return _solid_surface_distance(np.abs(local) - half)


def _cylinder_surface_distance(
    local: np.ndarray, centre_xy: np.ndarray, radius: float, half_z: float
) -> np.ndarray:
    r = np.linalg.norm(local[:, :2] - centre_xy, axis=1)
    return _solid_surface_distance(np.stack([r - radius, np.abs(local[:, 2]) - half_z], axis=1))


def _cylinder_fit(
    local: np.ndarray, half: np.ndarray, box_d: np.ndarray, cfg: SegmentConfig
) -> tuple[np.ndarray, float, float] | None:
    """An upright cylinder's axis (x, y, object frame), radius and fit fraction, when it beats the box.

    Tried only on a near-square footprint (a round one has a square bounding rectangle). Started in the
    box's centre with the mean half width; a robust loss keeps a few stray TSDF points from pulling the side.
    """
    from scipy.optimize import least_squares

    if min(half[:2]) < 0.8 * max(half[:2]):
        return None
    x0 = np.array([0.0, 0.0, float(np.mean(half[:2]))])
    sol = least_squares(
        lambda p: _cylinder_surface_distance(local, p[:2], p[2], half[2]),
        x0,
        loss="soft_l1",
        f_scale=0.002,
        bounds=([-half[0], -half[1], 0.25 * x0[2]], [half[0], half[1], 2.0 * x0[2]]),
    )
    centre, radius = sol.x[:2], float(sol.x[2])
    cyl_d = _cylinder_surface_distance(local, centre, radius, half[2])
    fit = float(np.mean(cyl_d <= cfg.fit_tol))
    rms_box, rms_cyl = float(np.sqrt(np.mean(box_d**2))), float(np.sqrt(np.mean(cyl_d**2)))
    if fit < cfg.box_fit_fraction or rms_cyl > cfg.cylinder_rms_ratio * rms_box:
        return None
    return centre, radius, fit


def _find_planes(o3d, pcd, cfg: SegmentConfig) -> list[tuple[float, np.ndarray]]:
    """Horizontal planes ``(height, inlier indices into pcd)``, largest first search, up to max_planes."""
    o3d.utility.random.seed(cfg.seed)
    remaining = np.arange(len(pcd.points))
    cos_tilt = math.cos(math.radians(cfg.max_tilt_deg))
    planes = []
    for _ in range(cfg.max_planes):
        if len(remaining) < 3 * cfg.min_object_points:
            break
        sub = pcd.select_by_index(remaining.tolist())
        model, inliers = sub.segment_plane(
            distance_threshold=cfg.plane_distance, ransac_n=3, num_iterations=1000
        )
        inliers = np.asarray(inliers, dtype=np.int64)
        if len(inliers) < cfg.min_object_points:
            break
        a, b, c, d = model
        idx = remaining[inliers]
        if abs(c) / math.sqrt(a * a + b * b + c * c) >= cos_tilt:
            z = np.asarray(pcd.points)[idx, 2]
            planes.append((float(np.median(z)), idx))
        remaining = np.setdiff1d(remaining, idx, assume_unique=True)
    return planes


def segment_scene(pcd, config: SegmentConfig | None = None) -> SceneResult:  # o3d PointCloud
    """Find the table plane and the objects on it in a fused point cloud (world frame, z up).

    The table is the highest horizontal RANSAC plane holding at least a quarter of the points of the largest
    horizontal plane (a floor seen below it is reported as ``floor_height``).  Points more than
    ``min_height`` above it and over its footprint are clustered with DBSCAN; clusters touching
    ``config.keepout`` (the robot) or taller than ``max_height`` are dropped; the rest become
    :class:`ReconstructedObject` s with a gravity-aligned box (minimum-area rectangle in xy, extended down
    to the table), a convex hull and a primitive: box if ``box_fit_fraction`` of the points lie within
    ``fit_tol`` of its surface, open box (bin) if the top of the box is empty, else the convex hull.

    Raises:
        ReconstructionError: empty cloud, or no horizontal plane (no table seen).
    """
    o3d = load_open3d()
    cfg = config if config is not None else SegmentConfig()
    if len(pcd.points) == 0:
        raise ReconstructionError("point cloud: empty; were the frames' depth and poses valid?")
    if not pcd.has_colors():
        raise ReconstructionError("point cloud: has no colours; integrate RGB-D frames with colour")
    pcd = pcd.voxel_down_sample(cfg.voxel)
    pts = np.asarray(pcd.points)
    cols = np.asarray(pcd.colors)

    planes = _find_planes(o3d, pcd, cfg)
    if not planes:
        raise ReconstructionError(
            f"table: no horizontal plane within {cfg.max_tilt_deg} deg of level among {len(pts)} points; "
            "record views that show the table top"
        )
    biggest = max(len(idx) for _, idx in planes)
    candidates = [p for p in planes if len(p[1]) >= 0.25 * biggest]
    height, inliers = max(candidates, key=lambda p: p[0])
    lower = [h for h, idx in planes if h < height - 0.1 and len(idx) >= 0.25 * biggest]
    # The table's inliers may include coplanar clutter far away: keep the largest connected piece.
    tab = pcd.select_by_index(inliers.tolist())
    labels = np.asarray(tab.cluster_dbscan(eps=3.0 * cfg.voxel, min_points=cfg.cluster_min_points))
    if labels.size and labels.max() >= 0:
        main = np.bincount(labels[labels >= 0]).argmax()
        inliers = inliers[labels == main]
    height = float(np.median(pts[inliers, 2]))
    t_centre, t_size, t_yaw = _min_area_rect(pts[inliers, :2])
    table = TableEstimate(
        height=height,
        center=(float(t_centre[0]), float(t_centre[1])),
        size=(float(t_size[0]), float(t_size[1])),
        yaw=float(t_yaw),
        color=tuple(float(v) for v in cols[inliers].mean(axis=0)),
        n_points=len(inliers),
        floor_height=max(lower) if lower else None,
    )

    # Points above the table top, over its (grown) footprint.
    rel = pts[:, 2] - height
    local = (pts[:, :2] - t_centre) @ _rotz(t_yaw)[:2, :2]
    over = np.all(np.abs(local) <= t_size / 2.0 + cfg.table_margin, axis=1)
    # No height cap yet: the robot must stay one cluster so that touching the keep-out removes all of it.
    above = np.flatnonzero((rel > cfg.min_height) & over)
    objects: list[ReconstructedObject] = []
    n_robot = n_noise = 0
    if len(above):
        sub = pcd.select_by_index(above.tolist())
        labels = np.asarray(sub.cluster_dbscan(eps=cfg.cluster_eps, min_points=cfg.cluster_min_points))
        clusters = [above[labels == k] for k in range(int(labels.max()) + 1)] if labels.size else []
        clusters.sort(key=len, reverse=True)
        for idx in clusters:
            if cfg.keepout is not None and np.any(cfg.keepout.contains(pts[idx])):
                n_robot += 1
                continue
            if len(idx) < cfg.min_object_points or pts[idx, 2].max() - height > cfg.max_height:
                n_noise += 1
                continue
            objects.append(_fit_object(f"object_{len(objects)}", pts[idx], cols[idx], height, cfg))
    return SceneResult(
        table=table, objects=tuple(objects), n_robot_clusters=n_robot, n_noise_clusters=n_noise
    )


def _fit_object(
    name: str, pts: np.ndarray, cols: np.ndarray, table_z: float, cfg: SegmentConfig
) -> ReconstructedObject:
    o3d = load_open3d()
    centre_xy, size_xy, yaw = _min_area_rect(pts[:, :2])
    top = float(pts[:, 2].max())
    height = top - table_z
    position = np.array([centre_xy[0], centre_xy[1], table_z + height / 2.0])
    size = np.array([size_xy[0], size_xy[1], height])
    R = _rotz(yaw)
    local = (pts - position) @ R  # object frame coordinates
    half = size / 2.0
    tol = cfg.fit_tol
    box_d = _box_surface_distance(local, half)
    fit = float(np.mean(box_d <= tol))

    primitive = PrimitiveKind.MESH
    wall = floor = 0.0
    cylinder = _cylinder_fit(local, half, box_d, cfg)
    if cylinder is not None:
        primitive = PrimitiveKind.CYLINDER
        axis, radius, fit = cylinder
        position = position + R @ np.array([axis[0], axis[1], 0.0])
        size = np.array([2.0 * radius, 2.0 * radius, height])
        local = (pts - position) @ R
        half = size / 2.0
    elif fit >= cfg.box_fit_fraction:
        primitive = PrimitiveKind.BOX
    else:
        inset = np.maximum(0.25 * half[:2], 2.0 * cfg.voxel)
        interior = np.all(np.abs(local[:, :2]) <= half[:2] - inset, axis=1)
        upper = local[:, 2] > half[2] - 0.25 * size[2]
        rim_band = local[:, 2] > 0.0  # upper half of the walls
        if interior.any() or rim_band.any():
            top_filled = np.count_nonzero(interior & upper) / max(1, np.count_nonzero(upper))
            if top_filled < 0.05 and rim_band.any():
                primitive = PrimitiveKind.OPEN_BOX
                # Distance in from the outer rectangle of the upper wall points: outer face ~0, inner ~t.
                d_in = np.min(half[:2] - np.abs(local[rim_band, :2]), axis=1)
                wall = float(np.clip(np.percentile(d_in, 95), cfg.voxel, 0.3 * min(size_xy)))
                low = interior & (local[:, 2] < 0.0)
                floor_top = float(np.median(local[low, 2])) + half[2] if low.any() else cfg.min_height / 2.0
                floor = float(np.clip(floor_top, 0.002, 0.5 * size[2]))

    # Convex hull of the points plus their footprint on the table (the unseen bottom).
    foot = local.copy()
    foot[:, 2] = -half[2]
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(np.vstack([local, foot])))
    try:
        hull, _ = cloud.compute_convex_hull()
        hull_v = np.asarray(hull.vertices).copy()
        hull_t = np.asarray(hull.triangles).astype(np.int32).copy()
    except RuntimeError:  # degenerate (flat) cluster: qhull fails
        hull_v, hull_t = np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int32)
        if primitive is PrimitiveKind.MESH:
            primitive = PrimitiveKind.BOX
    aabb = pts.max(axis=0) - pts.min(axis=0)
    aabb[2] = height
    return ReconstructedObject(
        name=name,
        position=position,
        quat=_yaw_quat(yaw),
        size=size,
        aabb_size=aabb,
        color=tuple(float(v) for v in cols.mean(axis=0)),
        n_points=len(pts),
        primitive=primitive,
        box_fit=fit,
        wall_thickness=wall,
        floor_thickness=floor,
        hull_vertices=hull_v,
        hull_triangles=hull_t,
    )


# A marker's points: hue within this of the marker's (OpenCV hue, 0..179), saturation at least this fraction
# of its own, at most this far (m) from the table plane (a taped disc is flush with it).  The same hue
# window the policies' colour segmentation uses; fused colours are averages, so no brighter floor is needed.
_MARKER_HUE_TOL = 8
_MARKER_SAT_FRACTION = 0.6
_MARKER_BAND_M = 0.006
_MARKER_MIN_POINTS = 30


def find_marker(
    pcd, table: TableEstimate, colour: tuple[float, float, float], *, radius: float
) -> np.ndarray | None:  # o3d PointCloud
    """Centre (x, y, table z; m) of a flat marker of ``colour`` on the table top in a fused cloud, or None.

    A taped disc has no relief for :func:`segment_scene` to cluster: it is found by its colour among the
    points on the table plane.  Points farther than 1.5 ``radius`` from their median (another thing of that
    colour) are dropped; the centre is the middle of the rest's extent along x and y.

    Args:
        pcd: fused point cloud with colours (world frame, z up).
        table: the table found in it by :func:`segment_scene`.
        colour: the marker's RGB in [0, 1].
        radius: the marker's radius (m), e.g. the template's.
    """
    import cv2

    pts = np.asarray(pcd.points)
    cols = np.asarray(pcd.colors)
    flat = np.abs(pts[:, 2] - table.height) <= _MARKER_BAND_M
    if not np.any(flat) or len(cols) != len(pts):
        return None
    pts, cols = pts[flat], cols[flat]
    to_hsv = cv2.COLOR_RGB2HSV
    hsv = cv2.cvtColor(np.clip(cols * 255.0, 0, 255).astype(np.uint8)[None], to_hsv)[0].astype(np.int32)
    ref = cv2.cvtColor(np.uint8([[np.clip(np.array(colour) * 255.0, 0, 255)]]), to_hsv)[0, 0].astype(np.int32)
    dh = np.abs(hsv[:, 0] - ref[0])
    dh = np.minimum(dh, 180 - dh)  # hue is circular
    xy = pts[(dh <= _MARKER_HUE_TOL) & (hsv[:, 1] >= _MARKER_SAT_FRACTION * ref[1]), :2]
    if len(xy) < _MARKER_MIN_POINTS:
        return None
    xy = xy[np.linalg.norm(xy - np.median(xy, axis=0), axis=1) <= 1.5 * radius]
    if len(xy) < _MARKER_MIN_POINTS:
        return None
    lo, hi = np.percentile(xy, (1.0, 99.0), axis=0)
    return np.array([*((lo + hi) / 2.0), table.height])
