"""Where the table task's scene goes around an arm: the way it faces, the scale it grasps at, its start pose.

``r2s2r world new`` first writes a probe world (the arm on the table, unturned, bundled scene) and asks its
compiled model, with the same inverse kinematics the reference policy plans with, where the tool reaches
straight down:

- **forward**: the azimuth about the arm's first joint whose ray holds the most tool-down grasps (the
  middle of the widest run of best azimuths; an arm that reaches all round faces the way its home pose
  points).  The arm is turned on its mount so that this azimuth is +x, where the bundled scene lies.
- **scale** (or **shift**): the bundled layout (cube region, bin, at the bundled arm's reach) shrunk by the
  largest factor at which every corner of the cube region is reached tool-down at grasp and approach height
  and the bin at release and carry height; the bin swings further round the arm when the shrunken layout
  would put it over the cube region, and keeps its whole width off the robot's base.  An arm that reaches
  tool-down only beyond the cube region's near edge (a long arm whose elbow cannot fold far enough) gets the
  bundled layout moved out instead, by the smallest step that it reaches.  The cube and the bin keep their
  size, so the camera keeps its distance to them.
- **start pose**: the home keyframe, unless the arm shows in the camera's view of the cube region (grown
  by a cube) in it; then the first joint turns the arm aside (away from the bin first) until the view is
  clear and the arm keeps 5 cm from the scene.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from r2s2r_sim.world.kinematics import KinematicArm, reaches_tool_down

__all__ = ["BUNDLED_LAYOUT", "Layout", "SceneLayout", "choose_layout", "start_pose"]

# Tool height (m) above the table top at the cube's centre when grasping a 4 cm cube, the lowest approach
# height the reference policy accepts above that, and the release and lowest carry height above the bin
# floor's cube centre (r2s2r_eval.policies.reference.policy: grasp offset 0, approach >= +0.04 m, release
# +0.05 m, carry >= release + 0.03 m).  The checks keep 2 cm above those minima.
_GRASP_Z = 0.02
_APPROACH_DZ = 0.06
_RELEASE_DZ = 0.05
_CARRY_DZ = 0.10
_BIN_FLOOR_Z = 0.025
_SCALE_STEP = 0.05
_MIN_SCALE = 0.2
# Outward moves of the scene tried when no scale fits (m); the bundled table ends 0.3 m past the cube region.
_SHIFT_STEP = 0.025
_MAX_SHIFT = 0.25
_AZIMUTH_STEP_DEG = 15
# Radii (fractions of the reach) of the azimuth scan's tool-down probes.
_PROBE_RADII = (0.3, 0.45, 0.6, 0.75)
# Half the bin's outer width (scene.xml) and the cube's half diagonal, for the bin's clearance (m).
_BIN_HALF = 0.08
_CUBE_HALF_DIAG = 0.03
_SWING_DEG = (30, 60, 90, 120, 150)
# The gap (m) the bin keeps from the robot's base: more than real2sim's clustering radius (12 mm), so a
# reconstruction never fuses the two into one cluster.
_BASE_GAP = 0.015
# A turned start pose keeps this far (m) from everything in the scene it was not already near at home.
_CLEARANCE_M = 0.05


@dataclass(frozen=True)
class SceneLayout:
    """Cube region and bin of the table task, in the frame of the arm's mount on the table (m).

    Attributes:
        cube_x, cube_y: the ranges the cube's centre is drawn from.
        bin_xy: the bin's centre.
    """

    cube_x: tuple[float, float]
    cube_y: tuple[float, float]
    bin_xy: tuple[float, float]

    @property
    def centre(self) -> np.ndarray:
        """The cube region's centre."""
        return np.array([sum(self.cube_x) / 2, sum(self.cube_y) / 2])

    def corners(self) -> list[np.ndarray]:
        """The cube region's corners and centre."""
        return [np.array([x, y]) for x in self.cube_x for y in self.cube_y] + [self.centre]

    def scaled(self, scale: float, min_clear: float = 0.0) -> SceneLayout:
        """The layout shrunk toward the mount; the bin swings round the arm to stay clear of the cube region.

        The bin keeps its radius (moved out until its nearest edge is ``min_clear`` from the mount, so that
        it stays off the robot's base) and turns (away from the cube region) until its edge clears the
        region's farthest corner by a cube.
        """
        out = SceneLayout(
            cube_x=(scale * self.cube_x[0], scale * self.cube_x[1]),
            cube_y=(scale * self.cube_y[0], scale * self.cube_y[1]),
            bin_xy=(scale * self.bin_xy[0], scale * self.bin_xy[1]),
        )
        half_diag = 0.5 * math.hypot(out.cube_x[1] - out.cube_x[0], out.cube_y[1] - out.cube_y[0])
        clear = half_diag + _BIN_HALF * math.sqrt(2.0) + _CUBE_HALF_DIAG
        bin_xy = np.asarray(out.bin_xy)
        centre = out.centre
        side = math.copysign(1.0, float(centre[0] * bin_xy[1] - centre[1] * bin_xy[0]))
        radius = float(np.linalg.norm(bin_xy))
        for _ in range(36):
            if float(np.linalg.norm(bin_xy - centre)) >= clear:
                break
            c, s = math.cos(side * math.radians(5)), math.sin(side * math.radians(5))
            bin_xy = np.array([[c, -s], [s, c]]) @ bin_xy
        bin_xy = bin_xy * radius / max(float(np.linalg.norm(bin_xy)), 1e-9)

        def off_base(xy: np.ndarray) -> bool:  # the (axis-aligned) bin's nearest edge to the mount
            return float(np.linalg.norm(np.maximum(np.abs(xy) - _BIN_HALF, 0.0))) >= min_clear

        if not off_base(bin_xy):
            # further round, away from the cube region (an edge, not a corner, toward the base), else out
            for deg in range(5, 50, 5):
                c, s = math.cos(side * math.radians(deg)), math.sin(side * math.radians(deg))
                turned = np.array([[c, -s], [s, c]]) @ bin_xy
                if off_base(turned):
                    bin_xy = turned
                    break
            for _ in range(40):
                if off_base(bin_xy):
                    break
                bin_xy = bin_xy * (radius + 0.005) / radius
                radius += 0.005
        return SceneLayout(cube_x=out.cube_x, cube_y=out.cube_y, bin_xy=(float(bin_xy[0]), float(bin_xy[1])))

    def shifted(self, dx: float) -> SceneLayout:
        """The layout moved ``dx`` (m) further out along the arm's forward axis, bin and all."""
        return SceneLayout(
            cube_x=(self.cube_x[0] + dx, self.cube_x[1] + dx),
            cube_y=self.cube_y,
            bin_xy=(self.bin_xy[0] + dx, self.bin_xy[1]),
        )


