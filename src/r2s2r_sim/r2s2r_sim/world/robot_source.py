"""Where a world's robot description lives and how it becomes an ``MjSpec``: MJCF, URDF or xacro.

A world points at the user's robot instead of holding a copy: by a path inside the world folder, an absolute
path, a relative path that leaves the folder, or ``package://<package>/<path>``.  Package names resolve
through the world's ``robot.packages`` mapping first, then the ament index (``ament_index_python``), then
the ``package.xml`` that encloses the robot file.  A URDF (or a xacro file, expanded with the ``xacro``
package) is compiled by MuJoCo after its ``package://`` and ``file://`` mesh paths are made absolute; as
a URDF has no actuators, ``robot.servos`` adds a position servo to each listed joint that has none (and
turns a torque motor on a listed joint into one, keeping its torque limit).  A
``robot.tool_frame`` becomes a site on its parent body, so the rest of r2s2r sees an ordinary ee site.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from r2s2r_sim.errors import WorldError

__all__ = [
    "PACKAGE_SCHEME",
    "ServoConfig",
    "ToolFrameConfig",
    "asset_roots",
    "enclosing_package",
    "load_robot_spec",
    "resolve_package",
    "set_armature",
    "tool_frame_quat",
    "servo_reason",
]

PACKAGE_SCHEME = "package://"
URDF_SUFFIXES = (".urdf", ".xacro")
# A robot description is text a person or xacro wrote; bigger than this is not one.
_MAX_DESCRIPTION_BYTES = 64 << 20


@dataclass(frozen=True, kw_only=True)
class ToolFrameConfig:
    """A tool-centre frame declared in ``world.yaml`` when the robot file has no ee site.

    The frame follows the convention the reference policy's kinematics expect: **z** is the approach
    axis, pointing from the flange out through the fingertips; **y** is the finger axis, the direction
    along which the fingers close; x = y × z.  ``z_axis`` and ``y_axis`` are given in the parent body's
    frame; ``y_axis`` is made orthogonal to ``z_axis``.

    Attributes:
        name: the site's name (unprefixed); it becomes ``robot.ee_site``.
        body: the parent body (unprefixed name in the robot file).
        pos: origin in the parent body's frame (m).
        z_axis: approach axis in the parent body's frame.
        y_axis: finger axis in the parent body's frame.
    """

    name: str = "tool_frame"
    body: str
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    z_axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    y_axis: tuple[float, float, float] = (0.0, 1.0, 0.0)

    def __post_init__(self) -> None:
        if not self.name or not self.body:
            raise WorldError("name, body: must not be empty")
        for key in ("pos", "z_axis", "y_axis"):
            if not all(math.isfinite(v) for v in getattr(self, key)):
                raise WorldError(f"{key}: must be finite, got {list(getattr(self, key))}")
        tool_frame_quat(self)  # refuses zero or parallel axes


def tool_frame_quat(frame: ToolFrameConfig) -> np.ndarray:
    """The wxyz quaternion of ``frame`` in its parent body (columns x, y, z of the rotation).

    Raises:
        WorldError: an axis is zero or the two axes are parallel (names both fields).
    """
    z = np.asarray(frame.z_axis, dtype=np.float64)
    y = np.asarray(frame.y_axis, dtype=np.float64)
    if np.linalg.norm(z) < 1e-9:
        raise WorldError(f"z_axis: must be non-zero, got {list(frame.z_axis)}")
    z = z / np.linalg.norm(z)
    y = y - z * float(y @ z)
    if np.linalg.norm(y) < 1e-6:
        raise WorldError(
            f"y_axis: must not be parallel to z_axis: got {list(frame.y_axis)} and {list(frame.z_axis)}"
        )
    y = y / np.linalg.norm(y)
    rot = np.column_stack([np.cross(y, z), y, z])
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, rot.reshape(9))
    return quat


@dataclass(frozen=True, kw_only=True)
class ServoConfig:
    """Position servos on robot joints the robot file leaves without an actuator (URDF) or gives a motor.

    A torque motor (``<motor>``) is turned into a servo that keeps its torque limit.

    force = kp·(ctrl − q) − kv·q̇, clipped to ``force_limit`` when given.

    Attributes:
        kp: stiffness (N·m/rad or N/m), > 0.
        kv: damping (N·m·s/rad or N·s/m), >= 0.
        force_limit: largest |force| (N·m or N); ``None``: unlimited.
    """

    kp: float
    kv: float
    force_limit: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.kp) and self.kp > 0):
            raise WorldError(f"kp: must be > 0, got {self.kp}")
        if not (math.isfinite(self.kv) and self.kv >= 0):
            raise WorldError(f"kv: must be >= 0, got {self.kv}")
        if self.force_limit is not None and not (math.isfinite(self.force_limit) and self.force_limit > 0):
            raise WorldError(f"force_limit: must be > 0, got {self.force_limit}")


# ------------------------------------------------------------------------------------------- packages


def enclosing_package(path: Path) -> tuple[str, Path] | None:
    """``(name, folder)`` of the ROS package (``package.xml``) that holds ``path``, or None."""
    for folder in [path, *path.parents] if path.is_dir() else path.parents:
        manifest = folder / "package.xml"
        if manifest.is_file():
            try:
                name = ET.parse(manifest).getroot().findtext("name")
            except ET.ParseError:
                return None
            return (name.strip(), folder) if name else None
    return None


def resolve_package(name: str, packages: Mapping[str, Path], near: Path | None = None) -> Path | None:
    """The folder of package ``name``: the world's mapping, the ament index, or the package near ``near``."""
    if name in packages:
        return packages[name]
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:
        get_package_share_directory = None  # type: ignore[assignment]
    if get_package_share_directory is not None:
        try:
            return Path(get_package_share_directory(name)).resolve()
        except (PackageNotFoundError, ValueError):
            pass
    if near is not None:
        found = enclosing_package(near)
        if found is not None and found[0] == name:
            return found[1].resolve()
    return None


