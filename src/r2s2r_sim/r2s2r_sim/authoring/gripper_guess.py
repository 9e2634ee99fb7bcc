"""The gripper of a robot file, as ``r2s2r world new`` guesses it: its actuators, joints and command range."""

from __future__ import annotations

import math
import re
from typing import Any, Protocol

import mujoco
import numpy as np

from r2s2r_sim.errors import WorldError

__all__ = [
    "GRIPPER_RE",
    "actuator_joints",
    "closing_direction",
    "geom_centres",
    "gripper_section",
    "guess_gripper_actuators",
    "y_to_closing",
]

# Names of gripper actuators and joints.
GRIPPER_RE = re.compile(r"finger|jaw|gripper|knuckle|claw|thumb|hand", re.IGNORECASE)


class GripperOptions(Protocol):
    """The user's gripper command range, where given (joint units)."""

    gripper_open: float | None
    gripper_closed: float | None


def actuator_joints(model: mujoco.MjModel, act: int) -> list[int]:
    """Joints an actuator moves: its joint, or the joints of its fixed tendon."""
    kind, target = int(model.actuator_trntype[act]), int(model.actuator_trnid[act, 0])
    if kind in (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT)):
        return [target]
    if kind == int(mujoco.mjtTrn.mjTRN_TENDON):
        adr, num = int(model.tendon_adr[target]), int(model.tendon_num[target])
        return [
            int(model.wrap_objid[w])
            for w in range(adr, adr + num)
            if int(model.wrap_type[w]) == int(mujoco.mjtWrap.mjWRAP_JOINT)
        ]
    return []


def guess_gripper_actuators(model: mujoco.MjModel, notes: list[str]) -> list[int]:
    """The first actuator named like a gripper (or driving a joint named so), and any more like it.

    A gripper whose fingers have one actuator each (no tendon or equality coupling them) is driven through
    all of them, so the further ones must move other joints and have the first one's ctrl range or its
    mirror image (a finger whose joint runs the other way, ``[-0.04, 0]`` beside ``[0, 0.04]``).  One that
    looks like a gripper's but differs is named in ``notes`` and left alone.
    """
    found = [
        act
        for act in range(model.nu)
        if GRIPPER_RE.search(model.actuator(act).name or "")
        or any(GRIPPER_RE.search(model.joint(j).name) for j in actuator_joints(model, act))
    ]
    if not found:
        return []
    first = found[0]
    acts, moved = [first], set(actuator_joints(model, first))
    for act in found[1:]:
        joints = set(actuator_joints(model, act))
        ours, theirs = model.actuator_ctrlrange[act], model.actuator_ctrlrange[first]
        same = (np.allclose(ours, theirs) or np.allclose(ours, -theirs[::-1])) and bool(
            model.actuator_ctrllimited[act] == model.actuator_ctrllimited[first]
        )
        if same and joints and not joints & moved:
            acts.append(act)
            moved |= joints
        else:
            notes.append(
                f"actuator {model.actuator(act).name!r} looks like a gripper's but is not driven with "
                f"{model.actuator(first).name!r} (another ctrl range or the same joints); name the gripper's "
                "actuators with --gripper-actuator A,B if it should be"
            )
    return acts


def closing_direction(
    model: mujoco.MjModel, data: mujoco.MjData, joints: list[int], z: np.ndarray
) -> np.ndarray | None:
    """The way the fingers close across the approach axis ``z``: unit, world frame, None if it cannot be told.

    Two finger bodies close along the line between them, one sliding finger along its joint's axis, and a
    jaw swings about its axis, across ``z``.  The sign is arbitrary.
    """
    if not joints:
        return None
    bodies = list(dict.fromkeys(int(model.jnt_bodyid[j]) for j in joints))
    if len(bodies) >= 2:
        closing = data.xpos[bodies[0]] - data.xpos[bodies[1]]
    elif int(model.jnt_type[joints[0]]) == int(mujoco.mjtJoint.mjJNT_SLIDE):
        closing = data.xaxis[joints[0]].copy()
    else:
        closing = np.cross(data.xaxis[joints[0]], z)
    closing = closing - z * float(closing @ z)
    norm = float(np.linalg.norm(closing))
    return closing / norm if norm > 1e-6 else None


def y_to_closing(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    joints: list[int],
    rot: np.ndarray,
    tolerance_deg: float = 30.0,
) -> np.ndarray | None:
    """The fingers' closing, as the y axis for a frame ``rot`` (world) whose own y is off it.

    None when its y is within ``tolerance_deg`` of it (or the closing cannot be told).
    """
    closing = closing_direction(model, data, joints, rot[:, 2])
    if closing is None or abs(float(closing @ rot[:, 1])) >= math.cos(math.radians(tolerance_deg)):
        return None
    return closing


