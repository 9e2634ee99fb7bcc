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
with :class:`~r2s2r_capture.bags.writer.BagWriter`: deterministic, faster than real time, and the same bytes
the ROS path would record (``r2s2r record`` against ``emulated_hardware_node``, covered by the recorder
tests).  Time stamps are the emulator's clock.  On a real cell the same phases are recorded with ``r2s2r
record`` while the operator moves the board and a script sends the excitation commands.

The board exists in the emulated world through a *capture variant* of the world: a copy of the world folder
whose scene gains a textured ``plane`` geom on a mocap body (no collisions,
:mod:`r2s2r_capture.procedures.emulated_board`); the hardware profile is applied to the variant exactly as
to the original world.
"""

from __future__ import annotations

import dataclasses
import json
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
from r2s2r_sim.interface import load_interface

from r2s2r_capture.bags.messages import BagMessages
from r2s2r_capture.bags.writer import BagWriter, offered_qos
from r2s2r_capture.calibration.charuco import CharucoBoardSpec, board_pose_in_plane_geom
from r2s2r_capture.errors import CaptureError, refuse_existing
from r2s2r_capture.procedures.articulation import ARTICULATION_PHASE, ArticulationConfig, record_articulation
from r2s2r_capture.procedures.emulated_board import (
    BOARD_BODY,
    BOARD_LIFT,
    BOARD_PARKED,
    board_world,
    held_board_poses,
    matrix_quat,
    rotation,
)
from r2s2r_capture.procedures.phase_hooks import PhaseHooks
from r2s2r_capture.procedures.slide import SLIDE_PHASE, SlideConfig, record_slide
from r2s2r_capture.sysid.recording import (
    ExcitationConfig,
    excitation_centre,
    excitation_trajectory,
    move_commands,
)

__all__ = [
    "CAPTURE_BOARD",
    "PHASES",
    "PHASE_TOPIC",
    "CaptureConfig",
    "CaptureSummary",
    "board_from_json",
    "board_to_json",
    "capture_emulated",
    "topic_names",
]

PHASE_TOPIC = "/r2s2r/capture/phase"
PHASES = ("board_intrinsics", "board_known_pose", "scene", "excitation")
# An A3 print: 7 x 5 squares of 6 cm (42 x 30 cm).  Bigger squares than the A4 default board, so that the
# board still has ~30 px squares lying on the table ~1 m from the camera.
CAPTURE_BOARD = CharucoBoardSpec(squares_x=7, squares_y=5, square_m=0.06, marker_m=0.045)


@dataclasses.dataclass(frozen=True, kw_only=True)
class CaptureConfig:
    """What the emulated capture records.

    Attributes:
        board: the ChArUco board (written into the phase markers so real2sim knows what was printed).
        n_intrinsics_views: board views for intrinsics (held at 0.55-0.9 m, tilted 15-40 deg).
        known_board_poses: board placements flat on the table: ``(x, y, yaw)`` of the board centre (m, rad).
        table_top_z: height of the table top (m) the known poses lie on.
        n_scene_frames: RGB-D frames of the scene (fixed camera: same pose, averaged by the TSDF).
        excitation: the excitation trajectory; ``rate_hz`` is the command rate.
        settle_s: the arm holds still this long before the excitation (s).
        seed: episode seed (object placement) and excitation seed.
        articulation: the ``articulation`` phase, recorded after the excitation in a world whose task is an
            articulated object (the drawer): see :mod:`r2s2r_capture.procedures.articulation`.
        slide: the ``slide`` phase after the excitation in a world whose task pushes its object (flicks that
            measure how far it slides, :mod:`r2s2r_capture.procedures.slide`); ``None`` leaves it out.
        interface: topic interface profile or file the bag's topic names follow (empty: the default).
    """

    board: CharucoBoardSpec = CAPTURE_BOARD
    n_intrinsics_views: int = 12
    known_board_poses: tuple[tuple[float, float, float], ...] = (
        (0.5, 0.25, 1.57),
        (0.6, -0.12, 1.5),
        (0.38, 0.05, 1.45),
    )
    table_top_z: float = 0.75
    n_scene_frames: int = 2
    excitation: ExcitationConfig = dataclasses.field(
        # 30 s of 8 sines up to 1.6 Hz at up to 2 rad/s: the 12 s / 5-sine / 1.2 rad/s trajectory left the
        # wrists' gains, armature and friction 16-33 % off on the emulator; this one brings all but the
        # tool roll (wrist_3) within 4 % (bench_real2sim).  Check 2 rad/s against your arm's limits.
        default_factory=lambda: ExcitationConfig(
            duration_s=30.0,
            rate_hz=500.0,
            base_freq_hz=0.2,
            n_harmonics=8,
            range_fraction=0.35,
            max_velocity=2.0,
            ramp_s=0.5,
        )
    )
    settle_s: float = 0.5
    seed: int = 0
    interface: str = ""
    articulation: ArticulationConfig = dataclasses.field(default_factory=ArticulationConfig)
    slide: SlideConfig | None = dataclasses.field(default_factory=SlideConfig)

    def __post_init__(self) -> None:
        """Validate counts (errors name the field)."""
        if self.n_intrinsics_views < 0 or self.n_scene_frames < 0:
            raise CaptureError(
                f"n_intrinsics_views and n_scene_frames must be >= 0: got {self.n_intrinsics_views} and "
                f"{self.n_scene_frames}"
            )
        if not self.settle_s >= 0:
            raise CaptureError(f"settle_s must be >= 0: got {self.settle_s}")


@dataclasses.dataclass(frozen=True)
class CaptureSummary:
    """What was written: the bag, message counts per phase, and the emulator's ground truth for benchmarks.

    ``truth`` is read from the emulated world after the scene phase (object poses and geom sizes, camera
    pose); it is never written into the bag.
    """

    bag: Path
    counts: dict[str, int]
    truth: dict[str, Any]


def board_to_json(board: CharucoBoardSpec) -> dict[str, Any]:
    """The board definition as plain JSON values."""
    return dataclasses.asdict(board)


def board_from_json(data: dict[str, Any]) -> CharucoBoardSpec:
    """Inverse of :func:`board_to_json` (raises ``CalibrationError`` for invalid values)."""
    return CharucoBoardSpec(
        squares_x=int(data["squares_x"]),
        squares_y=int(data["squares_y"]),
        square_m=float(data["square_m"]),
        marker_m=float(data["marker_m"]),
        dictionary=str(data["dictionary"]),
    )


_CAPTURE_TOPICS = (
    "joint_states",
    "arm_command",
    "gripper_command",
    "color_image",
    "depth_image",
    "color_info",
)


def topic_names(camera: str, interface: str = "") -> dict[str, tuple[str, str]]:
    """Interface topics a capture uses: key -> ``(name, type)``, from the ``interface`` profile.

    Args:
        camera: ROS camera name (world.yaml's ``cameras[].name``).
        interface: profile name or interface file (``config/interface.yaml``); empty: the default profile.

    Raises:
        InterfaceError: unknown profile or unreadable interface file.
    """
    iface = load_interface(interface)
    names = {}
    for key in _CAPTURE_TOPICS:
        spec = iface.topic_spec(key)
        names[key] = (iface.topic(key, camera if spec.per_camera else None), spec.type)
    names["phase"] = (PHASE_TOPIC, "std_msgs/msg/String")
    return names


# ------------------------------------------------------------------------------------------- messages


class _Msgs(BagMessages):
    """The capture's topics (names and the drivers' QoS from the interface profile) and its phase markers."""

    def __init__(self, bag: BagWriter, camera: str, interface: str) -> None:
        super().__init__(bag)
        iface = load_interface(interface)
        names = topic_names(camera, interface)
        for key, (name, msgtype) in names.items():
            # The drivers' QoS from the interface profile, so a replay offers what the drivers offer.
            offered = ()
            if key in iface.topics:
                q = iface.topics[key].qos
                if q.preset == "system_default":
                    # what Fast DDS resolves the middleware default to (reliable, transient local, keep 1)
                    rel, dur, depth = "reliable", "transient_local", 1
                else:
                    rel, dur, depth = q.reliability.value, q.durability.value, q.depth
                offered = (offered_qos(reliability=rel, durability=dur, depth=depth),)
            self.add_topic(key, name, msgtype, offered)

    def phase(self, t_ns: int, phase: str, event: str, **extra: Any) -> None:
        """A phase marker: JSON ``{"phase", "event", ...}`` on the phase topic."""
        self.string("phase", t_ns, json.dumps({"phase": phase, "event": event, **extra}, sort_keys=True))


# ------------------------------------------------------------------------------------------- capture


def capture_emulated(
    output: str | Path,
    *,
    profile: str | Path,
    world: str | Path = "tabletop-pick-v1",
    config: CaptureConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> CaptureSummary:
    """Run the capture procedure against the emulated hardware and write it as a bag.

    Args:
        output: bag folder to create (must not exist).
        profile: hardware profile YAML of the emulated unit.
        world: world id or folder the profile was written for.
        config: what to record (default :class:`CaptureConfig`).
        progress: called with one line per phase.

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
            return _record(arm, cfg, out, say)
        except BaseException:
            shutil.rmtree(out, ignore_errors=True)
            raise


