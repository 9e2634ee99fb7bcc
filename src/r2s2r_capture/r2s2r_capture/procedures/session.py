"""The real-to-sim capture procedure, run against the EMULATED hardware in-process.

What a capture holds (everything ``r2s2r real2sim`` needs), in this order, each phase between two
``/r2s2r/capture/phase`` markers (``std_msgs/msg/String`` holding JSON ``{"phase", "event", ...}``):

1. ``board_intrinsics``: views of a ChArUco board held in front of the fixed camera at varied distances and
   tilts (a person moves the board by hand; here a mocap board body is moved between views: the stand-in
   for that person).  Used for intrinsics and distortion.
2. ``board_known_pose``: the board lying flat on the table at poses the operator knows (e.g. against a jig);
   each view's ``start`` marker carries ``T_world_board`` (4x4, OpenCV board frame in the world) and the
   board definition.  Used for the camera extrinsics (board-at-known-pose).
3. ``scene``: RGB-D frames of the scene with the board removed; the camera is fixed, so the reconstruction
   fuses them (>= 1 is enough; more average the depth).
4. ``excitation``: a sum-of-sines joint trajectory (:mod:`r2s2r_capture.sysid.recording`) sent as arm
   commands about a centre off the joint limits, with the measured ``/joint_states``.  Used for dynamics
   identification.

Topics and types are those of the real interface (``config/interface.yaml``): ``/joint_states``,
``/forward_position_controller/commands``, ``/gripper_controller/commands``, ``/<camera>/color/image_raw``
(rgb8), ``/<camera>/aligned_depth_to_color/image_raw`` (16UC1, mm), ``/<camera>/color/camera_info`` (the
profile's factory ``K``, ``D``; real2sim takes only the image size from it and calibrates from the board).

**Why in-process.**  The emulator core (:class:`r2s2r_sim.hardware.emulated_arm.EmulatedArm` and its
:class:`~r2s2r_sim.hardware.emulated_camera.DistortedRgbdCamera`) is stepped directly and the bag is written
with :class:`~r2s2r_capture.bags.writer.BagWriter`: deterministic and faster than real time.  Time stamps
are the emulator's clock.  The phases themselves are :mod:`r2s2r_capture.procedures.phases`, run here on
:class:`EmulatedCellIO`; ``r2s2r capture`` without ``--emulated`` runs the same phases over DDS against a
real cell or the emulated hardware node (:mod:`r2s2r_capture.ros.live_capture`).

The board exists in the emulated world through a *capture variant* of the world: a copy of the world folder
whose scene gains a textured ``plane`` geom on a mocap body (no collisions,
:mod:`r2s2r_capture.procedures.emulated_board`); the hardware profile is applied to the variant exactly as
to the original world.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from r2s2r_sim.errors import WorldError
from r2s2r_sim.hardware.emulated_arm import EmulatedArm
from r2s2r_sim.hardware.profile import HardwareProfileError, load_hardware_profile
from r2s2r_sim.progress import Progress
from r2s2r_sim.world.kinematics import KinematicArm
from transforms3d.quaternions import quat2mat

from r2s2r_capture.bags.writer import BagWriter
from r2s2r_capture.calibration.charuco import board_pose_in_plane_geom
from r2s2r_capture.errors import CaptureError, refuse_existing
from r2s2r_capture.procedures.articulation import ARTICULATION_PHASE, record_articulation
from r2s2r_capture.procedures.capture_config import (
    CAPTURE_BOARD,
    PHASE_TOPIC,
    PHASES,
    CaptureConfig,
    CaptureMessages,
    CaptureSummary,
    board_from_json,
    board_to_json,
    topic_names,
)
from r2s2r_capture.procedures.emulated_board import (
    BOARD_BODY,
    BOARD_PARKED,
    board_world,
    matrix_quat,
    rotation,
)
from r2s2r_capture.procedures.hand_eye_phase import tool_site
from r2s2r_capture.procedures.phase_hooks import PhaseHooks
from r2s2r_capture.procedures.phases import BoardFrame, record_phases
from r2s2r_capture.procedures.slide import SLIDE_PHASE, record_slide
from r2s2r_capture.sysid.excitation_monitor import ExcitationMonitor

__all__ = [
    "CAPTURE_BOARD",
    "PHASES",
    "PHASE_TOPIC",
    "CaptureConfig",
    "CaptureSummary",
    "EmulatedCellIO",
    "board_from_json",
    "board_to_json",
    "capture_emulated",
    "scene_truth",
    "topic_names",
]


# ------------------------------------------------------------------------------------------- capture


def capture_emulated(
    output: str | Path,
    *,
    profile: str | Path,
    world: str | Path = "tabletop-pick-v1",
    config: CaptureConfig | None = None,
    progress: Callable[[str], None] | None = None,
    progress_bars: bool = False,
) -> CaptureSummary:
    """Run the capture procedure against the emulated hardware and write it as a bag.

    Args:
        output: bag folder to create (must not exist).
        profile: hardware profile YAML of the emulated unit.
        world: world id or folder the profile was written for.
        config: what to record (default :class:`CaptureConfig`).
        progress: called with one line per phase.
        progress_bars: also count the phases done on stderr, with an ETA
            (:class:`~r2s2r_sim.progress.Progress`).

    Raises:
        CaptureError: the output exists or the emulator cannot be built (message says why).
    """
    cfg = config or CaptureConfig()
    out = refuse_existing(output, CaptureError)
    say = progress or (lambda _line: None)
    with tempfile.TemporaryDirectory(prefix="r2s2r-capture-") as tmp:
        try:
            prof = load_hardware_profile(profile)
            variant = board_world(world, cfg.board, Path(tmp))
            arm = EmulatedArm(variant, prof, seed=cfg.seed)
        except (HardwareProfileError, WorldError, ValueError) as err:
            raise CaptureError(f"emulated hardware cannot be built: {err}") from err
        try:
            with Progress(_phase_count(arm, cfg), "capture", "phase", quiet=not progress_bars) as bar:

                def phase_done(line: str) -> None:
                    say(line)
                    bar.update(1)

                return _record(arm, cfg, out, phase_done)
        except BaseException:
            shutil.rmtree(out, ignore_errors=True)
            raise


def _phase_count(arm: Any, cfg: CaptureConfig) -> int:
    """The phase lines :func:`_record` says: two of the board, scene, excitation, a drawer or push phase."""
    task = arm.world.config.task
    kind = None if task is None else task.type.value
    return 4 + int(kind == "drawer" or (kind == "push" and cfg.slide is not None))


def _record(arm: Any, cfg: CaptureConfig, out: Path, say: Callable[[str], None]) -> CaptureSummary:
    """Record the phases in order into a new bag at ``out``; the counts written and the emulator's truth."""
    with BagWriter(out) as bag, arm.camera_renderer() as renderer:
        c = EmulatedCellIO(arm, cfg, CaptureMessages(bag, arm.profile.camera.name, cfg.interface), renderer)
        c.msgs.array("gripper_command", c.ns(), np.array([float(arm.world.gripper_command or 0.0)]))
        c.publish_state()
        truth: dict[str, Any] = {}
        record_phases(c, cfg, say, after_scene=lambda: truth.update(scene_truth(arm)))
        task = arm.world.config.task
        kind = None if task is None else task.type.value
        if kind == "drawer":
            acfg = cfg.articulation
            truth["articulation"] = record_articulation(
                arm, acfg, c.hooks(ARTICULATION_PHASE, acfg.command_rate_hz)
            )
            say("articulation: drawer opened by the arm, hooked and free passes")
        elif kind == "push" and cfg.slide is not None:
            truth["slide"] = record_slide(arm, cfg.slide, c.hooks(SLIDE_PHASE, cfg.slide.command_rate_hz))
            n = len(cfg.slide.flicks)
            say(f"slide: {n} flick(s) of the {task.object_body}, views before and after")
        counts = dict(c.msgs.counts)
    return CaptureSummary(bag=out, counts=counts, truth=truth)


