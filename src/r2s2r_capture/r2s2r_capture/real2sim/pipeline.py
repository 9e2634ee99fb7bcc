"""``r2s2r real2sim``: one capture (see :mod:`r2s2r_capture.procedures.session`) in, one identified world folder out.

Stages, each timed and reported through ``progress``:

1. **read**: the bag(s) with :class:`~r2s2r_capture.bags.reader.BagReader`; phases are cut by the
   ``/r2s2r/capture/phase`` markers.  All inputs are checked here, before any slow stage: no board views,
   no board at a known pose, too few RGB-D frames, or a missing or static excitation is an error saying
   what to record.
2. **intrinsics**: ``K`` and plumb_bob ``D`` from the hand-held board views (``cv2.calibrateCamera``).  The
   ``CameraInfo`` in the bag (the driver's factory values) is not used, only its image size.
3. **extrinsics**: the board lying at known poses; one PnP over the corners of all placements, mapped to the
   world through each placement's ``T_world_board`` (board-at-known-pose, fixed camera).
4. **reconstruction**: the scene frames are undistorted with the calibrated ``D`` (colour bilinear, depth
   nearest), fused into a TSDF with the calibrated ``K`` and pose, and segmented (table, objects).  With a
   drawer template, the drawer's joint comes from the articulation phase (:mod:`r2s2r_capture.real2sim.articulation`).
5. **identification**: ``mujoco.sysid`` on the excitation segment: per arm joint armature, friction loss,
   servo ``kp`` and ``kv`` and one command delay; the trailing part is held out for validation.  Joint
   damping is kept at its nominal value: it acts on position tracking exactly like the servo's ``kv``
   (both ``-c qdot``), so positions alone identify only their sum, fitted through ``kv``.  When the
   driver reports efforts (``JointState.effort``, as ros2_control does) they are fitted beside the
   positions (:mod:`r2s2r_capture.sysid.effort_fit`): the effort carries kv and not the damping, so the damping
   is fitted too, and it shows the armature and friction loss that a stiff servo hides from positions.
6. **slide** (a push world whose capture has the ``slide`` phase): the friction of the task object and
   the table, fitted by replaying the capture's flicks in the written world (:mod:`r2s2r_capture.real2sim.slide`);
   the world is written again with it, and its variation range narrows to the fit's error.
7. **world**: :func:`~r2s2r_capture.real2sim.world_writer.write_world` with the identified camera and a copy of the
   template robot MJCF (with copies of the asset files it references, wherever it sits) carrying the fitted
   values (and the delay as ``<custom><numeric>``), plus
   ``calibration/camera_info.yaml``, ``identification/`` (fitted MJCF, ``sysid.yaml``, HTML report),
   ``variations.yaml`` (the world's variation defaults: what the capture could not pin down, see
   :mod:`r2s2r_capture.real2sim.world_variations`) and ``real2sim.yaml`` (summary).  Everything is built in a
   temporary sibling folder and renamed into place at the end: a failure leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from r2s2r_sim.ranges import check_fields, within

from r2s2r_capture.calibration.camera import extrinsics_from_known_poses
from r2s2r_capture.errors import (
    BagError,
    CalibrationError,
    IdentificationError,
    ReconstructionError,
    refuse_existing,
)
from r2s2r_capture.real2sim.template_robot import base_radius, robot_with_fit, template_robot_spec
from r2s2r_capture.sysid.joint_motion import JointMotion, read_joint_motion, reading_noise

__all__ = [
    "CaptureData",
    "Real2SimConfig",
    "Real2SimResult",
    "read_capture",
    "real2sim",
]

PHASE_TOPIC = "/r2s2r/capture/phase"
DEFAULT_FIT_KINDS = ("armature", "frictionloss", "kp", "kv")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Real2SimConfig:
    """Settings of the pipeline.

    Attributes:
        camera: ROS camera name (the ``{camera}`` of the interface's topic names).
        interface: topic interface profile or file the capture bags follow (empty: the default profile).
        min_board_views: hand-held board views with enough corners needed for intrinsics.
        min_scene_frames: RGB-D frames of the scene needed.
        calib_flags: ``cv2.CALIB_*`` flags; 0 fits k1, k2, p1, p2 and k3.
        voxel: TSDF voxel (m).
        max_object_height: clusters reaching higher above the table are not objects (m); keeps the arm,
            which leaves the base keep-out cylinder when it reaches over the table, out of the objects.
        fit_kinds: per-joint parameters identified (see the module docstring for damping).
        validation_fraction: trailing part of the excitation held out.
        max_iters: optimiser iterations.
        sample_stride: use every n-th joint state for identification (1: all).
        report: write the toolbox's HTML report.
        world_id: ``id`` of the written world.
    """

    camera: str = "camera"
    interface: str = ""
    min_board_views: int = within(5, ">= 3")
    min_scene_frames: int = within(1, ">= 1")
    calib_flags: int = 0
    voxel: float = 0.004
    max_object_height: float = 0.3
    fit_kinds: tuple[str, ...] = DEFAULT_FIT_KINDS
    validation_fraction: float = 0.25
    max_iters: int = 30
    sample_stride: int = within(1, ">= 1")
    report: bool = True
    world_id: str = "real2sim-v1"

    def __post_init__(self) -> None:
        """Validate counts (errors name the field)."""
        check_fields(self)


@dataclasses.dataclass(frozen=True)
class CaptureData:
    """What :func:`read_capture` found in the bag(s)."""

    board: Any
    board_views: list[tuple[str, np.ndarray]]
    known_views: list[tuple[np.ndarray, np.ndarray]]  # (T_world_board, rgb)
    scene_frames: list[tuple[np.ndarray, np.ndarray]]  # (rgb, depth m)
    image_size: tuple[int, int]
    motion: JointMotion | None


@dataclasses.dataclass(frozen=True)
class Real2SimResult:
    """The written world and the figures of each stage (also in ``real2sim.yaml``)."""

    world_dir: Path
    K: np.ndarray
    D: np.ndarray
    T_world_camera: np.ndarray
    intrinsics_rms_px: float
    extrinsics_rms_px: float
    objects: dict[str, dict[str, Any]]
    sysid: dict[str, Any]
    stage_s: dict[str, float]

    def summary(self) -> str:
        """Human-readable summary."""
        K = self.K
        lines = [
            f"camera: fx {K[0, 0]:.2f} fy {K[1, 1]:.2f} cx {K[0, 2]:.2f} cy {K[1, 2]:.2f} px, "
            f"D {np.round(self.D, 4).tolist()}, reprojection {self.intrinsics_rms_px:.3f} px",
            f"camera pose: {np.round(self.T_world_camera[:3, 3], 4).tolist()} m "
            f"(PnP RMS {self.extrinsics_rms_px:.3f} px)",
        ]
        for name, o in self.objects.items():
            lines.append(
                f"{name}: {o['role']}, centre {np.round(o['position'], 4).tolist()} m, "
                f"size {np.round(o['size'], 4).tolist()} m"
            )
        s = self.sysid
        lines.append(
            f"dynamics: delay {s['fitted'].get('command_delay_s', 0.0) * 1000:.1f} ms, held-out RMS "
            f"{s['rms_val_before']:.5f} -> {s['rms_val_after']:.5f} rad"
        )
        lines.append("stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.stage_s.items()))
        lines.append(f"world: {self.world_dir}")
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------- reading


def _image(msg: Any, what: str) -> np.ndarray:
    h, w = int(msg.height), int(msg.width)
    buf = np.asarray(msg.data, dtype=np.uint8)
    if msg.encoding in ("rgb8", "bgr8"):
        img = buf.reshape(h, int(msg.step))[:, : w * 3].reshape(h, w, 3)
        return img[..., ::-1].copy() if msg.encoding == "bgr8" else img.copy()
    if msg.encoding in ("16UC1", "mono16"):
        return buf.reshape(h, int(msg.step)).view(np.uint16)[:, :w].copy()
    if msg.encoding == "32FC1":
        return buf.reshape(h, int(msg.step)).view(np.float32)[:, :w].copy()
    raise BagError(f"{what}: unsupported image encoding {msg.encoding!r}")


def _depth_m(img: np.ndarray) -> np.ndarray:
    return img.astype(np.float64) / 1000.0 if img.dtype == np.uint16 else img.astype(np.float64)


def read_capture(
    bags: Sequence[str | Path], arm_joints: Sequence[str], config: Real2SimConfig | None = None
) -> CaptureData:
    """Collect board views, known-pose views, scene frames and the excitation from capture bag(s).

    Raises:
        BagError: unreadable bag, or no capture phase markers.
    """
    from r2s2r_capture.bags.reader import BagReader
    from r2s2r_capture.procedures.session import board_from_json, topic_names

    cfg = config or Real2SimConfig()
    names = topic_names(cfg.camera, cfg.interface)
    color, depth, info = (names[key][0] for key in ("color_image", "depth_image", "color_info"))
    board = None
    views: list[tuple[str, np.ndarray]] = []
    known: list[tuple[np.ndarray, np.ndarray]] = []
    scene: list[tuple[np.ndarray, np.ndarray]] = []
    size: tuple[int, int] | None = None
    motion: JointMotion | None = None
    for bag in bags:
        phase: dict[str, Any] | None = None
        pending_rgb: tuple[int, np.ndarray] | None = None
        excitation: list[float] = []
        markers = 0
        with BagReader(bag) as reader:
            for m in reader.messages([PHASE_TOPIC, color, depth, info]):
                msg = reader.deserialize(m)
                if m.topic == PHASE_TOPIC:
                    markers += 1
                    try:
                        mark = json.loads(msg.data)
                    except ValueError as err:
                        raise BagError(f"bag {bag}: {PHASE_TOPIC}: not JSON: {err}") from err
                    if "board" in mark and board is None:
                        board = board_from_json(mark["board"])
                    phase = mark if mark.get("event") == "start" else None
                    if mark.get("phase") == "excitation":
                        excitation.append(m.timestamp_ns * 1e-9)
                    continue
                if m.topic == info:
                    size = (int(msg.width), int(msg.height))
                    continue
                if phase is None:
                    continue
                name = phase.get("phase")
                img = _image(msg, f"bag {bag}: {m.topic}")
                if m.topic == color:
                    if name == "board_intrinsics":
                        views.append((f"{Path(bag).name}@{m.timestamp_ns}", img))
                    elif name == "board_known_pose":
                        known.append((np.asarray(phase["T_world_board"], dtype=np.float64), img))
                    elif name == "scene":
                        pending_rgb = (m.timestamp_ns, img)
                elif m.topic == depth and name == "scene" and pending_rgb is not None:
                    scene.append((pending_rgb[1], _depth_m(img)))
                    pending_rgb = None
        if markers == 0:
            raise BagError(
                f"bag {bag}: no {PHASE_TOPIC} markers; record it with `r2s2r capture` (see "
                "r2s2r_capture.procedures.session for the phases)"
            )
        if len(excitation) >= 2 and motion is None:
            motion = read_joint_motion(
                bag, arm_joints, window=(excitation[0], excitation[-1]), interface=cfg.interface
            )
    if size is None and views:
        size = (views[0][1].shape[1], views[0][1].shape[0])
    return CaptureData(board, views, known, scene, size or (0, 0), motion)


def check_capture(data: CaptureData, config: Real2SimConfig) -> None:
    """Refuse unusable input before any slow stage, saying what to record."""
    if data.board is None or len(data.board_views) < config.min_board_views:
        raise CalibrationError(
            f"the capture has {len(data.board_views)} hand-held board views, at least "
            f"{config.min_board_views} are needed: record the board_intrinsics phase (move the ChArUco board "
            "in front of the camera at several distances and tilts)"
        )
    if not data.known_views:
        raise CalibrationError(
            "the capture has no view of the board at a known pose: record the board_known_pose phase (board "
            "flat on the table at a pose you know, T_world_board in the phase marker)"
        )
    if len(data.scene_frames) < config.min_scene_frames:
        raise ReconstructionError(
            f"the capture has {len(data.scene_frames)} RGB-D scene frames, at least "
            f"{config.min_scene_frames} "
            "needed: record the scene phase (colour + aligned depth, board removed)"
        )
    m = data.motion
    if m is None or m.t.size < 40:
        raise IdentificationError(
            "the capture has no excitation (arm commands with joint states): record the excitation phase "
            "(r2s2r_capture.sysid.recording.excitation_trajectory sent to the arm)"
        )
    span_cmd, span_q = np.ptp(m.q_cmd, axis=0), np.ptp(m.q, axis=0)
    static = [n for n, a, b in zip(m.joint_names, span_cmd, span_q, strict=True) if a < 0.05 or b < 0.02]
    if static:
        raise IdentificationError(
            f"the arm is static in the excitation: joints {static} move less than 0.05 rad; record an "
            "excitation trajectory that moves every arm joint "
            "(r2s2r_capture.sysid.recording.excitation_trajectory)"
        )


# ------------------------------------------------------------------------------------------- stages


def _undistort(frames: Sequence[tuple[np.ndarray, np.ndarray]], K: np.ndarray, D: np.ndarray) -> list:
    import cv2

    h, w = frames[0][1].shape
    mx, my = cv2.initUndistortRectifyMap(K, D, None, K, (w, h), cv2.CV_32FC1)
    out = []
    for rgb, depth in frames:
        out.append(
            (
                cv2.remap(rgb, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0),
                cv2.remap(depth, mx, my, cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT, borderValue=0),
            )
        )
    return out


def _pick_task(objects: Sequence[Any], marker: bool) -> tuple[str, str | None]:
    """The task object and target; with a ``marker`` target (no depth), the object only."""
    from r2s2r_capture.reconstruction.scene import PrimitiveKind

    if marker and objects:
        return min(objects, key=lambda o: o.volume).name, None
    if len(objects) < 2:
        raise ReconstructionError(
            f"the scene shows {len(objects)} object(s) on the table; the task needs an object and a target "
            "(bin): record the scene phase with both in view and clear of the robot's base"
        )
    boxes = [o for o in objects if o.primitive is PrimitiveKind.OPEN_BOX]
    target = max(boxes or objects, key=lambda o: o.volume)
    obj = min((o for o in objects if o is not target), key=lambda o: o.volume)
    return obj.name, target.name


def _slide(
    bags: Sequence[str | Path],
    world: Path,
    segment: Callable[..., Any],
    seg: Any,
    obj_name: str,
    cfg: Real2SimConfig,
) -> Any:
    """The slide phase's friction fit (:mod:`r2s2r_capture.real2sim.slide`) on the written ``world``, or None."""
    from r2s2r_capture.real2sim.slide import estimate_slide
    from r2s2r_capture.real2sim.world_writer import TABLE_GEOM

    def locate(
        frames: Sequence[tuple[np.ndarray, np.ndarray]], near_xy: np.ndarray
    ) -> tuple[np.ndarray, float]:
        objects = segment(frames)[1].objects
        if not objects:
            raise ReconstructionError("slide phase: a view shows no object on the table")
        o = min(objects, key=lambda o: float(np.linalg.norm(np.asarray(o.position[:2]) - near_xy)))
        return np.asarray(o.position[:2]), float(o.yaw)

    start = next(o for o in seg.objects if o.name == obj_name).position[:2]
    return estimate_slide(
        bags,
        world,
        locate=locate,
        start_xy=np.asarray(start),
        table_geom=TABLE_GEOM,
        voxel=cfg.voxel,
        camera=cfg.camera,
        interface=cfg.interface,
    )


def real2sim(
    bags: Sequence[str | Path],
    out_dir: str | Path,
    *,
    template: str | Path = "tabletop-pick-v1",
    config: Real2SimConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> Real2SimResult:
    """Turn capture bag(s) into an identified world folder (see the module docstring for the stages).

    Raises:
        BagError, CalibrationError, ReconstructionError, IdentificationError: naming what to record or
            what is wrong; nothing is left at ``out_dir``.
    """
    from r2s2r_sim.errors import WorldError
    from r2s2r_sim.variations import for_world, load_variation_config
    from r2s2r_sim.world.config import load_world_config
    from r2s2r_sim.worlds import WORLD_VARIATIONS_FILE, world_path

    from r2s2r_capture.calibration import camera as cal
    from r2s2r_capture.real2sim.articulation import articulation_variations
    from r2s2r_capture.real2sim.world_variations import world_variations, write_world_variations
    from r2s2r_capture.real2sim.world_writer import (
        CameraModel,
        TaskSpec,
        marker_target,
        measure_marker,
        write_world,
    )
    from r2s2r_capture.reconstruction import scene as rc
    from r2s2r_capture.reconstruction.tsdf import integrate_tsdf
    from r2s2r_capture.sysid import identify as S
    from r2s2r_capture.sysid.recording import JointRecording
    from r2s2r_capture.sysid.report import write_identification

    cfg = config or Real2SimConfig()
    say = progress or (lambda _line: None)
    out = refuse_existing(out_dir, ReconstructionError)
    if not bags:
        raise BagError("no bag given")
    try:
        template_dir = world_path(template)
    except ValueError as err:
        raise ReconstructionError(f"--template: {err}") from err
    tcfg = load_world_config(template_dir)
    arm_joints = tuple(tcfg.robot.arm_joints)
    stage_s: dict[str, float] = {}
    clock = time.perf_counter()

    def done(stage: str, line: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        stage_s[stage] = now - clock
        clock = now
        say(f"[{stage}] {line} ({stage_s[stage]:.1f} s)")

    data = read_capture(bags, arm_joints, cfg)
    check_capture(data, cfg)
    assert data.motion is not None
    done(
        "read",
        f"{len(data.board_views)} board views, {len(data.known_views)} known-pose views, "
        f"{len(data.scene_frames)} RGB-D frames, {data.motion.t.size} joint states",
    )

    intr = cal.calibrate_intrinsics(
        data.board_views, data.board, min_views=cfg.min_board_views, flags=cfg.calib_flags
    )
    K, D = intr.camera_matrix, intr.distortion
    done("intrinsics", f"{intr.n_views} views, RMS {intr.rms_px:.3f} px")

    T_wc, ext_rms, n_ext = extrinsics_from_known_poses(data.known_views, K, D, data.board)
    camera_std = cal.known_pose_std(data.known_views, K, D, data.board)
    done(
        "extrinsics",
        f"{n_ext} corners, PnP RMS {ext_rms:.3f} px, std {camera_std[0] * 1000:.2f} mm / "
        f"{np.degrees(camera_std[1]):.3f} deg",
    )

    attach = tcfg.robot.attach
    keepout = (
        rc.RobotKeepOut(center=tuple(attach.pos), radius=base_radius(template_dir))
        if attach.site is None
        else None
    )

    def segment(frames: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[Any, Any]:
        """Fuse RGB-D frames from the calibrated camera and segment table and objects."""
        undistorted = _undistort(frames, K, D)
        fused = integrate_tsdf(undistorted, K, [T_wc] * len(undistorted), voxel=cfg.voxel)
        return fused, rc.segment_scene(
            fused.point_cloud(),
            rc.SegmentConfig(voxel=cfg.voxel, keepout=keepout, max_height=cfg.max_object_height),
        )

    scene, seg = segment(data.scene_frames)
    joint = None
    if tcfg.task is not None and tcfg.task.type.value == "drawer":  # articulated: joint from the capture
        from r2s2r_capture.real2sim.articulation import estimate_articulation, kept_objects

        joint = estimate_articulation(
            bags, template_dir, K=K, D=D, T_world_camera=T_wc, camera=cfg.camera, interface=cfg.interface
        )
        seg = dataclasses.replace(seg, objects=kept_objects(seg.objects, joint))
        obj_name, target_name = tcfg.task.object_body, None
    else:
        marker = tcfg.task is not None and marker_target(template_dir, tcfg.task.target_site) is not None
        obj_name, target_name = _pick_task(seg.objects, marker)
    seen = "" if joint is None else f", {joint.joint} opens {joint.range_seen:.3f} m seen"
    done("reconstruction", f"table z {seg.table.height:.4f} m, {len(seg.objects)} objects{seen}")

    m = data.motion
    sl = slice(None, None, cfg.sample_stride)
    effort = None if m.effort is None else m.effort[sl]
    rec = JointRecording(m.t[sl], m.q_cmd[sl], m.q[sl], m.qd[sl], m.joint_names, effort)
    sysid_cfg = S.SysidConfig(
        kinds=cfg.fit_kinds, validation_fraction=cfg.validation_fraction, max_iters=cfg.max_iters
    )
    try:
        robot_spec = template_robot_spec(tcfg)
    except WorldError as err:
        raise ReconstructionError(f"--template: {err}") from None
    ident = S.identify(robot_spec, rec, sysid_cfg)
    noise = reading_noise(m)
    done(
        "identification",
        f"{len(ident.fitted)} parameters, held-out RMS {ident.rms_val_before:.5f} -> "
        f"{ident.rms_val_after:.5f} rad; joint readings' noise {noise[0]:.2g} rad, {noise[1]:.2g} rad/s",
    )
    for warning in ident.warnings:
        say(f"[identification] warning: {warning}")

    # A marker target (taped disc) has no depth: it is placed where its colour lies on the table.
    site = tcfg.task.target_site if tcfg.task is not None else ""
    on_marker = bool(site) and marker_target(template_dir, site) is not None
    target_xy = measure_marker(template_dir, site, scene.point_cloud(), seg.table) if on_marker else None
    if on_marker:
        found = "not seen, at the template's place" if target_xy is None else f"{np.round(target_xy, 4)} m"
        say(f"[reconstruction] target marker by its colour: {found}")

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        robot_mjcf = robot_with_fit(tcfg, ident.fitted, ident.toolbox["fitted"], tmp / "robot_src")
        write = functools.partial(
            write_world,
            tmp / "world",
            template=template_dir,
            table=seg.table,
            objects=seg.objects,
            camera=CameraModel(
                K=K, width=data.image_size[0], height=data.image_size[1], T_world_camera=T_wc, D=D
            ),
            task=TaskSpec(object=obj_name, target=target_name, target_xy=target_xy),
            robot_mjcf_dir=robot_mjcf.parent,
            robot_mjcf=robot_mjcf,
            world_id=cfg.world_id,
            articulated=joint,
            joint_state_noise=noise,
        )
        world = write()
        slide, why = None, ""
        if tcfg.task is not None and tcfg.task.type.value == "push":
            why = "the capture has no slide phase"
            try:
                slide = _slide(bags, world, segment, seg, obj_name, cfg)
            except (BagError, ReconstructionError) as err:
                why = f"not used ({err})"  # the rest of the world stands without it
            if slide is None:
                say(f"[slide] {why}: the object's friction stays a prior (+-30 %)")
            else:
                shutil.rmtree(world)
                world = write(friction_scale=slide.scale, cone=slide.cone)
                done("slide", slide.describe())
        cal.write_camera_info_yaml(intr, world / "calibration" / "camera_info.yaml", camera_name=cfg.camera)
        write_identification(ident, world / "identification", report=cfg.report)
        doc = world_variations(
            world, ident, intr, camera_std, friction_range=None if slide is None else slide.variation_range()
        )
        variations = write_world_variations(
            world / WORLD_VARIATIONS_FILE, doc if joint is None else articulation_variations(joint, doc)
        )
        for_world(load_variation_config(variations), world)  # refuse a file the world cannot use
        objects = {
            o.name: {
                "role": {obj_name: "task object", target_name: "target"}.get(o.name, "object"),
                "position": [float(v) for v in o.position],
                "size": [float(v) for v in o.size],
                "yaw": float(o.yaw),
                "primitive": o.primitive.value,
            }
            for o in seg.objects
        }
        sysid_summary = {
            "nominal": ident.nominal,
            "fitted": ident.fitted,
            "std": {k: (v if np.isfinite(v) else None) for k, v in ident.std.items()},
            "rms_train_before": ident.rms_train_before,
            "rms_train_after": ident.rms_train_after,
            "rms_val_before": ident.rms_val_before,
            "rms_val_after": ident.rms_val_after,
        }
        done("world", f"wrote {out}")
        summary = {
            "bags": [str(b) for b in bags],
            "template": str(template_dir),
            "camera": {
                "K": K.tolist(),
                "D": D.tolist(),
                "image_size": list(data.image_size),
                "intrinsics_rms_px": intr.rms_px,
                "T_world_camera": T_wc.tolist(),
                "extrinsics_rms_px": ext_rms,
                "position_std_m": camera_std[0],
                "angle_std_rad": camera_std[1],
            },
            "table_top_z": float(seg.table.height),
            "target_marker_xy": None if target_xy is None else [float(v) for v in target_xy],
            "objects": objects,
            "sysid": sysid_summary,
            **({"articulation": joint.summary()} if joint is not None else {}),
            **(
                {"slide": slide.summary()}
                if slide is not None
                else {"slide": {"not_used": why}}
                if why
                else {}
            ),
            "stage_s": stage_s,
        }
        (world / "real2sim.yaml").write_text(yaml.safe_dump(summary, sort_keys=False), encoding="utf-8")
        os.rename(world, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Real2SimResult(
        world_dir=out,
        K=K,
        D=D,
        T_world_camera=T_wc,
        intrinsics_rms_px=intr.rms_px,
        extrinsics_rms_px=ext_rms,
        objects=objects,
        sysid=sysid_summary,
        stage_s=stage_s,
    )