def _record(arm: Any, cfg: CaptureConfig, out: Path, say: Callable[[str], None]) -> CaptureSummary:
    """Record the phases in order into a new bag at ``out``; the counts written and the emulator's truth."""
    with BagWriter(out) as bag, arm.camera_renderer() as renderer:
        c = _Capture(arm, cfg, _Msgs(bag, arm.profile.camera.name, cfg.interface), renderer)
        c.msgs.array("gripper_command", c.ns(), np.array([float(arm.world.gripper_command or 0.0)]))
        c.publish_state()
        _record_board(c, say)
        truth = _record_scene(c, say)
        _record_excitation(c, say)
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


class _Capture:
    """What every phase drives and writes: the emulated arm, its camera and board, and the bag's messages.

    Stamps are the emulator's clock; joint states go out at the driver's rate while the arm moves.
    """

    def __init__(self, arm: Any, cfg: CaptureConfig, msgs: _Msgs, renderer: Any) -> None:
        self.arm, self.cfg, self.msgs, self.renderer = arm, cfg, msgs, renderer
        world = arm.world
        self.world, self.model, self.data = world, world.model, world.data
        self.cam = arm.profile.camera
        self.K_factory, self.D_factory = self.cam.intrinsics.k(), self.cam.distortion.d()
        self.mocap = int(self.model.body_mocapid[self.model.body(BOARD_BODY).id])
        self.geom_in_board = np.linalg.inv(board_pose_in_plane_geom(cfg.board))
        self.names = list(world.joint_names)
        self.frame_id = arm.camera_frame_id
        self.js_dt = 1.0 / arm.profile.driver.joint_state_rate_hz
        self.cam_dt = 1.0 / self.cam.rate_hz

    def ns(self) -> int:
        """The emulator's clock as a bag stamp (ns), offset by 1 s: no zero stamps."""
        return 1_000_000_000 + int(round(self.arm.clock * 1e9))

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

    def place_board(self, T_world_board: np.ndarray | None) -> None:
        """Move the mocap board to ``T_world_board`` (None: parked out of view)."""
        data = self.data
        if T_world_board is None:
            data.mocap_pos[self.mocap] = BOARD_PARKED
            data.mocap_quat[self.mocap] = (1.0, 0.0, 0.0, 0.0)
        else:
            T_geom = T_world_board @ self.geom_in_board
            data.mocap_pos[self.mocap] = T_geom[:3, 3]
            data.mocap_quat[self.mocap] = matrix_quat(T_geom[:3, :3])
        mujoco.mj_forward(self.model, data)

    def frame(self, depth_too: bool) -> None:
        """One camera frame: its CameraInfo (the factory K, D), colour and, with ``depth_too``, depth."""
        cam, frame_id = self.cam, self.frame_id
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


