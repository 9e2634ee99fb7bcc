"""Typed configuration of the variation engine, its YAML loader, its error and the axis registry.

A :class:`VariationConfig` holds one frozen config per axis (``appearance``, ``objects``, ``clutter``,
``physics``, ``robot_state``, ``camera``, ``dynamics``, ``sensor``, ``contact``).  Each axis is
implemented by an :class:`Axis` subclass in its own module, registered in :data:`AXES` under the name of
its config field.  Every config is validated where it is built; :func:`load_variation_config` reads
``config/variations.yaml`` and prefixes each error with the file and the field at fault.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import mujoco

from r2s2r_sim.variations._checks import Range, VariationError
from r2s2r_sim.variations._checks import check_names as _check_names
from r2s2r_sim.variations._checks import check_nonneg as _check_nonneg
from r2s2r_sim.variations._checks import check_range as _check_range
from r2s2r_sim.variations._checks import fail as _fail
from r2s2r_sim.variations.contact_config import ContactVariationConfig
from r2s2r_sim.variations.sensor_config import SensorVariationConfig
from r2s2r_sim.yaml_files import parse_yaml, read_yaml

__all__ = [
    "AXES",
    "AppearanceConfig",
    "Axis",
    "CameraJitterConfig",
    "ClutterConfig",
    "ClutterShape",
    "ContactVariationConfig",
    "DynamicsVariationConfig",
    "KeepOutZone",
    "ObjectsConfig",
    "ParameterRange",
    "PhysicsVariationConfig",
    "RobotStateConfig",
    "SensorVariationConfig",
    "VariationConfig",
    "VariationError",
    "load_variation_config",
    "parse_variation_text",
]

TEXTURE_CHOICES = ("none", "checker", "gradient", "flat")


# ------------------------------------------------------------------------------------------ axis configs


@dataclass(frozen=True, kw_only=True)
class AppearanceConfig:
    """Colours and lighting.

    Attributes:
        enabled: whether this axis varies anything.
        color_targets: geom or material names whose rgb is jittered (a material wins over a geom of the
            same name).
        color_jitter: each of r, g and b moves by a uniform amount in ``±color_jitter`` (clipped to [0, 1]).
        light_intensity_scale: scale (> 0) applied to the diffuse colour of every light.
        light_direction_jitter: every light's direction is tilted by uniform angles in ``±`` this (rad)
            about the world x and y axes.
        texture_targets: material names that get a texture drawn from ``textures``.
        textures: the choices, each equally likely: ``none`` (keep the material plain) or a MuJoCo
            builtin 2-D texture (``checker``, ``gradient``, ``flat``) in the material's own colour and a
            darker shade of it.
    """

    enabled: bool = True
    color_targets: tuple[str, ...] = ("cube_geom", "table_mat", "bin_mat")
    color_jitter: float = 0.1
    light_intensity_scale: Range = (0.6, 1.4)
    light_direction_jitter: float = 0.3
    texture_targets: tuple[str, ...] = ("table_mat",)
    textures: tuple[str, ...] = ("none", "checker", "gradient")

    def __post_init__(self) -> None:
        _check_names("color_targets", self.color_targets)
        _check_names("texture_targets", self.texture_targets)
        _check_names("textures", self.textures, allow_empty=not self.texture_targets)
        unknown = [t for t in self.textures if t not in TEXTURE_CHOICES]
        if unknown:
            raise _fail("textures", f"unknown {unknown}; allowed: {list(TEXTURE_CHOICES)}")
        if not math.isfinite(self.color_jitter) or not 0 <= self.color_jitter <= 1:
            raise _fail("color_jitter", f"must be in [0, 1], got {self.color_jitter}")
        _check_range("light_intensity_scale", self.light_intensity_scale, positive=True)
        if (
            not math.isfinite(self.light_direction_jitter)
            or not 0 <= self.light_direction_jitter <= math.pi / 2
        ):
            raise _fail(
                "light_direction_jitter", f"must be in [0, pi/2] rad, got {self.light_direction_jitter}"
            )


@dataclass(frozen=True, kw_only=True)
class ObjectsConfig:
    """Start pose of the task object; overrides ``task.object_pose_range`` of ``world.yaml`` when enabled.

    Attributes:
        enabled: whether this axis varies anything.
        body: the task object's body (a free body of the scene).
        x: start x range, world frame (m).
        y: start y range, world frame (m).
        yaw: start yaw range about world z (rad).
    """

    enabled: bool = True
    body: str = "cube"
    x: Range = (0.35, 0.55)
    y: Range = (-0.15, 0.05)
    yaw: Range = (-3.14159, 3.14159)  # as world.yaml

    def __post_init__(self) -> None:
        if not self.body:
            raise _fail("body", "must not be empty")
        for name in ("x", "y", "yaw"):
            _check_range(name, getattr(self, name))


class ClutterShape(enum.Enum):
    """Primitive shapes of distractor bodies."""

    BOX = "box"
    SPHERE = "sphere"
    CYLINDER = "cylinder"


@dataclass(frozen=True, kw_only=True)
class KeepOutZone:
    """An axis-aligned rectangle of the table (world frame, m) that no distractor may touch at start.

    Attributes:
        name: what it protects (for messages), e.g. ``bin``.
        x: x extent (m).
        y: y extent (m).
    """

    name: str
    x: Range
    y: Range

    def __post_init__(self) -> None:
        if not self.name:
            raise _fail("name", "must not be empty")
        _check_range("x", self.x)
        _check_range("y", self.y)


@dataclass(frozen=True, kw_only=True)
class ClutterConfig:
    """Distractor bodies: free primitives resting on the table, placed by rejection sampling.

    Attributes:
        enabled: whether this axis varies anything.
        count: number of distractors, inclusive integer range.
        shapes: shapes drawn from (uniformly).
        half_size: half extent of a distractor (m): box half side, sphere radius, cylinder radius and
            half height.
        region_x: x range of distractor centres (m).
        region_y: y range of distractor centres (m).
        table_top_z: height of the table surface the distractors rest on (m).
        keep_out: rectangles no distractor may touch (bin footprint, robot base, task object start area).
        object_radius: keep-out radius around the task object's start pose (m), used when the ``objects``
            axis is enabled.
        clearance: minimum gap between a distractor and anything it must avoid (m).
        max_tries: candidate poses drawn per distractor before the variation is refused.
        density: distractor density (kg/m^3).
    """

    enabled: bool = True
    count: tuple[int, int] = (0, 4)
    shapes: tuple[ClutterShape, ...] = (ClutterShape.BOX, ClutterShape.SPHERE, ClutterShape.CYLINDER)
    half_size: Range = (0.015, 0.03)
    region_x: Range = (0.15, 0.75)
    region_y: Range = (-0.45, 0.55)
    table_top_z: float = 0.75
    keep_out: tuple[KeepOutZone, ...] = (
        KeepOutZone(name="bin", x=(0.17, 0.33), y=(0.30, 0.46)),
        KeepOutZone(name="robot_base", x=(-0.09, 0.09), y=(-0.09, 0.09)),
        KeepOutZone(name="cube_start", x=(0.32, 0.58), y=(-0.18, 0.08)),
    )
    object_radius: float = 0.03
    clearance: float = 0.01
    max_tries: int = 200
    density: float = 500.0

    def __post_init__(self) -> None:
        lo, hi = self.count
        if lo < 0 or hi < 0:
            raise _fail("count", f"must not be negative, got {list(self.count)}")
        if lo > hi:
            raise _fail("count", f"must be [low, high] with low <= high, got {list(self.count)}")
        if not self.shapes:
            raise _fail("shapes", f"must list at least one of {[s.value for s in ClutterShape]}")
        _check_range("half_size", self.half_size, positive=True)
        _check_range("region_x", self.region_x)
        _check_range("region_y", self.region_y)
        if not math.isfinite(self.table_top_z):
            raise _fail("table_top_z", f"must be finite, got {self.table_top_z}")
        _check_nonneg("object_radius", self.object_radius)
        _check_nonneg("clearance", self.clearance)
        if self.max_tries < 1:
            raise _fail("max_tries", f"must be >= 1, got {self.max_tries}")
        if not math.isfinite(self.density) or self.density <= 0:
            raise _fail("density", f"must be > 0 kg/m^3, got {self.density}")
        names = [z.name for z in self.keep_out]
        if len(set(names)) != len(names):
            raise _fail("keep_out", f"duplicate zone names {names}")


@dataclass(frozen=True, kw_only=True)
class PhysicsVariationConfig:
    """Contact, inertia, joint and servo parameters, as scales (> 0) of the world's values.

    Attributes:
        enabled: whether this axis varies anything.
        friction_scale: scale of the sliding, torsional and rolling friction of ``friction_geoms``.
        friction_geoms: geoms whose friction is scaled (task object and table).
        mass_scale: scale of the mass (or density) of every geom of ``mass_bodies``.
        mass_bodies: bodies whose mass is scaled.
        damping_scale: scale of the damping of every joint of the world.
        gain_scale: scale of every position servo's kp (``gainprm[0]`` and the matching ``biasprm[1]``).
    """

    enabled: bool = True
    friction_scale: Range = (0.7, 1.3)
    friction_geoms: tuple[str, ...] = ("cube_geom", "table_top")
    mass_scale: Range = (0.7, 1.3)
    mass_bodies: tuple[str, ...] = ("cube",)
    damping_scale: Range = (0.8, 1.2)
    gain_scale: Range = (0.8, 1.2)

    def __post_init__(self) -> None:
        for name in ("friction_scale", "mass_scale", "damping_scale", "gain_scale"):
            _check_range(name, getattr(self, name), positive=True)
        _check_names("friction_geoms", self.friction_geoms)
        _check_names("mass_bodies", self.mass_bodies)


@dataclass(frozen=True, kw_only=True)
class RobotStateConfig:
    """Start configuration of the arm: offsets around home, applied at reset.

    Attributes:
        enabled: whether this axis varies anything.
        joints: arm joints that are offset (unprefixed names); empty: the world's arm joints (filled in by
            :func:`r2s2r_sim.variations.for_world` before sampling).
        offset: per joint, the offset is uniform in ``±offset`` (rad or m); same length as ``joints``, or
            one value for every joint.
    """

    enabled: bool = True
    joints: tuple[str, ...] = ()
    offset: tuple[float, ...] = (0.1,)

    def __post_init__(self) -> None:
        _check_names("joints", self.joints)
        if len(self.offset) != len(self.joints) and len(self.offset) != 1:
            raise _fail(
                "offset",
                f"must have one value, or one per entry of joints: got {len(self.offset)} offsets and "
                f"{len(self.joints)} joints",
            )
        for i, v in enumerate(self.offset):
            _check_nonneg(f"offset[{i}]", v)


@dataclass(frozen=True, kw_only=True)
class CameraJitterConfig:
    """Camera viewpoint: extrinsics and intrinsics jitter of one MJCF camera.

    Attributes:
        enabled: whether this axis varies anything.
        camera: the MJCF camera name.
        position_jitter: the position moves by uniform amounts in ``±`` this along world x, y and z (m).
        rotation_jitter: the orientation turns by uniform angles in ``±`` this about the camera's own x, y
            and z axes (rad).
        fovy_jitter: the vertical field of view changes by a uniform amount in ``±`` this (deg).
    """

    enabled: bool = True
    camera: str = "realsense"
    position_jitter: float = 0.02
    rotation_jitter: float = 0.03
    fovy_jitter: float = 2.0

    def __post_init__(self) -> None:
        if not self.camera:
            raise _fail("camera", "must not be empty")
        _check_nonneg("position_jitter", self.position_jitter)
        if not math.isfinite(self.rotation_jitter) or not 0 <= self.rotation_jitter <= math.pi:
            raise _fail("rotation_jitter", f"must be in [0, pi] rad, got {self.rotation_jitter}")
        if not math.isfinite(self.fovy_jitter) or not 0 <= self.fovy_jitter < 90:
            raise _fail("fovy_jitter", f"must be in [0, 90) deg, got {self.fovy_jitter}")


# Per-joint kinds the dynamics axis sets (SI: kg m^2, N m, N m s/rad, N m/rad), and the command delay (s).
DYNAMICS_KINDS = ("armature", "frictionloss", "damping", "kp", "kv")
COMMAND_DELAY = "command_delay_s"


@dataclass(frozen=True, kw_only=True)
class ParameterRange:
    """One identified parameter and the range it is drawn from.

    Attributes:
        name: ``<joint>/<kind>`` (kind one of ``armature, frictionloss, damping, kp, kv``; the servo of a
            joint is the actuator driving it) or ``command_delay_s``, as ``r2s2r real2sim`` names them.
        range: absolute values, SI units (>= 0; ``kp`` > 0).
    """

    name: str
    range: Range

    def __post_init__(self) -> None:
        joint, _, kind = self.name.rpartition("/")
        if self.name != COMMAND_DELAY and (not joint or kind not in DYNAMICS_KINDS):
            raise _fail(
                "name",
                f"must be {COMMAND_DELAY!r} or '<joint>/<kind>' with kind in {list(DYNAMICS_KINDS)}, "
                f"got {self.name!r}",
            )
        _check_range(self.name, self.range, positive=kind == "kp", nonneg=True)


@dataclass(frozen=True, kw_only=True)
class DynamicsVariationConfig:
    """Arm dynamics drawn around an identification: absolute per-joint values and the command delay.

    ``r2s2r real2sim`` writes this axis into a reconstructed world's ``variations.yaml`` from the fit's
    uncertainty (see docs/real2sim.md); it is off unless a config turns it on.

    Attributes:
        enabled: whether this axis varies anything.
        parameters: each parameter set to a value drawn uniformly from its range.
    """

    enabled: bool = False
    parameters: tuple[ParameterRange, ...] = ()

    def __post_init__(self) -> None:
        _check_names("parameters", tuple(p.name for p in self.parameters))


@dataclass(frozen=True, kw_only=True)
class VariationConfig:
    """The nine axes; a disabled axis contributes no parameter and leaves the model as the base world.

    Attributes:
        appearance: colours and lighting.
        objects: task object start pose.
        clutter: distractors.
        physics: friction, masses, damping, servo gains.
        robot_state: arm start offsets.
        camera: camera extrinsics and intrinsics.
        dynamics: arm dynamics around an identification (off by default).
        sensor: sensor effects on the rendered RGB-D frames (off by default).
        contact: gripper pad softness and the friction cone (off by default).
        source: the YAML file this was read from (for messages), if any.
    """

    appearance: AppearanceConfig = dataclasses.field(default_factory=AppearanceConfig)
    objects: ObjectsConfig = dataclasses.field(default_factory=ObjectsConfig)
    clutter: ClutterConfig = dataclasses.field(default_factory=ClutterConfig)
    physics: PhysicsVariationConfig = dataclasses.field(default_factory=PhysicsVariationConfig)
    robot_state: RobotStateConfig = dataclasses.field(default_factory=RobotStateConfig)
    camera: CameraJitterConfig = dataclasses.field(default_factory=CameraJitterConfig)
    dynamics: DynamicsVariationConfig = dataclasses.field(default_factory=DynamicsVariationConfig)
    sensor: SensorVariationConfig = dataclasses.field(default_factory=SensorVariationConfig)
    contact: ContactVariationConfig = dataclasses.field(default_factory=ContactVariationConfig)
    source: Path | None = dataclasses.field(default=None, compare=False)

    def axis(self, name: str) -> Any:
        """The config of axis ``name``.

        Raises:
            VariationError: for an unknown axis, listing the valid ones.
        """
        if name not in AXIS_NAMES:
            raise VariationError(f"unknown variation axis {name!r} (axes: {list(AXIS_NAMES)})")
        return getattr(self, name)

    def only(self, *names: str) -> VariationConfig:
        """This config with every axis but ``names`` disabled."""
        for n in names:
            self.axis(n)
        return dataclasses.replace(
            self, **{a: dataclasses.replace(self.axis(a), enabled=a in names) for a in AXIS_NAMES}
        )

    def enabled_axes(self) -> tuple[str, ...]:
        """Names of the enabled axes, in registry order."""
        return tuple(a for a in AXIS_NAMES if self.axis(a).enabled)


AXIS_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(VariationConfig) if f.name != "source")

# ---------------------------------------------------------------------------------------------- registry


class Axis(abc.ABC):
    """One variation axis.

    A subclass names its config field in ``name``; it is registered in :data:`AXES` when defined, and the
    definition fails if the name is not a field of :class:`VariationConfig` or is taken.

    ``dims`` lists the unit-cube dimensions the axis consumes; ``realise`` maps a point of ``[0, 1)^d`` to
    named physical values (the realised parameters, in the order given); ``apply`` edits an ``MjSpec`` from
    those values.  ``realise`` sees the parameters realised by earlier axes (registry order).
    """

    name: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = getattr(cls, "name", None)
        if name not in AXIS_NAMES:
            raise TypeError(f"{cls.__name__}.name must be one of the VariationConfig axes {list(AXIS_NAMES)}")
        if name in AXES:
            raise TypeError(f"axis {name!r} is already registered by {type(AXES[name]).__name__}")
        AXES[name] = cls()

    @abc.abstractmethod
    def dims(self, cfg: Any) -> tuple[str, ...]:
        """Names of the unit-cube dimensions this axis consumes (unprefixed)."""

    @abc.abstractmethod
    def realise(self, cfg: Any, unit: tuple[float, ...], earlier: Mapping[str, float]) -> dict[str, float]:
        """Realised parameters (unprefixed names, physical units) from the axis's unit-cube coordinates."""

    @abc.abstractmethod
    def apply(self, spec: mujoco.MjSpec, cfg: Any, params: Mapping[str, float]) -> None:
        """Edit ``spec`` from the realised parameters (unprefixed names)."""