def geom_centres(model: mujoco.MjModel, data: mujoco.MjData, bodies: set[int]) -> np.ndarray:
    """World centres of the geoms of ``bodies`` (N, 3)."""
    ids = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) in bodies]
    return data.geom_xpos[ids] if ids else np.zeros((0, 3))


def gripper_section(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    opts: GripperOptions,
    acts: list[int],
    joints: list[int],
    finger_bodies: set[int],
    tool_pos: np.ndarray,
    tool_z: np.ndarray,
) -> dict[str, Any]:
    """Gripper joints, actuators and ranges; the open end is where the fingers spread widest.

    A further actuator on a joint of its own gets that joint's ends, open to closed, as its ctrl range,
    so a finger whose joint runs the other way is driven mirrored.
    """
    act = acts[0]
    lo, hi = (float(v) for v in model.jnt_range[joints[0]])
    if not model.jnt_limited[joints[0]] and (opts.gripper_open is None or opts.gripper_closed is None):
        raise WorldError(
            f"--gripper-open/--gripper-closed: gripper joint {model.joint(joints[0]).name!r} has no range; "
            "give both"
        )

    def spread(end: int, moved: list[int]) -> float:
        saved = data.qpos.copy()
        for j in moved:
            data.qpos[model.jnt_qposadr[j]] = model.jnt_range[j, end]
        mujoco.mj_kinematics(model, data)
        pts = geom_centres(model, data, finger_bodies) - tool_pos
        data.qpos[:] = saved
        mujoco.mj_kinematics(model, data)
        radial = pts - np.outer(pts @ tool_z, tool_z)
        return float(np.linalg.norm(radial, axis=1).mean()) if len(pts) else 0.0

    def open_to_closed(moved: list[int], driver: int) -> tuple[float, float]:
        a, b = (float(v) for v in model.jnt_range[moved[0]])
        if (
            int(model.actuator_trntype[driver]) == int(mujoco.mjtTrn.mjTRN_JOINT)
            and int(model.actuator_trnid[driver, 0]) == moved[0]
            and model.actuator_ctrllimited[driver]
        ):  # a servo's ctrl is the joint's target: it reaches only where both ranges allow
            c0, c1 = (float(v) for v in model.actuator_ctrlrange[driver])
            a, b = max(a, c0), min(b, c1)
        return (b, a) if spread(1, moved) > spread(0, moved) else (a, b)

    # The first actuator's own joints: with a finger each, the others may open the other way.
    lead = actuator_joints(model, act)
    joint_range = open_to_closed(
        [joints[0], *(j for j in lead if j != joints[0])] if joints[0] in lead else joints, act
    )
    command = (
        opts.gripper_open if opts.gripper_open is not None else joint_range[0],
        opts.gripper_closed if opts.gripper_closed is not None else joint_range[1],
    )
    out: dict[str, Any] = {
        "joints": [model.joint(j).name for j in joints],
        "actuator": model.actuator(act).name if len(acts) == 1 else [model.actuator(a).name for a in acts],
        "command_range": [round(float(v), 6) for v in command],
    }
    if (
        int(model.actuator_trntype[act]) == int(mujoco.mjtTrn.mjTRN_TENDON)
        and model.actuator_ctrllimited[act]
    ):
        # ctrl over the tendon: its range maps onto the joint range end for end (same direction as the gain)
        c0, c1 = (float(v) for v in model.actuator_ctrlrange[act])
        span = hi - lo
        ctrl = [c0 + (v - lo) / span * (c1 - c0) for v in command]
        out["ctrl_range"] = [round(v, 6) for v in ctrl]
    elif len(acts) > 1:
        pairs = [list(command)] + [
            _follower_ctrl(model, a, joint_range, command, open_to_closed) for a in acts[1:]
        ]
        if any(not np.allclose(p, command) for p in pairs):
            out["ctrl_range"] = [[round(float(v), 6) for v in p] for p in pairs]
    return out


def _follower_ctrl(
    model: mujoco.MjModel,
    act: int,
    lead: tuple[float, float],
    command: tuple[float, float],
    open_to_closed: Any,
) -> list[float]:
    """A further finger actuator's ctrl at the open and closed command.

    Its joint's ends, open to closed, at the command's fraction of the first joint's (``lead``); the
    command itself for an actuator that drives no limited joint of its own.
    """
    moved = actuator_joints(model, act)
    if int(model.actuator_trntype[act]) != int(mujoco.mjtTrn.mjTRN_JOINT) or not model.jnt_limited[moved[0]]:
        return list(command)
    o, c = open_to_closed(moved, act)
    return [o + (v - lead[0]) / (lead[1] - lead[0]) * (c - o) for v in command]
