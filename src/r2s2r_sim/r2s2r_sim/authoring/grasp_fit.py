"""What a two-finger grasp needs from a world: stable servos, a grasping friction cone, a deep tool frame.

``r2s2r world new`` writes these into a new world (``robot.armature``, ``physics.cone``/``impratio``, a
``robot.tool_frame`` moved from the robot file's site); ``r2s2r world check`` warns where a world lacks them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import mujoco
import numpy as np

__all__ = [
    "finger_gap",
    "GRASP_IMPRATIO",
    "HOLD_LOADS_G",
    "STABLE_DAMPING_RATIO",
    "extent_along",
    "grip_hold",
    "fingertip_reach",
    "grasp_depth_shift",
    "site_frame",
    "site_to_grasp_depth",
    "stable_armature",
    "subtree",
    "tip_depth",
]

# Fingertips reach half the object less this (m) past the tool centre when it is at the object's centre:
# 5 mm above the table (the reference policy's grasp_offset_m = 0).  A robot file's own tool site more
# than _TIP_TOLERANCE short of that (one at the fingertips, as vendors place it) is moved back along its
# approach axis, or the fingers close on the cube's top edge only and it slips out on the lift; one more
# than _TIP_TOLERANCE beyond it (at the hand's flange) is moved forward, or the fingertips meet the table.
_TIP_CLEARANCE = 0.005
_TIP_TOLERANCE = 0.005
# A grasp holds with the elliptic friction cone and this impratio (what the bundled arm's and the SO-ARM100's
# files set); MuJoCo's pyramidal default lets a squeezed cube slide out of the fingers.
GRASP_IMPRATIO = 10.0
# Loads (multiples of g) of the squeeze test: the object's weight, and the reference policy's carrying
# accelerations on top of it with margin.  It has slipped when it moved this far (m) in the tool frame.
HOLD_LOADS_G = (1.0, 2.0, 3.0)
_HOLD_SLIP_M = 0.01
# Explicit damping is stable below this kv * dt / inertia.
STABLE_DAMPING_RATIO = 2.0


def subtree(model: mujoco.MjModel, body: int) -> set[int]:
    """``body`` and every body below it (bodies are numbered parents first)."""
    out = {body}
    for b in range(body + 1, model.nbody):
        if int(model.body_parentid[b]) in out:
            out.add(b)
    return out


# How far (m) along the approach axis behind a finger's deepest geom another still counts as its tip.
_PAD_DEPTH = 0.02


def finger_gap(
    model: mujoco.MjModel, data: mujoco.MjData, joints: list[int], tool_pos: np.ndarray, tool_z: np.ndarray
) -> float | None:
    """How wide (m) the gripper opens at grasp depth: the widest gap between two fingers' colliding geoms.

    Each limited gripper joint (and each joint that follows one through a joint equality) is tried at both
    ends of its range (a finger may open either way).  The gap is the nearest distance between the geoms
    below the first two moving finger bodies that lie within :data:`_PAD_DEPTH` of each finger's deepest
    along the approach axis ``tool_z``: the fingertips, not a linkage's knuckles near the palm.  None for a
    gripper with one moving jaw, whose gap to the fixed jaw cannot be told from the bodies alone.
    """
    # a finger that follows another through a joint equality (a linkage's far jaw) opens too
    followers = [
        int(model.eq_obj1id[e])
        for e in range(model.neq)
        if int(model.eq_type[e]) == int(mujoco.mjtEq.mjEQ_JOINT) and int(model.eq_obj2id[e]) in joints
    ]
    moving = list(dict.fromkeys([*joints, *followers]))
    limited = [j for j in moving if model.jnt_limited[j]][:4]
    bodies = list(dict.fromkeys(int(model.jnt_bodyid[j]) for j in limited))
    if len(bodies) < 2:
        return None

    mujoco.mj_kinematics(model, data)

    def colliding(body: int) -> list[int]:
        below = subtree(model, body)
        geoms = [
            g
            for g in range(model.ngeom)
            if int(model.geom_bodyid[g]) in below and (model.geom_contype[g] or model.geom_conaffinity[g])
        ]
        depth = {g: float((data.geom_xpos[g] - tool_pos) @ tool_z) for g in geoms}
        tip = max(depth.values(), default=0.0)
        return [g for g in geoms if depth[g] >= tip - _PAD_DEPTH]

    first, second = colliding(bodies[0]), colliding(bodies[1])
    if not first or not second:
        return None
    saved = data.qpos.copy()
    widest = 0.0
    for ends in itertools.product((0, 1), repeat=len(limited)):
        for j, end in zip(limited, ends, strict=True):
            data.qpos[model.jnt_qposadr[j]] = model.jnt_range[j, end]
        mujoco.mj_kinematics(model, data)
        gap = min(mujoco.mj_geomDistance(model, data, a, b, 1.0, None) for a in first for b in second)
        widest = max(widest, float(gap))
    data.qpos[:] = saved
    mujoco.mj_kinematics(model, data)
    return widest


def tip_depth(object_half: float) -> float:
    """How far (m) the fingertips should reach past the tool centre: half the object less the clearance."""
    return object_half - _TIP_CLEARANCE


def stable_armature(
    model: mujoco.MjModel, data: mujoco.MjData, arm: list[int], dt: float
) -> dict[str, float]:
    """Armature for the arm servos whose ``kv * dt`` passes twice the inertia they drive at home.

    Damping integrated explicitly is stable while ``kv * dt / inertia < 2``.  A servo past that (a light
    last wrist behind a stiff servo: kv 80 N·m·s/rad on 0.001 kg·m²) is stable only while MuJoCo integrates
    its damping implicitly; once its force range clips the force it turns into a bang-bang limit cycle.  The
    armature brings the ratio to 1; geared arms have rotor inertia of this order (the bundled arm models
    0.05-0.1 kg·m²).  Joints are coupled, so the ratio is also checked for the arm as a whole (every
    generalized eigenvalue of ``kv * dt`` against the mass matrix): two wrist joints whose axes nearly line
    up share a light mode that neither joint's own inertia shows, and the joints in it get armature
    ``kv * dt`` each.  Returns ``{joint name: armature}`` (kg·m² or kg) for those joints only (servos
    without a force range never clip and are left alone).
    """
    mujoco.mj_forward(model, data)
    inertia = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, inertia)
    servo: dict[int, tuple[int, float]] = {}  # dof: (joint, kv * dt)
    for act in range(model.nu):
        if int(model.actuator_trntype[act]) != int(mujoco.mjtTrn.mjTRN_JOINT):
            continue
        joint = int(model.actuator_trnid[act, 0])
        if joint not in arm or int(model.actuator_biastype[act]) != int(mujoco.mjtBias.mjBIAS_AFFINE):
            continue
        if not model.actuator_forcelimited[act]:  # never clipped: its damping stays implicit
            continue
        servo[int(model.jnt_dofadr[joint])] = (joint, -float(model.actuator_biasprm[act, 2]) * dt)
    added = {dof: max(0.0, k - float(inertia[dof, dof])) for dof, (_, k) in servo.items()}
    added = {dof: a for dof, a in added.items() if servo[dof][1] > STABLE_DAMPING_RATIO * (inertia[dof, dof])}
    dofs = sorted(servo)
    damping = np.array([servo[d][1] for d in dofs])
    for _ in range(len(dofs) if dofs else 0):
        mass = inertia[np.ix_(dofs, dofs)] + np.diag([added.get(d, 0.0) for d in dofs])
        lower = np.linalg.cholesky(mass)
        inv = np.linalg.inv(lower)
        ratio, modes = np.linalg.eigh(inv @ np.diag(damping) @ inv.T)
        if ratio[-1] < STABLE_DAMPING_RATIO:
            break
        mode = np.abs(inv.T @ modes[:, -1])
        for i in np.flatnonzero(mode > 0.1 * mode.max()):
            armature_now = float(model.dof_armature[dofs[i]]) + added.get(dofs[i], 0.0)
            added[dofs[i]] = added.get(dofs[i], 0.0) + max(0.0, damping[i] - armature_now)
    return {
        model.joint(servo[dof][0]).name: round(float(model.dof_armature[dof] + a), 4)
        for dof, a in sorted(added.items())
        if a > 0.0
    }


def fingertip_reach(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    frame: Callable[[mujoco.MjData], tuple[np.ndarray, np.ndarray]],
    finger_bodies: set[int],
    grip_act: int | list[int],
) -> float | None:
    """How far (m) the fingertips reach past a tool frame along its approach axis; None without fingers.

    ``frame(data)`` gives the frame's world position and approach axis.  The reach is the farthest any
    finger collision geom extends along that axis with the gripper driven to either end of its control
    range (linkage fingers swing forward as they close; their passive joints follow only through the
    simulated equality constraints, so the gripper is stepped there, without gravity, from ``data``).
    """
    geoms = [
        g
        for g in range(model.ngeom)
        if int(model.geom_bodyid[g]) in finger_bodies and (model.geom_contype[g] or model.geom_conaffinity[g])
    ]
    acts = [int(a) for a in np.atleast_1d(grip_act)]
    if not geoms or not acts or min(acts) < 0:
        return None
    gravity = model.opt.gravity.copy()
    model.opt.gravity[:] = 0.0
    sim = mujoco.MjData(model)
    reach = -math.inf
    # Each actuator to each end of its own range (a mirrored finger's range runs the other way).
    ends = np.array([model.actuator_ctrlrange[a] if model.actuator_ctrllimited[a] else (-1, 1) for a in acts])
    try:
        for end in (0, 1):
            sim.qpos[:], sim.qvel[:] = data.qpos, 0.0
            sim.ctrl[:] = data.ctrl
            sim.ctrl[acts] = ends[:, end]
            for _ in range(int(1.0 / model.opt.timestep)):
                mujoco.mj_step(model, sim)
            pos, z = frame(sim)
            reach = max(reach, *(extent_along(model, sim, g, pos, z) for g in geoms))
    finally:
        model.opt.gravity[:] = gravity
    return reach


def grasp_depth_shift(reach: float | None, object_half: float) -> float | None:
    """How far (m) to move a tool frame along its approach axis for the fingertips to reach :func:`tip_depth`.

    Negative back, positive forward; None when it is close enough (or there are no fingers).
    """
    if reach is None:
        return None
    shift = reach - tip_depth(object_half)
    return None if abs(shift) <= _TIP_TOLERANCE else shift


def site_to_grasp_depth(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    site: int,
    finger_bodies: set[int],
    grip_act: int | list[int],
    object_half: float,
) -> tuple[dict[str, Any], float] | None:
    """A tool frame on the site's body, moved so the fingertips reach :func:`tip_depth` past it.

    It moves back along the approach axis when they fall short (see :func:`fingertip_reach`), forward when
    they would reach into the table.  None when the site is close enough.
    """

    def at_site(sim: mujoco.MjData) -> tuple[np.ndarray, np.ndarray]:
        return sim.site_xpos[site], sim.site_xmat[site].reshape(3, 3)[:, 2]

    shift = grasp_depth_shift(fingertip_reach(model, data, at_site, finger_bodies, grip_act), object_half)
    if shift is None:
        return None
    return site_frame(model, data, site, shift), shift


def site_frame(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    site: int,
    shift: float = 0.0,
    y_axis: np.ndarray | None = None,
) -> dict[str, Any]:
    """The site as a ``robot.tool_frame`` on its body.

    Moved ``shift`` (m) along its z, with ``y_axis`` (world frame, across z) for its own y where given.
    """
    body = int(model.site_bodyid[site])
    rot, origin = data.xmat[body].reshape(3, 3), data.xpos[body]
    site_rot = data.site_xmat[site].reshape(3, 3)
    frame = {
        "name": "tool_frame",
        "body": model.body(body).name,
        "pos": rot.T @ (data.site_xpos[site] + shift * site_rot[:, 2] - origin),
        "z_axis": rot.T @ site_rot[:, 2],
        "y_axis": rot.T @ (site_rot[:, 1] if y_axis is None else y_axis),
    }
    return {k: v if isinstance(v, str) else [round(float(x), 6) for x in v] for k, v in frame.items()}


def extent_along(
    model: mujoco.MjModel, data: mujoco.MjData, geom: int, origin: np.ndarray, axis: np.ndarray
) -> float:
    """How far geom ``geom`` extends along ``axis`` from ``origin`` (mesh vertices, else its bounding box)."""
    rot, centre = data.geom_xmat[geom].reshape(3, 3), data.geom_xpos[geom]
    mesh = int(model.geom_dataid[geom])
    if int(model.geom_type[geom]) == int(mujoco.mjtGeom.mjGEOM_MESH) and mesh >= 0:
        adr, num = int(model.mesh_vertadr[mesh]), int(model.mesh_vertnum[mesh])
        points = centre + model.mesh_vert[adr : adr + num] @ rot.T
    else:
        half = model.geom_aabb[geom, 3:]
        corners = np.array([[a, b, c] for a in (-1, 1) for b in (-1, 1) for c in (-1, 1)]) * half
        points = centre + (model.geom_aabb[geom, :3] + corners) @ rot.T
    return float(((points - origin) @ axis).max())


def grip_hold(
    model: mujoco.MjModel,
    data: mujoco.MjData,
    *,
    object_body: int,
    site: int,
    grip_act: int | list[int],
    ctrl: tuple[float | np.ndarray, float | np.ndarray],
    loads: tuple[float, ...] = HOLD_LOADS_G,
) -> float:
    """The largest load (multiple of g, from ``loads``) under which the closed gripper holds the object.

    A squeeze test on a copy of ``data``: without gravity the gripper opens (``ctrl[0]``), the object is
    put at the tool frame with its axes, the gripper closes (``ctrl[1]``; either end one value for every
    actuator, or one per actuator), then gravity times the load pulls
    the object along the approach axis (a tool-down carry) for a second.  It holds when it moves less than
    ``_HOLD_SLIP_M`` in the tool frame.  This is the squeeze force, the friction and the tool frame's depth
    together, as a grasp meets them.  0 when even 1 g pulls it out (or ``loads`` is empty).
    """
    free = [
        j
        for j in range(model.njnt)
        if int(model.jnt_bodyid[j]) == object_body
        and int(model.jnt_type[j]) == int(mujoco.mjtJoint.mjJNT_FREE)
    ]
    if not free:
        return 0.0
    qadr, vadr = int(model.jnt_qposadr[free[0]]), int(model.jnt_dofadr[free[0]])
    gravity = model.opt.gravity.copy()
    steps = int(round(1.0 / model.opt.timestep))
    held = 0.0
    try:
        for load in loads:
            sim = mujoco.MjData(model)
            mujoco.mj_copyData(sim, model, data)
            model.opt.gravity[:] = 0.0
            sim.ctrl[np.atleast_1d(grip_act)] = ctrl[0]
            for _ in range(steps // 2):
                mujoco.mj_step(model, sim)
            rot = sim.site_xmat[site].reshape(3, 3).copy()
            quat = np.empty(4)
            mujoco.mju_mat2Quat(quat, rot.reshape(9))
            sim.qpos[qadr : qadr + 3] = sim.site_xpos[site]
            sim.qpos[qadr + 3 : qadr + 7] = quat
            sim.qvel[vadr : vadr + 6] = 0.0
            sim.ctrl[np.atleast_1d(grip_act)] = ctrl[1]
            for _ in range(steps):
                mujoco.mj_step(model, sim)
            start = _in_tool(sim, object_body, site)
            model.opt.gravity[:] = (
                load * float(np.linalg.norm(gravity)) * sim.site_xmat[site].reshape(3, 3)[:, 2]
            )
            for _ in range(steps):
                mujoco.mj_step(model, sim)
            if float(np.linalg.norm(_in_tool(sim, object_body, site) - start)) >= _HOLD_SLIP_M:
                break
            held = load
    finally:
        model.opt.gravity[:] = gravity
    return held


def _in_tool(data: mujoco.MjData, body: int, site: int) -> np.ndarray:
    return data.site_xmat[site].reshape(3, 3).T @ (data.xpos[body] - data.site_xpos[site])
