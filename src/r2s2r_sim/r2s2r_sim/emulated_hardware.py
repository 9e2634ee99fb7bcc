"""Emulated hardware: a STAND-IN for a real arm driver plus a RealSense camera, built from a hardware profile.

Nothing here is a robot.  :class:`EmulatedArm` is a second, separate MuJoCo instance of a world whose
physics, camera and scene are edited (through ``SimWorld``'s ``spec_editor``) to the values of a
:class:`HardwareProfile` YAML file, so that the sim side (which never reads that file) and the "hardware"
side differ the way a real cell differs from its simulation.  On top of the physics it emulates what a
driver adds: command latency (``SimWorld``'s command delay set to the profile's), joint-state noise
(seeded) and a camera with lens distortion (plumb_bob) whose ``CameraInfo`` carries the profile's ``K``
and ``D``.

**Lens distortion method.**  MuJoCo renders ideal pinhole images with square pixels and a centred principal
point.  For the profile's ``(K, D)`` at ``width x height`` we:

1. undistort every output pixel centre with ``cv2.undistortPoints`` (the iterative inverse of the
   plumb_bob model, run to 1e-10) to get its normalized ray ``(x, y)`` — i.e. the inverse of the maps that
   ``cv2.initUndistortRectifyMap`` builds (that function maps *undistorted* pixels to *distorted* ones;
   rendering needs the opposite direction);
2. render a pinhole image with focal length ``f = max(fx, fy)`` (no loss of resolution at the centre) and
   a size just large enough to contain every ray of step 1 (so no black border appears for barrel
   distortion); the MJCF camera's ``fovy`` and the offscreen buffer are set accordingly;
3. ``cv2.remap`` the render through ``map = f * (x, y) + c_render``: bilinear for colour, nearest-neighbour
   for depth (z-depth along the optical axis is unchanged by the intrinsics, so depth stays aligned to
   colour and never mixes foreground and background values).

A point ``P`` in the optical frame therefore lands at ``cv2.projectPoints(P, K, D)`` in the published
image, to the accuracy of the render (tested within 1 px).

The profile's camera pose is the ``<camera>_link`` frame (REP-103: x forward, y left, z up) in the world,
as ``position`` (m) and fixed-axis ``rpy`` (rad, ``R = Rz(yaw) Ry(pitch) Rx(roll)``, ROS convention).
"""

from __future__ import annotations

import os

# MuJoCo picks its GL backend when first imported; headless EGL is the only one that works here.
os.environ.setdefault("MUJOCO_GL", "egl")

import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
from collections import deque  # noqa: E402
from collections.abc import Callable, Mapping, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from types import MappingProxyType, TracebackType  # noqa: E402
from typing import Any  # noqa: E402

import cv2  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402

from r2s2r_sim.arm_effects import ArmEffects, ArmEffectsState, edit_spec, read_arm_effects  # noqa: E402
from r2s2r_sim.contact_effects import ContactEffects, apply_contacts, read_contacts  # noqa: E402
from r2s2r_sim.rendering import RgbdRenderer, camera_intrinsics, depth_to_uint16_mm  # noqa: E402
from r2s2r_sim.sensor_effects import SECTIONS, SensorEffects, SensorState, read_sensor_sections  # noqa: E402
from r2s2r_sim.task import ObjectPose, Outcome  # noqa: E402
from r2s2r_sim.variations.physics import _is_position_servo  # noqa: E402
from r2s2r_sim.world import CommandCheck, SimWorld  # noqa: E402
from r2s2r_sim.world_config import load_world_config  # noqa: E402
from r2s2r_sim.worlds import world_path  # noqa: E402

__all__ = [
    "STAND_IN_BANNER",
    "CameraIntrinsics",
    "CameraProfile",
    "DistortedRgbdCamera",
    "DriverProfile",
    "EmulatedArm",
    "HardwareProfile",
    "HardwareProfileError",
    "JointDynamics",
    "LightProfile",
    "ObjectProfile",
    "PhysicsProfile",
    "PlumbBob",
    "Pose",
    "ServoGains",
    "distortion_maps",
    "load_hardware_profile",
    "render_geometry",
]

