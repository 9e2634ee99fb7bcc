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
:class:`~r2s2r_sim.hardware.emulated_camera.DistortedRgbdCamera`) is stepped directly and the bag is written with
:class:`~r2s2r_capture.bags.writer.BagWriter`: deterministic, faster than real time, and the same bytes the
ROS path would record (``r2s2r record`` against ``emulated_hardware_node``, covered by the recorder tests).
Time stamps are the emulator's clock.  On a real cell the same phases are recorded with ``r2s2r record``
while the operator moves the board and a script sends the excitation commands.

The board exists in the emulated world through a *capture variant* of the world: a copy of the world folder
whose scene gains a textured ``plane`` geom on a mocap body (no collisions); the hardware profile is applied
to the variant exactly as to the original world.
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

from r2s2r_capture.bags.messages import BagMessages
from r2s2r_capture.bags.writer import BagWriter, offered_qos
from r2s2r_capture.calibration.charuco import CharucoBoardSpec, board_pose_in_plane_geom, write_board_png
from r2s2r_capture.errors import CaptureError, refuse_existing
from r2s2r_capture.procedures.articulation import ARTICULATION_PHASE, ArticulationConfig
from r2s2r_capture.procedures.phase_hooks import PhaseHooks
from r2s2r_capture.procedures.slide import SLIDE_PHASE, SlideConfig
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
_BOARD_BODY = "r2s2r_capture_board"
_BOARD_PARKED = np.array([0.0, 0.0, -5.0])  # below the floor: out of every view
_BOARD_LIFT = 0.0005  # m above the table top (no z-fighting)


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
    from r2s2r_sim.interface import load_interface

    iface = load_interface(interface)
    names = {}
    for key in _CAPTURE_TOPICS:
        spec = iface.topic_spec(key)
        names[key] = (iface.topic(key, camera if spec.per_camera else None), spec.type)
    names["phase"] = (PHASE_TOPIC, "std_msgs/msg/String")
    return names


# ------------------------------------------------------------------------------------------- world


def _board_editor(texture: Path, board: CharucoBoardSpec) -> Callable[[mujoco.MjSpec], None]:
    def edit(spec: mujoco.MjSpec) -> None:
        spec.add_texture(name=_BOARD_BODY, type=mujoco.mjtTexture.mjTEXTURE_2D, file=str(texture))
        mat = spec.add_material(name=_BOARD_BODY, specular=0.0, shininess=0.0)
        mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = _BOARD_BODY
        body = spec.worldbody.add_body(name=_BOARD_BODY, mocap=True, pos=_BOARD_PARKED)
        w, h = board.size_m
        body.add_geom(
            name=_BOARD_BODY,
            type=mujoco.mjtGeom.mjGEOM_PLANE,
            size=[w / 2, h / 2, 0.01],
            material=_BOARD_BODY,
            contype=0,
            conaffinity=0,
        )

    return edit


def _capture_variant(world: str | Path, board: CharucoBoardSpec, root: Path) -> Path:
    """Copy the world folder to ``root/world`` and add the board (texture + mocap plane) to its scene."""
    from r2s2r_sim.world.config import load_world_config
    from r2s2r_sim.worlds import world_path

    src = world_path(world)
    dst = root / "world"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    cfg = load_world_config(dst)
    scene_path = Path(cfg.scene)
    write_board_png(board, scene_path.parent / f"{_BOARD_BODY}.png", px_per_square=160)
    texture = Path(f"{_BOARD_BODY}.png")  # relative to the scene file: stays inside the world folder
    spec = mujoco.MjSpec.from_file(str(scene_path))
    _board_editor(texture, board)(spec)
    spec.compile()
    scene_path.write_text(spec.to_xml(), encoding="utf-8")
    return dst


# ------------------------------------------------------------------------------------------- messages


class _Msgs(BagMessages):
    """The capture's topics (names and the drivers' QoS from the interface profile) and its phase markers."""

    def __init__(self, bag: BagWriter, camera: str, interface: str) -> None:
        super().__init__(bag)
        from r2s2r_sim.interface import load_interface

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


# ------------------------------------------------------------------------------------------- poses


