"""A drawer's joint from a capture: axis and range from the images, damping and friction from the efforts.

Input: the ``articulation`` phase of a capture (:mod:`r2s2r_capture.procedures.articulation`), the calibrated
camera and the template robot's kinematics.  Nothing of the emulator's truth is read.

- **Axis and range** (vision): the handle (pixels of the template handle's colour) back-projected with the
  calibrated camera in the two still views, drawer closed and drawer pulled as far as the stop or the
  arm's reach.  The axis is the direction of the displacement of the handle's outermost part, the opening
  seen its length.  Whether the stop was hit is told by the stop pull: at its end the arm lags its command
  (through the arm's kinematics) by more than before it.
- **Damping and friction** (efforts): each hooked pass minus the free pass with the very same joint
  commands leaves the joint torques of the drawer's force alone, whatever the arm's gravity, inertia and
  friction (the robot needs no dynamic model for it).  Projected through the tool Jacobian on the axis it
  is the force ``F``; on the constant-speed plateaus ``F = c v + f sign(v)`` (the joint's damping ``c``,
  N s/m, and friction loss ``f``, N).  Plateaus at several speeds, opening and closing, separate the two;
  a least-squares fit over the plateaus' median forces gives them with standard errors
  (:func:`r2s2r_capture.sysid.uncertainty.regression_std`).  The release of the handle is not used: a drawer
  of ~1 kg with ~10 N s/m of damping stops within ~0.1 s, one or two camera frames.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.world.kinematics import KinematicArm
from r2s2r_sim.world.sim_world import SimWorld

from r2s2r_capture.bags.reader import BagReader
from r2s2r_capture.errors import BagError, IdentificationError, ReconstructionError
from r2s2r_capture.procedures.session import PHASE_TOPIC, topic_names
from r2s2r_capture.real2sim.frames import camera_topics, depth_m, image_array, undistort
from r2s2r_capture.sysid.uncertainty import Z95, parameter_range, regression_std

__all__ = [
    "ArticulationEstimate",
    "articulation_variations",
    "estimate_articulation",
    "kept_objects",
    "place_articulated",
]

_PLATEAU = 0.15  # samples within +-15 % of a pass's plateau speed are at constant speed
_CONTACT = 0.5  # samples below half the upper-quartile force (against motion) have the hook slack
_CHROMA_TOL = 0.07  # handle pixels: chromaticity within this of the handle's colour
_STOP_SLACK_M = 0.005  # the arm lags its stop-pull command this much more than at rest: stop hit
_KNOCK = 0.4  # leading share of an engaged stretch left out: the hook's knock dies down
_FRONT_M = 0.012  # the handle's outermost part: pixels within this of its front (m)


@dataclasses.dataclass(frozen=True)
class ArticulationEstimate:
    """The joint as the capture shows it (world frame, SI units).

    Attributes:
        joint: the template's joint name.
        axis: unit opening direction.
        closed_handle: centre of the handle's outermost part (as seen) with the drawer closed (m).
        range: joint range (m) from 0 at the closed position: to the stop where the stop pull reached it,
            else to the template's range end or the furthest opening seen, whichever is further (an
            unseen stop is not put where the pull ended).
        range_seen: the furthest opening seen (m).
        stop_hit: whether the stop pull reached the stop.
        damping: N s/m; damping_std its standard error.
        frictionloss: N; frictionloss_std its standard error.
        samples: joint states in the force fit (constant speed, hook engaged).
    """

    joint: str
    axis: np.ndarray
    closed_handle: np.ndarray
    range: tuple[float, float]
    range_seen: float
    stop_hit: bool
    damping: float
    damping_std: float
    frictionloss: float
    frictionloss_std: float
    samples: int

    def summary(self) -> dict[str, Any]:
        """Plain values for ``real2sim.yaml``."""
        return {
            "joint": self.joint,
            "axis": [float(v) for v in self.axis],
            "closed_handle": [float(v) for v in self.closed_handle],
            "range": [float(v) for v in self.range],
            "range_seen": self.range_seen,
            "stop_hit": bool(self.stop_hit),
            "damping": self.damping,
            "damping_std": self.damping_std,
            "frictionloss": self.frictionloss,
            "frictionloss_std": self.frictionloss_std,
            "samples": self.samples,
        }


@dataclasses.dataclass
class _Phase:
    frames: dict[str, list[tuple[np.ndarray, np.ndarray]]]
    passes: dict[tuple[str, int], dict[str, Any]]
    stop_cmds: list[np.ndarray]
    stop_q: list[np.ndarray] = dataclasses.field(default_factory=list)


def _read(bags: Sequence[Path], names: dict[str, tuple[str, str]], arm_joints: Sequence[str]) -> _Phase:
    out = _Phase({"closed_view": [], "open_view": []}, {}, [])
    for bag in bags:
        _read_bag(bag, names, arm_joints, out)
    return out


def _read_bag(bag: Path, names: dict[str, tuple[str, str]], arm_joints: Sequence[str], out: _Phase) -> None:
    """One bag's articulation phase; ``names``: the capture's topics (``capture.topic_names``)."""
    joint_states, arm_command = names["joint_states"][0], names["arm_command"][0]

    part: dict[str, Any] | None = None
    pending: np.ndarray | None = None
    idx: list[int] | None = None
    with BagReader(bag) as reader:
        color, depth = camera_topics(reader.topics, names["color_image"][0], names["depth_image"][0])
        for m in reader.messages([PHASE_TOPIC, color, depth, joint_states, arm_command]):
            msg = reader.deserialize(m)
            if m.topic == PHASE_TOPIC:
                mark = json.loads(msg.data)
                start = mark.get("phase") == "articulation" and mark.get("event") == "start"
                part = mark if start else None
                continue
            if part is None:
                continue
            name = part.get("part")
            if name in out.frames and m.topic in (color, depth):
                img = image_array(msg, f"bag {bag}: {m.topic}")
                if m.topic == color:
                    pending = img
                elif pending is not None:
                    out.frames[name].append((pending, depth_m(img)))
                    pending = None
            elif name == "stop_pull" and m.topic == arm_command:
                out.stop_cmds.append(np.asarray(msg.data, dtype=np.float64))
            elif name == "stop_pull" and m.topic == joint_states and idx is not None:
                out.stop_q.append(np.asarray(msg.position)[idx])
            elif name in ("hooked", "free") and m.topic == joint_states:
                names = list(msg.name)
                if idx is None:
                    missing = [n for n in arm_joints if n not in names]
                    if missing:
                        raise BagError(f"bag {bag}: {joint_states} lacks arm joints {missing}")
                    idx = [names.index(n) for n in arm_joints]
                rec = out.passes.setdefault(
                    (name, int(part["index"])),
                    {"speed": float(part["speed_m_s"]), "q": [], "qd": [], "e": []},
                )
                eff = np.asarray(msg.effort)
                if eff.size != len(names):
                    raise IdentificationError(
                        f"bag {bag}: {joint_states} carries no efforts; the drawer's damping and friction "
                        "are measured from the arm's joint efforts"
                    )
                rec["q"].append(np.asarray(msg.position)[idx])
                rec["qd"].append(np.asarray(msg.velocity)[idx])
                rec["e"].append(eff[idx])


def _handle_front(
    frames: Sequence[tuple[np.ndarray, np.ndarray]],
    K: np.ndarray,
    T_wc: np.ndarray,
    colour: np.ndarray,
    axis0: np.ndarray,
    what: str,
) -> np.ndarray:
    """World centre of the handle's outermost part (along ``axis0``) in ``frames`` (undistorted RGB-D).

    The outermost part (the bar of a bar handle) is the feature both views share: a stereo depth camera
    loses pixels along the bar's edges and sees the posts behind it from another angle once the drawer
    is closer, which moves the centroid of all handle pixels by centimetres.
    """
    target = colour / colour.sum()
    pts = []
    for rgb, depth in frames:
        c = rgb.astype(np.float64)
        total = c.sum(axis=2)
        chroma = c / np.maximum(total, 1.0)[..., None]
        mask = (np.linalg.norm(chroma - target, axis=2) < _CHROMA_TOL) & (total > 60) & (depth > 0)
        v, u = np.nonzero(mask)
        z = depth[v, u]
        cam = np.stack([(u - K[0, 2]) * z / K[0, 0], (v - K[1, 2]) * z / K[1, 1], z], axis=1)
        pts.append(cam @ T_wc[:3, :3].T + T_wc[:3, 3])
    p = np.concatenate(pts) if pts else np.empty((0, 3))
    if len(p) < 20:
        raise ReconstructionError(
            f"articulation: {what}: the handle (colour {np.round(colour, 2).tolist()}) shows in {len(p)} "
            "pixels with depth; record the still views with the handle in sight"
        )
    med = np.median(p, axis=0)
    p = p[np.linalg.norm(p - med, axis=1) < 0.1]  # one handle: drop stray pixels of that colour
    out = p @ axis0
    return p[out >= np.percentile(out, 98) - _FRONT_M].mean(axis=0)


def _plateau_forces(phase: _Phase, kin: Any, axis: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Per hooked pass and direction: mean speed and median force on its constant-speed, engaged stretch.

    The hook touches the bar (pulling) or the drawer front (pushing) somewhere near the tool centre: a force
    along the axis there is that force at the tool plus moments about the horizontal normal to the axis
    and about the vertical; the fingers on the round bar also carry friction along it (sideways).  All four
    are fitted together (least squares over the arm joints); leaving the sideways force out put the pan
    joint's torque into the pull and read it ~8 % low.  Medians keep the knock of the hook taking up its
    slack out of the fit.
    """
    model = kin.model
    jacp, jacr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    up = np.array([0.0, 0.0, 1.0])
    side = np.cross(up, axis)
    side /= np.linalg.norm(side)
    vs, fs, used = [], [], 0
    for (kind, k), hooked in sorted(phase.passes.items()):
        free = phase.passes.get(("free", k))
        if kind != "hooked" or free is None:
            continue
        n = min(len(hooked["q"]), len(free["q"]))
        q, qd = np.array(hooked["q"][:n]), np.array(hooked["qd"][:n])
        dtau = np.array(hooked["e"][:n]) - np.array(free["e"][:n])
        rows = []
        for i in range(n):
            kin.fk(q[i])
            mujoco.mj_jacSite(model, kin.data, jacp, jacr, kin.site)
            J, Jr = jacp[:, kin.dofadr], jacr[:, kin.dofadr]
            v = float(axis @ (J @ qd[i]))
            if abs(abs(v) - hooked["speed"]) <= _PLATEAU * hooked["speed"]:
                # joint torques per unit of: force along the axis, force sideways, moments
                A = np.stack([J.T @ axis, J.T @ side, Jr.T @ side, Jr.T @ up], axis=1)
                rows.append((v, float(np.linalg.lstsq(A, dtau[i], rcond=None)[0][0])))
        for sign in (1.0, -1.0):
            r = np.array([x for x in rows if np.sign(x[0]) == sign]).reshape(-1, 2)
            toward = r[:, 1] * sign
            engaged = r[toward > _CONTACT * np.percentile(toward, 75)] if len(r) else r
            engaged = engaged[int(_KNOCK * len(engaged)) :]  # the hook's knock as it takes up its slack
            if len(engaged) >= 10:
                vs.append(float(engaged[:, 0].mean()))
                fs.append(float(np.median(engaged[:, 1])))
                used += len(engaged)
    return np.array(vs), np.array(fs), used