AXES: dict[str, Axis] = {}

# -------------------------------------------------------------------------------------------- YAML loader


def _convert(value: Any, hint: Any, field: str) -> Any:
    origin = typing.get_origin(hint)
    if hint is bool:
        if not isinstance(value, bool):
            raise _fail(field, f"must be true or false, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail(field, f"must be an integer, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise _fail(field, f"must be a finite number, got {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise _fail(field, f"must be a string, got {value!r}")
        return value
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        allowed = [m.value for m in hint]
        if value not in allowed:
            raise _fail(field, f"unknown value {value!r} (allowed: {allowed})")
        return hint(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _build(hint, value, field)
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, list):
            raise _fail(field, f"must be a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(v, args[0], f"{field}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise _fail(field, f"must have {len(args)} values, got {len(value)}")
        return tuple(
            _convert(v, a, f"{field}[{i}]") for i, (v, a) in enumerate(zip(value, args, strict=True))
        )
    if origin in (types.UnionType, typing.Union):  # pragma: no cover - no optional fields yet
        raise _fail(field, "optional fields are not supported")
    raise TypeError(f"unsupported config type {hint!r} for {field}")  # pragma: no cover


def _build(cls: type, data: Any, path: str) -> Any:
    if not isinstance(data, Mapping):
        raise _fail(path, f"must be a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    allowed = [f.name for f in dataclasses.fields(cls) if f.init and f.name != "source"]
    unknown = sorted(set(map(str, data)) - set(allowed))
    if unknown:
        raise _fail(path, f"unknown field(s) {unknown} (allowed: {allowed})")
    kwargs = {k: _convert(v, hints[k], f"{path}.{k}") for k, v in data.items()}
    try:
        return cls(**kwargs)
    except VariationError as err:
        raise VariationError(f"{path}.{err}") from None


def load_variation_config(path: str | Path) -> VariationConfig:
    """Read and validate a variations YAML file.

    The top level maps axis names to their settings; an axis left out keeps its defaults, and a field left
    out keeps its default.

    Raises:
        VariationError: naming the file and the field at fault (unknown axis or field, a range with
            low > high, a negative count, a scale <= 0, ...).
    """
    path = Path(path)
    data = read_yaml(path, VariationError, kind="variations file").data
    return _variation_config(data, path, path.resolve())


def parse_variation_text(text: str, name: str = "variation_config") -> VariationConfig:
    """Parse and validate variation axes given as YAML text (a reset request's ``variation_config``).

    Raises:
        VariationError: "<name>: <field>: ..." naming the field at fault, or the YAML error.
    """
    return _variation_config(parse_yaml(text, name, VariationError), name, None)


def _variation_config(data: Any, where: object, source: Path | None) -> VariationConfig:
    path = where
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise VariationError(
            f"{path}: <top level>: must be a mapping of axis names, got {type(data).__name__}"
        )
    unknown = sorted(set(map(str, data)) - set(AXIS_NAMES))
    if unknown:
        raise VariationError(f"{path}: unknown variation axis {unknown} (axes: {list(AXIS_NAMES)})")
    hints = typing.get_type_hints(VariationConfig)
    try:
        axes = {name: _build(hints[name], section or {}, name) for name, section in data.items()}
    except VariationError as err:
        raise VariationError(f"{path}: {err}") from None
    return VariationConfig(**axes, source=source)


# ------------------------------------------------------------------------------- helpers for axis modules


def lerp(bounds: tuple[float, float], u: float) -> float:
    """Map ``u`` in [0, 1) onto ``[low, high]`` (``low`` exactly when the range is a point)."""
    lo, hi = bounds
    return lo + u * (hi - lo)


def symmetric(half_width: float, u: float) -> float:
    """Map ``u`` in [0, 1) onto ``[-half_width, half_width]``."""
    return (2.0 * u - 1.0) * half_width


def not_found(field: str, kind: str, name: str, have: list[str]) -> VariationError:
    """The error for a name in the config that the composed world lacks."""
    return VariationError(f"{field}: no {kind} {name!r} in the composed world ({kind}s: {sorted(have)})")
