"""Hardware profiles: the YAML a STAND-IN cell is built from (driver, camera, physics, scene, effects).

A profile is what :class:`~r2s2r_sim.hardware.emulated_arm.EmulatedArm` applies to a separate instance of a
world so that it differs from the simulation the way a real cell does; see
``docs/concepts/hardware-profiles.md``.  The camera pose is the ``<camera>_link`` frame (REP-103: x forward, y
left, z up) in the world, as ``position`` (m) and fixed-axis ``rpy`` (rad, ``R = Rz(yaw) Ry(pitch) Rx(roll)``,
ROS convention).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from r2s2r_sim.hardware.arm_effects import ArmEffects, read_arm_effects
from r2s2r_sim.hardware.contact_effects import ContactEffects, read_contacts
from r2s2r_sim.render.sensor_effects import SECTIONS, SensorEffects, read_sensor_sections
from r2s2r_sim.world.kinematics import mat_to_quat
from r2s2r_sim.yaml_files import read_yaml

__all__ = [
    "ENGINES",
    "CameraIntrinsics",
    "CameraProfile",
    "DriverProfile",
    "HardwareProfile",
    "HardwareProfileError",
    "JointDynamics",
    "LightProfile",
    "ObjectProfile",
    "PhysicsProfile",
    "PlumbBob",
    "Pose",
    "ServoGains",
    "load_hardware_profile",
]


class HardwareProfileError(ValueError):
    """A hardware profile is invalid or names something the world lacks.

    The message names the file and the field at fault, e.g.
    ``".../ideal_profile.yaml: physics.servos.elbw: no position actuator 'elbw' in the world (...)"``.
    """


@dataclass(frozen=True, kw_only=True)
class JointDynamics:
    """Passive joint parameters; ``None`` keeps the world's value.

    Attributes:
        damping: viscous damping (N·m·s/rad or N·s/m), >= 0.
        armature: reflected rotor inertia (kg·m² or kg), >= 0.
        frictionloss: dry friction (N·m or N), >= 0.
    """

    damping: float | None = None
    armature: float | None = None
    frictionloss: float | None = None


@dataclass(frozen=True, kw_only=True)
class ServoGains:
    """Position-servo gains: ``force = kp (ctrl - q) - kv qdot``; kp (N·m/rad) > 0, kv (N·m·s/rad) >= 0."""

    kp: float
    kv: float


@dataclass(frozen=True, kw_only=True)
class PhysicsProfile:
    """Physical parameters by MJCF name (robot names unprefixed, as in ``world.yaml``)."""

    body_masses_kg: Mapping[str, float] = field(default_factory=dict)
    geom_friction: Mapping[str, tuple[float, float, float]] = field(default_factory=dict)
    joints: Mapping[str, JointDynamics] = field(default_factory=dict)
    servos: Mapping[str, ServoGains] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class DriverProfile:
    """What the arm driver adds on top of the physics.

    Attributes:
        command_latency_s: delay (s) between a command's arrival and the servo setpoint changing, >= 0.
        joint_state_rate_hz: ``/joint_states`` rate (Hz, wall clock), the controller manager's update rate.
        position_noise_std_rad: white noise std of reported positions (rad or m), >= 0.
        velocity_noise_std_rad_s: white noise std of reported velocities (rad/s or m/s), >= 0.
    """

    command_latency_s: float
    joint_state_rate_hz: float
    position_noise_std_rad: float
    velocity_noise_std_rad_s: float


@dataclass(frozen=True, kw_only=True)
class CameraIntrinsics:
    """Pinhole intrinsics (px), OpenCV convention (pixel centres at integer coordinates)."""

    fx: float
    fy: float
    cx: float
    cy: float

    def k(self) -> np.ndarray:
        """The 3x3 camera matrix."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])


@dataclass(frozen=True, kw_only=True)
class PlumbBob:
    """Brown-Conrady (ROS ``plumb_bob``) lens distortion coefficients, in OpenCV's order."""

    k1: float
    k2: float
    p1: float
    p2: float
    k3: float

    def d(self) -> np.ndarray:
        """``D = [k1, k2, p1, p2, k3]`` as published in ``CameraInfo``."""
        return np.array([self.k1, self.k2, self.p1, self.p2, self.k3])