STAND_IN_BANNER = "EMULATED HARDWARE (stand-in for a real arm driver + RealSense; not a robot)"

# A profile is a small hand-written file; anything bigger is not one.
_MAX_FILE_BYTES = 1 << 20
# Rotation of the optical frame (z forward, x right, y down) in the camera link frame (x fwd, y left, z up).
_LINK_TO_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
# MuJoCo cameras look along -z with y up: the optical frame rotated 180 deg about x.
_OPTICAL_TO_MJCAM = np.diag([1.0, -1.0, -1.0])


class HardwareProfileError(ValueError):
    """A hardware profile is invalid or names something the world lacks.

    The message names the file and the field at fault, e.g.
    ``".../ideal_profile.yaml: physics.servos.elbw: no position actuator 'elbw' in the world (...)"``.
    """


# --------------------------------------------------------------------------------------------- profile


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
        return _mat_to_quat(self.matrix())


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


class _Reader:
    """Typed field access with errors naming the file and the field."""

    def __init__(self, source: Path) -> None:
        self.source = source

    def fail(self, fld: str, msg: str) -> HardwareProfileError:
        return HardwareProfileError(f"{self.source}: {fld}: {msg}")

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

    Raises:
        HardwareProfileError: naming the file and field (missing file, too big, bad YAML, unknown or missing
            keys, out-of-range values).
    """
    source = Path(path)
    if not source.is_file():
        raise HardwareProfileError(f"{source}: hardware profile file not found")
    size = source.stat().st_size
    if size > _MAX_FILE_BYTES:
        raise HardwareProfileError(f"{source}: file is {size} bytes, more than the {_MAX_FILE_BYTES} allowed")
    raw_bytes = source.read_bytes()
    try:
        raw = yaml.safe_load(raw_bytes.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise HardwareProfileError(f"{source}: not valid YAML: {err}") from err
    r = _Reader(source)
    top = r.mapping(raw, "<top level>")
    r.only(
        top,
        {"name", "world", "driver", "camera", "physics", "objects", "lights", "arm_effects", "contacts"} | SECTIONS,
        "",
        {"name", "world", "driver", "camera"},
    )
    return HardwareProfile(
        source=source,
        name=r.string(top["name"], "name"),
        world=r.string(top["world"], "world"),
        sha256=hashlib.sha256(raw_bytes).hexdigest(),
        driver=_read_driver(r, top["driver"]),
        camera=_read_camera(r, top["camera"]),
        physics=_read_physics(r, top.get("physics") or {}),
        objects=_read_objects(r, top.get("objects") or {}),
        lights=_read_lights(r, top.get("lights") or {}),
        sensors=read_sensor_sections(r, top),
        arm=read_arm_effects(r, top),
        contacts=read_contacts(r, top),
    )


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


# ------------------------------------------------------------------------------------------- camera


def _mat_to_quat(mat: np.ndarray) -> np.ndarray:
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(mat, dtype=np.float64).reshape(9))
    return quat


def _undistorted_rays(k: np.ndarray, d: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Normalized rays ``(x, y)`` (each ``height x width``) of every distorted pixel centre."""
    u, v = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    pts = np.stack([u.ravel(), v.ravel()], axis=1).reshape(-1, 1, 2)
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-10)
    rays = cv2.undistortPoints(pts, k, d, None, None, None, criteria).reshape(height, width, 2)
    return rays[..., 0], rays[..., 1]


def render_geometry(camera: CameraProfile) -> tuple[int, int, float]:
    """Size ``(W, H)`` (px) and focal length ``f`` (px) of the pinhole render that the distortion resamples.

    ``f = max(fx, fy)``; ``W``, ``H`` are even and just contain every undistorted ray of the output image
    (plus a 2 px margin for interpolation).
    """
    k, d = camera.intrinsics.k(), camera.distortion.d()
    x, y = _undistorted_rays(k, d, camera.width, camera.height)
    f = max(camera.intrinsics.fx, camera.intrinsics.fy)
    width = 2 * math.ceil(f * float(np.max(np.abs(x))) + 2.0)
    height = 2 * math.ceil(f * float(np.max(np.abs(y))) + 2.0)
    return width, height, f


