"""Typed, validated configuration of a world folder (``world.yaml``)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from r2s2r_sim.config_reader import Reader, check, check_range, read_pair, resolve_file
from r2s2r_sim.errors import WorldError
from r2s2r_sim.render.profile import BUILTIN_PROFILES, RenderProfile, parse_profiles, resolve_profile
from r2s2r_sim.tasks.config import REGION_TASKS, ObjectPoseRange, TaskConfig, TaskType
from r2s2r_sim.world.robot_config import RobotConfig, parse_robot
from r2s2r_sim.yaml_files import read_yaml

__all__ = [
    "PLUMB_BOB_KEYS",
    "WORLD_FILE",
    "CameraConfig",
    "PhysicsConfig",
    "WorldConfig",
    "load_world_config",
]

WORLD_FILE = "world.yaml"
# plumb_bob coefficients in the order of ``CameraInfo.d`` and OpenCV.
PLUMB_BOB_KEYS = ("k1", "k2", "p1", "p2", "k3")


@dataclass(frozen=True, kw_only=True)
class CameraConfig:
    """A fixed RGB-D camera published on ROS.

    Attributes:
        name: ROS camera name (topics ``/<name>/...``).
        mjcf_camera: camera name in the scene MJCF (or, unprefixed, in the robot MJCF).
        width: image width (px).
        height: image height (px).
        rate_hz: publication rate (Hz).
        frame_id: optical frame id (REP-103: z forward, x right, y down).
        depth_range: ``[min, max]`` valid depth (m); depth outside is reported as 0.
        render_profile: name of the world's render profile this camera is drawn with by default.
        distortion: plumb_bob lens distortion ``(k1, k2, p1, p2, k3)`` the images are drawn with and
            ``CameraInfo.d`` carries (all zero: an ideal pinhole, what MuJoCo draws by itself).
    """

    name: str
    mjcf_camera: str
    width: int
    height: int
    rate_hz: float
    frame_id: str
    depth_range: tuple[float, float] = (0.1, 10.0)
    render_profile: str = "full"
    distortion: tuple[float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        check(len(self.distortion) == 5, "distortion", f"must have 5 coefficients, got {self.distortion}")
        check(
            all(math.isfinite(v) and abs(v) <= 10.0 for v in self.distortion),
            "distortion",
            f"coefficients must be finite and within [-10, 10], got {list(self.distortion)}",
        )
        check(self.width > 0, "width", f"must be > 0, got {self.width}")
        check(self.height > 0, "height", f"must be > 0, got {self.height}")
        check(math.isfinite(self.rate_hz) and self.rate_hz > 0, "rate_hz", f"must be > 0, got {self.rate_hz}")
        check(bool(self.name), "name", "must not be empty")
        check(bool(self.frame_id), "frame_id", "must not be empty")
        check_range(self.depth_range, "depth_range")
        check(self.depth_range[0] >= 0, "depth_range", f"must be >= 0, got {list(self.depth_range)}")


# physics.cone values (MuJoCo's <option cone=...>).
CONES = frozenset({"pyramidal", "elliptic"})


@dataclass(frozen=True, kw_only=True)
class PhysicsConfig:
    """Physics overrides applied after composition.

    Attributes:
        timestep: simulation timestep (s); ``None`` keeps the composed model's.
        cone: friction cone, ``pyramidal`` or ``elliptic``; ``None`` keeps the composed model's.  A
            two-finger grasp holds with the elliptic cone and a high ``impratio``, and slips out of the
            pyramidal default under the same squeeze.
        impratio: ratio of frictional to normal constraint impedance, >= 1; ``None`` keeps the model's.
    """

    timestep: float | None = None
    cone: str | None = None
    impratio: float | None = None

    def __post_init__(self) -> None:
        if self.cone is not None:
            check(self.cone in CONES, "cone", f"must be one of {sorted(CONES)}, got {self.cone!r}")
        if self.impratio is not None:
            check(
                math.isfinite(self.impratio) and 1.0 <= self.impratio <= 1000.0,
                "impratio",
                f"must be in [1, 1000], got {self.impratio}",
            )
        if self.timestep is not None:
            check(
                math.isfinite(self.timestep) and 0 < self.timestep <= 0.05,
                "timestep",
                f"must be in (0, 0.05] s, got {self.timestep}",
            )


@dataclass(frozen=True, kw_only=True)
class WorldConfig:
    """A parsed ``world.yaml``; paths are absolute and checked to exist.

    Attributes:
        source: the ``world.yaml`` file.
        world_dir: the world folder.
        id: world id, e.g. ``tabletop-pick-v1``.
        scene: scene MJCF (table, objects, lights, cameras).
        robot: robot MJCF and interface.
        cameras: RGB-D cameras.
        task: task, if any.
        physics: physics overrides.
        render_profiles: named render profiles: the built-in ``full`` and ``fast`` and the file's own.
        allow_external_paths: whether file references may leave the world folder (test worlds only).
    """

    source: Path
    world_dir: Path
    id: str
    scene: Path
    robot: RobotConfig
    cameras: tuple[CameraConfig, ...] = ()
    task: TaskConfig | None = None
    physics: PhysicsConfig = dataclasses.field(default_factory=PhysicsConfig)
    render_profiles: Mapping[str, RenderProfile] = dataclasses.field(default_factory=lambda: BUILTIN_PROFILES)
    allow_external_paths: bool = False

    def __post_init__(self) -> None:
        check(bool(self.id), "id", "must not be empty")
        names = [c.name for c in self.cameras]
        dup = sorted({n for n in names if names.count(n) > 1})
        check(not dup, "cameras", f"duplicate camera names {dup}")
        for i, cam in enumerate(self.cameras):
            resolve_profile(self.render_profiles, cam.render_profile, where=f"cameras[{i}].render_profile")

    def render_profile(self, camera: CameraConfig, name: str | None = None) -> RenderProfile:
        """The profile ``camera`` is drawn with: ``name`` if given (a run's choice), else its declared one.

        Raises:
            WorldError: no profile called ``name``.
        """
        chosen = camera.render_profile if name is None else name
        return resolve_profile(self.render_profiles, chosen, where=f"{self.source}: render_profile")

    def camera(self, name: str) -> CameraConfig:
        """Return the camera config called ``name``.

        Raises:
            WorldError: if there is no such camera.
        """
        for cam in self.cameras:
            if cam.name == name:
                return cam
        raise WorldError(
            f"{self.source}: cameras: no camera {name!r} (cameras: {[c.name for c in self.cameras]})"
        )


# --------------------------------------------------------------------------------------------- parsing


def _parse_camera(r: Reader) -> CameraConfig:
    depth_range = read_pair(r, "depth_range", required=False)
    kwargs: dict[str, Any] = {
        "name": r.str_("name"),
        "mjcf_camera": r.str_("mjcf_camera"),
        "width": r.int_("width"),
        "height": r.int_("height"),
        "rate_hz": r.float_("rate_hz"),
        "frame_id": r.str_("frame_id"),
        "render_profile": r.str_("render_profile", required=False, default="full"),
    }
    if depth_range is not None:
        kwargs["depth_range"] = depth_range
    dist = r.sub("distortion", required=False)
    if dist is not None:
        model = dist.str_("model")
        if model != "plumb_bob":
            raise dist.fail("model", f"must be 'plumb_bob', got {model!r}")
        kwargs["distortion"] = tuple(dist.float_(key) for key in PLUMB_BOB_KEYS)
        dist.finish()
    return r.build(CameraConfig, **kwargs)


def _parse_task(r: Reader) -> TaskConfig:
    type_name = r.str_("type")
    try:
        task_type = TaskType(type_name)
    except ValueError:
        raise r.fail(
            "type", f"unknown task type {type_name!r} (allowed: {[t.value for t in TaskType]})"
        ) from None
    region = task_type in REGION_TASKS
    return r.build(
        TaskConfig,
        type=task_type,
        object_body=r.str_("object_body"),
        target_site=r.str_("target_site"),
        success_radius=r.float_("success_radius", required=region),
        success_height=r.float_("success_height", required=region),
        timeout=r.float_("timeout"),
        object_pose_range=_pose_range(r, "object_pose_range"),
        table_top_z=r.float_("table_top_z", required=False),
        **{
            key: value
            for key in ("settle_time", "settle_speed", "settle_angular_speed")
            if (value := r.float_(key, required=False)) is not None
        },
        hold_s=r.float_("hold_s", required=False, default=0.0),
        support_body=r.str_("support_body", required=False),
        support_pose_range=_pose_range(r, "support_pose_range"),
        open_threshold=r.float_("open_threshold", required=False),
        joint_start_range=read_pair(r, "joint_start_range", required=False),
    )


def _pose_range(r: Reader, key: str) -> ObjectPoseRange | None:
    range_r = r.sub(key, required=False)
    if range_r is None:
        return None
    yaw = read_pair(range_r, "yaw", required=False)
    return range_r.build(
        ObjectPoseRange,
        x=read_pair(range_r, "x"),
        y=read_pair(range_r, "y"),
        yaw=yaw if yaw is not None else (0.0, 0.0),
    )


def load_world_config(world_dir: str | Path) -> WorldConfig:
    """Read and validate ``<world_dir>/world.yaml``.

    This checks the schema, types, value ranges and that every referenced file exists inside the world
    folder. Names that refer into the MJCF (joints, actuators, cameras, keyframes) are checked when the
    world is composed (:class:`r2s2r_sim.world.sim_world.SimWorld`).

    Args:
        world_dir: the world folder.

    Returns:
        The parsed configuration, with absolute paths.

    Raises:
        WorldError: naming ``world.yaml`` and the field at fault.
    """
    world_dir = Path(world_dir).resolve()
    source = world_dir / WORLD_FILE
    if not world_dir.is_dir():
        raise WorldError(f"{world_dir}: world folder not found")
    top = Reader(read_yaml(source, WorldError, kind="world file").data, str(source), "")
    allow_external = top.bool_("allow_external_paths", default=False)
    world_id = top.str_("id")
    scene = resolve_file(top, "scene", world_dir, world_dir, allow_external)
    robot_r = top.sub("robot")
    assert robot_r is not None
    robot = parse_robot(robot_r, world_dir, allow_external)
    cameras_raw = top.raw("cameras", required=False)
    cameras: list[CameraConfig] = []
    if cameras_raw is not None:
        if not isinstance(cameras_raw, list):
            raise top.fail("cameras", f"must be a list, got {type(cameras_raw).__name__}")
        cameras = [_parse_camera(Reader(c, str(source), f"cameras[{i}]")) for i, c in enumerate(cameras_raw)]
    task_r = top.sub("task", required=False)
    physics_r = top.sub("physics", required=False)
    physics = (
        PhysicsConfig()
        if physics_r is None
        else physics_r.build(
            PhysicsConfig,
            timestep=physics_r.float_("timestep", required=False),
            cone=physics_r.str_("cone", required=False),
            impratio=physics_r.float_("impratio", required=False),
        )
    )
    render_profiles = parse_profiles(top.sub("render_profiles", required=False))
    return top.build(
        WorldConfig,
        source=source,
        world_dir=world_dir,
        id=world_id,
        scene=scene,
        robot=robot,
        cameras=tuple(cameras),
        task=None if task_r is None else _parse_task(task_r),
        physics=physics,
        render_profiles=render_profiles,
        allow_external_paths=allow_external,
    )
