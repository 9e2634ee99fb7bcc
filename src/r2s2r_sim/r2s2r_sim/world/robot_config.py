"""The ``robot`` section of ``world.yaml``: where the robot file is, how it is attached, what it drives."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from r2s2r_sim.config_reader import Reader, check, check_range, read_pair
from r2s2r_sim.world.joint_noise import JointStateNoise
from r2s2r_sim.world.robot_source import (
    ServoConfig,
    ToolFrameConfig,
    asset_roots,
    is_urdf,
    resolve_package,
    split_package_uri,
)

__all__ = ["AttachConfig", "GripperConfig", "RobotConfig", "parse_robot"]


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
        check(all(math.isfinite(v) for v in self.pos), "pos", f"must be finite, got {list(self.pos)}")
        norm = math.sqrt(sum(v * v for v in self.quat))
        check(
            math.isfinite(norm) and norm > 1e-9,
            "quat",
            f"must be a non-zero wxyz quaternion, got {self.quat}",
        )


@dataclass(frozen=True, kw_only=True)
class GripperConfig:
    """One-command gripper.

    Attributes:
        joints: joints reported on ``joint_states`` (unprefixed names).
        actuators: the actuators driven by the gripper command, all with the same ctrl (unprefixed names):
            one for a coupled gripper, one per finger where each finger has its own.  ``actuator`` in
            world.yaml: a name or a list of names.
        command_range: ``[open, closed]`` in the gripper's joint units (m or rad); either order.
        ctrl_ranges: per actuator, the ctrl values that ``command_range`` maps onto linearly, end for end.
            ``ctrl_range`` in world.yaml: one ``[open, closed]`` pair for every actuator, or a list of
            pairs, one per actuator (a finger whose joint runs the other way has its range mirrored).
    """

    joints: tuple[str, ...]
    actuators: tuple[str, ...]
    command_range: tuple[float, float]
    ctrl_ranges: tuple[tuple[float, float], ...]

    def __post_init__(self) -> None:
        check(len(self.joints) > 0, "joints", "must list at least one joint")
        check(len(set(self.joints)) == len(self.joints), "joints", f"has duplicates: {list(self.joints)}")
        check(len(self.actuators) > 0, "actuator", "must name at least one actuator")
        check(
            len(set(self.actuators)) == len(self.actuators),
            "actuator",
            f"has duplicates: {list(self.actuators)}",
        )
        check_range(self.command_range, "command_range", ordered=False)
        check(
            len(self.ctrl_ranges) == len(self.actuators),
            "ctrl_range",
            f"has {len(self.ctrl_ranges)} pairs for {len(self.actuators)} actuators",
        )
        for pair in self.ctrl_ranges:
            check_range(pair, "ctrl_range", ordered=False)

    @property
    def ctrl_range(self) -> tuple[float, float]:
        """The first actuator's ctrl range, which the gripper command is read back from."""
        return self.ctrl_ranges[0]

    def ctrl(self, command: float) -> tuple[float, ...]:
        """Each actuator's ctrl for a gripper ``command`` (command units)."""
        c0, c1 = self.command_range
        f = (command - c0) / (c1 - c0)
        return tuple(u0 + f * (u1 - u0) for u0, u1 in self.ctrl_ranges)

    @property
    def actuator(self) -> str:
        """The first (for a coupled gripper, the only) actuator."""
        return self.actuators[0]

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
        servos: position servos for arm and gripper joints without an actuator (URDF) or driven by a torque
            motor (the motor's torque limit kept); ``None``: none.
        tool_frame: tool-centre frame added as the site ``ee_site`` names.
        armature: rotor inertia (kg·m² or kg) set on these joints of the robot file: a servo whose
            damping is stiff for its joint's inertia at the timestep limit-cycles once its force saturates.
        asset_roots: folders the robot's meshes and textures must stay inside; ``None``: the world folder.
        joint_state_noise: white noise the sim adds to the joint states it reports (the hardware's
            readings; see :mod:`r2s2r_sim.world.joint_noise`); zero by default.
        contact_exclude: pairs of the robot's bodies kept out of contact in this world (links that touch
            where the robot stands), so that the robot file stays as it is.
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
    armature: Mapping[str, float] = dataclasses.field(default_factory=dict)
    asset_roots: tuple[Path, ...] | None = None
    joint_state_noise: JointStateNoise = dataclasses.field(default_factory=JointStateNoise)
    contact_exclude: tuple[tuple[str, str], ...] = ()

    @property
    def is_urdf(self) -> bool:
        """The robot file is URDF or xacro (compiled by MuJoCo's URDF importer)."""
        return is_urdf(self.mjcf)

    def __post_init__(self) -> None:
        if self.tool_frame is not None:
            check(
                self.ee_site == self.tool_frame.name,
                "tool_frame",
                f"give robot.ee_site or robot.tool_frame, not both (ee_site {self.ee_site!r})",
            )
        check(len(self.arm_joints) > 0, "arm_joints", "must list at least one joint")
        dup = sorted({j for j in self.arm_joints if self.arm_joints.count(j) > 1})
        check(not dup, "arm_joints", f"has duplicates: {dup}")
        check(
            (self.home_keyframe is None) != (self.home_qpos is None),
            "home_keyframe",
            "give exactly one of robot.home_keyframe and robot.home_qpos",
        )
        if self.home_qpos is not None:
            check(
                len(self.home_qpos) == len(self.arm_joints),
                "home_qpos",
                f"has {len(self.home_qpos)} values but robot.arm_joints has {len(self.arm_joints)}",
            )
            check(all(math.isfinite(v) for v in self.home_qpos), "home_qpos", "must be finite")
        bad = {k: v for k, v in self.armature.items() if not (math.isfinite(v) and 0.0 <= v <= 1e4)}
        check(not bad, "armature", f"values must be in [0, 1e4] kg·m² (or kg), got {bad}")
        if self.gripper is not None:
            both = sorted(set(self.gripper.joints) & set(self.arm_joints))
            check(not both, "gripper.joints", f"joints {both} are also in robot.arm_joints")


