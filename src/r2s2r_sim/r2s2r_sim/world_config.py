"""Typed, validated configuration of a world folder (``world.yaml``)."""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from r2s2r_sim.errors import WorldError
from r2s2r_sim.render_profile import BUILTIN_PROFILES, RenderProfile, parse_profiles, resolve_profile

__all__ = [
    "WORLD_FILE",
    "AttachConfig",
    "CameraConfig",
    "GripperConfig",
    "ObjectPoseRange",
    "PhysicsConfig",
    "RobotConfig",
    "TaskConfig",
    "TaskType",
    "WorldConfig",
    "load_world_config",
]

WORLD_FILE = "world.yaml"
# world.yaml is small hand-written text; anything bigger is not a world file.
_MAX_WORLD_FILE_BYTES = 1 << 20

_T = TypeVar("_T")


class TaskType(enum.Enum):
    """Task kinds a world may declare."""

    PICK_PLACE = "pick_place"


def _check(cond: bool, field: str, msg: str) -> None:
    if not cond:
        raise WorldError(f"{field}: {msg}")


def _check_range(value: tuple[float, float], field: str, *, ordered: bool = True) -> None:
    _check(all(math.isfinite(v) for v in value), field, f"must be finite, got {list(value)}")
    if ordered:
        _check(value[0] < value[1], field, f"must be [low, high] with low < high, got {list(value)}")
    else:
        _check(value[0] != value[1], field, f"the two ends must differ, got {list(value)}")


@dataclass(frozen=True, kw_only=True)
class AttachConfig:
    """Where the robot base goes in the scene: a pose, or a named scene site/frame.

    Attributes:
        pos: position (m) of the robot base in the world frame (or relative to ``site``).
        quat: orientation, wxyz, normalised on use.
        site: name of a scene site or frame to attach to; ``pos``/``quat`` are then relative to it.
    """

    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    quat: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    site: str | None = None

    def __post_init__(self) -> None:
        _check(all(math.isfinite(v) for v in self.pos), "pos", f"must be finite, got {list(self.pos)}")
        norm = math.sqrt(sum(v * v for v in self.quat))
        _check(
            math.isfinite(norm) and norm > 1e-9,
            "quat",
            f"must be a non-zero wxyz quaternion, got {self.quat}",
        )


@dataclass(frozen=True, kw_only=True)
class GripperConfig:
    """One-command gripper.

    Attributes:
        joints: joints reported on ``joint_states`` (unprefixed names).
        actuator: the one actuator driven by the gripper command (unprefixed name).
        command_range: ``[open, closed]`` in the gripper's joint units (m or rad); either order.
        ctrl_range: actuator ctrl values that ``command_range`` maps onto linearly, end for end.
    """

    joints: tuple[str, ...]
    actuator: str
    command_range: tuple[float, float]
    ctrl_range: tuple[float, float]

    def __post_init__(self) -> None:
        _check(len(self.joints) > 0, "joints", "must list at least one joint")
        _check(len(set(self.joints)) == len(self.joints), "joints", f"has duplicates: {list(self.joints)}")
        _check_range(self.command_range, "command_range", ordered=False)
        _check_range(self.ctrl_range, "ctrl_range", ordered=False)

    @property
    def open_command(self) -> float:
        """Command value of the fully open gripper."""
        return self.command_range[0]

    @property
    def closed_command(self) -> float:
        """Command value of the fully closed gripper."""
        return self.command_range[1]