def asset_roots(robot_file: Path, packages: Mapping[str, Path]) -> tuple[Path, ...]:
    """Folders the meshes and textures of an external robot file must stay inside.

    Its own package (or, without a ``package.xml``, its own folder) and every mapped package.
    """
    found = enclosing_package(robot_file)
    own = found[1] if found is not None else robot_file.parent
    return (own.resolve(), *(p.resolve() for p in packages.values()))


# ------------------------------------------------------------------------------------------- loading


@contextlib.contextmanager
def _ament_prefix(packages: Mapping[str, Path]) -> Iterator[None]:
    """Make the mapped packages findable by ``$(find ...)`` in xacro through a temporary ament prefix."""
    if not packages:
        yield
        return
    previous = os.environ.get("AMENT_PREFIX_PATH")
    with tempfile.TemporaryDirectory(prefix="r2s2r-ament-") as tmp:
        index = Path(tmp) / "share" / "ament_index" / "resource_index" / "packages"
        index.mkdir(parents=True)
        for name, folder in packages.items():
            (index / name).write_text("")
            (Path(tmp) / "share" / name).symlink_to(folder, target_is_directory=True)
        os.environ["AMENT_PREFIX_PATH"] = os.pathsep.join([tmp, *([previous] if previous else [])])
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("AMENT_PREFIX_PATH", None)
            else:
                os.environ["AMENT_PREFIX_PATH"] = previous


def _urdf_text(path: Path, xacro_args: Mapping[str, str], packages: Mapping[str, Path], field: str) -> str:
    if path.suffix == ".xacro":
        try:
            import xacro
        except ImportError:
            raise WorldError(
                f"{field}: {path} is a xacro file; install the xacro package (pip install xacro) "
                "or give the expanded URDF"
            ) from None
        enclosing = enclosing_package(path)
        mapped = dict(packages)
        if enclosing is not None:
            mapped.setdefault(enclosing[0], enclosing[1])
        with _ament_prefix(mapped):
            try:
                return str(xacro.process_file(str(path), mappings=dict(xacro_args)).toxml())
            except Exception as err:  # xacro raises its own and plain exceptions alike
                raise WorldError(f"{field}: expanding {path} with xacro failed: {err}") from err
    if path.stat().st_size > _MAX_DESCRIPTION_BYTES:
        raise WorldError(f"{field}: {path} is larger than {_MAX_DESCRIPTION_BYTES} bytes")
    return path.read_text(encoding="utf-8")


