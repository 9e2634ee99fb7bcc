"""The capture phases, written once against a small cell I/O protocol that an emulator or a ROS client serves.

:class:`CellIO` is what a phase needs from a cell and its recording: move the arm, read its joints, grab
camera frames, place the board (the person who moves it), mark phases.  The in-process capture of the
emulated hardware (:mod:`r2s2r_capture.procedures.session`) and the live capture over DDS
(:mod:`r2s2r_capture.ros.live_capture`) each implement it; :func:`record_phases` runs the same sequence
on either, so what the bag holds and in what order is decided here only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol

import mujoco
import numpy as np
from r2s2r_sim.world.kinematics import KinematicArm

from r2s2r_capture.calibration.charuco import board_pose_in_plane_geom
from r2s2r_capture.errors import CaptureError
from r2s2r_capture.procedures.capture_config import CaptureConfig, board_to_json
from r2s2r_capture.procedures.emulated_board import BOARD_LIFT, held_board_poses, rotation
from r2s2r_capture.procedures.hand_eye_phase import hand_eye_phase
from r2s2r_capture.sysid.envelope import ArmTemplate, SafetyEnvelope
from r2s2r_capture.sysid.excitation_check import ExcitationPlan, plan_excitation
from r2s2r_capture.sysid.excitation_monitor import ExcitationMonitor
from r2s2r_capture.sysid.recording import excitation_centre, excitation_trajectory, move_commands

__all__ = [
    "BoardFrame",
    "CellIO",
    "ExcitationStopped",
    "board_phases",
    "excitation_phase",
    "excitation_plan",
    "record_phases",
    "scene_phase",
]

BoardFrame = Literal["world", "camera", "flange"]
# After each hand-held view the board is still for this long (s): a person's pause between poses.
_HELD_PAUSE_S = 0.2


class ExcitationStopped(CaptureError):
    """The excitation monitor stopped the arm (stale state, tracking error, envelope, Ctrl-C); it holds."""


class CellIO(Protocol):
    """What the capture phases drive a cell and its recording with.

    Stamps, rates and where the messages go are the implementation's: the emulator's clock and a bag
    written in-process, or the wall clock and a bag recorded from the driver topics.
    """

    arm_joint_names: tuple[str, ...]
    model: mujoco.MjModel  # the cell's world model: the joint ranges the excitation is centred in
    camera_period_s: float  # s between two camera frames

    def now_s(self) -> float:
        """The cell's clock (s): the one its joint states are stamped on."""

    def camera_model(self) -> tuple[np.ndarray, tuple[int, int]]:
        """The camera's nominal intrinsics ``K`` (3x3) and image size ``(width, height)`` (px)."""

    def marker(self, phase: str, event: str, **extra: Any) -> None:
        """Write a phase marker now (``/r2s2r/capture/phase``)."""

    def place_board(self, T: np.ndarray | None, *, frame: BoardFrame, what: str) -> None:
        """Have the board put at ``T`` (4x4, in ``frame``; None: removed from view).

        ``T`` is the OpenCV board frame's pose in ``world`` or ``camera``; in ``flange`` it is the board
        plane's pose on the arm's tool site (the board is mounted there and moves with the arm).  ``what``
        says where in words, for the person who moves the board on a real cell.
        """

    def nominal_camera(self) -> np.ndarray:
        """The camera's optical frame in the world (4x4) as the cell's world describes it: rough is enough."""

    def tool_kinematics(self) -> KinematicArm:
        """The arm's kinematics to its tool site (the flange the hand-eye board is mounted on)."""

    def frame(self, depth_too: bool) -> None:
        """Record one camera frame taken from now on: camera info and colour, with ``depth_too`` depth."""

    def hold(self, seconds: float) -> None:
        """Let ``seconds`` pass with the arm holding its last command, recording joint states."""

    def arm_positions(self) -> np.ndarray:
        """The arm joints' measured positions (rad), in ``arm_joint_names`` order."""

    def stream(self, commands: np.ndarray, rate_hz: float, monitor: ExcitationMonitor | None = None) -> None:
        """Send ``commands`` (N, J) at ``rate_hz``, recording each; ``monitor`` may stop and hold the arm.

        Raises:
            ExcitationStopped: the monitor stopped the arm (it holds where it was measured last).
        """