@dataclass(frozen=True, kw_only=True)
class Pose:
    """A pose in the world frame: ``position`` (m) and fixed-axis ``rpy`` (rad, ROS convention)."""

    position: tuple[float, float, float]
    rpy: tuple[float, float, float]

    def matrix(self) -> np.ndarray:
        """Rotation matrix ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
        r, p, y = self.rpy
        cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
        rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
        ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
        rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
        return rz @ ry @ rx

    def quat(self) -> np.ndarray:
        """The orientation as a wxyz quaternion."""
        return mat_to_quat(self.matrix())


@dataclass(frozen=True, kw_only=True)
class CameraProfile:
    """The RGB-D camera as the driver presents it (colour stream; depth is aligned to it).

    Attributes:
        name: ROS camera name of a ``cameras`` entry in ``world.yaml`` (topics ``/<name>/...``).
        width, height: image size (px).
        rate_hz: frame rate (Hz, wall clock).
        intrinsics: the published ``K``.
        distortion: the published ``D`` (plumb_bob); the images are distorted accordingly.
        pose: the ``<name>_link`` frame in the world (the calibrated extrinsics).
    """

    name: str
    width: int
    height: int
    rate_hz: float
    intrinsics: CameraIntrinsics
    distortion: PlumbBob
    pose: Pose


@dataclass(frozen=True, kw_only=True)
class ObjectProfile:
    """A scene body: its pose (``None`` keeps the MJCF one) and the sizes of its geoms (MJCF ``size``, m)."""

    pose: Pose | None = None
    geom_sizes: Mapping[str, tuple[float, ...]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class LightProfile:
    """A light: position (m), direction and diffuse colour; ``None`` keeps the MJCF value."""

    position: tuple[float, float, float] | None = None
    direction: tuple[float, float, float] | None = None
    diffuse: tuple[float, float, float] | None = None


@dataclass(frozen=True, kw_only=True)
class HardwareProfile:
    """Everything that makes the emulated cell differ from the sim world (see ``load_hardware_profile``).

    Attributes:
        source: the YAML file it was read from.
        name: free-text id of the emulated unit.
        world: id of the world the profile was written for (checked when an :class:`EmulatedArm` is built).
        sha256: hash of the file's bytes (provenance).
        engine: what simulates and renders the unit: ``mujoco`` (a second MuJoCo instance) or ``pybullet``
            (Bullet, ``r2s2r_sim.hardware.bullet_unit``; a reality the sim side does not share).
    """

    source: Path
    name: str
    world: str
    sha256: str
    driver: DriverProfile
    camera: CameraProfile
    physics: PhysicsProfile = field(default_factory=PhysicsProfile)
    objects: Mapping[str, ObjectProfile] = field(default_factory=dict)
    lights: Mapping[str, LightProfile] = field(default_factory=dict)
    sensors: SensorEffects = field(default_factory=SensorEffects)
    arm: ArmEffects = field(default_factory=ArmEffects)
    contacts: ContactEffects = field(default_factory=ContactEffects)
    variants: Mapping[str, HardwareProfile] = field(default_factory=dict)
    engine: str = "mujoco"

    def for_world(self, world_id: str) -> HardwareProfile:
        """The profile as it applies to ``world_id``: its ``worlds.<world_id>`` variant where it has one.

        One unit serves several task worlds (the same arm, driver and camera; other objects on the
        table), so a profile states the unit once and, per world, what that world's scene differs in.
        A world with no variant gets this profile unchanged (and :class:`EmulatedArm` refuses it unless
        it is ``world``).
        """
        return self.variants.get(world_id, self)

    @property
    def worlds(self) -> tuple[str, ...]:
        """Every world the profile is written for: ``world`` and those of its ``worlds`` section."""
        return (self.world, *self.variants)


class _Reader:
    """Typed field access with errors naming the file and the field."""

    def __init__(self, source: Path, where: str = "") -> None:
        self.source = source
        self.where = where  # e.g. " (worlds.tabletop-push-v1)": the fields are a world's variant

    def fail(self, fld: str, msg: str) -> HardwareProfileError:
        return HardwareProfileError(f"{self.source}{self.where}: {fld}: {msg}")

    def mapping(self, value: Any, fld: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(fld, f"must be a mapping, got {type(value).__name__} {value!r}")
        return value

    def only(
        self,
        data: Mapping[str, Any],
        allowed: set[str],
        fld: str,
        required: frozenset[str] | set[str] = frozenset(),
    ) -> None:
        unknown = sorted(set(map(str, data)) - allowed)
        if unknown:
            raise self.fail(fld, f"unknown key(s) {unknown} (allowed: {sorted(allowed)})")
        for key in sorted(required):
            if key not in data or data[key] is None:
                raise self.fail(f"{fld}.{key}" if fld else key, "required field is missing")

    def number(
        self, value: Any, fld: str, low: float = -math.inf, high: float = math.inf, *, low_open: bool = False
    ) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self.fail(fld, f"must be a finite number, got {value!r}")
        v = float(value)
        if v < low or v > high or (low_open and v == low):
            bracket = "(" if low_open else "["
            raise self.fail(fld, f"must be in {bracket}{low}, {high}], got {v}")
        return v

    def integer(self, value: Any, fld: str, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.fail(fld, f"must be an integer in [{low}, {high}], got {value!r}")
        return int(value)

    def string(self, value: Any, fld: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(fld, f"must be a non-empty string, got {value!r}")
        return value

    def vector(
        self, value: Any, fld: str, n: int | tuple[int, int], low: float = -math.inf
    ) -> tuple[float, ...]:
        lo_n, hi_n = (n, n) if isinstance(n, int) else n
        if not isinstance(value, list | tuple) or not lo_n <= len(value) <= hi_n:
            want = f"{lo_n}" if lo_n == hi_n else f"{lo_n} to {hi_n}"
            raise self.fail(fld, f"must be a list of {want} numbers, got {value!r}")
        return tuple(self.number(v, f"{fld}[{i}]", low) for i, v in enumerate(value))

    def pose(self, value: Any, fld: str) -> Pose:
        data = self.mapping(value, fld)
        self.only(data, {"position", "rpy"}, fld, {"position", "rpy"})
        pos = self.vector(data["position"], f"{fld}.position", 3)
        rpy = self.vector(data["rpy"], f"{fld}.rpy", 3)
        return Pose(position=(pos[0], pos[1], pos[2]), rpy=(rpy[0], rpy[1], rpy[2]))


def load_hardware_profile(path: str | Path) -> HardwareProfile:
    """Read and validate a hardware profile YAML file.

    Layout (see ``config/emulated_hardware/ideal_profile.yaml``): ``name``, ``world``, ``driver``
    (``command_latency_s``, ``joint_state_rate_hz``, ``joint_state_noise: {position_std_rad,
    velocity_std_rad_s}``) and ``camera`` (``name``, ``width``, ``height``, ``rate_hz``,
    ``intrinsics: {fx, fy, cx, cy}``, ``distortion: {model: plumb_bob, k1, k2, p1, p2, k3}``,
    ``pose: {position, rpy}``) are
    required; ``physics`` (``body_masses_kg``, ``geom_friction``, ``joints: {name: {damping, armature,
    frictionloss}}``, ``servos: {actuator: {kp, kv}}``), ``objects`` (``{body: {pose, geom_sizes}}``) and
    ``lights`` (``{light: {position, direction, diffuse}}``) are optional.
    ``worlds`` (``{world id: {dotted section path: value}}``, e.g. ``objects`` or
    ``physics.geom_friction``) adds a variant per further world, each entry replacing that section; see
    :meth:`HardwareProfile.for_world`.

    Raises:
        HardwareProfileError: naming the file and field (missing file, too big, bad YAML, unknown or missing
            keys, out-of-range values).
    """
    source = Path(path)
    doc = read_yaml(source, HardwareProfileError, kind="hardware profile file")
    sha256 = hashlib.sha256(doc.raw).hexdigest()
    r = _Reader(source)
    top = dict(r.mapping(doc.data, "<top level>"))
    r.only(top, _TOP_KEYS | {"worlds"}, "", {"name", "world", "driver", "camera"})
    worlds = r.mapping(top.pop("worlds", None) or {}, "worlds")
    variants = {}
    for world_id, overlay in worlds.items():
        fld = f"worlds.{world_id}"
        merged = _overlay(r, top, r.mapping(overlay, fld), fld)
        merged["world"] = str(world_id)
        variants[str(world_id)] = _read_profile(_Reader(source, f" ({fld})"), merged, sha256)
    return dataclasses.replace(_read_profile(r, top, sha256), variants=MappingProxyType(variants))


ENGINES = ("mujoco", "pybullet")
"""The engines a profile's ``engine`` may name (default ``mujoco``)."""