@dataclass(frozen=True, kw_only=True)
class RobotConfig:
    """The robot MJCF and how it is attached and commanded.

    Attributes:
        mjcf: absolute path of the robot MJCF, loaded from its own folder.
        attach: where the robot base goes.
        prefix: name prefix given on attach; all names in this config are unprefixed.
        home_keyframe: keyframe in the robot MJCF used as home (exclusive with ``home_qpos``).
        home_qpos: home positions of ``arm_joints`` (rad or m), in command order.
        arm_joints: arm joints in command order.
        gripper: optional gripper.
        ee_site: end-effector site; ``None`` uses the body of the last arm joint.
        options_from_robot: copy the robot's ``<option>`` (integrator, cone, ...) into the composed model.
    """

    mjcf: Path
    attach: AttachConfig
    prefix: str
    home_keyframe: str | None
    home_qpos: tuple[float, ...] | None
    arm_joints: tuple[str, ...]
    gripper: GripperConfig | None
    ee_site: str | None
    options_from_robot: bool = True

    def __post_init__(self) -> None:
        _check(len(self.arm_joints) > 0, "arm_joints", "must list at least one joint")
        dup = sorted({j for j in self.arm_joints if self.arm_joints.count(j) > 1})
        _check(not dup, "arm_joints", f"has duplicates: {dup}")
        _check(
            (self.home_keyframe is None) != (self.home_qpos is None),
            "home_keyframe",
            "give exactly one of robot.home_keyframe and robot.home_qpos",
        )
        if self.home_qpos is not None:
            _check(
                len(self.home_qpos) == len(self.arm_joints),
                "home_qpos",
                f"has {len(self.home_qpos)} values but robot.arm_joints has {len(self.arm_joints)}",
            )
            _check(all(math.isfinite(v) for v in self.home_qpos), "home_qpos", "must be finite")
        if self.gripper is not None:
            both = sorted(set(self.gripper.joints) & set(self.arm_joints))
            _check(not both, "gripper.joints", f"joints {both} are also in robot.arm_joints")


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
    """

    name: str
    mjcf_camera: str
    width: int
    height: int
    rate_hz: float
    frame_id: str
    depth_range: tuple[float, float] = (0.1, 10.0)
    render_profile: str = "full"

    def __post_init__(self) -> None:
        _check(self.width > 0, "width", f"must be > 0, got {self.width}")
        _check(self.height > 0, "height", f"must be > 0, got {self.height}")
        _check(
            math.isfinite(self.rate_hz) and self.rate_hz > 0, "rate_hz", f"must be > 0, got {self.rate_hz}"
        )
        _check(bool(self.name), "name", "must not be empty")
        _check(bool(self.frame_id), "frame_id", "must not be empty")
        _check_range(self.depth_range, "depth_range")
        _check(self.depth_range[0] >= 0, "depth_range", f"must be >= 0, got {list(self.depth_range)}")


@dataclass(frozen=True, kw_only=True)
class ObjectPoseRange:
    """Uniform ranges of the object's initial pose, world frame (m, m, rad)."""

    x: tuple[float, float]
    y: tuple[float, float]
    yaw: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        for name in ("x", "y", "yaw"):
            value = getattr(self, name)
            _check(all(math.isfinite(v) for v in value), name, f"must be finite, got {list(value)}")
            _check(value[0] <= value[1], name, f"must be [low, high] with low <= high, got {list(value)}")


@dataclass(frozen=True, kw_only=True)
class TaskConfig:
    """Pick-and-place task parameters.

    Attributes:
        type: task kind.
        object_body: free body to pick (scene MJCF).
        target_site: site marking the place target (scene MJCF).
        success_radius: max horizontal object-target distance for success (m).
        success_height: max ``|object z - target z|`` for success (m).
        timeout: episode time limit (s).
        object_pose_range: randomisation of the object pose at reset; ``None`` keeps the MJCF pose.
        table_top_z: table height (m) for the drop check; ``None`` uses the object's MJCF resting height.
        settle_time: how long (s) the object must rest at the target, released, before the task succeeds.
        settle_speed: the object's linear speed (m/s) at or below which it counts as resting.
        settle_angular_speed: the object's angular speed (rad/s) at or below which it counts as resting.
    """

    type: TaskType
    object_body: str
    target_site: str
    success_radius: float
    success_height: float
    timeout: float
    object_pose_range: ObjectPoseRange | None = None
    table_top_z: float | None = None
    settle_time: float = 0.5
    settle_speed: float = 0.02
    settle_angular_speed: float = 0.5

    def __post_init__(self) -> None:
        for name in ("success_radius", "success_height", "timeout", "settle_speed", "settle_angular_speed"):
            value = getattr(self, name)
            _check(math.isfinite(value) and value > 0, name, f"must be > 0, got {value}")
        _check(
            math.isfinite(self.settle_time) and 0.0 <= self.settle_time < self.timeout,
            "settle_time",
            f"must be in [0, timeout) s, got {self.settle_time} (timeout {self.timeout})",
        )


