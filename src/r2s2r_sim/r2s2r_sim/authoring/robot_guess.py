"""What ``r2s2r world new`` guesses of a robot file: the robot section of the new world.yaml.

What the robot file does not say is guessed from the model and can be confirmed or overridden:
- arm joints: the hinge and slide joints that are not gripper joints, in tree order;
- gripper: the actuator that drives a joint (or a tendon over joints) whose name says finger, jaw,
  gripper, knuckle or claw; its open end is the end of the joint range where the finger geoms lie
  farthest from the approach axis;
- tool frame: a site named like a tool centre (tcp, pinch, ee, tool, grasp, grip, attachment), else one on
  the last arm body, on the axis from the wrist to the fingers, at grasp depth, half a cube off a fixed jaw
  (axis convention: :class:`r2s2r_sim.world.robot_source.ToolFrameConfig`);
- home: the keyframe ``home`` (else the first one), else ``--home`` or zero clipped to the limits.
The grasp is fitted to the arm where its file falls short: armature on servos that would limit-cycle, the
elliptic friction cone, a tool frame moved to grasp depth (:mod:`r2s2r_sim.authoring.grasp_fit`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import yaml

from r2s2r_sim.authoring.grasp_fit import (
    GRASP_IMPRATIO,
    finger_gap,
    fingertip_reach,
    grasp_depth_shift,
    site_frame,
    site_to_grasp_depth,
    stable_armature,
    subtree,
    tip_depth,
)
from r2s2r_sim.authoring.gripper_guess import (
    GRIPPER_RE,
    actuator_joints,
    closing_direction,
    geom_centres,
    gripper_section,
    guess_gripper_actuators,
    y_to_closing,
)
from r2s2r_sim.errors import WorldError
from r2s2r_sim.world.robot_binding import actuator_id
from r2s2r_sim.world.robot_source import (
    ServoConfig,
    ToolFrameConfig,
    is_urdf,
    load_robot_spec,
    servo_reason,
    torque_motor_joints,
)
from r2s2r_sim.worlds import WORLDS

__all__ = ["DEFAULT_SERVOS", "TABLE_Z", "GuessedRobot", "NewWorldOptions", "guess_robot", "opts_key"]

_TCP_SITE_RE = re.compile(
    r"tcp|pinch|(^|_)ee(_|$)|end_?effector|tool|grasp|(^|_)grip(_|$)|attachment", re.IGNORECASE
)
_HINGE, _SLIDE = int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)
_BUNDLED_PHYSICS: dict[str, Any] = yaml.safe_load(
    (WORLDS["tabletop-pick-v1"] / "world.yaml").read_text(encoding="utf-8")
)["physics"]
# The bundled scene's table top (m): the robot is mounted on it.
TABLE_Z = 0.75
# Half the bundled cube's edge and the gap left between it and a fixed jaw when descending (m).
_CUBE_HALF = 0.02
# Room (m) the open fingers keep around the cube, for the approach's position error.
_FIT_MARGIN = 0.006
_JAW_MARGIN = 0.005
# Servos for arm joints with no actuator (URDF) or a torque motor: stiff enough to hold a 5-10 kg arm.
DEFAULT_SERVOS = ServoConfig(kp=2000.0, kv=100.0)


@dataclass(frozen=True, kw_only=True)
class NewWorldOptions:
    """What the user confirmed or overrode; ``None`` fields are guessed.

    Attributes:
        robot: the robot file, as written into world.yaml (a path or ``package://``).
        robot_file: the robot file on disk.
        world_id: the id of the new world; None: ``<robot file name>-pick-v1``.
        arm_joints, gripper_joints, gripper_actuators: override the guess (one actuator a finger: one ctrl).
        no_gripper: the robot has no gripper, whatever the names say.
        gripper_open, gripper_closed: the command range ends (joint units).
        ee_site: use this site of the robot file as tool frame.
        tool_body, tool_pos, tool_z, tool_y: declare the tool frame (see ToolFrameConfig).
        home: home joint positions (arm joints, command order) when the file has no keyframe.
        xacro_args: arguments of a xacro robot file.
        packages: package folders for ``package://``.
    """

    robot: str
    robot_file: Path
    world_id: str | None = None
    arm_joints: tuple[str, ...] | None = None
    gripper_joints: tuple[str, ...] | None = None
    gripper_actuators: tuple[str, ...] | None = None
    no_gripper: bool = False
    gripper_open: float | None = None
    gripper_closed: float | None = None
    ee_site: str | None = None
    tool_body: str | None = None
    tool_pos: tuple[float, float, float] | None = None
    tool_z: tuple[float, float, float] | None = None
    tool_y: tuple[float, float, float] | None = None
    home: tuple[float, ...] | None = None
    xacro_args: Mapping[str, str] = field(default_factory=dict)
    packages: Mapping[str, Path] = field(default_factory=dict)


@dataclass(frozen=True)
class GuessedRobot:
    """The robot section of a new world, and the reach the scene is scaled to.

    ``reach`` is the tool-down reach (m) from the first joint's axis
    (:func:`r2s2r_sim.world.kinematics.tool_down_reach`), measured by ``world new`` on its probe world
    with the table in place; 0 until then.
    """

    robot: dict[str, Any]
    notes: tuple[str, ...]
    physics: dict[str, Any] = field(default_factory=dict)
    reach: float = 0.0


def _joint_ids(model: mujoco.MjModel, names: Sequence[str], what: str) -> list[int]:
    ids = []
    for name in names:
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid < 0:
            have = [model.joint(i).name for i in range(model.njnt)]
            raise WorldError(f"{what}: joint {name!r} not in the robot file (joints: {have})")
        ids.append(jid)
    return ids


def _robot_model(
    opts: NewWorldOptions, servo_joints: tuple[str, ...] = ()
) -> tuple[mujoco.MjModel, mujoco.MjSpec]:
    spec = load_robot_spec(
        opts.robot_file,
        field="--robot",
        xacro_args=opts.xacro_args,
        packages=opts.packages,
        servo_joints=servo_joints,
        servos=DEFAULT_SERVOS if servo_joints else None,
    )
    try:
        return spec.compile(), spec
    except ValueError as err:
        raise WorldError(f"--robot: {opts.robot_file} does not compile: {err}") from err


def _home_keyframe(model: mujoco.MjModel, data: mujoco.MjData) -> int:
    """The keyframe ``home`` (else the first one), with ``data`` reset to it; -1 when the file has none."""
    if not model.nkey:
        return -1
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home")
    key = key if key >= 0 else 0
    mujoco.mj_resetDataKeyframe(model, data, key)
    return key


def _gripper(model: mujoco.MjModel, opts: NewWorldOptions, notes: list[str]) -> tuple[list[int], list[int]]:
    """The gripper's actuators and the joints reported as the gripper (the user's, else guessed).

    The joints are those the actuators drive unless ``--gripper-joints`` names them; naming joints without
    an actuator is refused, as nothing would move them.
    """
    grip_acts: list[int] = []
    grip_joints: list[int] = []
    if opts.no_gripper:
        return grip_acts, grip_joints
    if opts.gripper_actuators is not None:
        for name in opts.gripper_actuators:
            act = actuator_id(model, name)
            if act < 0:
                have = [model.actuator(i).name for i in range(model.nu)]
                raise WorldError(
                    f"--gripper-actuator: {name!r} not in the robot file (an actuator's name, #index, or the "
                    f"joint or tendon it drives; actuators: {have})"
                )
            grip_acts.append(act)
    else:
        grip_acts = guess_gripper_actuators(model, notes)
    for act in grip_acts:
        grip_joints += [j for j in actuator_joints(model, act) if j not in grip_joints]
    if opts.gripper_joints is not None:
        grip_joints = _joint_ids(model, opts.gripper_joints, "--gripper-joints")
    if not grip_acts and opts.gripper_joints is not None:
        raise WorldError("--gripper-joints: also give --gripper-actuator (no actuator drives those joints)")
    return grip_acts, grip_joints


def _check_opening(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    joints: list[int],
    tool: tuple[np.ndarray, np.ndarray],
    notes: list[str],
) -> None:
    """Refuse a gripper that opens too little for the task's cube; say how wide it opens.

    Raises:
        WorldError: the fingers open less than the cube and a margin (names the figures).
    """
    gap = finger_gap(model, data, joints, *tool)
    if gap is None:
        notes.append("gripper: one moving jaw, its opening is not measured; check that the cube fits")
        return
    cube = 2 * _CUBE_HALF
    if gap < cube + _FIT_MARGIN:
        raise WorldError(
            f"--robot: the gripper opens {gap * 1000:.0f} mm between its fingers; the table task's "
            f"{cube * 1000:.0f} mm cube needs at least {(cube + _FIT_MARGIN) * 1000:.0f} mm"
        )
    notes.append(f"gripper: opens {gap * 1000:.0f} mm between its fingers (the cube is {cube * 1000:.0f} mm)")


def _home(
    model: mujoco.MjModel, data: mujoco.MjData, opts: NewWorldOptions, arm: list[int], key: int
) -> np.ndarray:
    """The arm's home joint positions, set in ``data``: the keyframe's, else ``--home`` or zero, in limits."""
    if key >= 0:
        return data.qpos[model.jnt_qposadr[arm]].copy()
    home_q = np.zeros(len(arm)) if opts.home is None else np.asarray(opts.home, dtype=np.float64)
    if len(home_q) != len(arm):
        raise WorldError(f"--home: needs {len(arm)} values (one per arm joint), got {len(home_q)}")
    limited = model.jnt_limited[arm].astype(bool)
    home_q = np.where(limited, np.clip(home_q, model.jnt_range[arm, 0], model.jnt_range[arm, 1]), home_q)
    data.qpos[model.jnt_qposadr[arm]] = home_q
    return home_q


def _robot_head(
    model: mujoco.MjModel, opts: NewWorldOptions, key: int, home_q: np.ndarray, arm: list[int]
) -> dict[str, Any]:
    """The robot section's first keys: the file and how to load it, mount, home and arm joints."""
    robot: dict[str, Any] = {opts_key(opts): opts.robot}
    if opts.xacro_args:
        robot["xacro_args"] = dict(opts.xacro_args)
    if opts.packages:
        robot["packages"] = {k: str(v) for k, v in opts.packages.items()}
    robot["attach"] = {"pos": [0.0, 0.0, TABLE_Z], "quat": [1.0, 0.0, 0.0, 0.0]}
    robot["prefix"] = ""
    if key >= 0:
        if not model.key(key).name:
            raise WorldError("--robot: the robot file's keyframe has no name; name it or give --home")
        robot["home_keyframe"] = model.key(key).name
    else:
        robot["home_qpos"] = [round(float(v), 6) for v in home_q]
    robot["arm_joints"] = [model.joint(j).name for j in arm]
    return robot