def _parse_gripper(r: Reader) -> GripperConfig:
    joints = r.strs("joints")
    # One name, or a list of names (one actuator per finger).
    actuators: tuple[str | None, ...] | None = (
        r.strs("actuator") if isinstance(r.raw("actuator", required=True), list) else (r.str_("actuator"),)
    )
    assert actuators is not None  # required above
    command_range = read_pair(r, "command_range")
    assert command_range is not None  # required
    raw = r.raw("ctrl_range", required=False)
    if isinstance(raw, list) and raw and all(isinstance(v, list) for v in raw):
        # One pair per actuator.
        ranges = []
        for i, pair in enumerate(raw):
            key = f"ctrl_range[{i}]"
            value = Reader({key: pair}, r.where, r.path).floats(key, 2)
            assert value is not None
            ranges.append((value[0], value[1]))
        ctrl_ranges = tuple(ranges)
    else:
        one = read_pair(r, "ctrl_range", required=False)
        ctrl_ranges = ((one if one is not None else command_range),) * len(actuators)
    return r.build(
        GripperConfig,
        joints=joints,
        actuators=actuators,
        command_range=command_range,
        ctrl_ranges=ctrl_ranges,
    )


def _parse_tool_frame(r: Reader) -> ToolFrameConfig:
    kwargs: dict[str, Any] = {"body": r.str_("body")}
    name = r.str_("name", required=False)
    if name is not None:
        kwargs["name"] = name
    for key in ("pos", "z_axis", "y_axis"):
        value = r.floats(key, 3, required=False)
        if value is not None:
            kwargs[key] = value
    return r.build(ToolFrameConfig, **kwargs)


def _parse_packages(r: Reader | None, world_dir: Path) -> dict[str, Path]:
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
    r: Reader, key: str, world_dir: Path, allow_external: bool, packages: Mapping[str, Path]
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
                key,
                f"package {name!r} is neither in robot.packages ({sorted(packages)}) nor in the ament index",
            )
        resolved = (folder / rel).resolve()
    else:
        resolved = (world_dir / ref).resolve()
    if not resolved.is_file():
        raise r.fail(key, f"file {ref!r} not found (looked for {resolved})")
    if resolved.is_relative_to(world_dir.resolve()) or allow_external:
        return resolved, None
    return resolved, asset_roots(resolved, packages)


def parse_robot(r: Reader, world_dir: Path, allow_external: bool) -> RobotConfig:
    """The ``robot`` section read by ``r`` (paths relative to ``world_dir``); errors name the field."""
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
    armature_r = r.sub("armature", required=False)
    armature: dict[str, float] = {}
    if armature_r is not None:
        for name in list(armature_r.data):
            armature[str(name)] = armature_r.float_(str(name))  # type: ignore[assignment]
        armature_r.finish()
    tool_r = r.sub("tool_frame", required=False)
    tool_frame = None if tool_r is None else _parse_tool_frame(tool_r)
    ee_site = r.str_("ee_site", required=False)
    if tool_frame is not None and ee_site is None:
        ee_site = tool_frame.name
    noise_r = r.sub("joint_state_noise", required=False)
    noise = (
        JointStateNoise()
        if noise_r is None
        else noise_r.build(
            JointStateNoise,
            position_std=noise_r.float_("position_std", required=False, default=0.0),
            velocity_std=noise_r.float_("velocity_std", required=False, default=0.0),
        )
    )
    excludes = r.raw("contact_exclude", required=False) or []
    if not isinstance(excludes, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(b, str) and b for b in p) for p in excludes
    ):
        raise r.fail("contact_exclude", f"must be a list of [body1, body2] name pairs, got {excludes!r}")
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
        armature=armature,
        asset_roots=roots,
        joint_state_noise=noise,
        contact_exclude=tuple((str(a), str(b)) for a, b in excludes),
    )