class EmulatedCellIO:
    """The capture phases' cell I/O over the emulated arm, stepped in-process, written straight to the bag.

    Stamps are the emulator's clock; joint states go out at the driver's rate while the arm moves.  The
    board is a mocap body moved between views: the stand-in for the person who moves it.
    """

    def __init__(self, arm: Any, cfg: CaptureConfig, msgs: CaptureMessages, renderer: Any) -> None:
        self.arm, self.cfg, self.msgs, self.renderer = arm, cfg, msgs, renderer
        world = arm.world
        self.world, self.model, self.data = world, world.model, world.data
        self.cam = arm.profile.camera
        self.K_factory, self.D_factory = self.cam.intrinsics.k(), self.cam.distortion.d()
        self.mocap = int(self.model.body_mocapid[self.model.body(BOARD_BODY).id])
        self.geom_in_board = np.linalg.inv(board_pose_in_plane_geom(cfg.board))
        self.names = list(world.joint_names)
        self.arm_joint_names = tuple(world.arm_joint_names)
        self._arm_index = [self.names.index(n) for n in self.arm_joint_names]
        self.frame_id = arm.camera_frame_id
        self.js_dt = 1.0 / arm.profile.driver.joint_state_rate_hz
        self.cam_dt = 1.0 / self.cam.rate_hz
        self.camera_period_s = self.cam_dt
        self._tool_site = tool_site(world) if cfg.extrinsics == "hand_eye" else ""
        self._mount: np.ndarray | None = None

    def ns(self) -> int:
        """The emulator's clock as a bag stamp (ns), offset by 1 s: no zero stamps."""
        return 1_000_000_000 + int(round(self.arm.clock * 1e9))

    def now_s(self) -> float:
        """The emulator's clock (s)."""
        return float(self.arm.clock)

    def camera_model(self) -> tuple[np.ndarray, tuple[int, int]]:
        """The profile's factory intrinsics and image size."""
        return self.K_factory, (self.cam.width, self.cam.height)

    def marker(self, phase: str, event: str, **extra: Any) -> None:
        """A phase marker at the emulator's clock."""
        self.msgs.phase(self.ns(), phase, event, **extra)

    def arm_positions(self) -> np.ndarray:
        """The arm joints' true positions."""
        return self.world.joint_state()[0][self._arm_index]

    def publish_state(self) -> None:
        """One joint state message, now."""
        q, qd, e = self.arm.joint_state()
        self.msgs.joint_state(self.ns(), self.names, q, qd, e)

    def hold(self, seconds: float) -> None:
        """Let the emulator run for ``seconds``, publishing joint states at the driver's rate."""
        steps = max(1, int(round(seconds / self.arm.dt)))
        every = max(1, int(round(self.js_dt / self.arm.dt)))
        for k in range(steps):
            self.arm.advance(1)
            if k % every == 0:
                self.publish_state()

    def stream(self, commands: np.ndarray, rate_hz: float, monitor: ExcitationMonitor | None = None) -> None:
        """Submit each command for one command period; joint states at the driver's rate throughout."""
        del monitor  # the emulator's excitation is planned inside its limits; nothing to stop
        arm = self.arm
        cmd_steps = max(1, int(round(1.0 / rate_hz / arm.dt)))
        every = max(1, int(round(self.js_dt / arm.dt)))
        step = 0
        for target in commands:
            arm.submit_arm(target)
            self.msgs.array("arm_command", self.ns(), target)
            for _ in range(cmd_steps):
                arm.advance(1)
                step += 1
                if step % every == 0:
                    self.publish_state()

    def place_board(self, T: np.ndarray | None, *, frame: BoardFrame, what: str) -> None:
        """Move the mocap board to ``T`` in ``frame`` (None: parked; ``flange``: mounted there)."""
        del what
        self._mount = T if frame == "flange" else None
        if T is None:
            self._put_board(np.eye(4), parked=True)
        elif frame != "flange":
            T_world_board = self._world_camera() @ T if frame == "camera" else T
            self._put_board(T_world_board @ self.geom_in_board)
        else:
            self._follow_flange()

    def _put_board(self, T_geom: np.ndarray, parked: bool = False) -> None:
        data = self.data
        data.mocap_pos[self.mocap] = BOARD_PARKED if parked else T_geom[:3, 3]
        data.mocap_quat[self.mocap] = (1.0, 0.0, 0.0, 0.0) if parked else matrix_quat(T_geom[:3, :3])
        mujoco.mj_forward(self.model, data)

    def _follow_flange(self) -> None:
        """The mounted board where the arm's true tool site is now (the mount moves with the arm)."""
        if self._mount is None:
            return
        pos, quat = self.world.ee_pose()
        T_world_site = np.eye(4)
        T_world_site[:3, :3] = quat2mat(quat)
        T_world_site[:3, 3] = pos
        self._put_board(T_world_site @ self._mount)

    def nominal_camera(self) -> np.ndarray:
        """The camera where the emulated unit has it: the plan only needs a rough pose."""
        return self._world_camera()

    def tool_kinematics(self) -> KinematicArm:
        """The world model's kinematics from the arm joints to its tool site."""
        return KinematicArm(self.model, self.arm_joint_names, self._tool_site)

    def _world_camera(self) -> np.ndarray:
        """The camera's true optical frame in the world (the person sees where the camera is)."""
        pos, q = self.world.camera_pose(self.cam.name)
        T = np.eye(4)
        R = np.empty(9)
        mujoco.mju_quat2Mat(R, q)
        T[:3, :3], T[:3, 3] = R.reshape(3, 3), pos
        return T

    def frame(self, depth_too: bool) -> None:
        """One camera frame: its CameraInfo (the factory K, D), colour and, with ``depth_too``, depth."""
        cam, frame_id = self.cam, self.frame_id
        self._follow_flange()
        rgb, depth = self.renderer.render(self.data)
        t = self.ns()
        self.msgs.camera_info(t, frame_id, cam.width, cam.height, self.K_factory, self.D_factory)
        self.msgs.image("color_image", t, frame_id, rgb, "rgb8")
        if depth_too:
            self.msgs.image("depth_image", t, frame_id, depth.astype(np.uint16), "16UC1")

    def hooks(self, phase: str, rate_hz: float) -> PhaseHooks:
        """Callbacks a scripted phase drives arm and bag with (joint states at one offset per command)."""
        arm, msgs = self.arm, self.msgs
        cmd_steps = max(1, int(round(1.0 / rate_hz / arm.dt)))
        every = max(1, int(round(self.js_dt / arm.dt)))

        def command(q: np.ndarray) -> None:
            arm.submit_arm(q)
            msgs.array("arm_command", self.ns(), q)
            for k in range(cmd_steps):
                arm.advance(1)
                if (k + 1) % every == 0:
                    self.publish_state()

        def frames(n: int) -> None:
            for _ in range(n):
                self.frame(True)
                self.hold(self.cam_dt)

        def marker(part: str, event: str, **extra: Any) -> None:
            msgs.phase(self.ns(), phase, event, part=part, **extra)

        def gripper(value: float) -> None:
            arm.submit_gripper(value)
            msgs.array("gripper_command", self.ns(), np.array([value]))

        return PhaseHooks(marker=marker, command=command, hold=self.hold, frames=frames, gripper=gripper)