def _site_tool_frame(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    opts: NewWorldOptions,
    site: str,
    grip: tuple[list[int], list[int], set[int]],
    robot: dict[str, Any],
    notes: list[str],
) -> tuple[np.ndarray, np.ndarray]:
    """Tool frame at a site of the robot file; its world position and approach axis.

    A guessed site is moved to grasp depth and turned to the fingers' closing direction (it was named for
    another gripper convention); a site the user named is taken as it is.  ``grip``: the gripper's
    actuators, joints and finger bodies.
    """
    grip_acts, grip_joints, finger_bodies = grip
    sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)
    tool_pos, tool_z = data.site_xpos[sid].copy(), data.site_xmat[sid].reshape(3, 3)[:, 2].copy()
    shift, closing = 0.0, None
    if opts.ee_site is None:
        moved = site_to_grasp_depth(model, data, sid, finger_bodies, grip_acts, _CUBE_HALF)
        shift = moved[1] if moved else 0.0
        closing = y_to_closing(model, data, grip_joints, data.site_xmat[sid].reshape(3, 3))
    if not shift and closing is None:
        robot["ee_site"] = site
        return tool_pos, tool_z
    robot["tool_frame"] = site_frame(model, data, sid, shift, closing)
    tool_pos = tool_pos + shift * tool_z
    if shift:
        notes.append(
            f"tool frame: the site {site!r} moved {abs(shift) * 1000:.0f} mm "
            f"{'back' if shift < 0 else 'forward'} along its approach axis, "
            f"so the fingertips reach {tip_depth(_CUBE_HALF) * 1000:.0f} mm past it"
        )
    if closing is not None:
        notes.append(f"tool frame: y turned about z from the site {site!r}'s to the fingers' closing")
    return tool_pos, tool_z