def board_phases(io: CellIO, cfg: CaptureConfig, say: Callable[[str], None]) -> None:
    """Phases 1 and 2: the board hand-held in front of the camera, then the extrinsics' phase.

    With ``known_pose`` extrinsics the board lies flat on the table at known poses, each pose in its start
    marker (``T_world_board``); with ``hand_eye`` the arm carries it on the flange
    (:func:`~r2s2r_capture.procedures.hand_eye_phase.hand_eye_phase`).
    """
    rng = np.random.default_rng(cfg.seed)
    K, size = io.camera_model()
    io.marker("board_intrinsics", "start", board=board_to_json(cfg.board))
    poses = held_board_poses(cfg.board, K, size, cfg.n_intrinsics_views, rng)
    for i, T_cb in enumerate(poses):
        d = float(np.linalg.norm(T_cb[:3, 3]))
        io.place_board(T_cb, frame="camera", what=f"view {i + 1}/{len(poses)}: ~{d:.2f} m away, tilted")
        io.frame(depth_too=False)
        io.hold(max(io.camera_period_s, _HELD_PAUSE_S))
    io.marker("board_intrinsics", "end")
    say(f"board_intrinsics: {cfg.n_intrinsics_views} hand-held board views")
    if cfg.extrinsics == "hand_eye":
        hand_eye_phase(io, cfg, say, io.nominal_camera(), io.tool_kinematics())
        return

    for i, (x, y, yaw) in enumerate(cfg.known_board_poses):
        T_world_geom = np.eye(4)
        T_world_geom[:3, :3] = rotation("z", yaw)
        T_world_geom[:3, 3] = (x, y, cfg.table_top_z + BOARD_LIFT)
        T_world_board = T_world_geom @ board_pose_in_plane_geom(cfg.board)
        io.place_board(
            T_world_board, frame="world", what=f"flat on the table, centre at x {x} m, y {y} m, yaw {yaw} rad"
        )
        io.marker(
            "board_known_pose",
            "start",
            board=board_to_json(cfg.board),
            index=i,
            T_world_board=T_world_board.round(9).tolist(),
        )
        io.frame(depth_too=False)
        io.hold(io.camera_period_s)
        io.marker("board_known_pose", "end", index=i)
    say(f"board_known_pose: {len(cfg.known_board_poses)} placements on the table")


def scene_phase(io: CellIO, cfg: CaptureConfig, say: Callable[[str], None]) -> None:
    """Phase 3: RGB-D frames of the scene, board removed."""
    io.place_board(None, frame="world", what="removed from the camera's view")
    io.hold(cfg.settle_s)
    io.marker("scene", "start")
    for _ in range(cfg.n_scene_frames):
        io.frame(depth_too=True)
        io.hold(io.camera_period_s)
    io.marker("scene", "end")
    say(f"scene: {cfg.n_scene_frames} RGB-D frames")


def excitation_phase(
    io: CellIO,
    cfg: CaptureConfig,
    say: Callable[[str], None],
    *,
    envelope: SafetyEnvelope | None = None,
    template: ArmTemplate | None = None,
) -> None:
    """Phase 4: the excitation about its centre, reached from home and left for home outside the phase.

    With an ``envelope`` (a real arm, or anything served over ROS) the whole plan, approach and return
    included, is checked in the ``template`` world before anything moves
    (:func:`~r2s2r_capture.sysid.excitation_check.plan_excitation`) and a monitor stops and holds the arm
    on a fault while it runs.  Without, the emulator's plan: quintic moves at half the velocity bound.

    Raises:
        EnvelopeViolation: the plan leaves the envelope (nothing has moved).
        ExcitationStopped: the monitor stopped the arm.
    """
    exc = cfg.excitation
    if envelope is not None:
        if template is None:
            raise CaptureError("an excitation inside an envelope needs the template arm to check it in")
        _checked_excitation(io, cfg, envelope, template)
        say(f"excitation: {exc.duration_s:.1f} s at {exc.rate_hz:.0f} Hz inside the envelope, arm home again")
        return
    names = list(io.arm_joint_names)
    home = io.arm_positions()
    centre = excitation_centre(io.model, names, home)
    t_cmd, q_cmd = excitation_trajectory(io.model, names, exc, seed=cfg.seed, center=centre)

    # Off home, a smooth move at half the excitation's velocity bound, outside the excitation phase.
    def move(start: np.ndarray, end: np.ndarray) -> None:
        moves = move_commands(start, end, exc.rate_hz, 0.5 * exc.max_velocity)
        if len(moves):
            io.stream(moves, exc.rate_hz)
            io.hold(0.5)

    move(home, centre)
    io.marker("excitation", "start", rate_hz=exc.rate_hz)
    io.stream(q_cmd, exc.rate_hz)
    io.hold(0.5)  # the last commands arrive after the latency
    io.marker("excitation", "end")
    if np.any(centre != home):  # the phases that follow start near where the capture did
        move(q_cmd[-1], home)
    say(f"excitation: {len(t_cmd)} commands over {t_cmd[-1]:.1f} s")


