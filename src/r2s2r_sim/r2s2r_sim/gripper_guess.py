"""The gripper of a robot file, as ``r2s2r world new`` guesses it: its actuators, joints and command range."""

from __future__ import annotations

import re
from typing import Any, Protocol

import mujoco
import numpy as np

from r2s2r_sim.errors import WorldError

__all__ = ["GRIPPER_RE", "actuator_joints", "geom_centres", "gripper_section", "guess_gripper_actuators"]

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
    all of them with the same ctrl, so the further ones must share the first one's ctrl range and move
    other joints.  One that looks like a gripper's but differs is named in ``notes`` and left alone.
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
        same = np.allclose(model.actuator_ctrlrange[act], model.actuator_ctrlrange[first]) and bool(
            model.actuator_ctrllimited[act] == model.actuator_ctrllimited[first]
        )
        if same and joints and not joints & moved:
            acts.append(act)
            moved |= joints
        else:
            notes.append(
                f"actuator {model.actuator(act).name!r} looks like a gripper's but is not driven with "
                f"{model.actuator(first).name!r} (other ctrl range or the same joints); name the gripper's "
                "actuators with --gripper-actuator A,B if it should be"
            )
    return acts


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
    """Gripper joints, actuators and ranges; the open end is where the fingers spread widest."""
    act = acts[0]
    lo, hi = (float(v) for v in model.jnt_range[joints[0]])
    if not model.jnt_limited[joints[0]] and (opts.gripper_open is None or opts.gripper_closed is None):
        raise WorldError(
            f"--gripper-open/--gripper-closed: gripper joint {model.joint(joints[0]).name!r} has no range; "
            "give both"
        )

    def spread(end: int) -> float:
        for j in joints:
            data.qpos[model.jnt_qposadr[j]] = model.jnt_range[j, end]
        mujoco.mj_kinematics(model, data)
        pts = geom_centres(model, data, finger_bodies) - tool_pos
        radial = pts - np.outer(pts @ tool_z, tool_z)
        return float(np.linalg.norm(radial, axis=1).mean()) if len(pts) else 0.0

    open_high = spread(1) > spread(0)
    joint_range = (hi, lo) if open_high else (lo, hi)
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
    return out