@dataclass(frozen=True, kw_only=True)
class PhysicsConfig:
    """Physics overrides applied after composition.

    Attributes:
        timestep: simulation timestep (s); ``None`` keeps the composed model's.
    """

    timestep: float | None = None

    def __post_init__(self) -> None:
        if self.timestep is not None:
            _check(
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
        _check(bool(self.id), "id", "must not be empty")
        names = [c.name for c in self.cameras]
        dup = sorted({n for n in names if names.count(n) > 1})
        _check(not dup, "cameras", f"duplicate camera names {dup}")
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


class _Reader:
    """Reads one YAML mapping with field-path aware errors."""

    def __init__(self, data: Any, where: str, path: str) -> None:
        self.where = where  # the world.yaml path, for messages
        self.path = path  # dotted field path of this mapping ('' at top level)
        if not isinstance(data, Mapping):
            raise WorldError(
                f"{where}: {path or '<top level>'}: must be a mapping, got {type(data).__name__}"
            )
        self.data: Mapping[str, Any] = data
        self.used: set[str] = set()

    def field(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def fail(self, key: str, msg: str) -> WorldError:
        return WorldError(f"{self.where}: {self.field(key)}: {msg}")

    def has(self, key: str) -> bool:
        return key in self.data and self.data[key] is not None

    def raw(self, key: str, *, required: bool) -> Any:
        self.used.add(key)
        if key not in self.data or self.data[key] is None:
            if required:
                raise self.fail(key, "required field is missing")
            return None
        return self.data[key]

    def str_(self, key: str, *, required: bool = True, default: str | None = None) -> str | None:
        value = self.raw(key, required=required)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(key, f"must be a string, got {type(value).__name__} {value!r}")
        return value

    def float_(self, key: str, *, required: bool = True, default: float | None = None) -> float | None:
        value = self.raw(key, required=required)
        if value is None:
            return default
        return _to_float(value, lambda msg: self.fail(key, msg))

    def int_(self, key: str) -> int:
        value = self.raw(key, required=True)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"must be an integer, got {type(value).__name__} {value!r}")
        return value

    def bool_(self, key: str, *, default: bool) -> bool:
        value = self.raw(key, required=False)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, f"must be true or false, got {value!r}")
        return value

    def floats(self, key: str, n: int | None, *, required: bool = True) -> tuple[float, ...] | None:
        value = self.raw(key, required=required)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.fail(key, f"must be a list of numbers, got {type(value).__name__} {value!r}")
        if n is not None and len(value) != n:
            raise self.fail(key, f"must have {n} numbers, got {len(value)}")
        result = []
        for i, v in enumerate(value):
            item = f"{self.field(key)}[{i}]"

            def fail(msg: str, item: str = item) -> WorldError:
                return WorldError(f"{self.where}: {item}: {msg}")

            result.append(_to_float(v, fail))
        return tuple(result)

    def strs(self, key: str, *, required: bool = True) -> tuple[str, ...] | None:
        value = self.raw(key, required=required)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.fail(key, f"must be a list of strings, got {type(value).__name__} {value!r}")
        for i, v in enumerate(value):
            if not isinstance(v, str) or not v:
                raise WorldError(
                    f"{self.where}: {self.field(key)}[{i}]: must be a non-empty string, got {v!r}"
                )
        return tuple(value)

    def sub(self, key: str, *, required: bool = True) -> _Reader | None:
        value = self.raw(key, required=required)
        if value is None:
            return None
        return _Reader(value, self.where, self.field(key))

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.used, key=str)
        if unknown:
            raise WorldError(
                f"{self.where}: {self.path or '<top level>'}: unknown key(s) {unknown} "
                f"(allowed: {sorted(self.used)})"
            )

    def build(self, cls: Callable[..., _T], **kwargs: Any) -> _T:
        """Construct a config dataclass, prefixing its validation errors with file and field."""
        self.finish()
        try:
            return cls(**kwargs)
        except WorldError as err:
            prefix = f"{self.path}." if self.path else ""
            raise WorldError(f"{self.where}: {prefix}{err}") from None


def _to_float(value: Any, fail: Callable[[str], WorldError]) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(f"must be a number, got {type(value).__name__} {value!r}")
    result = float(value)
    if not math.isfinite(result):
        raise fail(f"must be finite, got {value!r}")
    return result


def _pair(reader: _Reader, key: str, *, required: bool = True) -> tuple[float, float] | None:
    value = reader.floats(key, 2, required=required)
    return None if value is None else (value[0], value[1])


def _resolve_file(reader: _Reader, key: str, base: Path, world_dir: Path, allow_external: bool) -> Path:
    rel = reader.str_(key)
    assert rel is not None  # required=True
    candidate = Path(rel)
    if candidate.is_absolute() and not allow_external:
        raise reader.fail(key, f"absolute path {rel!r} not allowed (paths are relative to {world_dir})")
    resolved = (base / candidate).resolve()
    if not allow_external and not resolved.is_relative_to(world_dir.resolve()):
        raise reader.fail(
            key, f"path {rel!r} escapes the world folder {world_dir} (set allow_external_paths only in tests)"
        )
    if not resolved.is_file():
        raise reader.fail(key, f"file {rel!r} not found (looked for {resolved})")
    return resolved


def _parse_gripper(r: _Reader) -> GripperConfig:
    joints = r.strs("joints")
    actuator = r.str_("actuator")
    command_range = _pair(r, "command_range")
    ctrl_range = _pair(r, "ctrl_range", required=False)
    return r.build(
        GripperConfig,
        joints=joints,
        actuator=actuator,
        command_range=command_range,
        ctrl_range=ctrl_range if ctrl_range is not None else command_range,
    )


