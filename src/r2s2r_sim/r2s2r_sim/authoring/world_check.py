"""``r2s2r world check``: what a world folder resolves to, every problem found, a picture of its tool frame.

Errors stop the world from running (the loader's :class:`WorldError`, a missing tool frame or task, a tool
frame whose approach axis points away from the fingers); warnings are things a user should look at (a
gripper joint without a range, a tool frame axis tilted off the gripper's, one whose origin is far from the
fingers; a tool frame that does not point down at home is fine; a gripper that cannot hold the task object,
servos that limit-cycle, a grasp-slipping friction cone).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from r2s2r_sim.authoring.grasp_fit import (
    GRASP_IMPRATIO,
    HOLD_LOADS_G,
    STABLE_DAMPING_RATIO,
    grip_hold,
    site_to_grasp_depth,
    stable_armature,
    subtree,
    tip_depth,
)
from r2s2r_sim.authoring.grasp_trial import grasp_trial
from r2s2r_sim.authoring.gripper_guess import closing_direction
from r2s2r_sim.authoring.world_picture import draw_tool_frame
from r2s2r_sim.errors import WorldError
from r2s2r_sim.render.renderer import camera_intrinsics
from r2s2r_sim.world.kinematics import KinematicArm, tool_down_reach
from r2s2r_sim.world.robot_binding import actuator_id
from r2s2r_sim.world.sim_world import SimWorld

if TYPE_CHECKING:
    from r2s2r_sim.world.robot_config import GripperConfig
__all__ = ["WorldReport", "check_world", "draw_tool_frame"]

# A tool axis this far (deg) from where the gripper says it points is worth a look; past 90 it is wrong.
_AXIS_WARN_DEG = 30.0
_AXIS_ERROR_DEG = 90.0


@dataclass
class WorldReport:
    """The text of a check, its errors and warnings, and the picture written (if any)."""

    lines: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    picture: Path | None = None

    def text(self) -> str:
        """The report as printed."""
        out = list(self.lines)
        out += [f"error: {e}" for e in self.errors] + [f"warning: {w}" for w in self.warnings]
        out.append(f"{len(self.errors)} error(s), {len(self.warnings)} warning(s)")
        return "\n".join(out)


def _fmt(values: np.ndarray | tuple[float, ...] | list[float]) -> str:
    return "[" + ", ".join(f"{float(v):.4g}" for v in values) + "]"


def _actuator_line(model: mujoco.MjModel, act: int) -> str:
    kind = int(model.actuator_trntype[act])
    target = int(model.actuator_trnid[act, 0])
    if kind == int(mujoco.mjtTrn.mjTRN_TENDON):
        what = f"tendon {model.tendon(target).name!r}"
    elif kind == int(mujoco.mjtTrn.mjTRN_JOINT):
        what = f"joint {model.joint(target).name!r}"
    else:
        what = f"transmission {kind}"
    servo = ""
    if int(model.actuator_biastype[act]) == int(mujoco.mjtBias.mjBIAS_AFFINE):
        servo = f" kp {model.actuator_gainprm[act, 0]:.4g} kv {0.0 - model.actuator_biasprm[act, 2]:.4g}"
    ctrl = _fmt(model.actuator_ctrlrange[act]) if model.actuator_ctrllimited[act] else "unlimited"
    force = _fmt(model.actuator_forcerange[act]) if model.actuator_forcelimited[act] else "unlimited"
    return f"  {model.actuator(act).name!r} -> {what}{servo} ctrl {ctrl} force {force}"


def check_world(world_dir: Path, picture: Path | None = None) -> WorldReport:
    """Load ``world_dir`` and report what it resolves to; draw the tool frame into ``picture`` (PNG).

    Never raises for a bad world: every problem becomes an error line.
    """
    report = WorldReport()
    try:
        world = SimWorld(world_dir)
    except (WorldError, ValueError, OSError) as err:
        report.errors.append(str(err))
        return report
    cfg, model = world.config, world.model
    robot = cfg.robot
    report.lines += [
        f"world {cfg.id!r} ({cfg.source})",
        f"robot file: {robot.mjcf} ({'URDF' if robot.is_urdf else 'MJCF'}; "
        f"{'inside the world folder' if robot.asset_roots is None else 'outside the world folder'})",
        f"physics: timestep {world.timestep} s, integrator {mujoco.mjtIntegrator(model.opt.integrator).name}",
        "arm joints (command order, limits applied to commands):",
    ]
    for name, (lo, hi) in zip(world.arm_joint_names, world.arm_limits, strict=True):
        report.lines.append(f"  {name}: [{lo:.4g}, {hi:.4g}]")
    report.lines.append("actuators:")
    report.lines += [_actuator_line(model, a) for a in range(model.nu)]
    g = robot.gripper
    if g is None:
        report.lines.append("gripper: none")
    else:
        ctrl = ", ".join(f"{u0:.4g} .. {u1:.4g}" for u0, u1 in g.ctrl_ranges)
        report.lines.append(
            f"gripper: actuator {g.actuator if len(g.actuators) == 1 else list(g.actuators)!r}, "
            f"joints {list(g.joints)}; command {g.open_command:.4g} "
            f"(open) .. {g.closed_command:.4g} (closed) -> ctrl {ctrl}"
        )
        _check_gripper_ctrl(model, robot.prefix, g, report)
        for name in g.joints:
            jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, robot.prefix + name)
            if not model.jnt_limited[jid]:
                report.warnings.append(f"robot.gripper.joints: {name!r} has no range")
    world.reset(0)
    pos, quat = world.ee_pose()
    rot = np.empty(9)
    mujoco.mju_quat2Mat(rot, quat)
    rot = rot.reshape(3, 3)
    if robot.ee_site is None:
        report.errors.append(
            "robot.ee_site / robot.tool_frame: the world has no tool frame; the reference policy needs one "
            "(declare robot.tool_frame: {body, pos, z_axis, y_axis})"
        )
        source = "body of the last arm joint"
    elif robot.tool_frame is not None:
        source = f"tool_frame on body {robot.tool_frame.body!r}"
    else:
        source = f"site {robot.ee_site!r}"
    report.lines += [
        f"tool frame ({source}) at home: position {_fmt(pos)} m (world)",
        f"  x {_fmt(rot[:, 0])}  y (finger axis) {_fmt(rot[:, 1])}  z (approach) {_fmt(rot[:, 2])}",
    ]
    for cam in cfg.cameras:
        k = camera_intrinsics(model, model.camera(world.camera_id(cam.name)).name, cam.width, cam.height)
        report.lines.append(
            f"camera {cam.name!r} ({cam.mjcf_camera}) {cam.width}x{cam.height} @ {cam.rate_hz} Hz: "
            f"K = [[{k[0, 0]:.2f}, 0, {k[0, 2]:.2f}], [0, {k[1, 1]:.2f}, {k[1, 2]:.2f}], [0, 0, 1]], "
            f"plumb_bob D = [{', '.join(f'{v:.4g}' for v in cam.distortion)}]"
        )
    _check_servos(world, report)
    for a, b, depth in self_contacts(world):
        report.warnings.append(
            f"robot: links {a!r} and {b!r} touch at home ({1000 * depth:.1f} mm deep): the joints between "
            "them rub; add the pair to robot.contact_exclude in world.yaml (`r2s2r world new` does); the "
            "robot file stays as it is"
        )
    if cfg.task is None:
        report.warnings.append("task: none; episodes cannot succeed or fail")
    else:
        _check_task(world, pos, report)
        if g is not None and robot.ee_site is not None:
            _check_tool_axes(world, rot, pos, report)
            _check_grip(world, report)
    if picture is not None:
        try:
            draw_tool_frame(world, picture)
            report.picture = picture
            report.lines.append(
                f"picture of the tool frame (x red, y green, z blue), the task object (yellow arrow) and "
                f"its target (magenta), with a legend: {picture}"
            )
        except (mujoco.FatalError, RuntimeError, ValueError) as err:
            report.warnings.append(f"picture: could not render: {err}")
    return report


def _check_task(world: object, tool: np.ndarray, report: WorldReport) -> None:
    assert isinstance(world, SimWorld)
    task = world.config.task
    assert task is not None
    obj, _ = world.body_pose(task.object_body)
    target, _ = world.site_pose(task.target_site)
    base, _ = world.base_pose()
    robot = world.config.robot
    first = world.model.joint(robot.prefix + robot.arm_joints[0]).id
    axis = world.data.xanchor[first][:2].copy()
    if robot.ee_site is None:
        report.lines.append(
            f"task: {task.object_body!r} at {_fmt(obj)} -> {task.target_site!r} at {_fmt(target)}"
        )
        return
    # The tool-down reach, as world new lays the scene out with: a start or target beyond it is an error.
    arm = KinematicArm(
        world.model, tuple(robot.prefix + j for j in robot.arm_joints), robot.prefix + robot.ee_site
    )
    reach = tool_down_reach(arm, axis, float(base[2]))
    report.lines.append(
        f"task: {task.object_body!r} at {_fmt(obj)} -> {task.target_site!r} at {_fmt(target)}; "
        f"arm reach {reach:.3f} m tool-down from the first joint's axis"
    )
    for what, point in (("task object", obj), ("target", target)):
        dist = float(np.linalg.norm(point[:2] - axis))
        if dist > reach:
            report.errors.append(
                f"task: the {what} is {dist:.3f} m from the first joint's axis, beyond the arm's tool-down "
                f"reach ({reach:.3f} m)"
            )


def self_contacts(world: SimWorld) -> list[tuple[str, str, float]]:
    """Pairs of the robot's own bodies in contact in the world's current state, with their depth (m).

    The loader already excludes a first link from a base fixed to the world (MuJoCo's parent filter
    lapses there); any other pair is the robot file's to fix.
    """
    model, data = world.model, world.data
    mujoco.mj_forward(model, data)
    first = model.joint(world.config.robot.prefix + world.arm_joint_names[0]).id
    root = model.body_rootid[model.jnt_bodyid[first]]
    found: dict[tuple[str, str], float] = {}
    for c in data.contact[: data.ncon]:
        b1, b2 = int(model.geom_bodyid[c.geom1]), int(model.geom_bodyid[c.geom2])
        if model.body_rootid[b1] == root and model.body_rootid[b2] == root:
            pair = (model.body(b1).name, model.body(b2).name)
            found[pair] = max(found.get(pair, 0.0), -float(c.dist))
    return [(a, b, depth) for (a, b), depth in found.items()]


def _check_servos(world: SimWorld, report: WorldReport) -> None:
    """Arm servos too stiffly damped for their joint's inertia: they limit-cycle at their force limit."""
    model = world.model
    arm = [model.joint(world.config.robot.prefix + j).id for j in world.config.robot.arm_joints]
    data = mujoco.MjData(model)
    mujoco.mj_copyData(data, model, world.data)
    for name, armature in stable_armature(model, data, arm, float(model.opt.timestep)).items():
        report.warnings.append(
            f"robot.armature: joint {name!r}: its servo's kv * timestep is over {STABLE_DAMPING_RATIO:g}x "
            "the inertia it drives (alone, or with joints whose axes line up with its own), so it "
            f"limit-cycles once its force saturates; set robot.armature.{name}: "
            f"{armature:.4g} (what `r2s2r world new` writes)"
        )