_TOP_KEYS = {"name", "world", "driver", "camera", "physics", "objects", "lights", "arm_effects", "contacts"}
_TOP_KEYS |= SECTIONS | {"engine"}


def _overlay(r: _Reader, top: Mapping[str, Any], overlay: Mapping[str, Any], fld: str) -> dict[str, Any]:
    """``top`` with each ``overlay`` entry (a dotted path) replaced by its value, or removed where null.

    Paths name a section or a part of one: ``objects``, ``physics.geom_friction.puck_geom``.

    Replacing whole entries (never merging into them) lets a world's variant drop what its scene lacks,
    e.g. the pick world's ``bin`` with the rest of ``objects``.
    """
    merged = copy.deepcopy(dict(top))
    for key, value in overlay.items():
        parts = str(key).split(".")
        if parts[0] not in _TOP_KEYS - {"name", "world", "engine"}:
            raise r.fail(f"{fld}.{key}", f"not a section a world may replace (sections: {sorted(_TOP_KEYS)})")
        node = merged
        for part in parts[:-1]:
            child = node.get(part)
            node[part] = child = dict(child) if isinstance(child, Mapping) else {}
            node = child
        if value is None:
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = copy.deepcopy(value)
    return merged


def _read_profile(r: _Reader, top: Mapping[str, Any], sha256: str) -> HardwareProfile:
    return HardwareProfile(
        source=r.source,
        name=r.string(top["name"], "name"),
        world=r.string(top["world"], "world"),
        sha256=sha256,
        driver=_read_driver(r, top["driver"]),
        camera=_read_camera(r, top["camera"]),
        physics=_read_physics(r, top.get("physics") or {}),
        objects=_read_objects(r, top.get("objects") or {}),
        lights=_read_lights(r, top.get("lights") or {}),
        sensors=read_sensor_sections(r, top),
        arm=read_arm_effects(r, top),
        contacts=read_contacts(r, top),
        engine=_read_engine(r, top.get("engine", "mujoco")),
    )