def _record_board(c: _Capture, say: Callable[[str], None]) -> None:
    """Phases 1 and 2: the board hand-held in front of the camera, then flat on the table at known poses.

    The mocap board stands in for the person holding it; each known pose goes into its start marker.
    """
    cfg, cam, msgs = c.cfg, c.cam, c.msgs
    rng = np.random.default_rng(cfg.seed)
    pos, q = c.world.camera_pose(cam.name)
    T_world_camera = np.eye(4)
    R = np.empty(9)
    mujoco.mju_quat2Mat(R, q)
    T_world_camera[:3, :3], T_world_camera[:3, 3] = R.reshape(3, 3), pos

    msgs.phase(c.ns(), "board_intrinsics", "start", board=board_to_json(cfg.board))
    for T_cb in held_board_poses(
        cfg.board, c.K_factory, (cam.width, cam.height), cfg.n_intrinsics_views, rng
    ):
        c.place_board(T_world_camera @ T_cb)
        c.frame(depth_too=False)
        c.hold(max(c.cam_dt, 0.2))
    msgs.phase(c.ns(), "board_intrinsics", "end")
    say(f"board_intrinsics: {cfg.n_intrinsics_views} hand-held board views")

    for i, (x, y, yaw) in enumerate(cfg.known_board_poses):
        T_world_geom = np.eye(4)
        T_world_geom[:3, :3] = rotation("z", yaw)
        T_world_geom[:3, 3] = (x, y, cfg.table_top_z + BOARD_LIFT)
        T_world_board = T_world_geom @ board_pose_in_plane_geom(cfg.board)
        c.place_board(T_world_board)
        msgs.phase(
            c.ns(),
            "board_known_pose",
            "start",
            board=board_to_json(cfg.board),
            index=i,
            T_world_board=T_world_board.round(9).tolist(),
        )
        c.frame(depth_too=False)
        c.hold(c.cam_dt)
        msgs.phase(c.ns(), "board_known_pose", "end", index=i)
    say(f"board_known_pose: {len(cfg.known_board_poses)} placements on the table")


