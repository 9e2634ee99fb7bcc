"""Composing a world folder into one ``MjSpec``: the scene, the robot attached to it, the robot's options.

The scene and the robot file are loaded from their own folders (so mesh paths resolve there); asset files
are checked to stay inside the world folder (or, for a robot file the world names outside it, inside the
robot's own package or folder) before anything reads them.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import mujoco
import numpy as np

from r2s2r_sim.errors import WorldError
from r2s2r_sim.world.config import WorldConfig
from r2s2r_sim.world.robot_source import load_robot_spec, set_armature

_LOG = logging.getLogger("r2s2r_sim.world.sim_world")

__all__ = ["COMMAND_DELAY_NUMERIC", "command_delay", "compose_world"]

# Physics options copied from the robot MJCF when robot.options_from_robot (the parent's <option> wins on
# attach, and Gen3/xArm7 chatter without their implicitfast).  Environment fields (gravity, wind, density,
# viscosity, magnetic) stay the scene's.
_ROBOT_OPTION_FIELDS = (
    "timestep",
    "integrator",
    "cone",
    "impratio",
    "solver",
    "iterations",
    "tolerance",
    "ls_iterations",
    "ls_tolerance",
    "noslip_iterations",
    "noslip_tolerance",
    "ccd_iterations",
    "ccd_tolerance",
    "jacobian",
    "disableflags",
    "enableflags",
    "o_margin",
    "o_solref",
    "o_solimp",
    "o_friction",
)


@contextlib.contextmanager
def _quiet_empty_prefix_warning(keyframe_conflict: bool = False) -> Iterator[None]:
    """Drop MuJoCo's C-level "empty prefix" attach warning (printed to stdout and MUJOCO_LOG.TXT).

    An empty prefix is this world format's documented default, so the warning is noise on every load;
    any other MuJoCo warning raised meanwhile goes to this module's logger. The handler is process-wide,
    so the previous one is restored on exit.  ``keyframe_conflict``: also drop "Attach conflict", raised
    when a scene without keyframes (a real2sim world) keeps none of the robot's; expected, as the home
    pose then comes from ``world.yaml`` (``robot.home_qpos``).
    """
    previous = mujoco.get_mju_user_warning()

    def _handler(message: str) -> None:
        if "empty prefix" not in message and not (keyframe_conflict and "Attach conflict" in message):
            _LOG.warning("MuJoCo: %s", message)

    mujoco.set_mju_user_warning(_handler)
    try:
        yield
    finally:
        mujoco.set_mju_user_warning(previous)


def _rel(cfg: WorldConfig, path: Path) -> str:
    try:
        return str(path.relative_to(cfg.world_dir))
    except ValueError:
        return str(path)


def compose_world(
    cfg: WorldConfig, spec_editor: Callable[[mujoco.MjSpec], None] | None = None
) -> tuple[mujoco.MjSpec, mujoco.MjModel, str]:
    """The composed spec, its compiled model and the robot's (unprefixed) root body name.

    ``spec_editor`` is called with the composed spec just before it is compiled; its own exceptions
    propagate unchanged.

    Raises:
        WorldError: naming ``world.yaml`` and the field at fault.
    """
    src = str(cfg.source)
    robot_field = "robot.urdf" if cfg.robot.is_urdf else "robot.mjcf"
    robot_rel, scene_rel = _rel(cfg, cfg.robot.mjcf), _rel(cfg, cfg.scene)
    scene_spec = _load_spec(cfg, cfg.scene, "scene")
    robot_spec = _load_spec(cfg, cfg.robot.mjcf, robot_field)
    robot_root = robot_spec.worldbody.first_body()
    if robot_root is None:
        raise WorldError(f"{src}: {robot_field}: {robot_rel} has no body under <worldbody>")
    robot_root_name = robot_root.name
    if not robot_root_name:
        raise WorldError(f"{src}: {robot_field}: the root body of {robot_rel} must be named")

    if cfg.robot.options_from_robot:
        for name in _ROBOT_OPTION_FIELDS:
            setattr(scene_spec.option, name, getattr(robot_spec.option, name))
    # Sizes of the robot's user data (a robot file may declare some): the scene takes them rather than
    # have the attach warn that it keeps its own default.
    for field in _NUSER_FIELDS:
        if getattr(scene_spec, field) == -1:
            setattr(scene_spec, field, getattr(robot_spec, field))
    frame = _attach_frame(cfg, scene_spec)
    keyframe_conflict = not scene_spec.keys and bool(robot_spec.keys)
    with warnings.catch_warnings(), _quiet_empty_prefix_warning(keyframe_conflict):
        # An empty prefix is the documented default; names are checked for clashes by the compiler.
        warnings.filterwarnings("ignore", message=".*empty prefix.*")
        warnings.filterwarnings("ignore", message=r"(?s)Attach conflict.*nkey")
        try:
            scene_spec.attach(robot_spec, prefix=cfg.robot.prefix, frame=frame)
        except ValueError as err:
            raise WorldError(
                f"{src}: {robot_field}: composing {scene_rel} with {robot_rel} failed: {err}"
            ) from err
        for pair in cfg.robot.contact_exclude:
            missing = [b for b in pair if scene_spec.body(cfg.robot.prefix + b) is None]
            if missing:
                raise WorldError(f"{src}: robot.contact_exclude: bodies {missing} not in {robot_rel}")
            scene_spec.add_exclude(bodyname1=cfg.robot.prefix + pair[0], bodyname2=cfg.robot.prefix + pair[1])
        _apply_physics(cfg, scene_spec)
        if spec_editor is not None:
            spec_editor(scene_spec)
        try:
            model = scene_spec.compile()
        except ValueError as err:
            edited = " (after spec_editor)" if spec_editor is not None else ""
            raise WorldError(
                f"{src}: {robot_field}: composing {scene_rel} with {robot_rel} failed{edited}: {err}"
            ) from err
    return scene_spec, model, robot_root_name


def _apply_physics(cfg: WorldConfig, spec: mujoco.MjSpec) -> None:
    """world.yaml's physics options and the robot's joint armature, over the composed spec."""
    physics = cfg.physics
    if physics.timestep is not None:
        spec.option.timestep = physics.timestep
    if physics.cone is not None:
        spec.option.cone = getattr(mujoco.mjtCone, f"mjCONE_{physics.cone.upper()}")
    if physics.impratio is not None:
        spec.option.impratio = physics.impratio
    try:
        set_armature(spec, cfg.robot.armature, cfg.robot.prefix)
    except WorldError as err:
        raise WorldError(f"{cfg.source}: {err}") from None


def _load_spec(cfg: WorldConfig, path: Path, field: str) -> mujoco.MjSpec:
    robot = cfg.robot
    if field == "scene":
        try:
            spec = mujoco.MjSpec.from_file(str(path))
        except ValueError as err:
            raise WorldError(f"{cfg.source}: {field}: {_rel(cfg, path)} is not valid MJCF: {err}") from err
        roots: tuple[Path, ...] | None = None
    else:
        try:
            spec = load_robot_spec(
                path,
                field=field,
                xacro_args=robot.xacro_args,
                packages=robot.packages,
                servo_joints=robot.arm_joints + (robot.gripper.joints if robot.gripper else ()),
                servos=robot.servos,
                tool_frame=robot.tool_frame,
            )
        except WorldError as err:
            raise WorldError(f"{cfg.source}: {err}") from None
        roots = robot.asset_roots
    # Before anything reads meshes/textures: refuse files outside the world folder (or, for a robot
    # file the world names outside it, outside the robot's own package or folder).
    _check_asset_paths(cfg, spec, path, field, roots)
    try:
        # Compiling alone surfaces missing meshes/textures with the file that references them.
        spec.compile()
    except ValueError as err:
        raise WorldError(f"{cfg.source}: {field}: {_rel(cfg, path)} does not compile: {err}") from err
    return spec


_NUSER_FIELDS = tuple(
    f"nuser_{k}" for k in ("body", "jnt", "geom", "site", "cam", "tendon", "actuator", "sensor")
)


def _check_asset_paths(
    cfg: WorldConfig, spec: mujoco.MjSpec, path: Path, field: str, roots: tuple[Path, ...] | None
) -> None:
    """Refuse mesh/texture/hfield files that resolve outside the world folder (or ``roots``).

    A robot file's own layout is the user's: a mesh folder linked into the robot's folder is inside it
    as written, wherever the link points.  Inside the world folder links are followed, since a world folder
    is what gets shared.
    """
    if cfg.allow_external_paths:
        return
    allowed = roots if roots is not None else (cfg.world_dir.resolve(),)
    base = path.parent
    as_written = () if roots is None else (*allowed, Path(os.path.normpath(base.absolute())))
    for kind, items, subdir in (
        ("mesh", spec.meshes, spec.meshdir),
        ("texture", spec.textures, spec.texturedir),
        ("hfield", spec.hfields, spec.meshdir),
    ):
        for item in items:
            if not item.file:
                continue
            file = base / (subdir or "") / item.file
            resolved, lexical = file.resolve(), Path(os.path.normpath(file.absolute()))
            if not any(resolved.is_relative_to(root) for root in allowed) and not any(
                lexical.is_relative_to(root) for root in as_written
            ):
                where = (
                    f"the world folder {allowed[0]}"
                    if roots is None
                    else f"the robot's folders {[str(r) for r in allowed]}"
                )
                fix = (
                    ""
                    if roots is None
                    else "; map the folder that holds it in robot.packages (NAME: DIR; `r2s2r world new "
                    "--package NAME=DIR`), or copy it beside the robot file"
                )
                raise WorldError(
                    f"{cfg.source}: {field}: {_rel(cfg, path)}: {kind} {item.name or item.file!r} file "
                    f"{item.file!r} escapes {where}{fix}"
                )


def _attach_frame(cfg: WorldConfig, scene_spec: mujoco.MjSpec) -> mujoco.MjsFrame:
    attach = cfg.robot.attach
    parent = scene_spec.worldbody
    pos = np.asarray(attach.pos, dtype=np.float64)
    quat = np.asarray(attach.quat, dtype=np.float64)
    quat = quat / np.linalg.norm(quat)
    if attach.site is not None:
        site = scene_spec.site(attach.site)
        target = site if site is not None else scene_spec.frame(attach.site)
        if target is None:
            raise WorldError(
                f"{cfg.source}: robot.attach.site: no site or frame {attach.site!r} in "
                f"{_rel(cfg, cfg.scene)} "
                f"(sites: {sorted(s.name for s in scene_spec.sites if s.name)})"
            )
        # Compose the site pose with the offset; the site's parent body becomes the frame's parent.
        parent = target.parent
        site_quat = np.asarray(target.quat, dtype=np.float64)
        site_quat = site_quat / np.linalg.norm(site_quat)
        rotated = np.empty(3)
        mujoco.mju_rotVecQuat(rotated, pos, site_quat)
        pos = np.asarray(target.pos, dtype=np.float64) + rotated
        out = np.empty(4)
        mujoco.mju_mulQuat(out, site_quat, quat)
        quat = out
    return parent.add_frame(pos=pos, quat=quat)


# Name of the ``<custom><numeric>`` holding the identified command delay (s), as ``r2s2r real2sim`` writes it.
COMMAND_DELAY_NUMERIC = "r2s2r_command_delay_s"


def command_delay(model: mujoco.MjModel) -> float:
    """The identified command delay of a world (0 without one); the robot may be attached with a prefix."""
    for i in range(model.nnumeric):
        if model.numeric(i).name.endswith(COMMAND_DELAY_NUMERIC):
            value = float(model.numeric_data[model.numeric_adr[i]])
            if not (math.isfinite(value) and 0.0 <= value <= 1.0):
                name = model.numeric(i).name
                raise WorldError(f"<numeric name={name!r}>: command delay must be in [0, 1] s, got {value}")
            return value
    return 0.0