def _read_engine(r: _Reader, value: Any) -> str:
    engine = r.string(value, "engine")
    if engine not in ENGINES:
        raise r.fail("engine", f"unknown engine {engine!r} (engines: {list(ENGINES)})")
    return engine


def _read_driver(r: _Reader, value: Any) -> DriverProfile:
    data = r.mapping(value, "driver")
    r.only(
        data,
        {"command_latency_s", "joint_state_rate_hz", "joint_state_noise"},
        "driver",
        {"command_latency_s", "joint_state_rate_hz", "joint_state_noise"},
    )
    noise = r.mapping(data["joint_state_noise"], "driver.joint_state_noise")
    r.only(
        noise,
        {"position_std_rad", "velocity_std_rad_s"},
        "driver.joint_state_noise",
        {"position_std_rad", "velocity_std_rad_s"},
    )
    return DriverProfile(
        command_latency_s=r.number(data["command_latency_s"], "driver.command_latency_s", 0.0, 5.0),
        joint_state_rate_hz=r.number(data["joint_state_rate_hz"], "driver.joint_state_rate_hz", 1.0, 1000.0),
        position_noise_std_rad=r.number(
            noise["position_std_rad"], "driver.joint_state_noise.position_std_rad", 0.0, 1.0
        ),
        velocity_noise_std_rad_s=r.number(
            noise["velocity_std_rad_s"], "driver.joint_state_noise.velocity_std_rad_s", 0.0, 10.0
        ),
    )


def _read_camera(r: _Reader, value: Any) -> CameraProfile:
    data = r.mapping(value, "camera")
    keys = {"name", "width", "height", "rate_hz", "intrinsics", "distortion", "pose"}
    r.only(data, keys, "camera", keys)
    width = r.integer(data["width"], "camera.width", 16, 4096)
    height = r.integer(data["height"], "camera.height", 16, 4096)
    intr = r.mapping(data["intrinsics"], "camera.intrinsics")
    r.only(intr, {"fx", "fy", "cx", "cy"}, "camera.intrinsics", {"fx", "fy", "cx", "cy"})
    dist = r.mapping(data["distortion"], "camera.distortion")
    coeffs = {"k1", "k2", "p1", "p2", "k3"}
    r.only(dist, coeffs | {"model"}, "camera.distortion", coeffs | {"model"})
    if dist["model"] != "plumb_bob":
        raise r.fail("camera.distortion.model", f"must be 'plumb_bob', got {dist['model']!r}")
    intrinsics = CameraIntrinsics(
        fx=r.number(intr["fx"], "camera.intrinsics.fx", 0.0, 1e5, low_open=True),
        fy=r.number(intr["fy"], "camera.intrinsics.fy", 0.0, 1e5, low_open=True),
        cx=r.number(intr["cx"], "camera.intrinsics.cx", 0.0, width - 1.0),
        cy=r.number(intr["cy"], "camera.intrinsics.cy", 0.0, height - 1.0),
    )
    distortion = PlumbBob(
        **{k: r.number(dist[k], f"camera.distortion.{k}", -10.0, 10.0) for k in sorted(coeffs)}
    )
    return CameraProfile(
        name=r.string(data["name"], "camera.name"),
        width=width,
        height=height,
        rate_hz=r.number(data["rate_hz"], "camera.rate_hz", 0.0, 120.0, low_open=True),
        intrinsics=intrinsics,
        distortion=distortion,
        pose=r.pose(data["pose"], "camera.pose"),
    )