def _record_scene(c: _Capture, say: Callable[[str], None]) -> dict[str, Any]:
    """Phase 3: RGB-D frames of the scene, board removed; returns the scene's truth at that moment."""
    c.place_board(None)
    c.hold(c.cfg.settle_s)
    c.msgs.phase(c.ns(), "scene", "start")
    for _ in range(c.cfg.n_scene_frames):
        c.frame(depth_too=True)
        c.hold(c.cam_dt)
    c.msgs.phase(c.ns(), "scene", "end")
    say(f"scene: {c.cfg.n_scene_frames} RGB-D frames")
    return _scene_truth(c.arm)


def _record_excitation(c: _Capture, say: Callable[[str], None]) -> None:
    """Phase 4: the excitation about its centre, reached from home and left for home outside the phase."""
    arm, model, msgs, exc = c.arm, c.model, c.msgs, c.cfg.excitation
    arm_names = list(c.world.arm_joint_names)
    home = c.world.joint_state()[0][[c.names.index(n) for n in arm_names]]
    centre = excitation_centre(model, arm_names, home)
    t_cmd, q_cmd = excitation_trajectory(model, arm_names, exc, seed=c.cfg.seed, center=centre)
    cmd_steps = max(1, int(round(1.0 / exc.rate_hz / arm.dt)))
    every = max(1, int(round(c.js_dt / arm.dt)))

    def send(commands: np.ndarray) -> None:
        step = 0
        for target in commands:
            arm.submit_arm(target)
            msgs.array("arm_command", c.ns(), target)
            for _ in range(cmd_steps):
                arm.advance(1)
                step += 1
                if step % every == 0:
                    c.publish_state()

    # Off home, a smooth move at half the excitation's velocity bound, outside the excitation phase.
    def move(start: np.ndarray, end: np.ndarray) -> None:
        moves = move_commands(start, end, exc.rate_hz, 0.5 * exc.max_velocity)
        if len(moves):
            send(moves)
            c.hold(0.5)

    move(home, centre)
    msgs.phase(c.ns(), "excitation", "start", rate_hz=exc.rate_hz)
    send(q_cmd)
    c.hold(0.5)  # the last commands arrive after the latency
    msgs.phase(c.ns(), "excitation", "end")
    if np.any(centre != home):  # the phases that follow start near where the capture did
        move(q_cmd[-1], home)
    say(
        f"excitation: {len(t_cmd)} commands over {t_cmd[-1]:.1f} s, "
        f"{msgs.counts['joint_states']} joint states"
    )


def _scene_truth(arm: Any) -> dict[str, Any]:
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