# The bundled world's layout (tabletop-pick-v1: cube x 0.35-0.55 m, y -0.15-0.05 m, bin at 0.25, 0.38 m),
# made for its arm's reach: scale 1.
BUNDLED_LAYOUT = SceneLayout(cube_x=(0.35, 0.55), cube_y=(-0.15, 0.05), bin_xy=(0.25, 0.38))


@dataclass(frozen=True)
class Layout:
    """How the arm is turned on its mount and how the scene is scaled around it.

    Attributes:
        yaw: rotation (rad) of the arm about the vertical at its mount, so that it faces +x.
        scale: of the bundled layout, in (0, 1].
        shift: how far (m) the bundled layout was moved out from the arm (at scale 1), for an arm that
            reaches tool-down only beyond the bundled cube region's near edge.
        scene: the scaled layout (mount frame, after the turn).
        reached: every check of the scaled layout passed (False: the smallest scale tried, unchecked).
    """

    yaw: float
    scale: float
    scene: SceneLayout
    reached: bool
    shift: float = 0.0


def _rot(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s], [s, c]])


class _Probe:
    """Tool-down reach queries on the probe world's arm (world frame, arm unturned)."""

    def __init__(self, arm: KinematicArm, home: np.ndarray, base_xy: np.ndarray, table_z: float) -> None:
        self.arm, self.home, self.base_xy, self.table_z = arm, home, base_xy, table_z
        pos, _ = arm.fk(home)
        home_dir = pos[:2] - base_xy
        self.home_az = math.atan2(home_dir[1], home_dir[0]) if np.linalg.norm(home_dir) > 1e-3 else 0.0

    def reaches(self, xy: np.ndarray, dz: float, dyaw: float = 0.0) -> bool:
        """Whether the tool reaches ``xy`` at ``dz`` above the table pointing down, turned ``dyaw`` more."""
        target = np.array([xy[0], xy[1], self.table_z + dz])
        return reaches_tool_down(self.arm, self.home, self.base_xy, target, dyaw)


