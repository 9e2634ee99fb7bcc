"""The capture's ``slide`` phase on the EMULATED hardware: the arm flicks the task object and lets it slide.

Where the task pushes an object, how far it slides once the pusher stops decides the outcome, and that is
set by the sliding friction between object and table, which no still view shows.  The phase records
(``/r2s2r/capture/phase`` markers with ``phase: slide`` and a ``part``):

1. ``view`` (``index`` 0): RGB-D frames of the object at rest.
2. ``flick`` (``index`` k, ``speed_m_s``, ``direction``, ``gripper``, ``push_m``): the closed fingers,
   lowered behind the object, creep up to it, push it over ``push_m`` while speeding up to ``speed``, then
   pull back and up at once, so that the object leaves the fingers and slides to a stop on its own.  Joint
   states and arm commands carry the motion.  Each flick aims at the task's target or back at where the
   phase found the object (both on the table and in reach), turned by a set angle: a friction pyramid's
   sideways pull repeats every quarter turn and vanishes along its four edges and between them, so two
   fast flicks an odd multiple of 22.5 degrees apart cannot both miss it.
3. ``view`` (``index`` k + 1): RGB-D frames of where it stopped, the arm lifted clear.

real2sim replays each flick's recorded commands in the reconstructed world and finds the friction at
which its object stops where the views show (:mod:`r2s2r_capture.real2sim.slide`).

Stand-in: the operator who jogs the tool behind the object (its place is read from the emulator).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import mujoco
import numpy as np
from r2s2r_sim.ranges import check_fields, within
from r2s2r_sim.world.kinematics import KinematicArm, tool_down_rotation

from r2s2r_capture.errors import CaptureError
from r2s2r_capture.procedures.phase_hooks import PhaseHooks, ik_path

__all__ = ["AIMS", "SLIDE_PHASE", "Flick", "SlideConfig", "flick_profile", "record_slide"]

SLIDE_PHASE = "slide"
_CLEAR_M = 0.09  # tool height above the push height between moves (m)
_MOVE_SPEED = 0.15  # m/s outside the flicks
_FINGER_HALF_M = 0.008  # half the closed fingers' thickness along the push (m); the standoff covers more
_MIN_AIM_M = 0.03  # an aim nearer the object than this gives no direction: the last flick's is kept (m)
AIMS = ("target", "start")


@dataclasses.dataclass(frozen=True)
class Flick:
    """One flick of the phase.

    Attributes:
        speed_m_s: the commanded top speed of the tool (m/s; check it against your cell's limits).
        aim: ``target`` (the task's target) or ``start`` (where the phase found the object).  Flicks
            that alternate keep the object between the two.
        turn_deg: the push direction turned counter-clockwise from the aim (deg).
    """

    speed_m_s: float
    aim: str = "target"
    turn_deg: float = 0.0

    def __post_init__(self) -> None:
        """Validate (errors name the field)."""
        if not 0 < self.speed_m_s <= 1.0:
            raise CaptureError(f"slide.flicks.speed_m_s: a speed in (0, 1] m/s, got {self.speed_m_s}")
        if self.aim not in AIMS:
            raise CaptureError(f"slide.flicks.aim: one of {AIMS}, got {self.aim!r}")
        if not abs(self.turn_deg) <= 90.0:
            raise CaptureError(f"slide.flicks.turn_deg: an angle in [-90, 90] deg, got {self.turn_deg}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SlideConfig:
    """What the slide phase does.

    Attributes:
        flicks: the flicks, in order: a slow one and a fast one at the target, and a fast one back,
            turned by 22.5 degrees.  The servos lag, so the bundled arm's tool reaches about 0.75 m/s of
            1 m/s, and the object slides ``v^2 / (2 mu g)`` after the fingers leave it: 2-8 cm for mu 1 to
            0.3, against a few mm after the slow flick.  The two speeds differ by the slide whatever the
            views' bias (see :mod:`r2s2r_capture.real2sim.slide`).
        stroke_m: how far the fingers push the object, speeding up, before pulling back (m).
        standoff_m: gap between the fingers and the object at the start (m), crossed at ``creep_m_s``.
        creep_m_s: the fingers' speed up to the object (m/s): slow, so that they meet it without a knock.
        retreat_m: how far the fingers pull back after the stroke (m).
        lift_m: how far they rise while pulling back (m).
        accel_m_s2: acceleration while pushing (m/s^2); the pull-back is a step in the command.
        push_height_m: tool centre above the table top while flicking (m).
        settle_s: wait after each flick for the object to stop before the view (s).
        command_rate_hz: arm command rate (Hz).
        n_frames: RGB-D frames at each view.
    """

    flicks: tuple[Flick, ...] = (Flick(0.2), Flick(1.0), Flick(1.0, "start", 22.5))
    stroke_m: float = within(0.15, "(0, 0.3]")
    standoff_m: float = within(0.02, "(0, 0.2]")
    creep_m_s: float = within(0.05, "(0, 0.5]")
    retreat_m: float = within(0.05, "(0, 0.3]")
    lift_m: float = within(0.05, "[0, 0.3]")
    accel_m_s2: float = within(5.0, "> 0")
    push_height_m: float = within(0.02, "[0, 0.1]")
    settle_s: float = within(1.0, "> 0")
    command_rate_hz: float = within(500.0, "> 0")
    n_frames: int = within(2, ">= 1")

    def __post_init__(self) -> None:
        """Validate (errors name the field)."""
        if not self.flicks or not all(isinstance(f, Flick) for f in self.flicks):
            raise CaptureError(f"slide.flicks: one or more Flick, got {self.flicks}")
        check_fields(self, error=CaptureError, prefix="slide.")
        top = max(f.speed_m_s for f in self.flicks)
        if top**2 / (2 * self.accel_m_s2) > self.stroke_m:
            raise CaptureError(
                f"slide.stroke_m: {self.stroke_m} m is too short to reach {top} m/s "
                f"at {self.accel_m_s2} m/s^2"
            )


def flick_profile(cfg: SlideConfig, speed: float) -> np.ndarray:
    """Tool positions ``(along the push, up)`` (m from the start), one row per command period.

    The fingers creep up to the object at ``creep_m_s`` (no impact: how hard a contact rebounds is not
    what is measured), push it while speeding up to ``speed`` over ``stroke_m``, then the command steps
    back and up, so the servos brake as hard as they can and the object slides on alone.
    """
    dt = 1.0 / cfg.command_rate_hz
    reach = cfg.standoff_m + cfg.stroke_m
    s, v, out = 0.0, cfg.creep_m_s, []
    while s < cfg.standoff_m:
        s = min(cfg.standoff_m, s + cfg.creep_m_s * dt)
        out.append(s)
    while s < reach:
        v = min(speed, v + cfg.accel_m_s2 * dt)
        s = min(reach, s + v * dt)
        out.append(s)
    n_push = len(out)
    while s > reach - cfg.retreat_m:
        s = max(reach - cfg.retreat_m, s - speed * dt)
        out.append(s)
    path = np.zeros((len(out), 2))
    path[:, 0] = out
    # Up as well as back: the fingers, still coasting forward behind the servos, pass over the object
    # instead of catching up with it as it slows.
    path[n_push:, 1] = cfg.lift_m * (np.arange(1, len(out) - n_push + 1) / (len(out) - n_push))
    return path


def _object_radius(model: mujoco.MjModel, body: int) -> float:
    """Horizontal reach of the body's geoms from its origin (m)."""
    reach = 0.0
    for g in range(model.ngeom):
        if model.geom_bodyid[g] == body and model.geom_contype[g] | model.geom_conaffinity[g]:
            centre, half = model.geom_aabb[g, :3] + model.geom_pos[g], model.geom_aabb[g, 3:]
            reach = max(reach, float(np.hypot(*centre[:2])) + float(max(half[0], half[1])))
    return reach


def record_slide(arm: Any, cfg: SlideConfig, hooks: PhaseHooks) -> dict[str, Any]:
    """Flick the task object of the emulated ``arm``'s world (see the module docstring).

    ``hooks`` drive the emulator and write the bag; ``cfg`` says how fast and how far.  Returns the
    object's start and end positions and the emulator's sliding friction, for benchmarks (never written
    into the bag).

    Raises:
        CaptureError: the world has no free task object or no tool site, or the arm cannot reach a point.
    """
    world = arm.world
    tcfg, model, data = world.config, world.model, world.data
    task, prefix = tcfg.task, tcfg.robot.prefix
    marker, command, hold = hooks.marker, hooks.command, hooks.hold
    if task is None or tcfg.robot.ee_site is None or not world.task_object_is_free:
        raise CaptureError(
            f"world {world.world_id!r}: the slide phase needs a free task object and robot.ee_site"
        )
    if tcfg.robot.gripper is None:
        raise CaptureError(f"world {world.world_id!r}: the slide phase pushes with the closed gripper")
    body = model.body(task.object_body).id
    kin = KinematicArm(model, tuple(prefix + n for n in tcfg.robot.arm_joints), prefix + tcfg.robot.ee_site)
    arm_idx = [list(world.joint_names).index(n) for n in world.arm_joint_names]
    target = data.site_xpos[model.site(task.target_site).id][:2].copy()
    radius = _object_radius(model, body)
    closed = float(tcfg.robot.gripper.command_range[1])
    push_z = float(task.table_top_z) + cfg.push_height_m
    start_pos = data.xpos[body].copy()

    def solve(points: np.ndarray, q0: np.ndarray, rot: np.ndarray) -> list[np.ndarray]:
        return ik_path(kin, points, q0, rot, phase=SLIDE_PHASE)

    def move(frm: np.ndarray, to: np.ndarray, q0: np.ndarray, rot: np.ndarray) -> np.ndarray:
        n = max(2, int(math.ceil(float(np.linalg.norm(to - frm)) / _MOVE_SPEED * cfg.command_rate_hz)))
        qs = solve(frm + np.linspace(0.0, 1.0, n)[:, None] * (to - frm), q0, rot)
        for q in qs:
            command(q)
        return qs[-1]

    hooks.gripper(closed)
    marker("view", "start", index=0)
    hooks.frames(cfg.n_frames)
    marker("view", "end", index=0)
    q_home = world.joint_state()[0][arm_idx]
    q = q_home
    aim_xy = {"target": target, "start": start_pos[:2].copy()}
    heading = target - start_pos[:2]
    for k, flick in enumerate(cfg.flicks):
        speed = flick.speed_m_s
        obj = data.xpos[body][:2].copy()
        toward = aim_xy[flick.aim] - obj
        if float(np.linalg.norm(toward)) >= _MIN_AIM_M:
            heading = toward
        c, s = math.cos(math.radians(flick.turn_deg)), math.sin(math.radians(flick.turn_deg))
        d = np.array([c * heading[0] - s * heading[1], s * heading[0] + c * heading[1]])
        d = d / max(float(np.linalg.norm(d)), 1e-9)
        yaw = math.atan2(d[1], d[0]) + math.pi / 2
        rot = tool_down_rotation(yaw)
        behind = np.array([*(obj - d * (radius + _FINGER_HALF_M + cfg.standoff_m)), push_z])
        up = np.array([0.0, 0.0, _CLEAR_M])
        tool = kin.fk(q)[0]
        q = move(tool, np.array([*tool[:2], max(tool[2], push_z + _CLEAR_M)]), q, rot)
        q = move(kin.fk(q)[0], behind + up, q, rot)
        q = move(behind + up, behind, q, rot)
        hold(0.3)
        path = flick_profile(cfg, speed)
        qs = solve(
            behind + path[:, :1] * np.array([*d, 0.0]) + path[:, 1:] * np.array([0.0, 0.0, 1.0]), q, rot
        )
        marker(
            "flick",
            "start",
            index=k,
            speed_m_s=speed,
            direction=d.tolist(),
            gripper=closed,
            push_m=cfg.stroke_m,
        )
        for qc in qs:
            command(qc)
        hold(cfg.settle_s)
        marker("flick", "end", index=k)
        q = qs[-1]
        q = move(kin.fk(q)[0], kin.fk(q)[0] + up, q, rot)
        # Back where the views see the whole table (the scene phase's pose), in joint space.
        n = max(2, int(math.ceil(float(np.max(np.abs(q_home - q))) / 0.5 * cfg.command_rate_hz)))
        for qc in q + np.linspace(0.0, 1.0, n)[:, None] * (q_home - q):
            command(qc)
        q = q_home
        hold(0.3)
        marker("view", "start", index=k + 1)
        hooks.frames(cfg.n_frames)
        marker("view", "end", index=k + 1)
    g_obj = [g for g in range(model.ngeom) if model.geom_bodyid[g] == body]
    table = [g for g in range(model.ngeom) if model.geom(g).name == "table_top"]
    touching = [g for g in g_obj + table if model.geom_contype[g] | model.geom_conaffinity[g]]
    mu = max(float(model.geom_friction[g, 0]) for g in touching)
    return {
        "start": start_pos.tolist(),
        "end": data.xpos[body].tolist(),
        "sliding_friction": mu,
        "cone": "pyramidal" if int(model.opt.cone) == int(mujoco.mjtCone.mjCONE_PYRAMIDAL) else "elliptic",
        "impratio": float(model.opt.impratio),
    }
