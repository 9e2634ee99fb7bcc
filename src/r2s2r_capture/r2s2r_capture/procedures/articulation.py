"""The capture's ``articulation`` phase on the EMULATED hardware: the arm opens the drawer, then moves freely.

What the phase records (``/r2s2r/capture/phase`` markers with ``phase: articulation`` and a ``part``):

1. ``closed_view``: RGB-D frames of the closed drawer, the arm at home.
2. ``hooked`` passes (``index`` k, ``speed_m_s``): the closed fingers hooked behind the handle pull the
   drawer ``stroke_m`` open and push it closed again, at a trapezoidal speed profile with plateau
   ``speeds_m_s[k]``.  The joint states carry the efforts the arm needed.
3. ``stop_pull``: a slow pull toward the template's range end and past it, as far as the arm reaches with
   the tool down (the bundled arm: ~0.14 m of the drawer's 0.17 m, so there it never meets the stop).
4. ``open_view``: RGB-D frames of the drawer pulled open, the fingers lifted off the handle.
5. ``free`` passes: the very same joint commands as each hooked pass, the drawer parked open ahead of the
   fingers: the efforts the arm needs for that motion on its own.  A hooked pass minus its free pass
   leaves the drawer's force, whatever the arm's own gravity, inertia and friction are.

Stand-ins: the person who closes the drawer before the phase (the joint is set to 0) and jogs the fingers
behind the handle (its place is read from the emulator), and the hand-guided (or compliance-mode) pull: a
position-controlled emulated arm is commanded along the drawer's rail from the emulator's state, as a
compliant arm would follow it.  real2sim reads none of that: it measures the axis and range from the
images and the force from the efforts.
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

__all__ = ["ARTICULATION_PHASE", "ArticulationConfig", "record_articulation"]

ARTICULATION_PHASE = "articulation"
_CLEAR_M = 0.1  # lift above the hook point between moves (m)
_MOVE_SPEED = 0.15  # m/s outside the passes


@dataclasses.dataclass(frozen=True, kw_only=True)
class ArticulationConfig:
    """What the articulation phase does.

    Attributes:
        speeds_m_s: plateau speed of each hooked/free pass pair (m/s); at least two, so that speed and
            friction separate.  Above ~0.08 m/s the hook knocks the bar and the drawer chatters on it
            for the rest of the short plateau.
        stroke_m: how far each pass opens the drawer (m); the free passes need the parked drawer's front
            this far plus the hook's clearance ahead of the fingers, so keep it 0.05 m below the opening
            the stop pull reaches (the stop, or the arm's reach: ~0.135 m on the bundled arm).
        overpull_m: the stop pull's target past the template's range end (m).
        accel_m_s2: acceleration of each pass's speed profile (m/s^2).
        hook_offset_m: fingers this far behind the handle bar's centre, toward the drawer front (m).
        hook_depth_m: tool centre this far below the bar's centre (m).
        command_rate_hz: arm command rate (Hz).
        n_frames: RGB-D frames at each still view.
    """

    speeds_m_s: tuple[float, ...] = (0.02, 0.04, 0.06)
    stroke_m: float = within(0.08, "(0, 0.5]")
    overpull_m: float = 0.015
    accel_m_s2: float = within(0.4, "> 0")
    hook_offset_m: float = 0.025
    hook_depth_m: float = 0.003
    command_rate_hz: float = 100.0
    n_frames: int = within(2, ">= 1")

    def __post_init__(self) -> None:
        """Validate (errors name the field)."""
        if len(self.speeds_m_s) < 2 or not all(0 < v <= 0.3 for v in self.speeds_m_s):
            raise CaptureError(
                f"articulation.speeds_m_s: two or more speeds in (0, 0.3] m/s, got {self.speeds_m_s}"
            )
        check_fields(self, error=CaptureError, prefix="articulation.")


def _profile(distance: float, speed: float, accel: float, rate: float) -> np.ndarray:
    """Positions (0 .. ``distance``) at ``rate`` along a trapezoidal speed profile ending at rest."""
    t_acc = min(speed / accel, math.sqrt(distance / accel))
    v = accel * t_acc
    t_flat = max(distance - v * t_acc, 0.0) / v
    total = 2 * t_acc + t_flat
    t = np.arange(0.0, total + 1.0 / rate, 1.0 / rate)
    s = np.where(
        t < t_acc,
        0.5 * accel * t**2,
        np.where(
            t < t_acc + t_flat,
            0.5 * v * t_acc + v * (t - t_acc),
            distance - 0.5 * accel * np.clip(total - t, 0.0, None) ** 2,
        ),
    )
    return np.clip(s, 0.0, distance)


def record_articulation(arm: Any, cfg: ArticulationConfig, hooks: PhaseHooks) -> dict[str, Any]:
    """Record the phase (see the module docstring) on the emulated ``arm``; returns the emulator's truth.

    Args:
        arm: the :class:`~r2s2r_sim.hardware.emulated_arm.EmulatedArm`.
        cfg: what to do.
        hooks: what drives the emulator and writes the bag.

    Returns:
        The drawer joint's truth (for benchmarks; never written into the bag).
    """
    marker, command, hold = hooks.marker, hooks.command, hooks.hold
    frames, gripper = hooks.frames, hooks.gripper
    world = arm.world
    model, data = world.model, world.data
    tcfg = world.config
    task = tcfg.task
    prefix = tcfg.robot.prefix
    if task is None or tcfg.robot.ee_site is None:
        raise CaptureError(f"world {world.world_id!r}: the articulation phase needs a task and robot.ee_site")
    body = model.body(task.object_body).id
    jnt = int(model.body_jntadr[body])
    qadr, dadr = int(model.jnt_qposadr[jnt]), int(model.jnt_dofadr[jnt])
    lo, hi = (float(v) for v in model.jnt_range[jnt])
    if cfg.stroke_m > hi - lo - 0.05:
        raise CaptureError(
            f"articulation.stroke_m: {cfg.stroke_m} m leaves the drawer no room ahead of the fingers"
        )
    # Stand-in: the operator closes the drawer before the phase.
    data.qpos[qadr], data.qvel[dadr] = lo, 0.0
    mujoco.mj_forward(model, data)
    axis = data.xmat[body].reshape(3, 3) @ model.jnt_axis[jnt]
    axis = axis / np.linalg.norm(axis)
    handle = data.site_xpos[model.site(task.target_site).id].copy()
    kin = KinematicArm(model, tuple(prefix + n for n in tcfg.robot.arm_joints), prefix + tcfg.robot.ee_site)
    arm_idx = [list(world.joint_names).index(n) for n in world.arm_joint_names]
    yaw = math.atan2(axis[1], axis[0]) + math.pi / 2
    rot = tool_down_rotation(yaw)
    rate = cfg.command_rate_hz
    q_now = world.joint_state()[0][arm_idx]

    def solve(points: np.ndarray, q0: np.ndarray, *, partial: bool = False) -> list[np.ndarray]:
        return ik_path(kin, points, q0, rot, phase=ARTICULATION_PHASE, partial=partial)

    def move(
        frm: np.ndarray, to: np.ndarray, q0: np.ndarray, speed: float = _MOVE_SPEED, *, partial: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Move the tool in a straight line; returns the last joint command and its tool position."""
        s = _profile(max(float(np.linalg.norm(to - frm)), 1e-6), speed, 0.5, rate)
        d = (to - frm) / max(float(np.linalg.norm(to - frm)), 1e-6)
        qs = solve(frm + s[:, None] * d, q0, partial=partial)
        for q in qs:
            command(q)
        return qs[-1], frm + s[len(qs) - 1] * d

    hook = handle - axis * cfg.hook_offset_m - np.array([0.0, 0.0, cfg.hook_depth_m])
    up = np.array([0.0, 0.0, _CLEAR_M])
    marker("closed_view", "start")
    frames(cfg.n_frames)
    marker("closed_view", "end")
    if tcfg.robot.gripper is not None:  # the closed fingers are the hook
        gripper(float(tcfg.robot.gripper.command_range[1]))

    tool_now = kin.fk(q_now)[0]
    q, at = move(tool_now, tool_now + np.array([0.0, 0.0, max(0.0, hook[2] + _CLEAR_M - tool_now[2])]), q_now)
    q, _ = move(at, hook + up, q)
    q_hook, _ = move(hook + up, hook, q)
    hold(0.3)
    passes = []
    for speed in cfg.speeds_m_s:
        s = _profile(cfg.stroke_m, speed, cfg.accel_m_s2, rate)
        s = np.concatenate([s, np.full(int(0.2 * rate), cfg.stroke_m), cfg.stroke_m - s])
        passes.append(solve(hook + s[:, None] * axis, q_hook))

    def run_passes(kind: str) -> None:
        """Every pass's commands, one marked part each (the same commands hooked and free)."""
        for k, (speed, qs) in enumerate(zip(cfg.speeds_m_s, passes, strict=True)):
            marker(kind, "start", index=k, speed_m_s=speed)
            for qc in qs:
                command(qc)
            hold(0.2)
            marker(kind, "end", index=k)

    run_passes("hooked")
    marker("stop_pull", "start")
    # As far as the stop, or as far as the arm reaches with the tool down.
    q, pulled = move(
        hook, hook + axis * (hi - lo + cfg.overpull_m), q_hook, min(cfg.speeds_m_s), partial=True
    )
    hold(0.5)
    opened_to = float(data.qpos[qadr])
    marker("stop_pull", "end")
    q, _ = move(pulled, pulled - axis * 0.02, q)
    q, _ = move(pulled - axis * 0.02, pulled - axis * 0.02 + up, q)
    hold(0.3)
    marker("open_view", "start")
    frames(cfg.n_frames)
    marker("open_view", "end")
    q, _ = move(pulled - axis * 0.02 + up, hook + up, q)
    q, _ = move(hook + up, hook, q)
    command(passes[0][0])  # the hooked passes' start, exactly
    hold(0.3)
    run_passes("free")
    move(hook, hook + up, passes[-1][-1])
    return {
        "joint": model.joint(jnt).name,
        "axis": axis.tolist(),
        "range": [lo, hi],
        "damping": float(model.dof_damping[dadr]),
        "frictionloss": float(model.dof_frictionloss[dadr]),
        "armature": float(model.dof_armature[dadr]),
        "closed_handle": handle.tolist(),
        "opened_to": opened_to,
        "opening_after": float(data.qpos[qadr]),
    }