def _absolute_mesh(filename: str, base: Path, packages: Mapping[str, Path], field: str) -> str:
    if filename.startswith(PACKAGE_SCHEME):
        name, _, rest = filename[len(PACKAGE_SCHEME) :].partition("/")
        folder = resolve_package(name, packages, base)
        if folder is None:
            raise WorldError(
                f"{field}: mesh {filename!r}: package {name!r} is neither in robot.packages "
                f"({sorted(packages)}) nor in the ament index"
            )
        return str(folder / rest)
    if filename.startswith("file://"):
        return filename[len("file://") :]
    return str((base / filename).resolve())


def _urdf_spec(
    path: Path, xacro_args: Mapping[str, str], packages: Mapping[str, Path], field: str
) -> mujoco.MjSpec:
    text = _urdf_text(path, xacro_args, packages, field)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as err:
        raise WorldError(f"{field}: {path} is not valid URDF XML: {err}") from err
    for mesh in root.iter("mesh"):
        if mesh.get("filename"):
            mesh.set("filename", _absolute_mesh(mesh.attrib["filename"], path.parent, packages, field))
    # Keep every link as a body (a tool frame may name a fixed link such as tool0), keep absolute mesh
    # paths, and drop visual elements (MuJoCo cannot read COLLADA; the collision meshes are drawn instead).
    extension = root.find("mujoco")
    if extension is None:
        extension = ET.Element("mujoco")
        root.insert(0, extension)
    compiler = extension.find("compiler")
    if compiler is None:
        compiler = ET.SubElement(extension, "compiler")
    compiler.attrib.update({"strippath": "false", "fusestatic": "false", "discardvisual": "true"})
    try:
        spec = mujoco.MjSpec.from_string(ET.tostring(root, encoding="unicode"))
    except ValueError as err:
        raise WorldError(f"{field}: {path} is not a URDF MuJoCo can read: {err}") from err
    # A URDF carries no physics options; implicitfast is what position servos with damping need.
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    _exclude_static_chains(spec)
    return spec


def _exclude_static_chains(spec: mujoco.MjSpec, *, world_welded_only: bool = False) -> None:
    """Keep MuJoCo's parent-child contact filter where it lapses.

    MuJoCo skips contacts between a body and its parent, except when the parent is welded to the world
    (it then counts as the world): a fixed-base arm's first moving link collides with its base, which
    jams that joint when their meshes overlap (the Kinova Gen3's do, by 12 mm at home).  With URDF's
    ``fusestatic`` off, fixed links (base_link_inertia) also sit between a moving link and the geometry it
    touches.  Exclude contacts between a moving link and every ancestor up to the first one that moves.
    ``world_welded_only`` (MJCF): only the chains that reach the world, and only between bodies whose
    geoms can touch, so a model whose links never collide compiles unchanged.
    """
    for body in spec.bodies:
        if not body.name or not body.joints:
            continue
        ancestors = []
        parent = body.parent
        while parent is not None and parent.name and parent.name != "world":
            ancestors.append(parent)
            if parent.joints:
                break
            parent = parent.parent
        if world_welded_only and (not ancestors or ancestors[-1].joints):
            continue
        for ancestor in ancestors:
            if not world_welded_only or _can_touch(ancestor, body):
                spec.add_exclude(bodyname1=ancestor.name, bodyname2=body.name)


def _can_touch(a: mujoco.MjsBody, b: mujoco.MjsBody) -> bool:
    """Whether any geom of ``a`` and any of ``b`` pass MuJoCo's contype/conaffinity test."""
    return any(
        (ga.contype & gb.conaffinity) or (gb.contype & ga.conaffinity) for ga in a.geoms for gb in b.geoms
    )