def _forward_azimuth(probe: _Probe, reach: float) -> float:
    """Azimuth (rad, about the first joint) of the middle of the widest run of best tool-down azimuths."""
    n = 360 // _AZIMUTH_STEP_DEG
    azimuths = [probe.home_az + math.radians(_AZIMUTH_STEP_DEG * k) for k in range(n)]
    scores = []
    for az in azimuths:
        ray = np.array([math.cos(az), math.sin(az)])
        scores.append(sum(probe.reaches(probe.base_xy + f * reach * ray, _GRASP_Z) for f in _PROBE_RADII))
    best = max(scores)
    if best == 0 or all(s == best for s in scores):
        return probe.home_az
    # Widest circular run of best azimuths; its middle.
    runs: list[tuple[int, int]] = []
    start = next(k for k in range(n) if scores[k] != best)  # a run boundary, so no run wraps unseen
    k, length, first = (start + 1) % n, 0, -1
    for _ in range(n):
        if scores[k] == best:
            first = k if length == 0 else first
            length += 1
        elif length:
            runs.append((length, first))
            length = 0
        k = (k + 1) % n
    if length:
        runs.append((length, first))
    length, first = max(runs)
    return probe.home_az + math.radians(_AZIMUTH_STEP_DEG * (first + (length - 1) / 2))


def _layout_reached(probe: _Probe, layout: SceneLayout, yaw: float, mount: np.ndarray) -> bool:
    """Every cube-region corner at grasp and approach height and the bin at release and carry height."""
    back = _rot(-yaw)  # mount frame after the turn -> probe world frame

    def world(xy: np.ndarray) -> np.ndarray:
        return mount + back @ xy

    for xy in layout.corners():
        # the cube's yaw is free, and a square grasp turns the tool at most a quarter turn either way
        for dyaw in (-math.pi / 4, math.pi / 4):
            if not probe.reaches(world(xy), _GRASP_Z, dyaw):
                return False
        if not probe.reaches(world(xy), _GRASP_Z + _APPROACH_DZ):
            return False
    bin_xy = world(np.asarray(layout.bin_xy))
    return all(probe.reaches(bin_xy, _BIN_FLOOR_Z + dz) for dz in (_RELEASE_DZ, _CARRY_DZ))


def choose_layout(
    arm: KinematicArm,
    home: np.ndarray,
    mount: np.ndarray,
    table_z: float,
    base_xy: np.ndarray,
    reach: float,
    base_radius: float = 0.0,
) -> Layout:
    """The turn and scale of the scene for ``arm`` (see the module docstring).

    Args:
        arm: the probe world's arm (unturned, on the table).
        home: its home joint positions (command order).
        mount: the mount's (x, y) in the probe world (m); the turn is about it.
        table_z: the table top's height (m).
        base_xy: the first arm joint's (x, y) in the probe world (m).
        reach: the arm's reach (m), base to tool centre along its links.
        base_radius: the robot base's horizontal radius about the mount (m); the bin keeps its whole width
            and a gap of :data:`_BASE_GAP` off it, so that a camera (and real2sim) tells the two apart.
    """
    min_bin = base_radius + _BASE_GAP if base_radius > 0 else 0.0
    probe = _Probe(arm, home, np.asarray(base_xy, dtype=np.float64), table_z)
    forward = _forward_azimuth(probe, reach)
    yaw = math.atan2(math.sin(-forward), math.cos(-forward))
    mount = np.asarray(mount, dtype=np.float64)
    scale = 1.0
    while scale >= _MIN_SCALE - 1e-9:
        scene = BUNDLED_LAYOUT.scaled(scale, min_bin)
        if _layout_reached(probe, scene, yaw, mount):
            return Layout(yaw=yaw, scale=round(scale, 4), scene=scene, reached=True)
        scale -= _SCALE_STEP
    # A long arm whose elbow cannot fold far enough reaches tool-down only further out: move the layout out.
    for k in range(1, int(round(_MAX_SHIFT / _SHIFT_STEP)) + 1):
        scene = BUNDLED_LAYOUT.scaled(1.0, min_bin).shifted(k * _SHIFT_STEP)
        if _layout_reached(probe, scene, yaw, mount):
            return Layout(yaw=yaw, scale=1.0, scene=scene, reached=True, shift=round(k * _SHIFT_STEP, 4))
    return Layout(yaw=yaw, scale=_MIN_SCALE, scene=BUNDLED_LAYOUT.scaled(_MIN_SCALE, min_bin), reached=False)