def _parse_robot(r: _Reader, world_dir: Path, allow_external: bool) -> RobotConfig:
    mjcf = _resolve_file(r, "mjcf", world_dir, world_dir, allow_external)
    attach_r = r.sub("attach", required=False)
    if attach_r is None:
        attach = AttachConfig()
    else:
        pos = attach_r.floats("pos", 3, required=False)
        quat = attach_r.floats("quat", 4, required=False)
        attach = attach_r.build(
            AttachConfig,
            pos=pos if pos is not None else (0.0, 0.0, 0.0),
            quat=quat if quat is not None else (1.0, 0.0, 0.0, 0.0),
            site=attach_r.str_("site", required=False),
        )
    gripper_r = r.sub("gripper", required=False)
    return r.build(
        RobotConfig,
        mjcf=mjcf,
        attach=attach,
        prefix=r.str_("prefix", required=False, default=""),
        home_keyframe=r.str_("home_keyframe", required=False),
        home_qpos=r.floats("home_qpos", None, required=False),
        arm_joints=r.strs("arm_joints"),
        gripper=None if gripper_r is None else _parse_gripper(gripper_r),
        ee_site=r.str_("ee_site", required=False),
        options_from_robot=r.bool_("options_from_robot", default=True),
    )


def _parse_camera(r: _Reader) -> CameraConfig:
    depth_range = _pair(r, "depth_range", required=False)
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
    return r.build(CameraConfig, **kwargs)


def _parse_task(r: _Reader) -> TaskConfig:
    type_name = r.str_("type")
    try:
        task_type = TaskType(type_name)
    except ValueError:
        raise r.fail(
            "type", f"unknown task type {type_name!r} (allowed: {[t.value for t in TaskType]})"
        ) from None
    range_r = r.sub("object_pose_range", required=False)
    pose_range = None
    if range_r is not None:
        yaw = _pair(range_r, "yaw", required=False)
        pose_range = range_r.build(
            ObjectPoseRange,
            x=_pair(range_r, "x"),
            y=_pair(range_r, "y"),
            yaw=yaw if yaw is not None else (0.0, 0.0),
        )
    return r.build(
        TaskConfig,
        type=task_type,
        object_body=r.str_("object_body"),
        target_site=r.str_("target_site"),
        success_radius=r.float_("success_radius"),
        success_height=r.float_("success_height"),
        timeout=r.float_("timeout"),
        object_pose_range=pose_range,
        table_top_z=r.float_("table_top_z", required=False),
        **{
            key: value
            for key in ("settle_time", "settle_speed", "settle_angular_speed")
            if (value := r.float_(key, required=False)) is not None
        },
    )


def load_world_config(world_dir: str | Path) -> WorldConfig:
    """Read and validate ``<world_dir>/world.yaml``.

    This checks the schema, types, value ranges and that every referenced file exists inside the world
    folder. Names that refer into the MJCF (joints, actuators, cameras, keyframes) are checked when the
    world is composed (:class:`r2s2r_sim.world.SimWorld`).

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
    if not source.is_file():
        raise WorldError(f"{source}: world file not found")
    size = source.stat().st_size
    if size > _MAX_WORLD_FILE_BYTES:
        raise WorldError(f"{source}: file is {size} bytes, more than the {_MAX_WORLD_FILE_BYTES} allowed")
    try:
        data = yaml.safe_load(source.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise WorldError(f"{source}: not valid YAML: {err}") from err
    top = _Reader(data, str(source), "")
    allow_external = top.bool_("allow_external_paths", default=False)
    world_id = top.str_("id")
    scene = _resolve_file(top, "scene", world_dir, world_dir, allow_external)
    robot_r = top.sub("robot")
    assert robot_r is not None
    robot = _parse_robot(robot_r, world_dir, allow_external)
    cameras_raw = top.raw("cameras", required=False)
    cameras: list[CameraConfig] = []
    if cameras_raw is not None:
        if not isinstance(cameras_raw, list):
            raise top.fail("cameras", f"must be a list, got {type(cameras_raw).__name__}")
        cameras = [_parse_camera(_Reader(c, str(source), f"cameras[{i}]")) for i, c in enumerate(cameras_raw)]
    task_r = top.sub("task", required=False)
    physics_r = top.sub("physics", required=False)
    physics = (
        PhysicsConfig()
        if physics_r is None
        else physics_r.build(PhysicsConfig, timestep=physics_r.float_("timestep", required=False))
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