def _template_joint(template_dir: Path) -> tuple[Any, str, np.ndarray, float, np.ndarray]:
    """The template world, its joint's name, the handle's colour, the joint's range end and world axis."""
    world = SimWorld(template_dir)
    model, task = world.model, world.config.task
    assert task is not None
    body = model.body(task.object_body).id
    jnt = int(model.body_jntadr[body])
    if int(model.body_jntnum[body]) != 1:
        raise ReconstructionError(f"template: body {task.object_body!r} needs exactly one joint")
    handles = [
        g for g in range(model.ngeom) if model.geom_bodyid[g] == body and "handle" in model.geom(g).name
    ]
    if not handles:
        raise ReconstructionError(f"template: body {task.object_body!r} has no geom named '*handle*'")
    g = handles[0]
    mat = int(model.geom_matid[g])
    rgba = model.mat_rgba[mat] if mat >= 0 else model.geom_rgba[g]
    end = float(model.jnt_range[jnt][1]) if model.jnt_limited[jnt] else 0.0
    axis = world.data.xmat[body].reshape(3, 3) @ model.jnt_axis[jnt]
    return world, model.joint(jnt).name, np.asarray(rgba[:3], dtype=np.float64) * 255.0, end, axis


def estimate_articulation(
    bags: Sequence[str | Path],
    template_dir: str | Path,
    *,
    K: np.ndarray,
    D: np.ndarray,
    T_world_camera: np.ndarray,
    camera: str = "camera",
    interface: str = "",
) -> ArticulationEstimate:
    """Estimate the articulated object's joint from the capture's articulation phase (module docstring).

    Args:
        bags: the capture bag(s).
        template_dir: the template world (robot kinematics, the joint's name, the handle's colour).
        K: calibrated camera matrix.
        D: calibrated plumb_bob distortion.
        T_world_camera: the camera's optical frame in the world (4x4).
        camera: the camera's ROS name (``Real2SimConfig.camera``).
        interface: the topic interface profile (``Real2SimConfig.interface``).

    Raises:
        IdentificationError: the bag has no articulation phase, or too few constant-speed samples.
        ReconstructionError: the handle cannot be found in a still view.
    """
    import scipy.stats  # slow to import (about a second); only this fit uses it

    world, joint, colour, template_end, axis0 = _template_joint(Path(template_dir))
    cfg = world.config
    prefix = cfg.robot.prefix
    names = topic_names(camera, interface)
    phase = _read([Path(b) for b in bags], names, cfg.robot.arm_joints)
    views = phase.frames
    bag = ", ".join(str(b) for b in bags)
    if not views["closed_view"] or not views["open_view"] or not phase.passes:
        raise IdentificationError(
            f"bag {bag}: no articulation phase (still views of the closed and open drawer, hooked and free "
            "passes); record it (r2s2r_capture.procedures.articulation)"
        )
    T_wc = np.asarray(T_world_camera, dtype=np.float64)
    closed = _handle_front(undistort(views["closed_view"], K, D), K, T_wc, colour, axis0, "closed_view")
    opened = _handle_front(undistort(views["open_view"], K, D), K, T_wc, colour, axis0, "open_view")
    disp = opened - closed
    seen = float(np.linalg.norm(disp))
    axis = disp / seen
    kin = KinematicArm(
        world.model, tuple(prefix + n for n in cfg.robot.arm_joints), prefix + str(cfg.robot.ee_site)
    )
    stop_hit = False
    if len(phase.stop_cmds) >= 2 and len(phase.stop_q) >= 2:
        # Against the stop the arm lags its last command (the servo's spring takes the load); before the
        # pull it lags only by its own sag.
        def lag(cmd: np.ndarray, q: np.ndarray) -> float:
            return float((kin.fk(cmd)[0] - kin.fk(q)[0]) @ axis)

        lag_end = lag(phase.stop_cmds[-1], phase.stop_q[-1])
        stop_hit = lag_end - lag(phase.stop_cmds[0], phase.stop_q[0]) > _STOP_SLACK_M
    v, F, n = _plateau_forces(phase, kin, axis)
    if len(v) < 4 or (v > 0).sum() < 2 or (v < 0).sum() < 2 or np.ptp(np.abs(v)) < 0.01:
        raise IdentificationError(
            f"bag {bag}: articulation: {len(v)} constant-speed stretches with the hook engaged; record "
            "hooked passes at two or more speeds, opening and closing"
        )
    # A constant term takes what the passes' difference leaves in both directions alike (the arm sags a
    # little more under load); it is not the drawer's.
    X = np.stack([v, np.sign(v), np.ones_like(v)], axis=1)
    coef, *_ = np.linalg.lstsq(X, F, rcond=None)
    # A handful of plateaus: widen the errors so that +-1.96 of them is the Student t 95 % interval.
    dof = max(len(v) - X.shape[1], 1)
    std = regression_std(X, F - X @ coef) * float(scipy.stats.t.ppf(0.975, dof)) / Z95
    return ArticulationEstimate(
        joint=joint,
        axis=axis,
        closed_handle=closed,
        range=(0.0, seen if stop_hit else max(seen, template_end)),
        range_seen=seen,
        stop_hit=stop_hit,
        damping=float(max(coef[0], 0.0)),
        damping_std=float(std[0]),
        frictionloss=float(max(coef[1], 0.0)),
        frictionloss_std=float(std[1]),
        samples=n,
    )