def scene_truth(arm: Any) -> dict[str, Any]:
    """Ground truth of the emulated scene (for benchmarks only; never written into the bag)."""
    world = arm.world
    model, data = world.model, world.data
    objects: dict[str, Any] = {}
    for body in ("cube", "bin"):
        try:
            bid = model.body(body).id
        except KeyError:
            continue
        xquat = data.xquat[bid]
        yaw = 2.0 * math.atan2(xquat[3], xquat[0])
        # Extents of the visible box and mesh geoms in the body's yaw frame (the bodies here are only
        # yawed); a mesh's bounding box in its own frame is ``geom_aabb`` (centre, half sizes).
        Rz = rotation("z", yaw)
        lo_b, hi_b = np.full(3, np.inf), np.full(3, -np.inf)
        shapes = (int(mujoco.mjtGeom.mjGEOM_BOX), int(mujoco.mjtGeom.mjGEOM_MESH))
        for g in range(model.ngeom):
            if (
                model.geom_bodyid[g] != bid
                or int(model.geom_type[g]) not in shapes
                or model.geom_rgba[g, 3] == 0
            ):
                continue
            R = data.geom_xmat[g].reshape(3, 3)
            centre_g, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
            signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
            corners = centre_g + signs * half
            pts = (data.geom_xpos[g] + corners @ R.T) @ Rz
            lo_b, hi_b = np.minimum(lo_b, pts.min(0)), np.maximum(hi_b, pts.max(0))
        centre = Rz @ ((lo_b + hi_b) / 2)
        objects[body] = {"position": centre.tolist(), "size": (hi_b - lo_b).tolist(), "yaw": yaw}
    pos, quat = world.camera_pose(arm.profile.camera.name)
    return {"objects": objects, "camera_position": pos.tolist(), "camera_quat": quat.tolist()}