def distortion_maps(camera: CameraProfile, render_k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``cv2.remap`` maps from the pinhole render (intrinsics ``render_k``) to the distorted image.

    Returns:
        ``map_x``, ``map_y``: float32 ``height x width``; output pixel ``(u, v)`` samples the render at
        ``(map_x[v, u], map_y[v, u])``.
    """
    x, y = _undistorted_rays(camera.intrinsics.k(), camera.distortion.d(), camera.width, camera.height)
    map_x = render_k[0, 0] * x + render_k[0, 2]
    map_y = render_k[1, 1] * y + render_k[1, 2]
    return map_x.astype(np.float32), map_y.astype(np.float32)


class DistortedRgbdCamera:
    """Renders one MJCF camera as a distorted RGB-D image with the profile's ``K``, ``D``; a context manager.

    Example:
        with arm.camera_renderer() as cam:
            rgb, depth_mm = cam.render(data)
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        mjcf_camera: str,
        camera: CameraProfile,
        depth_range: tuple[float, float],
        *,
        sensors: SensorEffects | None = None,
        episode_seed: Callable[[], int] | None = None,
        history: Callable[[mujoco.MjData], np.ndarray | None] | None = None,
    ) -> None:
        """Compute the remap tables; the GL context is made in ``__enter__``.

        ``sensors`` adds the profile's sensor effects (noise, holes, drift) to every frame; their random
        draws follow ``episode_seed()`` (the cell's current episode) and the frame's index in it.
        ``history(data)`` gives the ``qpos`` at the start of the exposure when ``data`` is the cell's live
        state (motion blur); a frame rendered from a snapshot passes it to :meth:`render` instead.

        Raises:
            WorldError: the model's offscreen buffer is smaller than the render (see ``render_geometry``).
        """
        self.camera = camera
        self.mjcf_camera = mjcf_camera
        self.depth_range = depth_range
        width, height, _ = render_geometry(camera)
        self.render_size = (width, height)
        self.render_k = camera_intrinsics(model, mjcf_camera, width, height)
        self.map_x, self.map_y = distortion_maps(camera, self.render_k)
        self._renderer = RgbdRenderer(model, width, height)
        self._sensor = (
            None
            if sensors is None or sensors.ideal
            else SensorState(sensors, (camera.height, camera.width), camera.intrinsics.fx, camera.intrinsics.k())
        )
        self._episode_seed = episode_seed
        self._history = history
        self._scratch = mujoco.MjData(model)
        self._model = model
        self.dropped = False  # the last rendered frame is lost by the driver (never published)
        self.stamp_offset_s = 0.0  # to add to the last frame's ideal stamp (driver timestamp jitter)

    def __enter__(self) -> DistortedRgbdCamera:
        """Create the renderer's GL context."""
        self._renderer.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Free the GL context."""
        self._renderer.close()

    def render(
        self, data: mujoco.MjData, *, motion_from: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Distorted ``rgb`` (uint8 HxWx3) and aligned ``depth`` (uint16 mm, 0 = no data) of ``data``.

        ``motion_from``: ``qpos`` at the start of the exposure, for motion blur (the profile's colour
        sensor decides whether there is any); by default looked up in the cell's history.

        Raises:
            RenderError: outside the with-block.
        """
        rgb, depth = self._renderer.render(data, self.mjcf_camera, depth_range=self.depth_range)
        color = self._sensor.effects.color if self._sensor is not None else None
        if color is not None and color.blurs:
            if motion_from is None and self._history is not None:
                motion_from = self._history(data)
            if motion_from is not None and np.any(motion_from != data.qpos):
                rgb = self._blurred(data, motion_from, rgb, color.motion_blur_samples)
        out_rgb = cv2.remap(
            rgb, self.map_x, self.map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0
        )
        out_depth = cv2.remap(
            depth, self.map_x, self.map_y, cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT, borderValue=0
        )
        if self._sensor is not None:
            seed = self._episode_seed() if self._episode_seed is not None else 0
            if seed != self._sensor.seed:
                self._sensor.start_episode(seed)
            rng = self._sensor.next_frame()
            self.dropped = self._sensor.drop(rng)
            self.stamp_offset_s = self._sensor.stamp_offset(rng)
            out_rgb = self._sensor.color(out_rgb, rng)
            out_depth = self._sensor.depth(out_depth, rng)
        return out_rgb, depth_to_uint16_mm(out_depth)

    def _blurred(self, data: mujoco.MjData, start: np.ndarray, end_rgb: np.ndarray, samples: int) -> np.ndarray:
        """The colour image averaged over ``samples`` states from ``start`` to ``data`` (the exposure).

        Depth is left sharp: the depth imagers' global shutter exposes for a fraction of a millisecond.
        """
        scratch, model = self._scratch, self._model
        scratch.mocap_pos[:] = data.mocap_pos
        scratch.mocap_quat[:] = data.mocap_quat
        total = end_rgb.astype(np.float64)
        for k in range(samples - 1):
            alpha = k / (samples - 1)
            scratch.qpos[:] = start + alpha * (data.qpos - start)
            mujoco.mj_normalizeQuat(model, scratch.qpos)
            mujoco.mj_kinematics(model, scratch)
            mujoco.mj_camlight(model, scratch)
            rgb, _ = self._renderer.render(scratch, self.mjcf_camera, depth_range=self.depth_range)
            total += rgb
        return np.clip(np.rint(total / samples), 0, 255).astype(np.uint8)


