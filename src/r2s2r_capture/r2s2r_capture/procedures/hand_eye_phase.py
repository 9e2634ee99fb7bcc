"""The capture's ``hand_eye`` phase: the board on the flange, carried by the arm through poses in view.

Eye-to-hand calibration as real cells do it: the camera is fixed, the ChArUco board is mounted on the tool
flange (at a rough offset; the solve finds the exact one), and the arm visits poses tilted about two axes
and rolled about a third (:func:`~r2s2r_capture.calibration.hand_eye.plan_hand_eye_poses`).  Each view's
start marker carries the arm joints' *measured* positions, so real2sim takes the flange pose from the forward
kinematics of what the arm reported, never from the plan.

The poses are planned around the board held facing the camera at ``standoff_m`` along the camera's line of
sight, the camera's pose being the world's nominal one (a rough pose is all the plan needs); poses the arm
cannot reach are left out, and too few reachable ones stop the phase before anything moves.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from r2s2r_sim.ranges import check_fields, within
from r2s2r_sim.world.kinematics import KinematicArm

from r2s2r_capture.calibration.hand_eye import plan_hand_eye_poses
from r2s2r_capture.errors import CaptureError
from r2s2r_capture.sysid.recording import move_commands

__all__ = ["HAND_EYE_PHASE", "HandEyeConfig", "HandEyePlan", "hand_eye_phase", "plan_hand_eye", "tool_site"]

HAND_EYE_PHASE = "hand_eye"
_REACH_TOL_M = 0.003  # IK position error (m) under which a pose counts as reached
_REACH_TOL_RAD = 0.02  # and orientation error (rad)
# Flange rolls tried about the line of sight: the wrist may reach the poses only at some of them.
_ROLLS_DEG = (0.0, 90.0, 180.0, 270.0)
_NEAR_RAD = 0.05  # every arm joint this close to its command, and
_STILL_RAD = 0.001  # none moving more than this in a settle step: the arm is at the pose
_SETTLE_STEP_S = 0.1


@dataclasses.dataclass(frozen=True, kw_only=True)
class HandEyeConfig:
    """What the hand-eye phase does.

    Attributes:
        n_poses: flange poses planned (those out of reach are left out; at least 5 must remain).
        standoff_m: board to camera along its line of sight at the nominal pose (m); nearer and farther
            standoffs are tried when the arm cannot hold the board there.
        board_offset_m: the mount: board plane this far beyond the tool site along its z axis (m), board
            centred on that axis and facing away from the flange.  Rough is enough: the solve finds it.
        max_tilt_deg: tilt of the poses about the flange's x and y axes (deg).
        max_roll_deg: roll about the flange's z axis (deg).
        max_shift_m: shift across the line of sight (m).
        speed_rad_s: joint speed cap of the moves between poses (rad/s).
        settle_s: the arm holds this long at a pose before its frame (s), once it has reached it.
        settle_timeout_s: how long the arm may take to reach a pose after its last command (s): a driver
            that lags the commands (a loaded machine, a slow trajectory controller) is waited for.
        command_rate_hz: rate the moves are commanded at (Hz).
    """

    n_poses: int = within(12, "[5, 60]")
    standoff_m: float = within(0.6, "[0.2, 2]")
    board_offset_m: float = within(0.02, "[0, 0.3]")
    max_tilt_deg: float = within(25.0, "(0, 60]")
    max_roll_deg: float = within(20.0, "[0, 90]")
    max_shift_m: float = within(0.05, "[0, 0.3]")
    speed_rad_s: float = within(0.5, "(0, 2]")
    settle_s: float = within(0.5, "[0, 10]")
    settle_timeout_s: float = within(20.0, "(0, 120]")
    command_rate_hz: float = within(100.0, "(0, 1000]")

    def __post_init__(self) -> None:
        """Validate (errors name the field)."""
        check_fields(self, error=CaptureError, prefix="hand_eye.")

    @property
    def T_flange_geom(self) -> np.ndarray:
        """The board plane's pose on the tool site: ``board_offset_m`` along its z, facing outward."""
        T = np.eye(4)
        T[2, 3] = self.board_offset_m
        return T


@dataclasses.dataclass(frozen=True)
class HandEyePlan:
    """Joint targets of the reachable poses, in visiting order, and how many of the planned ones they are."""

    q: tuple[np.ndarray, ...]
    n_planned: int
    standoff_m: float


def tool_site(world: Any) -> str:
    """The compiled name of the tool site of ``world`` (a SimWorld): where the hand-eye board is mounted.

    Raises:
        CaptureError: the world's robot names no ``ee_site``.
    """
    robot = world.config.robot
    if robot.ee_site is None:
        raise CaptureError(
            f"world {world.world_id!r}: the hand-eye phase mounts the board on the tool site, and "
            "robot.ee_site "
            "is not set in its world.yaml"
        )
    return str(robot.prefix + robot.ee_site)


def _nominal_flange(T_world_camera: np.ndarray, standoff: float, offset: float, roll: float) -> np.ndarray:
    """The flange pose holding the board centre ``standoff`` ahead of the camera, facing it."""
    R_wc, p_wc = T_world_camera[:3, :3], T_world_camera[:3, 3]
    c, s = math.cos(roll), math.sin(roll)
    # Flange z toward the camera (against its line of sight), x along the camera's x turned by ``roll``.
    R_cf = np.diag([1.0, -1.0, -1.0]) @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    T = np.eye(4)
    T[:3, :3] = R_wc @ R_cf
    T[:3, 3] = p_wc + (standoff + offset) * R_wc[:, 2]
    return T