def _read_physics(r: _Reader, value: Any) -> PhysicsProfile:
    data = r.mapping(value, "physics")
    r.only(data, {"body_masses_kg", "geom_friction", "joints", "servos"}, "physics")
    masses = {
        str(k): r.number(v, f"physics.body_masses_kg.{k}", 0.0, 1e4, low_open=True)
        for k, v in r.mapping(data.get("body_masses_kg") or {}, "physics.body_masses_kg").items()
    }
    friction: dict[str, tuple[float, float, float]] = {}
    for k, v in r.mapping(data.get("geom_friction") or {}, "physics.geom_friction").items():
        f = r.vector(v, f"physics.geom_friction.{k}", 3, low=0.0)
        friction[str(k)] = (f[0], f[1], f[2])
    joints: dict[str, JointDynamics] = {}
    for k, v in r.mapping(data.get("joints") or {}, "physics.joints").items():
        fld = f"physics.joints.{k}"
        j = r.mapping(v, fld)
        r.only(j, {"damping", "armature", "frictionloss"}, fld)
        joints[str(k)] = JointDynamics(
            **{key: r.number(j[key], f"{fld}.{key}", 0.0, 1e4) for key in j if j[key] is not None}
        )
    servos: dict[str, ServoGains] = {}
    for k, v in r.mapping(data.get("servos") or {}, "physics.servos").items():
        fld = f"physics.servos.{k}"
        s = r.mapping(v, fld)
        r.only(s, {"kp", "kv"}, fld, {"kp", "kv"})
        servos[str(k)] = ServoGains(
            kp=r.number(s["kp"], f"{fld}.kp", 0.0, 1e7, low_open=True),
            kv=r.number(s["kv"], f"{fld}.kv", 0.0, 1e6),
        )
    return PhysicsProfile(
        body_masses_kg=MappingProxyType(masses),
        geom_friction=MappingProxyType(friction),
        joints=MappingProxyType(joints),
        servos=MappingProxyType(servos),
    )


def _read_objects(r: _Reader, value: Any) -> Mapping[str, ObjectProfile]:
    out: dict[str, ObjectProfile] = {}
    for k, v in r.mapping(value, "objects").items():
        fld = f"objects.{k}"
        o = r.mapping(v, fld)
        r.only(o, {"pose", "geom_sizes"}, fld)
        sizes = {
            str(g): r.vector(s, f"{fld}.geom_sizes.{g}", (1, 3), low=0.0)
            for g, s in r.mapping(o.get("geom_sizes") or {}, f"{fld}.geom_sizes").items()
        }
        pose = r.pose(o["pose"], f"{fld}.pose") if o.get("pose") is not None else None
        out[str(k)] = ObjectProfile(pose=pose, geom_sizes=MappingProxyType(sizes))
    return MappingProxyType(out)


def _read_lights(r: _Reader, value: Any) -> Mapping[str, LightProfile]:
    out: dict[str, LightProfile] = {}
    for k, v in r.mapping(value, "lights").items():
        fld = f"lights.{k}"
        li = r.mapping(v, fld)
        r.only(li, {"position", "direction", "diffuse"}, fld)

        def vec3(key: str, low: float = -math.inf, fld: str = fld, li: Mapping[str, Any] = li) -> Any:
            if li.get(key) is None:
                return None
            x = r.vector(li[key], f"{fld}.{key}", 3, low)
            return (x[0], x[1], x[2])

        direction = vec3("direction")
        if direction is not None and np.linalg.norm(direction) < 1e-9:
            raise r.fail(f"{fld}.direction", "must not be the zero vector")
        out[str(k)] = LightProfile(
            position=vec3("position"), direction=direction, diffuse=vec3("diffuse", 0.0)
        )
    return MappingProxyType(out)