def _is_torque_motor(act: mujoco.MjsActuator) -> bool:
    """A joint actuator whose force is ``gear * ctrl``: a torque motor, not a position servo."""
    return (
        act.trntype == mujoco.mjtTrn.mjTRN_JOINT
        and act.gaintype == mujoco.mjtGain.mjGAIN_FIXED
        and act.biastype == mujoco.mjtBias.mjBIAS_NONE
    )


def torque_motor_joints(spec: mujoco.MjSpec, joints: tuple[str, ...]) -> list[str]:
    """Those of ``joints`` a torque motor drives (a force command, no position control)."""
    return [a.target for a in spec.actuators if a.target in joints and _is_torque_motor(a)]


def servo_reason(spec: mujoco.MjSpec, joints: tuple[str, ...], *, urdf: bool) -> str | None:
    """Why ``joints`` need ``robot.servos`` (no actuator, or a torque motor), or None."""
    if urdf:
        return "the URDF has no actuators"
    motors = [a.target for a in spec.actuators if a.target in joints and _is_torque_motor(a)]
    if motors:
        return f"torque motors drive {motors}"
    driven = {a.target for a in spec.actuators if a.trntype == mujoco.mjtTrn.mjTRN_JOINT}
    bare = [name for name in joints if name not in driven]
    return f"no actuator drives {bare}" if bare else None


def _limited(flag: int, bounds: np.ndarray) -> bool:
    """Whether an MjSpec ``*limited`` flag with its range limits (``auto``: a range was given)."""
    return flag == mujoco.mjtLimited.mjLIMITED_TRUE or (
        flag == mujoco.mjtLimited.mjLIMITED_AUTO and bounds[0] < bounds[1]
    )


def _driven_through_coupling(spec: mujoco.MjSpec) -> set[str]:
    """Joints that move with others and need no servo of their own.

    Those an actuator drives through a tendon (a tendon-coupled gripper's fingers) and those a joint
    equality makes follow another joint (a linkage's or a URDF mimic's passive finger).
    """
    try:
        model = spec.copy().compile()
    except ValueError:
        return set()  # the caller's own compile reports what is wrong
    tendons = {
        int(model.actuator_trnid[a, 0])
        for a in range(model.nu)
        if int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_TENDON)
    }
    out: set[str] = set()
    for t in tendons:
        adr, num = int(model.tendon_adr[t]), int(model.tendon_num[t])
        for w in range(adr, adr + num):
            if int(model.wrap_type[w]) == int(mujoco.mjtWrap.mjWRAP_JOINT):
                out.add(model.joint(int(model.wrap_objid[w])).name)
    for e in range(model.neq):
        if int(model.eq_type[e]) == int(mujoco.mjtEq.mjEQ_JOINT) and int(model.eq_obj2id[e]) >= 0:
            out.add(model.joint(int(model.eq_obj1id[e])).name)
    return out