def _reach(kin: KinematicArm, poses: list[np.ndarray], q0: np.ndarray) -> list[np.ndarray]:
    """Joint positions of the poses the arm reaches, each IK started from the last reached one."""
    out, q = [], q0
    for T in poses:
        sol, err = kin.ik(T[:3, 3], T[:3, :3], q, iterations=200)
        _, rot = kin.fk(sol)
        angle = np.arccos(np.clip((np.trace(rot.T @ T[:3, :3]) - 1.0) / 2.0, -1.0, 1.0))
        if err < _REACH_TOL_M and angle < _REACH_TOL_RAD:
            out.append(sol)
            q = sol
    return out


def _settle(io: Any, target: np.ndarray, timeout_s: float) -> None:
    """Hold until the arm has stopped near ``target``: the frame and the joints recorded show one pose.

    Stopped: no joint moved more than ``_STILL_RAD`` in the last ``_SETTLE_STEP_S``; near: every joint within
    ``_NEAR_RAD`` of its command (a position servo may sag a little under gravity).

    Raises:
        CaptureError: the arm has not stopped there after ``timeout_s`` (names the joints and by how much).
    """
    waited, last = 0.0, io.arm_positions()
    while True:
        io.hold(_SETTLE_STEP_S)
        waited += _SETTLE_STEP_S
        now = io.arm_positions()
        off = np.abs(now - target)
        if float(off.max()) < _NEAR_RAD and float(np.abs(now - last).max()) < _STILL_RAD:
            return
        if waited >= timeout_s:
            names = io.arm_joint_names
            far = {n: round(float(d), 4) for n, d in zip(names, off, strict=True) if d >= _NEAR_RAD} or off
            raise CaptureError(
                f"hand_eye: waited {timeout_s:g} s for the arm to stop at its pose; off by (rad): {far}"
            )
        last = now


def plan_hand_eye(
    kin: KinematicArm, T_world_camera: np.ndarray, home: np.ndarray, cfg: HandEyeConfig
) -> HandEyePlan:
    """The reachable hand-eye poses: the standoff and flange roll that reach the most of the planned ones.

    Raises:
        CaptureError: fewer than 5 planned poses are reachable at any standoff and roll (nothing moved).
    """
    best: HandEyePlan | None = None
    for standoff in (cfg.standoff_m, 0.8 * cfg.standoff_m, 1.25 * cfg.standoff_m, 0.65 * cfg.standoff_m):
        for roll in _ROLLS_DEG:
            T0 = _nominal_flange(T_world_camera, standoff, cfg.board_offset_m, math.radians(roll))
            poses = plan_hand_eye_poses(
                T0,
                cfg.n_poses,
                max_tilt_deg=cfg.max_tilt_deg,
                max_roll_deg=cfg.max_roll_deg,
                max_shift_m=cfg.max_shift_m,
            )
            reached = _reach(kin, poses, home)
            if best is None or len(reached) > len(best.q):
                best = HandEyePlan(tuple(reached), cfg.n_poses, standoff)
            if len(reached) == cfg.n_poses:
                return best
    assert best is not None
    if len(best.q) < 5:
        raise CaptureError(
            f"hand_eye: the arm reaches {len(best.q)} of {cfg.n_poses} poses holding the board toward the "
            f"camera (standoffs {cfg.standoff_m:g} m and around), at least 5 are needed; set "
            "hand_eye.standoff_m "
            "to a distance the arm can hold the board at, or use the known-pose extrinsics"
        )
    return best


def hand_eye_phase(
    io: Any, cfg: Any, say: Callable[[str], None], T_world_camera: np.ndarray, kin: KinematicArm
) -> None:
    """The board mounted on the flange, then the arm through the planned poses, one frame at each.

    ``io`` is the capture's :class:`~r2s2r_capture.procedures.phases.CellIO`, ``cfg`` its
    :class:`~r2s2r_capture.procedures.capture_config.CaptureConfig` (``cfg.hand_eye`` set);
    ``T_world_camera`` the camera's nominal optical frame and ``kin`` the arm's tool-site kinematics.

    Raises:
        CaptureError: too few reachable poses (before anything moves).
    """
    he: HandEyeConfig = cfg.hand_eye
    home = io.arm_positions()
    plan = plan_hand_eye(kin, T_world_camera, home, he)
    rate = he.command_rate_hz

    def move(start: np.ndarray, end: np.ndarray) -> None:
        commands = move_commands(start, end, rate, he.speed_rad_s)
        if len(commands):
            io.stream(commands, rate)
        _settle(io, end, he.settle_timeout_s)

    io.place_board(
        he.T_flange_geom,
        frame="flange",
        what=f"on the flange, facing away from it, {he.board_offset_m:g} m beyond the tool centre",
    )
    io.marker(HAND_EYE_PHASE, "start", board=dataclasses.asdict(cfg.board), joints=list(io.arm_joint_names))
    last = home
    for i, q in enumerate(plan.q):
        move(last, q)
        io.hold(he.settle_s)
        measured = io.arm_positions()
        joints = list(io.arm_joint_names)
        io.marker(HAND_EYE_PHASE, "start", index=i, q=measured.round(9).tolist(), joints=joints)
        io.frame(depth_too=False)
        io.hold(io.camera_period_s)
        io.marker(HAND_EYE_PHASE, "end", index=i)
        last = q
    move(last, home)
    io.hold(he.settle_s)
    io.marker(HAND_EYE_PHASE, "end")
    io.place_board(None, frame="world", what="taken off the flange and out of the camera's view")
    say(
        f"hand_eye: {len(plan.q)} of {plan.n_planned} flange poses reached, board {plan.standoff_m:g} m "
        "from the camera"
    )