# ---------------------------------------------------------------------------------------- the arm


class _ProfileEditor:
    """The ``spec_editor`` that applies a profile to a composed ``MjSpec`` (robot names unprefixed)."""

    def __init__(
        self,
        profile: HardwareProfile,
        prefix: str,
        base_masses: Mapping[str, float],
        mjcf_camera: str,
        render: tuple[int, int, float],
    ) -> None:
        self.p = profile
        self.prefix = prefix
        self.base_masses = base_masses
        self.mjcf_camera = mjcf_camera
        self.render = render

    def _fail(self, fld: str, kind: str, name: str, have: Sequence[Any]) -> HardwareProfileError:
        names = sorted({getattr(h, "name", "") for h in have} - {""})
        return HardwareProfileError(
            f"{self.p.source}: {fld}: no {kind} {name!r} in world {self.p.world!r} ({kind}s: {names})"
        )

    def _get(self, getter: Callable[[str], Any], name: str) -> Any:
        found = getter(name)
        if found is None and self.prefix:
            found = getter(self.prefix + name)
        return found

    def __call__(self, spec: mujoco.MjSpec) -> None:
        phys = self.p.physics
        edit_spec(
            spec, self.p.arm, lambda n: self._get(spec.joint, n),
            lambda fld, msg: HardwareProfileError(f"{self.p.source}: {fld}: {msg}"),
        )
        for name, mass in phys.body_masses_kg.items():
            body = self._get(spec.body, name)
            if body is None:
                raise self._fail(f"physics.body_masses_kg.{name}", "body", name, spec.bodies)
            scale = mass / self.base_masses[name]
            if body.explicitinertial:
                body.mass = mass
                body.inertia = np.array(body.inertia, dtype=np.float64) * scale
            for geom in body.geoms:  # the same rule as the variation engine's mass axis
                if math.isnan(geom.mass):
                    geom.density = geom.density * scale
                else:
                    geom.mass = geom.mass * scale
        for name, friction in phys.geom_friction.items():
            geom = self._get(spec.geom, name)
            if geom is None:
                raise self._fail(f"physics.geom_friction.{name}", "geom", name, spec.geoms)
            geom.friction = np.array(friction, dtype=np.float64)
        for name, dyn in phys.joints.items():
            joint = self._get(spec.joint, name)
            if joint is None:
                raise self._fail(f"physics.joints.{name}", "joint", name, spec.joints)
            if dyn.damping is not None:
                damping = np.array(joint.damping, dtype=np.float64).reshape(-1)
                damping[0] = dyn.damping
                joint.damping = damping if damping.size > 1 else float(damping[0])
            if dyn.armature is not None:
                joint.armature = dyn.armature
            if dyn.frictionloss is not None:
                joint.frictionloss = dyn.frictionloss
        for name, gains in phys.servos.items():
            act = self._get(spec.actuator, name)
            if act is None or not _is_position_servo(act):
                servos = [a for a in spec.actuators if _is_position_servo(a)]
                raise self._fail(f"physics.servos.{name}", "position actuator", name, servos)
            gain = np.array(act.gainprm, dtype=np.float64)
            bias = np.array(act.biasprm, dtype=np.float64)
            gain[0], bias[1], bias[2] = gains.kp, -gains.kp, -gains.kv
            act.gainprm, act.biasprm = gain, bias
        for name, obj in self.p.objects.items():
            body = self._get(spec.body, name)
            if body is None:
                raise self._fail(f"objects.{name}", "body", name, spec.bodies)
            if obj.pose is not None:
                body.pos = np.array(obj.pose.position, dtype=np.float64)
                body.alt.type = mujoco.mjtOrientation.mjORIENTATION_QUAT
                body.quat = obj.pose.quat()
            for gname, size in obj.geom_sizes.items():
                geom = next((g for g in body.geoms if g.name in (gname, self.prefix + gname)), None)
                if geom is None:
                    raise self._fail(f"objects.{name}.geom_sizes.{gname}", "geom", gname, body.geoms)
                new = np.array(geom.size, dtype=np.float64)
                new[: len(size)] = size
                geom.size = new
        apply_contacts(
            spec, self.p.contacts, self._get, lambda fld, msg: HardwareProfileError(f"{self.p.source}: {fld}: {msg}")
        )
        for name, light in self.p.lights.items():
            spec_light = self._get(spec.light, name)
            if spec_light is None:
                raise self._fail(f"lights.{name}", "light", name, spec.lights)
            if light.position is not None:
                spec_light.pos = np.array(light.position, dtype=np.float64)
            if light.direction is not None:
                spec_light.dir = np.array(light.direction, dtype=np.float64)
            if light.diffuse is not None:
                spec_light.diffuse = np.array(light.diffuse, dtype=np.float64)
        self._camera(spec)

    def _camera(self, spec: mujoco.MjSpec) -> None:
        cam = self._get(spec.camera, self.mjcf_camera)
        if cam is None:
            raise self._fail("camera.name", "camera", self.mjcf_camera, spec.cameras)
        pose = self.p.camera.pose
        # MuJoCo camera axes in the world: link -> optical -> MuJoCo (-z forward, y up).
        rot = pose.matrix() @ _LINK_TO_OPTICAL @ _OPTICAL_TO_MJCAM
        cam.pos = np.array(pose.position, dtype=np.float64)
        cam.alt.type = mujoco.mjtOrientation.mjORIENTATION_QUAT
        cam.quat = _mat_to_quat(rot)
        if cam.parent is not None and cam.parent.name not in ("world", ""):
            raise HardwareProfileError(
                f"{self.p.source}: camera.pose: camera {self.mjcf_camera!r} is mounted on body "
                f"{cam.parent.name!r}; only fixed world cameras are supported"
            )
        width, height, f = self.render
        cam.fovy = math.degrees(2.0 * math.atan((height / 2.0) / f))
        glob = spec.visual.global_
        glob.offwidth = max(int(glob.offwidth), width)
        glob.offheight = max(int(glob.offheight), height)