def _body_tool_frame(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    opts: NewWorldOptions,
    arm: list[int],
    grip: tuple[list[int], list[int], set[int]],
    robot: dict[str, Any],
    notes: list[str],
) -> tuple[np.ndarray, np.ndarray]:
    """Tool frame declared on a body (the user's, else the last arm body); its world position and axis.

    A guessed origin sits at the fingers' mean depth, so it is moved to grasp depth as a site would be.
    ``grip``: the gripper's actuators, joints and finger bodies.
    """
    grip_acts, grip_joints, finger_bodies = grip
    last_body = int(model.jnt_bodyid[arm[-1]])
    wrist = data.xanchor[arm[-1]].copy()
    frame = _tool_frame(model, data, opts, arm, grip_joints, finger_bodies, last_body, wrist)
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, frame["body"])
    rot = data.xmat[body].reshape(3, 3)
    if opts.tool_pos is None:
        local, local_z = np.asarray(frame["pos"]), np.asarray(frame["z_axis"])

        def at_frame(sim: mujoco.MjData) -> tuple[np.ndarray, np.ndarray]:
            r = sim.xmat[body].reshape(3, 3)
            return sim.xpos[body] + r @ local, r @ local_z

        reach = fingertip_reach(model, data, at_frame, finger_bodies, grip_acts)
        shift = grasp_depth_shift(reach, _CUBE_HALF)
        if shift is not None:
            frame["pos"] = [round(float(v), 6) for v in local + shift * local_z]
            notes.append(
                f"tool frame: moved {abs(shift) * 1000:.0f} mm {'back' if shift < 0 else 'forward'} "
                "from the fingers' mean depth, so the fingertips reach "
                f"{tip_depth(_CUBE_HALF) * 1000:.0f} mm past it"
            )
    robot["tool_frame"] = frame
    return data.xpos[body] + rot @ np.asarray(frame["pos"]), rot @ np.asarray(frame["z_axis"])


