"""``r2s2r real2sim``: one capture (:mod:`r2s2r_capture.procedures.session`) in, one identified world out.

Stages, each timed and reported through ``progress``:

1. **read** (:mod:`r2s2r_capture.real2sim.capture_data`): the bag(s); phases are cut by the
   ``/r2s2r/capture/phase`` markers.  All inputs are checked here, before any slow stage: no board views,
   no board at a known pose, too few RGB-D frames, or a missing or static excitation is an error saying
   what to record.
2. **intrinsics**: ``K`` and plumb_bob ``D`` from every view of the board the fixed camera took
   (``cv2.calibrateCamera``): the hand-held views, and those of the board on the flange or at known poses.
   The flange's views add tilts the hand-held ones may lack; the principal point, which trades off against
   the camera's rotation, is the term they firm up most.  The ``CameraInfo`` in the bag (the driver's
   factory values) is not used, only its image size.
3. **extrinsics**: with a ``hand_eye`` phase, eye-to-hand calibration from the board on the flange
   (:mod:`r2s2r_capture.real2sim.hand_eye_extrinsics`); else the board lying at known poses, one PnP over the
   corners of all placements, mapped to the world through each placement's ``T_world_board``.
4. **reconstruction**: the scene frames are undistorted with the calibrated ``D`` (colour bilinear, depth
   nearest), fused into a TSDF with the calibrated ``K`` and pose, and segmented (table, objects).  With a
   drawer template, the drawer's joint comes from the articulation phase
   (:mod:`r2s2r_capture.real2sim.articulation`).
5. **identification**: ``mujoco.sysid`` on the excitation segment: per arm joint armature, friction loss,
   servo ``kp`` and ``kv`` and one command delay; the trailing part is held out for validation.  Joint
   damping is kept at its nominal value: it acts on position tracking exactly like the servo's ``kv``
   (both ``-c qdot``), so positions alone identify only their sum, fitted through ``kv``.  When the
   driver reports efforts (``JointState.effort``, as ros2_control does) they are fitted beside the
   positions (:mod:`r2s2r_capture.sysid.effort_fit`): the effort carries kv and not the damping, so the
   damping is fitted too, and it shows the armature and friction loss that a stiff servo hides from positions.
6. **slide** (a push world whose capture has the ``slide`` phase): the friction of the task object and
   the table, fitted by replaying the capture's flicks in the written world
   (:mod:`r2s2r_capture.real2sim.slide`); the world is written again with it, and its variation range
   narrows to the fit's error.
7. **world**: :func:`~r2s2r_capture.real2sim.world_writer.write_world` with the identified camera and a copy
   of the template robot MJCF (with copies of the asset files it references, wherever it sits) carrying the
   fitted values (and the delay as ``<custom><numeric>``), plus
   ``calibration/camera_info.yaml``, ``identification/`` (fitted MJCF, ``sysid.yaml``, HTML report),
   ``variations.yaml`` (the world's variation defaults: what the capture could not pin down, see
   :mod:`r2s2r_capture.real2sim.world_variations`) and ``real2sim.yaml`` (summary).  Everything is built in a
   temporary sibling folder and renamed into place at the end: a failure leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from r2s2r_sim.errors import WorldError
from r2s2r_sim.progress import Progress
from r2s2r_sim.ranges import check_fields, within
from r2s2r_sim.variations import for_world, load_variation_config
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.worlds import WORLD_VARIATIONS_FILE, world_path

from r2s2r_capture.calibration import camera as cal
from r2s2r_capture.calibration.camera import IntrinsicsResult, extrinsics_from_known_poses
from r2s2r_capture.errors import (
    BagError,
    ReconstructionError,
    refuse_existing,
)
from r2s2r_capture.real2sim.appearance import Appearance
from r2s2r_capture.real2sim.articulation import (
    ArticulationEstimate,
    articulation_variations,
    estimate_articulation,
    kept_objects,
)
from r2s2r_capture.real2sim.capture_data import CaptureData, check_capture, read_capture
from r2s2r_capture.real2sim.frames import undistort
from r2s2r_capture.real2sim.hand_eye_extrinsics import hand_eye_extrinsics
from r2s2r_capture.real2sim.scene_spec import TABLE_GEOM, CameraModel
from r2s2r_capture.real2sim.slide import estimate_slide
from r2s2r_capture.real2sim.task_roles import pick_task, template_object_size
from r2s2r_capture.real2sim.template_robot import base_radius, robot_with_fit, template_robot_spec
from r2s2r_capture.real2sim.world_variations import world_variations, write_world_variations
from r2s2r_capture.real2sim.world_writer import TaskSpec, marker_target, measure_marker, write_world
from r2s2r_capture.reconstruction import scene as rc
from r2s2r_capture.reconstruction.tsdf import integrate_tsdf
from r2s2r_capture.sysid import identify as S
from r2s2r_capture.sysid.joint_motion import JointMotion, reading_noise
from r2s2r_capture.sysid.recording import JointRecording
from r2s2r_capture.sysid.report import IdentificationResult, write_identification

__all__ = ["Real2SimConfig", "Real2SimResult", "real2sim"]

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
        appearance: ``textured`` (the scene frames projected onto table, floor, backdrop and the objects'
            seen faces, :mod:`r2s2r_capture.real2sim.appearance`) or ``flat`` (one mean colour each).
        controller_reference: identify against the trajectory controller's reference where the bags hold
            its ``controller_state`` (:mod:`r2s2r_capture.sysid.joint_motion`); False: the set-points sent.
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
    appearance: str = Appearance.TEXTURED.value
    controller_reference: bool = True

    def __post_init__(self) -> None:
        """Validate counts and the appearance (errors name the field)."""
        check_fields(self)
        allowed = [a.value for a in Appearance]
        if self.appearance not in allowed:
            raise ValueError(f"appearance must be one of {allowed}, got {self.appearance!r}")


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


# ------------------------------------------------------------------------------------------- stages


def _slide(
    bags: Sequence[str | Path],
    world: Path,
    segment: Callable[..., Any],
    seg: Any,
    obj_name: str,
    cfg: Real2SimConfig,
) -> Any:
    """The slide phase's friction fit (:mod:`~r2s2r_capture.real2sim.slide`) in the written world, or None."""

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
    progress_bars: bool = False,
) -> Real2SimResult:
    """Turn capture bag(s) into an identified world folder (see the module docstring for the stages).

    ``progress`` gets one line as each stage ends; with ``progress_bars`` the identification's iterations
    are also counted on stderr, with an ETA (:class:`~r2s2r_sim.progress.Progress`).

    Raises:
        BagError, CalibrationError, ReconstructionError, IdentificationError: naming what to record or
            what is wrong; nothing is left at ``out_dir``.
    """
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
    stages = _Stages(say, quiet=not progress_bars)
    data = read_capture(
        bags,
        tuple(tcfg.robot.arm_joints),
        camera=cfg.camera,
        interface=cfg.interface,
        reference=cfg.controller_reference,
    )
    check_capture(data, min_board_views=cfg.min_board_views, min_scene_frames=cfg.min_scene_frames)
    assert data.motion is not None
    stages.done(
        "read",
        f"{len(data.board_views)} board views, {len(data.known_views)} known-pose views, "
        f"{len(data.hand_eye_views)} hand-eye views, "
        f"{len(data.scene_frames)} RGB-D frames, {data.motion.t.size} joint states",
    )
    camera = _calibrate(data, template_dir, cfg, stages)
    scene = _reconstruct(bags, data, template_dir, tcfg, camera, cfg, stages)
    ident, noise = _identify(data.motion, tcfg, cfg, stages)
    target_xy = _target_marker(template_dir, tcfg, scene, say)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        robot_mjcf = robot_with_fit(tcfg, ident.fitted, ident.toolbox["fitted"], tmp / "robot_src")
        write = functools.partial(
            write_world,
            tmp / "world",
            template=template_dir,
            table=scene.seg.table,
            objects=scene.seg.objects,
            camera=CameraModel(
                K=camera.K,
                width=data.image_size[0],
                height=data.image_size[1],
                T_world_camera=camera.T_wc,
                D=camera.D,
            ),
            task=TaskSpec(object=scene.obj_name, target=scene.target_name, target_xy=target_xy),
            robot_mjcf_dir=robot_mjcf.parent,
            robot_mjcf=robot_mjcf,
            world_id=cfg.world_id,
            articulated=scene.joint,
            joint_state_noise=noise,
            frames=data.scene_frames if cfg.appearance == Appearance.TEXTURED.value else None,
        )
        world, slide, why = _world_with_slide(write, bags, tcfg, scene, cfg, stages)
        cal.write_camera_info_yaml(
            camera.intr, world / "calibration" / "camera_info.yaml", camera_name=cfg.camera
        )
        write_identification(ident, world / "identification", report=cfg.report)
        doc = world_variations(
            world,
            ident,
            camera.intr,
            camera.std,
            friction_range=None if slide is None else slide.variation_range(),
        )
        variations = write_world_variations(
            world / WORLD_VARIATIONS_FILE,
            doc if scene.joint is None else articulation_variations(scene.joint, doc),
        )
        for_world(load_variation_config(variations), world)  # refuse a file the world cannot use
        objects = _objects_summary(scene)
        sysid_summary = _sysid_summary(ident)
        stages.done("world", f"wrote {out}")
        summary = {
            "bags": [str(b) for b in bags],
            "template": str(template_dir),
            "camera": camera.summary(data.image_size),
            "table_top_z": float(scene.seg.table.height),
            "appearance": cfg.appearance,
            "target_marker_xy": None if target_xy is None else [float(v) for v in target_xy],
            "objects": objects,
            "sysid": sysid_summary,
            **({"articulation": scene.joint.summary()} if scene.joint is not None else {}),
            **(
                {"slide": slide.summary()}
                if slide is not None
                else {"slide": {"not_used": why}}
                if why
                else {}
            ),
            "stage_s": stages.seconds,
        }
        (world / "real2sim.yaml").write_text(yaml.safe_dump(summary, sort_keys=False), encoding="utf-8")
        os.rename(world, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Real2SimResult(
        world_dir=out,
        K=camera.K,
        D=camera.D,
        T_world_camera=camera.T_wc,
        intrinsics_rms_px=camera.intr.rms_px,
        extrinsics_rms_px=camera.ext_rms,
        objects=objects,
        sysid=sysid_summary,
        stage_s=stages.seconds,
    )


class _Stages:
    """Each stage's wall time, reported as it ends (the times go into ``real2sim.yaml`` too)."""

    def __init__(self, say: Callable[[str], None], *, quiet: bool) -> None:
        self.say, self.quiet = say, quiet
        self.seconds: dict[str, float] = {}
        self._clock = time.perf_counter()

    def done(self, stage: str, line: str) -> None:
        """Close ``stage``: its time since the previous one ended, and one progress line."""
        now = time.perf_counter()
        self.seconds[stage] = now - self._clock
        self._clock = now
        self.say(f"[{stage}] {line} ({self.seconds[stage]:.1f} s)")


@dataclasses.dataclass(frozen=True)
class _Camera:
    """The calibrated camera: intrinsics (``K``, ``D``), pose in the world and their errors."""

    intr: IntrinsicsResult
    T_wc: np.ndarray
    ext_rms: float
    std: tuple[float, float]  # position (m) and angle (rad) standard errors of the pose

    @property
    def K(self) -> np.ndarray:
        """The calibrated camera matrix."""
        return self.intr.camera_matrix

    @property
    def D(self) -> np.ndarray:
        """The calibrated plumb_bob distortion."""
        return self.intr.distortion

    def summary(self, image_size: tuple[int, int]) -> dict[str, Any]:
        """Plain values for ``real2sim.yaml``."""
        return {
            "K": self.K.tolist(),
            "D": self.D.tolist(),
            "image_size": list(image_size),
            "intrinsics_rms_px": self.intr.rms_px,
            "T_world_camera": self.T_wc.tolist(),
            "extrinsics_rms_px": self.ext_rms,
            "position_std_m": self.std[0],
            "angle_std_rad": self.std[1],
        }


def _calibrate(data: CaptureData, template_dir: Path, cfg: Real2SimConfig, stages: _Stages) -> _Camera:
    """Intrinsics from every view of the board, then the pose from the hand-eye or known-pose views."""
    intr = cal.calibrate_intrinsics(
        data.board_images(), data.board, min_views=cfg.min_board_views, flags=cfg.calib_flags
    )
    K, D = intr.camera_matrix, intr.distortion
    stages.done("intrinsics", f"{intr.n_views} views, RMS {intr.rms_px:.3f} px")
    if data.hand_eye_views:  # the board on the flange: eye-to-hand calibration
        he = hand_eye_extrinsics(data.hand_eye_views, template_dir, intr, data.board)
        T_wc, ext_rms, camera_std = he.result.T_world_camera, he.result.rms_px, he.std
        how = f"hand-eye: {he.result.n_views} views, {he.result.n_corners} corners, RMS {ext_rms:.3f} px"
    else:
        T_wc, ext_rms, n_ext = extrinsics_from_known_poses(data.known_views, K, D, data.board)
        camera_std = cal.known_pose_std(data.known_views, K, D, data.board)
        how = f"known poses: {n_ext} corners, PnP RMS {ext_rms:.3f} px"
    stages.done(
        "extrinsics", f"{how}, std {camera_std[0] * 1000:.2f} mm / {np.degrees(camera_std[1]):.3f} deg"
    )
    return _Camera(intr, T_wc, ext_rms, camera_std)


@dataclasses.dataclass(frozen=True)
class _Scene:
    """The reconstruction: fused scene, segmentation, the task's names and the drawer's joint if any.

    ``segment`` fuses and segments other frames of the same camera the same way (the slide phase's views).
    """

    fused: Any
    seg: Any
    obj_name: str
    target_name: str | None
    joint: ArticulationEstimate | None
    segment: Callable[[Sequence[tuple[np.ndarray, np.ndarray]]], tuple[Any, Any]]


def _reconstruct(
    bags: Sequence[str | Path],
    data: CaptureData,
    template_dir: Path,
    tcfg: Any,
    camera: _Camera,
    cfg: Real2SimConfig,
    stages: _Stages,
) -> _Scene:
    """Fuse and segment the scene frames; name the task's object and target, or measure the drawer's joint."""
    attach = tcfg.robot.attach
    keepout = (
        rc.RobotKeepOut(center=tuple(attach.pos), radius=base_radius(template_dir))
        if attach.site is None
        else None
    )
    K, D, T_wc = camera.K, camera.D, camera.T_wc

    def segment(frames: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[Any, Any]:
        """Fuse RGB-D frames from the calibrated camera and segment table and objects."""
        undistorted = undistort(frames, K, D)
        fused = integrate_tsdf(undistorted, K, [T_wc] * len(undistorted), voxel=cfg.voxel)
        return fused, rc.segment_scene(
            fused.point_cloud(),
            rc.SegmentConfig(voxel=cfg.voxel, keepout=keepout, max_height=cfg.max_object_height),
        )

    fused, seg = segment(data.scene_frames)
    joint = None
    if tcfg.task is not None and tcfg.task.type.value == "drawer":  # articulated: joint from the capture
        joint = estimate_articulation(
            bags, template_dir, K=K, D=D, T_world_camera=T_wc, camera=cfg.camera, interface=cfg.interface
        )
        seg = dataclasses.replace(seg, objects=kept_objects(seg.objects, joint))
        obj_name, target_name = tcfg.task.object_body, None
    else:
        marker = tcfg.task is not None and marker_target(template_dir, tcfg.task.target_site) is not None
        like = None if tcfg.task is None else template_object_size(template_dir, tcfg.task.object_body)
        obj_name, target_name = pick_task(seg.objects, marker=marker, like=like)
    seen = "" if joint is None else f", {joint.joint} opens {joint.range_seen:.3f} m seen"
    stages.done("reconstruction", f"table z {seg.table.height:.4f} m, {len(seg.objects)} objects{seen}")
    return _Scene(fused, seg, obj_name, target_name, joint, segment)


def _identify(
    m: JointMotion, tcfg: Any, cfg: Real2SimConfig, stages: _Stages
) -> tuple[IdentificationResult, tuple[float, float]]:
    """The template robot's dynamics fitted to the excitation, and the noise of the joint readings."""
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
    with Progress(cfg.max_iters, "identification", "iter", quiet=stages.quiet) as bar:
        ident = S.identify(robot_spec, rec, sysid_cfg, on_iteration=bar.set)
    noise = reading_noise(m)
    stages.done(
        "identification",
        f"{len(ident.fitted)} parameters, held-out RMS {ident.rms_val_before:.5f} -> "
        f"{ident.rms_val_after:.5f} rad; joint readings' noise {noise[0]:.2g} rad, {noise[1]:.2g} rad/s; "
        f"commands from {m.source}",
    )
    for warning in ident.warnings:
        stages.say(f"[identification] warning: {warning}")
    return ident, noise


def _target_marker(
    template_dir: Path, tcfg: Any, scene: _Scene, say: Callable[[str], None]
) -> tuple[float, float] | None:
    """Where a marker target (a taped disc: no depth) lies, found by its colour on the table; else None."""
    site = tcfg.task.target_site if tcfg.task is not None else ""
    if not site or marker_target(template_dir, site) is None:
        return None
    target_xy = measure_marker(template_dir, site, scene.fused.point_cloud(), scene.seg.table)
    found = "not seen, at the template's place" if target_xy is None else f"{np.round(target_xy, 4)} m"
    say(f"[reconstruction] target marker by its colour: {found}")
    return target_xy


def _world_with_slide(
    write: Callable[..., Path],
    bags: Sequence[str | Path],
    tcfg: Any,
    scene: _Scene,
    cfg: Real2SimConfig,
    stages: _Stages,
) -> tuple[Path, Any, str]:
    """Write the world; in a push world, fit the slide phase's friction in it and write it again with that.

    Returns the world, the slide fit (None when not used) and why it was not used ("" where the world is
    no push world).  The rest of the world stands without a slide fit.
    """
    world = write()
    if tcfg.task is None or tcfg.task.type.value != "push":
        return world, None, ""
    why = "the capture has no slide phase"
    slide = None
    try:
        slide = _slide(bags, world, scene.segment, scene.seg, scene.obj_name, cfg)
    except (BagError, ReconstructionError) as err:
        why = f"not used ({err})"
    if slide is None:
        stages.say(f"[slide] {why}: the object's friction stays a prior (+-30 %)")
        return world, None, why
    shutil.rmtree(world)
    world = write(friction_scale=slide.scale, cone=slide.cone)
    stages.done("slide", slide.describe())
    return world, slide, why


def _objects_summary(scene: _Scene) -> dict[str, dict[str, Any]]:
    """Each reconstructed object's role, pose, size and primitive, for ``real2sim.yaml``."""
    roles = {scene.obj_name: "task object", scene.target_name: "target"}
    return {
        o.name: {
            "role": roles.get(o.name, "object"),
            "position": [float(v) for v in o.position],
            "size": [float(v) for v in o.size],
            "yaw": float(o.yaw),
            "primitive": o.primitive.value,
        }
        for o in scene.seg.objects
    }


def _sysid_summary(ident: IdentificationResult) -> dict[str, Any]:
    """The identification's values, errors (unknown ones as null) and RMS errors, for ``real2sim.yaml``."""
    return {
        "nominal": ident.nominal,
        "fitted": ident.fitted,
        "std": {k: (v if np.isfinite(v) else None) for k, v in ident.std.items()},
        "rms_train_before": ident.rms_train_before,
        "rms_train_after": ident.rms_train_after,
        "rms_val_before": ident.rms_val_before,
        "rms_val_after": ident.rms_val_after,
    }