def _check_tool_axes(world: SimWorld, rot: np.ndarray, pos: np.ndarray, report: WorldReport) -> None:
    """The tool frame's axes against the gripper.

    z (approach) points from the wrist toward the fingers, y along the way they close: what the reference
    policy descends along and turns to the object's faces.
    """
    model, data, robot = world.model, world.data, world.config.robot
    gripper = robot.gripper
    assert gripper is not None
    joints = [model.joint(robot.prefix + n).id for n in gripper.joints]
    fingers: set[int] = set()
    for j in joints:
        fingers |= subtree(model, int(model.jnt_bodyid[j]))
    geoms = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) in fingers]
    wrist = data.xanchor[model.joint(robot.prefix + robot.arm_joints[-1]).id]
    if geoms:
        toward = data.geom_xpos[geoms].mean(axis=0) - wrist
        if float(np.linalg.norm(toward)) > 1e-6:
            cos = float(rot[:, 2] @ toward) / float(np.linalg.norm(toward))
            angle = float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))))
            if angle > _AXIS_ERROR_DEG:
                report.errors.append(
                    f"robot.ee_site: the tool frame's z axis (approach) points {angle:.0f} deg away from the "
                    "direction from the wrist to the fingers: the reference policy would descend with the "
                    "fingers facing up or sideways (declare robot.tool_frame with z_axis toward the "
                    "fingertips)"
                )
            elif angle > _AXIS_WARN_DEG:
                report.warnings.append(
                    f"robot.ee_site: the tool frame's z axis (approach) is {angle:.0f} deg off the direction "
                    "from the wrist to the fingers; check the picture"
                )
    closing = closing_direction(model, data, joints, rot[:, 2])
    if closing is not None:
        cos = abs(float(rot[:, 1] @ closing))
        angle = float(np.degrees(np.arccos(np.clip(cos, 0.0, 1.0))))
        if angle > _AXIS_WARN_DEG:
            report.warnings.append(
                f"robot.ee_site: the tool frame's y axis is {angle:.0f} deg off the way the fingers close: "
                "the reference policy turns y to the object's faces, so it would grasp across a corner "
                "(declare robot.tool_frame with y_axis along the fingers' closing)"
            )