def _fit_physics(
    model: mujoco.MjModel, data: mujoco.MjData, arm: list[int], robot: dict[str, Any], notes: list[str]
) -> dict[str, Any]:
    """Armature (into ``robot``) and physics settings (returned) the grasp needs beyond the robot file.

    Servos too stiffly damped for their inertia limit-cycle at the bundled timestep, and under MuJoCo's
    pyramidal friction cone a squeezed object slides out of the fingers.
    """
    armature = stable_armature(model, data, arm, float(_BUNDLED_PHYSICS.get("timestep", model.opt.timestep)))
    if armature:
        robot["armature"] = armature
        notes.append(
            "armature added where a servo's damping is stiff for the inertia it drives, alone or with joints "
            f"lined up with it (kv*dt > 2 * inertia; it limit-cycles at its force limit): {armature}"
        )
    physics: dict[str, Any] = {}
    if "gripper" in robot and int(model.opt.cone) != int(mujoco.mjtCone.mjCONE_ELLIPTIC):
        physics = {"cone": "elliptic", "impratio": max(float(model.opt.impratio), GRASP_IMPRATIO)}
        notes.append(
            f"physics: elliptic friction cone, impratio {physics['impratio']:g} (the robot file keeps "
            "MuJoCo's pyramidal default, under which a squeezed object slides out of the fingers)"
        )
    return physics