def _hidden(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    camera: int,
    points: Sequence[np.ndarray],
    robot: frozenset[int],
) -> bool:
    """Whether the camera sees the robot in, or in front of, the box that ``points`` (world frame) span.

    A fan of rays over the box's footprint in the image, about every 4 pixels of a 640 px image; a ray
    counts when the first thing it hits is a robot geom before it leaves the box (the arm behind the box,
    its base, may show).
    """
    pts = np.asarray(points, dtype=np.float64)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    origin = data.cam_xpos[camera].copy()
    rot = data.cam_xmat[camera].reshape(3, 3)
    cam = (pts - origin) @ rot  # camera frame: looks along -z
    uv = cam[:, :2] / -cam[:, 2:3]
    (u0, v0), (u1, v1) = uv.min(axis=0), uv.max(axis=0)
    step = 4.0 / 640 * 2 * math.tan(math.radians(float(model.cam_fovy[camera])) / 2)
    grid = np.stack(np.meshgrid(np.arange(u0, u1 + step, step), np.arange(v0, v1 + step, step)), axis=-1)
    grid = grid.reshape(-1, 2)
    dirs = np.column_stack([grid, -np.ones(len(grid))]) @ rot.T
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    n = len(dirs)
    geomid = np.full(n, -1, dtype=np.int32)
    dist = np.zeros(n)
    mujoco.mj_multiRay(model, data, origin, dirs.reshape(-1), None, True, -1, geomid, dist, None, n, 10.0)
    # Where each ray leaves the box (slab test); rays that miss it have t_exit < t_enter.
    with np.errstate(divide="ignore", invalid="ignore"):
        t0, t1 = (lo - origin) / dirs, (hi - origin) / dirs
    t_enter = np.nanmax(np.minimum(t0, t1), axis=1)
    t_exit = np.nanmin(np.maximum(t0, t1), axis=1)
    hits_robot = (geomid >= 0) & np.isin(model.geom_bodyid[np.maximum(geomid, 0)], list(robot))
    return bool((hits_robot & (t_exit >= t_enter) & (dist <= t_exit)).any())


def start_pose(
    model: mujoco.MjModel,
    home_qpos: np.ndarray,
    arm_joints: Sequence[int],
    camera: int,
    points: Sequence[np.ndarray],
    robot: frozenset[int],
    away: float,
) -> np.ndarray | None:
    """Arm joint positions to start from, or None when the home pose serves.

    When the arm shows in the camera's view of ``points`` (see :func:`_hidden`), the first joint turns it
    aside by growing angles, ``away`` (+1/-1, joint direction) first, until the view is clear and the arm
    keeps clear of the scene (the bin).

    Args:
        model: the world model.
        home_qpos: its full qpos at home.
        arm_joints: the arm's joint ids, command order.
        camera: the camera's id.
        points: what the camera must see (world frame).
        robot: the robot's body ids.
        away: the first joint's direction to try first.
    """
    data = mujoco.MjData(model)
    qadr = model.jnt_qposadr[list(arm_joints)]
    first = arm_joints[0]
    lo, hi = model.jnt_range[first] if model.jnt_limited[first] else (-np.inf, np.inf)

    def hides(candidate: np.ndarray) -> bool:
        data.qpos[:] = home_qpos
        data.qpos[qadr] = candidate
        mujoco.mj_kinematics(model, data)
        mujoco.mj_camlight(model, data)  # the camera's pose (a camera may ride on a body)
        return _hidden(model, data, camera, points, robot)

    def collidable(g: int) -> bool:
        return bool(model.geom_contype[g] or model.geom_conaffinity[g])

    arm_geoms = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) in robot and collidable(g)]
    scene_geoms = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) not in robot and collidable(g)]

    def gaps(candidate: np.ndarray) -> np.ndarray:
        """Each scene geom's distance to the arm (up to the clearance)."""
        data.qpos[:] = home_qpos
        data.qpos[qadr] = candidate
        mujoco.mj_kinematics(model, data)
        return np.array(
            [
                min(mujoco.mj_geomDistance(model, data, a, g, _CLEARANCE_M, None) for a in arm_geoms)
                for g in scene_geoms
            ]
        )

    home = home_qpos[qadr].copy()
    if not hides(home):
        return None
    # what the arm is near at home (its mount on the table) does not count against a turned pose
    near_at_home = gaps(home) < _CLEARANCE_M
    for deg in _SWING_DEG:
        for side in (away, -away):
            swung = home.copy()
            swung[0] += side * math.radians(deg)
            if not lo <= swung[0] <= hi or hides(swung):
                continue
            if np.all((gaps(swung) >= _CLEARANCE_M) | near_at_home):
                return swung
    return None