def _check_gripper_ctrl(model: mujoco.MjModel, prefix: str, g: GripperConfig, report: WorldReport) -> None:
    """Each actuator's ctrl range against the actuator's own ``ctrlrange``, which MuJoCo clamps to.

    A finger whose joint runs the other way (ctrlrange ``[-0.04, 0]``) driven with the first finger's
    ctrl is clamped to one end and never moves.
    """
    for name, (u0, u1) in zip(g.actuators, g.ctrl_ranges, strict=True):
        act = actuator_id(model, name, prefix)
        if act < 0 or not model.actuator_ctrllimited[act]:
            continue
        lo, hi = (float(v) for v in model.actuator_ctrlrange[act])
        moved = min(max(u0, u1), hi) - max(min(u0, u1), lo)
        where = (
            f"robot.gripper.ctrl_range: actuator {name!r} gets ctrl {u0:.4g} .. {u1:.4g} but its "
            f"ctrlrange is [{lo:.4g}, {hi:.4g}]"
        )
        if moved <= 1e-9 * max(abs(u1 - u0), 1e-12):
            report.errors.append(
                f"{where}: the command is clamped to one end and that actuator never moves (give one "
                "[open, closed] pair per actuator)"
            )
        elif min(u0, u1) < lo - 1e-9 * (hi - lo) or max(u0, u1) > hi + 1e-9 * (hi - lo):
            report.warnings.append(f"{where}: part of the command range is clamped")