def guess_robot(opts: NewWorldOptions) -> GuessedRobot:
    """Guess the robot section of world.yaml from the robot file and ``opts``.

    Raises:
        WorldError: an override names something the robot file lacks, or nothing can be guessed.
    """
    model, spec = _robot_model(opts)
    data = mujoco.MjData(model)
    notes: list[str] = []
    moving = [j for j in range(model.njnt) if int(model.jnt_type[j]) in (_HINGE, _SLIDE)]
    key = _home_keyframe(model, data)
    grip_acts, grip_joints = _gripper(model, opts, notes)
    finger_joints = {j for j in moving if GRIPPER_RE.search(model.joint(j).name)} | set(grip_joints)
    if opts.arm_joints is not None:
        arm = _joint_ids(model, opts.arm_joints, "--arm-joints")
    else:
        arm = [j for j in moving if j not in finger_joints]
    if not arm:
        raise WorldError("--arm-joints: no arm joints found in the robot file; name them")
    home_q = _home(model, data, opts, arm, key)
    mujoco.mj_kinematics(model, data)

    robot = _robot_head(model, opts, key, home_q, arm)
    servo_why = servo_reason(spec, tuple(robot["arm_joints"]), urdf=is_urdf(opts.robot_file))
    # A gripper on a force motor would get its opening in joint units as a force: it gets a servo too.
    grip_names = tuple(model.joint(j).name for j in grip_joints)
    grip_motors = torque_motor_joints(spec, grip_names)
    if grip_motors:
        why = f"force motors drive the gripper joints {grip_motors}"
        servo_why = f"{servo_why}; {why}" if servo_why else why
    if servo_why:
        robot["servos"] = {"kp": DEFAULT_SERVOS.kp, "kv": DEFAULT_SERVOS.kv}
        notes.append(f"{servo_why}: position servos kp {DEFAULT_SERVOS.kp}, kv {DEFAULT_SERVOS.kv}")
        # What follows (grasp and stability fits) sees the servos the world will have.
        model, _ = _robot_model(opts, tuple(robot["arm_joints"]) + grip_names)
        data = mujoco.MjData(model)
        if key >= 0:
            mujoco.mj_resetDataKeyframe(model, data, key)
        data.qpos[model.jnt_qposadr[arm]] = home_q
        mujoco.mj_kinematics(model, data)

    finger_bodies: set[int] = set()
    for j in grip_joints:
        finger_bodies |= subtree(model, int(model.jnt_bodyid[j]))
    grip = (grip_acts, grip_joints, finger_bodies)
    site = _tool_site(model, opts, notes)
    if site is not None:
        tool_pos, tool_z = _site_tool_frame(model, data, opts, site, grip, robot, notes)
    else:
        tool_pos, tool_z = _body_tool_frame(model, data, opts, arm, grip, robot, notes)
    if grip_acts and grip_joints:
        robot["gripper"] = gripper_section(
            model, data, opts, grip_acts, grip_joints, finger_bodies, tool_pos, tool_z
        )
        _check_opening(model, data, grip_joints, (tool_pos, tool_z), notes)
    elif not opts.no_gripper:
        notes.append("no gripper found (no actuator on a finger/jaw/gripper joint); the world has none")
    physics = _fit_physics(model, data, arm, robot, notes)
    return GuessedRobot(robot=robot, notes=tuple(notes), physics=physics)


def opts_key(opts: NewWorldOptions) -> str:
    """``urdf`` or ``mjcf``: the world.yaml key of the robot file."""
    return "urdf" if is_urdf(opts.robot_file) else "mjcf"


def _tool_site(model: mujoco.MjModel, opts: NewWorldOptions, notes: list[str]) -> str | None:
    if opts.ee_site is not None:
        if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, opts.ee_site) < 0:
            have = [model.site(i).name for i in range(model.nsite)]
            raise WorldError(f"--ee-site: site {opts.ee_site!r} not in the robot file (sites: {have})")
        return opts.ee_site
    if opts.tool_body is not None:
        return None
    for sid in range(model.nsite):
        if _TCP_SITE_RE.search(model.site(sid).name or ""):
            notes.append(f"tool frame: the robot file's site {model.site(sid).name!r} (check its axes)")
            return str(model.site(sid).name)
    return None


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 1e-9 else v


def _coupled(model: mujoco.MjModel, joint: int, finger_bodies: set[int]) -> bool:
    """Whether an equality constraint moves other fingers with ``joint`` (a linkage gripper's far jaw)."""
    for e in range(model.neq):
        kind, a, b = int(model.eq_type[e]), int(model.eq_obj1id[e]), int(model.eq_obj2id[e])
        if kind == int(mujoco.mjtEq.mjEQ_JOINT) and joint in (a, b):
            return True
        if kind in (int(mujoco.mjtEq.mjEQ_CONNECT), int(mujoco.mjtEq.mjEQ_WELD)) and (
            a in finger_bodies or b in finger_bodies
        ):
            return True
    return False


