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
from r2s2r_sim.robot_source import (
    ServoConfig,
    ToolFrameConfig,
    asset_roots,
    is_urdf,
    resolve_package,
    split_package_uri,
)

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
    PUSH = "push"
    STACK = "stack"
    DRAWER = "drawer"


# Task types whose success is a region around ``target_site`` (``success_radius``, ``success_height``).
_REGION_TASKS = (TaskType.PICK_PLACE, TaskType.PUSH, TaskType.STACK)


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
    """The robot file and how it is attached and commanded.

    Attributes:
        mjcf: absolute path of the robot file (MJCF, URDF or xacro; ``robot.mjcf`` or ``robot.urdf`` in
            world.yaml), loaded from its own folder.
        attach: where the robot base goes.
        prefix: name prefix given on attach; all names in this config are unprefixed.
        home_keyframe: keyframe in the robot MJCF used as home (exclusive with ``home_qpos``).
        home_qpos: home positions of ``arm_joints`` (rad or m), in command order.
        arm_joints: arm joints in command order.
        gripper: optional gripper.
        ee_site: end-effector site; ``None`` uses the body of the last arm joint.
        options_from_robot: copy the robot's ``<option>`` (integrator, cone, ...) into the composed model.
        xacro_args: arguments of a xacro robot file.
        packages: folders of the packages named by ``package://`` paths and ``$(find ...)``.
        servos: position servos for arm and gripper joints without an actuator (URDF); ``None``: none.
        tool_frame: tool-centre frame added as the site ``ee_site`` names.
        asset_roots: folders the robot's meshes and textures must stay inside; ``None``: the world folder.
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
    xacro_args: Mapping[str, str] = dataclasses.field(default_factory=dict)
    packages: Mapping[str, Path] = dataclasses.field(default_factory=dict)
    servos: ServoConfig | None = None
    tool_frame: ToolFrameConfig | None = None
    asset_roots: tuple[Path, ...] | None = None

    @property
    def is_urdf(self) -> bool:
        """The robot file is URDF or xacro (compiled by MuJoCo's URDF importer)."""
        return is_urdf(self.mjcf)

    def __post_init__(self) -> None:
        if self.tool_frame is not None:
            _check(
                self.ee_site == self.tool_frame.name,
                "tool_frame",
                f"give robot.ee_site or robot.tool_frame, not both (ee_site {self.ee_site!r})",
            )
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
    """Task parameters (each task class documents which it reads).

    Attributes:
        type: task kind.
        object_body: the body the task is about (scene MJCF): a free body to pick, push or stack, or the
            moving part of an articulated object (one slide or hinge joint).
        target_site: site marking the target (scene MJCF): the place or push target, the stacking spot
            on the support block, or the drawer's handle.
        success_radius: max horizontal object-target distance for success (m); required by the
            region tasks (pick_place, push, stack).
        success_height: max ``|object z - target z|`` for success (m); required like ``success_radius``.
        timeout: episode time limit (s).
        object_pose_range: randomisation of the object pose at reset; ``None`` keeps the MJCF pose.
        table_top_z: table height (m) for the drop check; ``None`` uses the object's MJCF resting height.
        hold_s: how long the success condition must hold, object at rest, before it counts (s); >= 0.
        support_body: stack: the free block the object goes on.
        support_pose_range: stack: randomisation of the support block's pose at reset.
        open_threshold: drawer: joint position (m or rad) the articulated object must be held past.
        joint_start_range: drawer: uniform range of the joint position at reset (m or rad).
    """

    type: TaskType
    object_body: str
    target_site: str
    timeout: float
    success_radius: float | None = None
    success_height: float | None = None
    object_pose_range: ObjectPoseRange | None = None
    table_top_z: float | None = None
    hold_s: float = 0.0
    support_body: str | None = None
    support_pose_range: ObjectPoseRange | None = None
    open_threshold: float | None = None
    joint_start_range: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        for name in ("success_radius", "success_height", "timeout"):
            value = getattr(self, name)
            if value is None and (name == "timeout" or self.type in _REGION_TASKS):
                raise WorldError(f"{name}: required for task type {self.type.value!r}")
            if value is not None:
                _check(math.isfinite(value) and value > 0, name, f"must be > 0, got {value}")
        _check(math.isfinite(self.hold_s) and self.hold_s >= 0, "hold_s", f"must be >= 0, got {self.hold_s}")
        if self.type is TaskType.STACK:
            _check(self.support_body is not None, "support_body", "required for task type 'stack'")
        if self.type is TaskType.DRAWER:
            _check(
                self.open_threshold is not None and math.isfinite(self.open_threshold),
                "open_threshold",
                f"required (finite) for task type 'drawer', got {self.open_threshold}",
            )
        if self.joint_start_range is not None:
            _check_range(self.joint_start_range, "joint_start_range")


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


def _parse_tool_frame(r: _Reader) -> ToolFrameConfig:
    kwargs: dict[str, Any] = {"body": r.str_("body")}
    name = r.str_("name", required=False)
    if name is not None:
        kwargs["name"] = name
    for key in ("pos", "z_axis", "y_axis"):
        value = r.floats(key, 3, required=False)
        if value is not None:
            kwargs[key] = value
    return r.build(ToolFrameConfig, **kwargs)


def _parse_packages(r: _Reader | None, world_dir: Path) -> dict[str, Path]:
    if r is None:
        return {}
    packages = {}
    for name in list(r.data):
        rel = r.str_(str(name))
        assert rel is not None
        folder = (world_dir / rel).resolve()
        if not folder.is_dir():
            raise r.fail(str(name), f"package folder {rel!r} not found (looked for {folder})")
        packages[str(name)] = folder
    r.finish()
    return packages


def _resolve_robot_file(
    r: _Reader, key: str, world_dir: Path, allow_external: bool, packages: Mapping[str, Path]
) -> tuple[Path, tuple[Path, ...] | None]:
    """The robot file and the folders its assets must stay in (``None``: the world folder).

    The robot may live anywhere the world names it explicitly (a path or ``package://``); what lies inside
    the world folder keeps the world folder's checks.
    """
    ref = r.str_(key)
    assert ref is not None  # required
    uri = split_package_uri(ref)
    if uri is not None:
        name, rel = uri
        folder = resolve_package(name, packages)
        if folder is None:
            raise r.fail(
                key, f"package {name!r} is neither in robot.packages ({sorted(packages)}) nor in the ament index"
            )
        resolved = (folder / rel).resolve()
    else:
        resolved = (world_dir / ref).resolve()
    if not resolved.is_file():
        raise r.fail(key, f"file {ref!r} not found (looked for {resolved})")
    if resolved.is_relative_to(world_dir.resolve()) or allow_external:
        return resolved, None
    return resolved, asset_roots(resolved, packages)


def _parse_robot(r: _Reader, world_dir: Path, allow_external: bool) -> RobotConfig:
    packages = _parse_packages(r.sub("packages", required=False), world_dir)
    has_mjcf, has_urdf = r.has("mjcf"), r.has("urdf")
    if has_mjcf == has_urdf:
        raise r.fail("mjcf", "give exactly one of robot.mjcf (MJCF) and robot.urdf (URDF or xacro)")
    key = "mjcf" if has_mjcf else "urdf"
    mjcf, roots = _resolve_robot_file(r, key, world_dir, allow_external, packages)
    if is_urdf(mjcf) != (key == "urdf"):
        raise r.fail(key, f"{mjcf.name}: use robot.urdf for .urdf/.xacro files and robot.mjcf for MJCF")
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
    xacro_r = r.sub("xacro_args", required=False)
    xacro_args: dict[str, str] = {}
    if xacro_r is not None:
        for name in list(xacro_r.data):
            value = xacro_r.raw(str(name), required=True)
            if isinstance(value, dict | list):
                raise xacro_r.fail(str(name), f"must be a scalar, got {value!r}")
            xacro_args[str(name)] = str(value)
        xacro_r.finish()
    servos_r = r.sub("servos", required=False)
    servos = None
    if servos_r is not None:
        servos = servos_r.build(
            ServoConfig,
            kp=servos_r.float_("kp"),
            kv=servos_r.float_("kv", required=False, default=0.0),
            force_limit=servos_r.float_("force_limit", required=False),
        )
    tool_r = r.sub("tool_frame", required=False)
    tool_frame = None if tool_r is None else _parse_tool_frame(tool_r)
    ee_site = r.str_("ee_site", required=False)
    if tool_frame is not None and ee_site is None:
        ee_site = tool_frame.name
    return r.build(
        RobotConfig,
        mjcf=mjcf,
        attach=attach,
        prefix=r.str_("prefix", required=False, default=""),
        home_keyframe=r.str_("home_keyframe", required=False),
        home_qpos=r.floats("home_qpos", None, required=False),
        arm_joints=r.strs("arm_joints"),
        gripper=None if gripper_r is None else _parse_gripper(gripper_r),
        ee_site=ee_site,
        options_from_robot=r.bool_("options_from_robot", default=True),
        xacro_args=xacro_args,
        packages=packages,
        servos=servos,
        tool_frame=tool_frame,
        asset_roots=roots,
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
    region = task_type in _REGION_TASKS
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
        hold_s=r.float_("hold_s", required=False, default=0.0),
        support_body=r.str_("support_body", required=False),
        support_pose_range=_pose_range(r, "support_pose_range"),
        open_threshold=r.float_("open_threshold", required=False),
        joint_start_range=_pair(r, "joint_start_range", required=False),
    )


def _pose_range(r: _Reader, key: str) -> ObjectPoseRange | None:
    range_r = r.sub(key, required=False)
    if range_r is None:
        return None
    yaw = _pair(range_r, "yaw", required=False)
    return range_r.build(
        ObjectPoseRange,
        x=_pair(range_r, "x"),
        y=_pair(range_r, "y"),
        yaw=yaw if yaw is not None else (0.0, 0.0),
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