def _rot(axis: str, a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    if axis == "x":
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == "y":
        return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _quat(R: np.ndarray) -> np.ndarray:
    q = np.empty(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(R, dtype=np.float64).ravel())
    return q


def _held_board_poses(
    board: CharucoBoardSpec, K: np.ndarray, size: tuple[int, int], n: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """``T_camera_board`` of ``n`` hand-held views: 0.45-0.8 m away, tilted, spread over the image."""
    w_m, h_m = board.size_m
    width, height = size
    poses = []
    for i in range(n):
        tilt = math.radians(15 + 25 * rng.random())
        ax, ay = (tilt, 0.3 * tilt) if i % 2 else (0.3 * tilt, tilt)
        R = (
            _rot("z", rng.uniform(-0.4, 0.4))
            @ _rot("x", ax * rng.choice([-1, 1]))
            @ _rot("y", ay * rng.choice([-1, 1]))
        )
        d = rng.uniform(0.55, 0.9)
        # Board centre at a pixel spread over the image (the corners reach the borders in some views).
        u = width / 2 + rng.uniform(-0.2, 0.2) * width
        v = height / 2 + rng.uniform(-0.2, 0.2) * height
        centre = d * np.array([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], 1.0])
        T = np.eye(4)
        T[:3, :3] = R
        T[:3, 3] = centre - R @ np.array([w_m / 2, h_m / 2, 0.0])  # board origin is its top-left corner
        poses.append(T)
    return poses


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
    from r2s2r_sim.errors import WorldError
    from r2s2r_sim.hardware.emulated_arm import EmulatedArm
    from r2s2r_sim.hardware.profile import HardwareProfileError, load_hardware_profile

    cfg = config or CaptureConfig()
    out = refuse_existing(output, CaptureError)
    say = progress or (lambda _line: None)
    with tempfile.TemporaryDirectory(prefix="r2s2r-capture-") as tmp:
        try:
            prof = load_hardware_profile(profile)
            variant = _capture_variant(world, cfg.board, Path(tmp))
            arm = EmulatedArm(variant, prof, seed=cfg.seed)
        except (HardwareProfileError, WorldError, ValueError) as err:
            raise CaptureError(f"emulated hardware cannot be built: {err}") from err
        try:
            return _record(arm, cfg, out, say)
        except BaseException:
            shutil.rmtree(out, ignore_errors=True)
            raise


def _record(arm: Any, cfg: CaptureConfig, out: Path, say: Callable[[str], None]) -> CaptureSummary:
    world = arm.world
    model, data = world.model, world.data
    cam = arm.profile.camera
    K_factory, D_factory = cam.intrinsics.k(), cam.distortion.d()
    board_id = model.body(_BOARD_BODY).id
    mocap = int(model.body_mocapid[board_id])
    geom_in_board = np.linalg.inv(board_pose_in_plane_geom(cfg.board))
    names = list(world.joint_names)
    arm_names = list(world.arm_joint_names)
    frame_id = arm.camera_frame_id
    js_dt = 1.0 / arm.profile.driver.joint_state_rate_hz
    cam_dt = 1.0 / cam.rate_hz
    rng = np.random.default_rng(cfg.seed)

    def ns() -> int:
        return 1_000_000_000 + int(round(arm.clock * 1e9))  # 1 s offset: no zero stamps

    with BagWriter(out) as bag, arm.camera_renderer() as renderer:
        msgs = _Msgs(bag, cam.name, cfg.interface)

        def publish_state() -> None:
            q, qd, e = arm.joint_state()
            msgs.joint_state(ns(), names, q, qd, e)

        def hold(seconds: float) -> None:
            steps = max(1, int(round(seconds / arm.dt)))
            every = max(1, int(round(js_dt / arm.dt)))
            for k in range(steps):
                arm.advance(1)
                if k % every == 0:
                    publish_state()

        def place_board(T_world_board: np.ndarray | None) -> None:
            if T_world_board is None:
                data.mocap_pos[mocap] = _BOARD_PARKED
                data.mocap_quat[mocap] = (1.0, 0.0, 0.0, 0.0)
            else:
                T_geom = T_world_board @ geom_in_board
                data.mocap_pos[mocap] = T_geom[:3, 3]
                data.mocap_quat[mocap] = _quat(T_geom[:3, :3])
            mujoco.mj_forward(model, data)

        def frame(depth_too: bool) -> None:
            rgb, depth = renderer.render(data)
            t = ns()
            msgs.camera_info(t, frame_id, cam.width, cam.height, K_factory, D_factory)
            msgs.image("color_image", t, frame_id, rgb, "rgb8")
            if depth_too:
                msgs.image("depth_image", t, frame_id, depth.astype(np.uint16), "16UC1")

        msgs.array("gripper_command", ns(), np.array([float(world.gripper_command or 0.0)]))
        publish_state()
        pos, quat = world.camera_pose(cam.name)
        T_world_camera = np.eye(4)
        R = np.empty(9)
        mujoco.mju_quat2Mat(R, quat)
        T_world_camera[:3, :3], T_world_camera[:3, 3] = R.reshape(3, 3), pos

        # 1. hand-held board views (the mocap board stands in for the person holding it)
        msgs.phase(ns(), "board_intrinsics", "start", board=board_to_json(cfg.board))
        for T_cb in _held_board_poses(
            cfg.board, K_factory, (cam.width, cam.height), cfg.n_intrinsics_views, rng
        ):
            place_board(T_world_camera @ T_cb)
            frame(depth_too=False)
            hold(max(cam_dt, 0.2))
        msgs.phase(ns(), "board_intrinsics", "end")
        say(f"board_intrinsics: {cfg.n_intrinsics_views} hand-held board views")

        # 2. board flat on the table at known poses
        for i, (x, y, yaw) in enumerate(cfg.known_board_poses):
            T_world_geom = np.eye(4)
            T_world_geom[:3, :3] = _rot("z", yaw)
            T_world_geom[:3, 3] = (x, y, cfg.table_top_z + _BOARD_LIFT)
            T_world_board = T_world_geom @ board_pose_in_plane_geom(cfg.board)
            place_board(T_world_board)
            msgs.phase(
                ns(),
                "board_known_pose",
                "start",
                board=board_to_json(cfg.board),
                index=i,
                T_world_board=T_world_board.round(9).tolist(),
            )
            frame(depth_too=False)
            hold(cam_dt)
            msgs.phase(ns(), "board_known_pose", "end", index=i)
        say(f"board_known_pose: {len(cfg.known_board_poses)} placements on the table")

        # 3. the scene, board removed
        place_board(None)
        hold(cfg.settle_s)
        msgs.phase(ns(), "scene", "start")
        for _ in range(cfg.n_scene_frames):
            frame(depth_too=True)
            hold(cam_dt)
        msgs.phase(ns(), "scene", "end")
        say(f"scene: {cfg.n_scene_frames} RGB-D frames")
        truth = _scene_truth(arm)

        # 4. excitation
        home = world.joint_state()[0][[names.index(n) for n in arm_names]]
        centre = excitation_centre(model, arm_names, home)
        t_cmd, q_cmd = excitation_trajectory(model, arm_names, cfg.excitation, seed=cfg.seed, center=centre)
        cmd_steps = max(1, int(round(1.0 / cfg.excitation.rate_hz / arm.dt)))
        every = max(1, int(round(js_dt / arm.dt)))

        def send(commands: np.ndarray) -> None:
            step = 0
            for target in commands:
                arm.submit_arm(target)
                msgs.array("arm_command", ns(), target)
                for _ in range(cmd_steps):
                    arm.advance(1)
                    step += 1
                    if step % every == 0:
                        publish_state()

        # Off home, a smooth move at half the excitation's velocity bound, outside the excitation phase.
        def move(start: np.ndarray, end: np.ndarray) -> None:
            moves = move_commands(start, end, cfg.excitation.rate_hz, 0.5 * cfg.excitation.max_velocity)
            if len(moves):
                send(moves)
                hold(0.5)

        move(home, centre)
        msgs.phase(ns(), "excitation", "start", rate_hz=cfg.excitation.rate_hz)
        send(q_cmd)
        hold(0.5)  # the last commands arrive after the latency
        msgs.phase(ns(), "excitation", "end")
        if np.any(centre != home):  # the phases that follow start near where the capture did
            move(q_cmd[-1], home)
        say(
            f"excitation: {len(t_cmd)} commands over {t_cmd[-1]:.1f} s, "
            f"{msgs.counts['joint_states']} joint states"
        )
        task = world.config.task
        kind = None if task is None else task.type.value

        def hooks(phase: str, rate_hz: float) -> PhaseHooks:
            return _phase_hooks(
                arm, msgs, ns, hold, frame, publish_state, cam_dt, phase=phase, rate_hz=rate_hz
            )

        if kind == "drawer":
            from r2s2r_capture.procedures.articulation import record_articulation

            acfg = cfg.articulation
            truth["articulation"] = record_articulation(
                arm, acfg, hooks(ARTICULATION_PHASE, acfg.command_rate_hz)
            )
            say("articulation: drawer opened by the arm, hooked and free passes")
        elif kind == "push" and cfg.slide is not None:
            from r2s2r_capture.procedures.slide import record_slide

            truth["slide"] = record_slide(arm, cfg.slide, hooks(SLIDE_PHASE, cfg.slide.command_rate_hz))
            n = len(cfg.slide.flicks)
            say(f"slide: {n} flick(s) of the {task.object_body}, views before and after")
        counts = dict(msgs.counts)
    return CaptureSummary(bag=out, counts=counts, truth=truth)


def _phase_hooks(
    arm: Any,
    msgs: _Msgs,
    ns: Callable[[], int],
    hold: Callable[[float], None],
    frame: Callable[[bool], None],
    publish_state: Callable[[], None],
    cam_dt: float,
    *,
    phase: str,
    rate_hz: float,
) -> PhaseHooks:
    """Callbacks a scripted phase drives arm and bag with (joint states at one offset in every command)."""
    cmd_steps = max(1, int(round(1.0 / rate_hz / arm.dt)))
    every = max(1, int(round(1.0 / arm.profile.driver.joint_state_rate_hz / arm.dt)))

    def command(q: np.ndarray) -> None:
        arm.submit_arm(q)
        msgs.array("arm_command", ns(), q)
        for k in range(cmd_steps):
            arm.advance(1)
            if (k + 1) % every == 0:
                publish_state()

    def frames(n: int) -> None:
        for _ in range(n):
            frame(True)
            hold(cam_dt)

    def marker(part: str, event: str, **extra: Any) -> None:
        msgs.phase(ns(), phase, event, part=part, **extra)

    def gripper(value: float) -> None:
        arm.submit_gripper(value)
        msgs.array("gripper_command", ns(), np.array([value]))

    return PhaseHooks(marker=marker, command=command, hold=hold, frames=frames, gripper=gripper)


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
        Rz = _rot("z", yaw)
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