def _ramped_out(
    t: np.ndarray, q: np.ndarray, centre: np.ndarray, ramp_s: float, max_velocity: float
) -> np.ndarray:
    """``q`` brought back to rest at ``centre`` over its last ``ramp_s`` (quintic), as it starts.

    The sum of sines starts at rest but ends moving; a real arm's plan must not jump from that speed into
    the return home, which starts at rest.  Each joint is scaled back under ``max_velocity`` after.
    """
    if ramp_s <= 0:
        return q
    r = np.clip((t[-1] - t) / ramp_s, 0.0, 1.0)
    wave = (q - centre) * (r**3 * (10 - 15 * r + 6 * r**2))[:, None]
    vmax = np.abs(np.gradient(wave, t, axis=0)).max(axis=0)
    return centre + wave * np.minimum(1.0, max_velocity / np.maximum(vmax, 1e-12))


def excitation_plan(
    io: CellIO, cfg: CaptureConfig, envelope: SafetyEnvelope, template: ArmTemplate
) -> ExcitationPlan:
    """Approach, excitation (brought to rest at its end) and return home, checked as one plan.

    The arm starts and ends where it is measured now; call it before anything moves.

    Raises:
        EnvelopeViolation: the plan leaves ``envelope`` somewhere (names the rule, joint, time and value).
    """
    exc = cfg.excitation
    names = list(io.arm_joint_names)
    home = io.arm_positions()
    centre = excitation_centre(io.model, names, home)
    t_cmd, q_cmd = excitation_trajectory(io.model, names, exc, seed=cfg.seed, center=centre)
    q_cmd = _ramped_out(t_cmd, q_cmd, centre, exc.ramp_s, exc.max_velocity)
    return plan_excitation(template, home, (t_cmd, q_cmd), envelope, home_q=home)


def _checked_excitation(
    io: CellIO, cfg: CaptureConfig, envelope: SafetyEnvelope, template: ArmTemplate
) -> None:
    """The checked plan sent at the excitation's rate, watched by the stop-and-hold monitor."""
    plan = excitation_plan(io, cfg, envelope, template)
    rate_hz = cfg.excitation.rate_hz
    t, q = plan.trajectory.t, plan.trajectory.q
    start = int(np.searchsorted(t, plan.excitation_start_s - 1e-9))
    end = int(np.searchsorted(t, plan.excitation_end_s + 1e-9))
    monitor = ExcitationMonitor.for_arm(template, envelope, start_s=io.now_s(), start_q=q[0])
    io.stream(q[:start], rate_hz, monitor)
    io.marker("excitation", "start", rate_hz=rate_hz)
    io.stream(q[start:end], rate_hz, monitor)
    io.hold(0.5)  # the last commands arrive after the latency
    io.marker("excitation", "end")
    io.stream(q[end:], rate_hz, monitor)


def record_phases(
    io: CellIO,
    cfg: CaptureConfig,
    say: Callable[[str], None],
    *,
    after_scene: Callable[[], None] | None = None,
    envelope: SafetyEnvelope | None = None,
    template: ArmTemplate | None = None,
) -> None:
    """Board views, board at known poses, scene frames and the excitation, in that order.

    ``after_scene`` runs between the scene and the excitation (the emulator reads its truth there).  With an
    ``envelope`` the excitation plan is checked first, so a refused one costs no board views.
    """
    if envelope is not None and template is not None:
        excitation_plan(io, cfg, envelope, template)
    board_phases(io, cfg, say)
    scene_phase(io, cfg, say)
    if after_scene is not None:
        after_scene()
    excitation_phase(io, cfg, say, envelope=envelope, template=template)