class EmulatedArm:
    """STAND-IN for a real arm + RealSense: a separate MuJoCo world with a hardware profile applied.

    Not thread safe: the node serialises calls with one lock.  Time (``clock``, s) is the emulator's own
    physics time since construction; it never goes back, not even at :meth:`reset`.  Commands are validated
    and clamped when submitted, and become servo setpoints ``command_latency_s`` later (at the first physics
    step at or after that time), through the world's command delay.

    Raises (constructor):
        HardwareProfileError: the profile names something the world lacks, or was written for another world.
        WorldError: the world cannot be loaded.
    """

    def __init__(
        self,
        world: str | Path,
        profile: HardwareProfile,
        *,
        seed: int = 0,
        extra_spec_editor: Callable[[mujoco.MjSpec], None] | None = None,
    ) -> None:
        """Build the base world (for its hash and masses), then the profiled world; reset with ``seed``.

        ``extra_spec_editor``: a further spec edit applied after the profile's (e.g. an operator's
        lighting and clutter as a variation, ``r2s2r_sim.emulated_cell``); ``base_world_hash`` and the
        profile checks are unaffected by it.
        """
        folder = world_path(world)
        config = load_world_config(folder)
        base = SimWorld(folder, config=config)
        if profile.world not in (base.world_id, str(world)):
            raise HardwareProfileError(
                f"{profile.source}: world: the profile is for {profile.world!r}, but the world is "
                f"{base.world_id!r}"
            )
        self.profile = profile
        self.base_world_hash: str = base.world_hash
        cam_cfg = next((c for c in base.config.cameras if c.name == profile.camera.name), None)
        if cam_cfg is None:
            raise HardwareProfileError(
                f"{profile.source}: camera.name: no camera {profile.camera.name!r} in world "
                f"{base.world_id!r} "
                f"(cameras: {[c.name for c in base.config.cameras]})"
            )
        mjcf_camera = base.model.camera(base.camera_id(cam_cfg.name)).name
        masses: dict[str, float] = {}
        for name in profile.physics.body_masses_kg:
            for candidate in (name, base.config.robot.prefix + name):
                bid = mujoco.mj_name2id(base.model, mujoco.mjtObj.mjOBJ_BODY, candidate)
                if bid >= 0:
                    masses[name] = float(base.model.body_mass[bid])
                    break
            else:
                raise HardwareProfileError(
                    f"{profile.source}: physics.body_masses_kg.{name}: no body {name!r} in world "
                    f"{base.world_id!r}"
                )
            if masses[name] <= 0:
                raise HardwareProfileError(
                    f"{profile.source}: physics.body_masses_kg.{name}: body {name!r} has no mass to scale"
                )
        del base
        render = render_geometry(profile.camera)
        profile_editor = _ProfileEditor(profile, config.robot.prefix, masses, mjcf_camera, render)

        def editor(spec: mujoco.MjSpec) -> None:
            profile_editor(spec)
            if extra_spec_editor is not None:
                extra_spec_editor(spec)

        self.world = SimWorld(folder, config=config, spec_editor=editor)
        # The profile's driver latency is the only delay here (a real2sim world's identified one is not).
        self.world.command_delay_s = profile.driver.command_latency_s
        self.world_id: str = self.world.world_id
        self.mjcf_camera = self.world.model.camera(self.world.camera_id(cam_cfg.name)).name
        self.camera_frame_id: str = cam_cfg.frame_id
        self.depth_range: tuple[float, float] = cam_cfg.depth_range
        self.dt: float = self.world.timestep
        self.clock: float = 0.0
        self._rng = np.random.default_rng(seed)
        self.seed = seed
        color = profile.sensors.color
        blur_steps = math.ceil(color.exposure_s / self.dt) + 1 if color is not None and color.blurs else 0
        self._history: deque[tuple[float, np.ndarray]] = deque(maxlen=max(blur_steps, 1))
        self._arm_fx = (
            None if profile.arm.rigid else ArmEffectsState(self.world.model, profile.arm, config.robot.prefix)
        )
        self.world.step_hook = self._arm_fx
        self._task = self.world.task
        self.reset(seed)

    # ---------------------------------------------------------------------------------- episodes

    def reset(self, seed: int, *, object_pose: ObjectPose | None = None) -> None:
        """Put the cell in its initial state for ``seed`` (a stand-in for an operator resetting it).

        The arm goes home, the task object is placed at ``object_pose`` or, without one, like the sim places
        it for ``seed`` (x, y, yaw from the world's ``object_pose_range``); its height and every other
        object pose are the profile's.  Pending commands are dropped.  ``clock`` keeps running.
        """
        self.world.reset(int(seed), object_pose=object_pose)
        self._history.clear()
        if self._arm_fx is not None:
            self._arm_fx.reset(self.world.data)
        self.episode_seed = int(seed)
        self.episode_start = self.clock

    # ---------------------------------------------------------------------------------- commands

    def submit_arm(self, positions: Sequence[float]) -> CommandCheck:
        """Queue an arm position command (rad or m, ``arm_joint_names`` order), applied after the latency.

        Refuses now (nothing queued) a wrong length or non-finite values; limits are clamped.
        """
        return self.world.set_arm_command(positions)

    def submit_gripper(self, value: float) -> CommandCheck:
        """Queue a gripper command (``gripper.command_range`` units), applied after the latency."""
        return self.world.set_gripper_command(value)

    @property
    def pending_commands(self) -> int:
        """Commands received and not yet applied."""
        return self.world.pending_commands

    # ---------------------------------------------------------------------------------- physics

    def advance(self, n: int = 1) -> None:
        """Advance ``n`` physics steps, releasing due commands before each step."""
        if n < 1:
            raise ValueError(f"step count must be >= 1, got {n}")
        if not (self._history.maxlen and self._history.maxlen > 1):
            self.world.step(n)
            for _ in range(n):  # the clock sums steps one by one, as the physics time does
                self.clock += self.dt
        else:
            for _ in range(n):  # keep every step's state for the camera's exposure
                self.world.step(1)
                self.clock += self.dt
                self._history.append((self.clock, self.world.data.qpos.copy()))
        if self._task is not None:
            self._task.evaluate(self.world)  # the judge watches: a task's hold is timed as time passes

    def joint_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Measured positions, velocities (true + seeded white noise) and efforts (``joint_names`` order)."""
        pos, vel, eff = self.world.joint_state()
        drv = self.profile.driver
        pos = pos + self._rng.normal(0.0, drv.position_noise_std_rad, pos.shape)
        if self._arm_fx is not None:
            pos = self._arm_fx.measure(pos, self.world.state_qpos_addresses)
        vel = vel + self._rng.normal(0.0, drv.velocity_noise_std_rad_s, vel.shape)
        return pos, vel, eff

    # ---------------------------------------------------------------------------------- camera

    def camera_renderer(self) -> DistortedRgbdCamera:
        """A distorted RGB-D renderer of the profile's camera (enter it on the thread that renders)."""
        return DistortedRgbdCamera(
            self.world.model,
            self.mjcf_camera,
            self.profile.camera,
            self.depth_range,
            sensors=self.profile.sensors,
            episode_seed=lambda: self.episode_seed,
            history=lambda data: self.motion_start() if data is self.world.data else None,
        )

    def motion_start(self) -> np.ndarray | None:
        """``qpos`` at the start of the current camera exposure (``None``: no motion blur, or no history)."""
        color = self.profile.sensors.color
        if color is None or not color.blurs or not self._history:
            return None
        t = self.clock - color.exposure_s
        for when, qpos in reversed(self._history):
            if when <= t + 1e-12:
                return qpos
        return self._history[0][1]

    # ---------------------------------------------------------------------------------- judging

    def judge(self) -> Outcome:
        """STAND-IN for a human judge: the task's verdict on the current state (no timeout applies).

        ``reason`` is ``"success"``, a failure the task ends episodes on (``"object_dropped"``,
        ``"support_toppled"``), else what the task says is missing (its ``shortfall``, e.g.
        ``"drawer_not_opened"``) or ``"not_achieved"``; ``metrics`` are the task's named terms.  Holds are
        timed from the judge's watching: :meth:`advance` shows the task every advanced state.  Without a task:
        ``Outcome(False, "no_task", {})``.
        """
        if self._task is None:
            return Outcome(False, "no_task", {})
        verdict = self._task.evaluate(self.world)
        metrics = self._task.metrics(self.world)
        if verdict is not None and verdict.reason != "timeout" and not verdict.reason.endswith("(timeout)"):
            return Outcome(verdict.success, verdict.reason, metrics)
        shortfall = getattr(self._task, "shortfall", None)
        reason = "not_achieved" if shortfall is None else shortfall(self.world, metrics)
        return Outcome(False, reason, metrics)

    def judge_json(self) -> str:
        """:meth:`judge` as the JSON message of the ``judge`` service (see the node)."""
        outcome = self.judge()
        return json.dumps(
            {
                "judge": "emulated (stand-in for a human judge; real hardware has no such service)",
                "success": outcome.success,
                "reason": outcome.reason,
                "seed": self.episode_seed,
                "episode_time_s": round(self.clock - self.episode_start, 6),
                "metrics": outcome.metrics,
            },
            sort_keys=True,
        )