def _add_servos(spec: mujoco.MjSpec, joints: tuple[str, ...], servos: ServoConfig, field: str) -> None:
    # A torque motor becomes a position servo, as a torque-controlled arm's joint impedance controller
    # offers ros2_control a position interface; it keeps the motor's torque limit (gear * ctrlrange).
    by_joint = {a.target: a for a in spec.actuators if a.trntype == mujoco.mjtTrn.mjTRN_JOINT}
    coupled = _driven_through_coupling(spec)
    for name in joints:
        joint = spec.joint(name)
        if joint is None:
            raise WorldError(f"{field}: joint {name!r} not in the robot file")
        if name in coupled:
            continue
        limit = servos.force_limit
        act = by_joint.get(name)
        if act is not None:
            if not _is_torque_motor(act):
                continue
            gear = abs(float(act.gear[0])) or 1.0
            if limit is None and _limited(act.ctrllimited, act.ctrlrange):
                limit = gear * float(np.max(np.abs(act.ctrlrange)))
            if _limited(act.forcelimited, act.forcerange):
                motor_limit = float(np.max(np.abs(act.forcerange)))
                limit = motor_limit if limit is None else min(limit, motor_limit)
            act.gear[0] = 1.0
            act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
        else:
            act = spec.add_actuator(name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        act.set_to_position(kp=servos.kp, kv=servos.kv)
        if _limited(joint.limited, joint.range):
            act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.ctrlrange = joint.range
        if limit is not None:
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.forcerange = [-limit, limit]


def _add_tool_frame(spec: mujoco.MjSpec, frame: ToolFrameConfig, field: str) -> None:
    body = spec.body(frame.body)
    if body is None:
        names = sorted(b.name for b in spec.bodies if b.name)
        raise WorldError(f"{field}.body: body {frame.body!r} not in the robot file (bodies: {names})")
    if spec.site(frame.name) is not None:
        raise WorldError(f"{field}.name: the robot file already has a site {frame.name!r}")
    body.add_site(
        name=frame.name,
        pos=list(frame.pos),
        quat=list(tool_frame_quat(frame)),
        group=4,
        size=[0.005, 0.005, 0.005],
    )


def is_urdf(path: Path) -> bool:
    """Whether ``path`` is read as URDF (``.urdf``, ``.xacro``, ``.urdf.xacro``)."""
    return path.suffix in URDF_SUFFIXES


def load_robot_spec(
    path: Path,
    *,
    field: str,
    xacro_args: Mapping[str, str] | None = None,
    packages: Mapping[str, Path] | None = None,
    servo_joints: tuple[str, ...] = (),
    servos: ServoConfig | None = None,
    tool_frame: ToolFrameConfig | None = None,
) -> mujoco.MjSpec:
    """The robot file at ``path`` as an ``MjSpec``, with servos and tool frame added.

    Args:
        path: MJCF, URDF or xacro file.
        field: the world.yaml field, for messages.
        xacro_args: ``name:=value`` arguments of a xacro file.
        packages: package folders for ``package://`` paths and ``$(find ...)``.
        servo_joints: joints given a position servo (``servos``) when they have no actuator or a torque motor.
        servos: servo gains; ``None`` adds none.
        tool_frame: a tool frame to add as a site.

    Raises:
        WorldError: the file does not parse, a package is unknown, or a named joint or body is missing.
    """
    packages = packages or {}
    if is_urdf(path):
        spec = _urdf_spec(path, xacro_args or {}, packages, field)
    else:
        try:
            spec = mujoco.MjSpec.from_file(str(path))
        except ValueError as err:
            raise WorldError(f"{field}: {path} is not valid MJCF: {err}") from err
        _exclude_static_chains(spec, world_welded_only=True)
    name_unnamed_actuators(spec)
    if servos is not None:
        _add_servos(spec, servo_joints, servos, "robot.servos")
    if tool_frame is not None:
        _add_tool_frame(spec, tool_frame, "robot.tool_frame")
    return spec


def name_unnamed_actuators(spec: mujoco.MjSpec) -> None:
    """Name each unnamed actuator of the robot file ``#i`` (its index in the file), in this spec only.

    A world addresses actuators by name (``world.yaml``, flags, hardware profiles); an actuator the robot
    file leaves unnamed gets the name that MuJoCo's messages show it by, so that it can be addressed
    without editing the file.
    """
    for i, act in enumerate(spec.actuators):
        if not act.name:
            act.name = f"#{i}"


def set_armature(spec: mujoco.MjSpec, armature: Mapping[str, float], prefix: str = "") -> None:
    """Set world.yaml's ``robot.armature`` on the robot's joints (``prefix``: as attached).

    Raises:
        WorldError: a named joint is not in the robot file.
    """
    for name, value in armature.items():
        joint = spec.joint(prefix + name)
        if joint is None:
            raise WorldError(f"robot.armature.{name}: no joint {name!r} in the robot file")
        joint.armature = value


_PACKAGE_RE = re.compile(r"^package://([^/]+)/(.+)$")


def split_package_uri(text: str) -> tuple[str, str] | None:
    """``(package, relative path)`` of a ``package://`` reference, None for anything else."""
    match = _PACKAGE_RE.match(text)
    return (match.group(1), match.group(2)) if match else None