def _jaw_shift(
    model: mujoco.MjModel, data: mujoco.MjData, grip_joints: list[int], finger_bodies: set[int], z: np.ndarray
) -> np.ndarray:
    """Sideways shift (world) of the grasp centre of a gripper with one moving jaw against a fixed one.

    Closed, the jaws meet on the approach axis; a cube centred there would land on the fixed jaw.  The
    grasp centre lies half a cube (and a margin) from the fixed jaw toward where the moving jaw opens.
    Zero for grippers whose fingers close from both sides.
    """
    if len(grip_joints) != 1 or model.nu == 0 or _coupled(model, grip_joints[0], finger_bodies):
        return np.zeros(3)
    joint = grip_joints[0]
    adr = int(model.jnt_qposadr[joint])
    keep = float(data.qpos[adr])
    ends = []
    for value in model.jnt_range[joint]:
        data.qpos[adr] = value
        mujoco.mj_kinematics(model, data)
        ends.append(geom_centres(model, data, finger_bodies).mean(axis=0))
    data.qpos[adr] = keep
    mujoco.mj_kinematics(model, data)
    lateral = [e - z * float(e @ z) for e in ends]
    move = lateral[1] - lateral[0]
    # the open end is the one whose fingers lie farther from the fixed jaw (the closed-end position)
    if float(np.linalg.norm(move)) < 1e-6:
        return np.zeros(3)
    centre_axis = data.xpos[int(model.body_parentid[int(model.jnt_bodyid[joint])])]
    radial = [float(np.linalg.norm(lat - (centre_axis - z * float(centre_axis @ z)))) for lat in lateral]
    direction = _unit(move if radial[1] > radial[0] else -move)
    return direction * (_CUBE_HALF + _JAW_MARGIN)


def _tool_frame(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    opts: NewWorldOptions,
    arm: list[int],
    grip_joints: list[int],
    finger_bodies: set[int],
    last_body: int,
    wrist: np.ndarray,
) -> dict[str, Any]:
    """A tool frame on the last arm body (world-frame guess, written in the body's frame)."""
    body = last_body
    if opts.tool_body is not None:
        body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, opts.tool_body)
        if body < 0:
            have = [model.body(i).name for i in range(model.nbody)]
            raise WorldError(f"--tool-body: body {opts.tool_body!r} not in the robot file (bodies: {have})")
    rot = data.xmat[body].reshape(3, 3)
    axis = _unit(data.xaxis[arm[-1]].copy())
    fingers = geom_centres(model, data, finger_bodies)
    if len(fingers):
        centre = fingers.mean(axis=0)
        z = _unit(centre - wrist)
        if abs(float(axis @ z)) > 0.7:  # a wrist roll joint: its axis is the approach axis
            z = axis * math.copysign(1.0, float(axis @ z))
        pos = wrist + z * float((centre - wrist) @ z) + _jaw_shift(model, data, grip_joints, finger_bodies, z)
    else:
        z = axis
        pos = data.xpos[body].copy()
    y = closing_direction(model, data, grip_joints, z)
    if y is None:
        y = _unit(np.cross(z, [0.0, 0.0, 1.0]) if abs(z[2]) < 0.9 else np.cross(z, [1.0, 0.0, 0.0]))
    frame = {
        "name": "tool_frame",
        "body": model.body(body).name,
        "pos": rot.T @ (pos - data.xpos[body]),
        "z_axis": rot.T @ z,
        "y_axis": rot.T @ y,
    }
    if opts.tool_pos is not None:
        frame["pos"] = np.asarray(opts.tool_pos)
    if opts.tool_z is not None:
        frame["z_axis"] = np.asarray(opts.tool_z)
    if opts.tool_y is not None:
        frame["y_axis"] = np.asarray(opts.tool_y)
    out: dict[str, Any] = {
        k: v if isinstance(v, str) else [round(float(x), 6) for x in v] for k, v in frame.items()
    }
    ToolFrameConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in out.items()})  # validates
    return out