def place_articulated(spec: Any, template_dir: str | Path, est: ArticulationEstimate) -> None:
    """Add the template's articulated object to ``spec`` with the estimated joint.

    The object's geometry and its place come from the template (the reconstruction sees a cabinet, not
    its runners); it is turned about the vertical through its closed handle so that the template's axis lies
    along the estimated one, and its joint gets the estimated axis (in the body frame), range, damping and
    friction loss.
    """
    tcfg = load_world_config(template_dir)
    assert tcfg.task is not None
    tspec = mujoco.MjSpec.from_file(str(tcfg.scene))
    tmodel = tspec.compile()
    tdata = mujoco.MjData(tmodel)
    mujoco.mj_kinematics(tmodel, tdata)
    body = tmodel.body(tcfg.task.object_body).id
    root = body
    while int(tmodel.body_parentid[root]) != 0:
        root = int(tmodel.body_parentid[root])
    jnt = int(tmodel.body_jntadr[body])
    axis0 = tdata.xmat[body].reshape(3, 3) @ tmodel.jnt_axis[jnt]
    yaw = math.atan2(est.axis[1], est.axis[0]) - math.atan2(axis0[1], axis0[0])
    c, s = math.cos(yaw), math.sin(yaw)
    Rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    pivot = tdata.site_xpos[tmodel.site(tcfg.task.target_site).id]
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, Rz.ravel())
    tspec.option.integrator = spec.option.integrator  # the written world's options stay its own
    # The attached body keeps its template pose inside the frame: the frame is the turn about the pivot.
    frame = spec.worldbody.add_frame(pos=(pivot - Rz @ pivot).tolist(), quat=quat.tolist())
    frame.attach_body(tspec.body(tmodel.body(root).name), "", "")
    j = spec.joint(est.joint)
    body_R = Rz @ tdata.xmat[body].reshape(3, 3)
    local = body_R.T @ est.axis
    j.axis = (local / np.linalg.norm(local)).tolist()
    j.range = [float(v) for v in est.range]
    damping = np.array(j.damping, dtype=np.float64).ravel()
    damping[0] = est.damping
    j.damping = damping
    j.frictionloss = est.frictionloss


def articulation_variations(est: ArticulationEstimate, doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (a world's variations) plus the joint's damping and friction loss, +-1.96 standard errors."""
    params = list(doc.get("dynamics", {}).get("parameters", []))
    for kind, value, std in (
        ("damping", est.damping, est.damping_std),
        ("frictionloss", est.frictionloss, est.frictionloss_std),
    ):
        params.append(
            {"name": f"{est.joint}/{kind}", "range": list(parameter_range(value, std, (0.0, 10 * value + 1)))}
        )
    return {**doc, "dynamics": {"enabled": True, "parameters": params}}


def kept_objects(objects: Sequence[Any], est: ArticulationEstimate, radius: float = 0.3) -> list[Any]:
    """The reconstructed objects away from the articulated object (its cabinet comes from the template)."""
    return [o for o in objects if np.linalg.norm(np.asarray(o.position[:2]) - est.closed_handle[:2]) > radius]