def _check_grasp_trials(world: SimWorld, report: WorldReport) -> None:
    """Approach, close and lift the task object at the centre and two corners of its start region."""
    task = world.config.task
    assert task is not None
    r = task.object_pose_range
    if not world.task_object_is_free or r is None:
        return
    points = [(sum(r.x) / 2, sum(r.y) / 2), (r.x[0], r.y[0]), (r.x[1], r.y[1])]
    trials = [grasp_trial(world, x, y) for x, y in points]
    for trial in trials:
        line = f"grasp trial (approach, close, lift {task.object_body!r} as the policy does) {trial.text()}"
        if trial.held:
            report.lines.append(line)
        elif trial.reached:
            report.errors.append(line + ": the gripper does not hold the object from the table")
        else:
            report.warnings.append(line)
    world.reset(0)


def _check_grip(world: SimWorld, report: WorldReport) -> None:
    """The squeeze test (:func:`grip_hold`), the friction cone, the tool frame's depth between the fingers."""
    model, robot, task = world.model, world.config.robot, world.config.task
    gripper = robot.gripper
    assert task is not None and gripper is not None and robot.ee_site is not None
    body = model.body(task.object_body).id
    site = model.site(robot.prefix + robot.ee_site).id
    act = [actuator_id(model, n, robot.prefix) for n in gripper.actuators]
    mass = float(model.body_subtreemass[body])
    ctrl = (np.array([r[0] for r in gripper.ctrl_ranges]), np.array([r[1] for r in gripper.ctrl_ranges]))
    held = grip_hold(model, world.data, object_body=body, site=site, grip_act=act, ctrl=ctrl)
    if held >= HOLD_LOADS_G[0]:
        report.lines.append(
            f"grip: closed on {task.object_body!r} ({mass:.3g} kg) at the tool frame, it holds {held:g} g"
        )
    else:
        report.warnings.append(
            f"grip: closed on {task.object_body!r} ({mass:.3g} kg) at the tool frame, the gripper lets it "
            "slip out under its own weight: the squeeze force or the friction is too low for the object "
            f"(raise the force of the gripper actuator {gripper.actuator!r} or lower the object's mass"
            + (
                ""
                if int(model.opt.cone) == int(mujoco.mjtCone.mjCONE_ELLIPTIC)
                else ", or use physics.cone: elliptic"
            )
            + "), or the tool frame sits outside the fingers"
        )
    _check_grasp_trials(world, report)
    if int(model.opt.cone) != int(mujoco.mjtCone.mjCONE_ELLIPTIC):
        report.warnings.append(
            "physics.cone: pyramidal; a squeezed object slides out of two fingers more easily than with "
            f"physics.cone: elliptic and physics.impratio: {GRASP_IMPRATIO:g}"
        )
    geoms = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) == body]
    half = float(model.geom_aabb[geoms, 3:].max()) if geoms else 0.0
    fingers: set[int] = set()
    for name in gripper.joints:
        fingers |= subtree(model, int(model.jnt_bodyid[model.joint(robot.prefix + name).id]))
    data = mujoco.MjData(model)
    mujoco.mj_copyData(data, model, world.data)
    moved = site_to_grasp_depth(model, data, site, fingers, act, half)
    if moved is not None:
        report.warnings.append(
            f"robot.ee_site: the fingertips reach {(tip_depth(half) + moved[1]) * 1000:.0f} mm past the "
            f"tool frame, {tip_depth(half) * 1000:.0f} mm expected (half the object less 5 mm); "
            + (
                "the fingers close on the object's top edge only.  Move it back"
                if moved[1] < 0
                else "the fingertips meet the table before the fingers reach the object.  Move it forward"
            )
            + " along its approach axis with robot.tool_frame"
        )
