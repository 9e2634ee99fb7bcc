"""Write a reconstructed scene as a world folder: ``scene.xml`` built with ``mujoco.MjSpec``, ``world.yaml``.

The robot, its interface (arm joints, gripper, home) and the task parameters come from a template world;
the table, the objects, the camera and the task's object/target come from the reconstruction, with the
scene frames' textures when they are given (:mod:`r2s2r_capture.real2sim.appearance`).  The folder
is written to a temporary sibling, loaded with :class:`r2s2r_sim.world.sim_world.SimWorld` and only then
renamed into place; an existing output folder is never touched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import yaml
from r2s2r_sim.errors import WorldError
from r2s2r_sim.world.config import PLUMB_BOB_KEYS, load_world_config
from r2s2r_sim.world.sim_world import SimWorld

from r2s2r_capture.errors import ReconstructionError
from r2s2r_capture.real2sim.appearance import add_patches, compensate_shading, scene_patches
from r2s2r_capture.real2sim.articulation import ArticulationEstimate, place_articulated
from r2s2r_capture.real2sim.scene_spec import TABLE_GEOM, CameraModel, scene_spec
from r2s2r_capture.reconstruction.scene import ReconstructedObject, TableEstimate, find_marker

__all__ = ["TaskSpec", "marker_target", "measure_marker", "write_world"]


@dataclass(frozen=True, kw_only=True)
class TaskSpec:
    """Which reconstructed objects the task uses.

    Attributes:
        object: name of the object to pick (a :class:`ReconstructedObject` name).
        target: name of the object to place it in (usually an open box, the bin); ``None``: the template's
            target is a marker on the table (a taped disc: no depth, see :func:`marker_target`), written
            at ``target_xy`` (where its colour was seen, :func:`measure_marker`), else at the template's.
        object_body: body name in the written world; ``None`` keeps the template's ``task.object_body``.
        target_site: site name at the target; ``None`` keeps the template's ``task.target_site``.
        keep_pose_range: keep the template's ``object_pose_range`` (randomised resets); by default the
            written world starts from the reconstructed pose.
        target_xy: the marker target's measured centre (x, y; m, world); ``None``: the template's place.
    """

    object: str
    target: str | None
    object_body: str | None = None
    target_site: str | None = None
    keep_pose_range: bool = False
    target_xy: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.object == self.target:
            raise ReconstructionError(f"task: object and target must differ, both are {self.object!r}")


def write_world(
    out_dir: str | Path,
    *,
    template: str | Path,
    table: TableEstimate,
    objects: tuple[ReconstructedObject, ...] | list[ReconstructedObject],
    camera: CameraModel,
    task: TaskSpec,
    robot_mjcf_dir: str | Path | None = None,
    world_id: str = "reconstructed-v1",
    robot_mjcf: str | Path | None = None,
    articulated: ArticulationEstimate | None = None,
    friction_scale: float = 1.0,
    cone: str | None = None,
    joint_state_noise: tuple[float, float] | None = None,
    frames: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
) -> Path:
    """Write a world folder for the reconstructed scene and check that :class:`SimWorld` loads it.

    Args:
        out_dir: folder to create (must not exist).
        template: world folder whose ``world.yaml`` gives the robot section (MJCF, attach, arm joints,
            gripper, home), the camera's ROS name/rate/frame/depth range, task tolerances and physics.
        table: the identified table.
        objects: the identified objects; the task object and every other object except the target become
            free bodies, the target (bin) is fixed.
        camera: the identified camera, written with ``fovy = 2 atan(H / 2 / fy)``.
        task: which object is picked and which is the target.
        robot_mjcf_dir: folder holding the robot MJCF and its assets, copied to ``robot/``; default the
            template robot MJCF's folder when it lies inside the template folder; a robot file outside it
            (the user's own) is referenced where it is.
        world_id: ``id`` of the new world.
        robot_mjcf: the robot MJCF to use instead of the template's (e.g. one with identified dynamics,
            written from a URDF or MJCF template); it must lie inside ``robot_mjcf_dir`` (default: its own
            folder).  It replaces the template's robot file with what world.yaml added to it, so
            ``xacro_args``, ``packages``, ``servos`` and ``armature`` are not copied.
        articulated: the template's task object is articulated (a drawer): it is added from the template
            with this joint (:func:`r2s2r_capture.real2sim.articulation.place_articulated`); ``task`` names
            are ignored and every reconstructed object is a free body.
        friction_scale: factor on the friction of the task object's geoms and the table top, as measured
            by the capture's slide phase (:mod:`r2s2r_capture.real2sim.slide`).
        cone: the friction cone the slide phase chose (``physics.cone`` of world.yaml); ``None`` keeps the
            template's.
        joint_state_noise: ``(position_std, velocity_std)`` of the joint readings seen in the capture
            (``robot.joint_state_noise``: the sim reports its joint states with that noise); None: none.
        frames: the scene's raw RGB-D frames (depth in m) from ``camera``: the table, floor, backdrop and
            the objects' seen faces get their textures (:mod:`r2s2r_capture.real2sim.appearance`); None:
            one mean colour per primitive.

    Returns:
        ``out_dir``.

    Raises:
        ReconstructionError: existing output, bad template, unknown task names, or a world that does not
            load (the message carries SimWorld's).
    """
    out = Path(out_dir)
    if out.exists():
        raise ReconstructionError(f"out_dir: {out} already exists; refusing to overwrite it")
    if not out.parent.is_dir():
        raise ReconstructionError(f"out_dir: parent folder {out.parent} does not exist")
    template = Path(template)
    try:
        tcfg = load_world_config(template)
    except WorldError as err:
        raise ReconstructionError(f"template: {err}") from err
    raw = yaml.safe_load(tcfg.source.read_text(encoding="utf-8"))
    if articulated is not None:
        task = TaskSpec(object="", target=None, keep_pose_range=task.keep_pose_range)
    layout = _layout(template, tcfg, objects, task, articulated=articulated is not None)
    robot = _robot_source(template, tcfg, robot_mjcf, robot_mjcf_dir)
    cam_cfg = tcfg.cameras[0] if tcfg.cameras else None
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the world is an ordinary folder
    try:
        if not robot.external:
            shutil.copytree(robot.src, tmp / "robot", ignore=shutil.ignore_patterns("world.yaml", ".*"))
        spec = scene_spec(
            tmp,
            table=table,
            objects=layout.by_name,
            free=layout.free,
            camera=camera,
            camera_name=cam_cfg.mjcf_camera if cam_cfg else "camera",
            target_name=layout.target,
            target_site=layout.target_site,
            site_height=layout.site_height,
        )
        if articulated is not None:
            place_articulated(spec, template, articulated)
        patches = _add_textures(spec, tmp, frames, camera, cam_cfg, table, layout) if frames else []
        if friction_scale != 1.0:
            for geom in [*spec.body(layout.object_body).geoms, spec.geom(TABLE_GEOM)]:
                geom.friction = np.asarray(geom.friction) * friction_scale
        (tmp / "scene.xml").write_text(_compiled_xml(spec), encoding="utf-8")
        world = _world_yaml(
            world_id,
            raw,
            tcfg,
            robot,
            cam_cfg,
            camera,
            layout,
            table,
            task,
            joint_state_noise,
            own_mjcf=robot_mjcf is not None,
            cone=cone,
        )
        header = (
            "# Written by r2s2r reconstruct (r2s2r_capture.real2sim.world_writer) from posed RGB-D frames.\n"
        )
        (tmp / "world.yaml").write_text(header + yaml.safe_dump(world, sort_keys=False), encoding="utf-8")
        try:
            SimWorld(tmp)
        except WorldError as err:
            raise ReconstructionError(f"written world does not load: {err}") from err
        if patches:
            level = compensate_shading(tmp, patches, camera.K, camera.D, camera.T_world_camera)
            _write_appearance(tmp, patches, level)
        os.rename(tmp, out)  # same filesystem: atomic; out was checked absent above
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _add_textures(
    spec: Any,
    folder: Path,
    frames: Sequence[tuple[np.ndarray, np.ndarray]],
    camera: CameraModel,
    cam_cfg: Any,
    table: TableEstimate,
    layout: Any,
) -> list:
    """Project the scene frames onto the table, floor, backdrop and objects as quads added to ``spec``."""
    far = float(cam_cfg.depth_range[1]) if cam_cfg else 10.0
    patches = scene_patches(
        frames,
        K=camera.K,
        D=camera.D,
        T_world_camera=camera.T_world_camera,
        image_size=(camera.width, camera.height),
        table=table,
        objects=layout.by_name,
        backdrop_m=1.05 * far,  # beyond the depth range: no depth there, as the frames show
    )
    add_patches(spec, folder, patches)
    return patches


def _world_yaml(
    world_id: str,
    raw: dict,
    tcfg: Any,
    robot: Any,
    cam_cfg: Any,
    camera: CameraModel,
    layout: Any,
    table: TableEstimate,
    task: TaskSpec,
    joint_state_noise: tuple[float, float] | None,
    *,
    own_mjcf: bool,
    cone: str | None,
) -> dict:
    """``world.yaml`` of the new world: the template's robot and physics, the identified camera and task."""
    world: dict = {
        "id": world_id,
        "scene": "scene.xml",
        "robot": _robot_yaml(raw["robot"], tcfg, robot, joint_state_noise, own_mjcf=own_mjcf),
        "cameras": [_camera_yaml(cam_cfg, camera)],
        "task": _task_yaml(raw.get("task"), layout, table, task.keep_pose_range),
    }
    if raw.get("physics") is not None:
        world["physics"] = raw["physics"]
    if cone is not None:
        world["physics"] = {**world.get("physics", {}), "cone": cone}
    return world


def _write_appearance(folder: Path, patches: Sequence[Any], table_shading: float) -> None:
    """``appearance.yaml``: which quads carry textures, and the world's light level on the table top."""
    doc = {
        "appearance": "textured",
        "lights": "the template's; each texture is divided by their shading from the calibrated camera",
        "table_shading": round(float(table_shading), 4),
        "textures": [f"{p.name}.png" for p in patches],
    }
    (folder / "appearance.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def _compiled_xml(spec: mujoco.MjSpec) -> str:
    """The scene's XML, once it compiles."""
    try:
        with warnings.catch_warnings():
            # An attached articulated object keeps its template names (the world's task names it).
            warnings.filterwarnings("ignore", message="Attaching a spec with an empty prefix")
            spec.compile()
            return spec.to_xml()
    except ValueError as err:
        raise ReconstructionError(f"scene: MjSpec does not compile: {err}") from err


@dataclass(frozen=True)
class _Layout:
    """Where the task's names land in the written world.

    Attributes:
        object_body: the task object's body name.
        target_site: the target's site name.
        by_name: written body name -> reconstructed object.
        free: written body name -> whether it is a free body.
        target: what :func:`_scene_spec` puts the target site on (its ``target_name``).
        site_height: the target site's height above the target's floor (m).
    """

    object_body: str
    target_site: str
    by_name: dict[str, ReconstructedObject]
    free: dict[str, bool]
    target: str | tuple[float, float, float, float] | None
    site_height: float


def _layout(
    template: Path,
    tcfg: Any,
    objects: Sequence[ReconstructedObject],
    task: TaskSpec,
    *,
    articulated: bool,
) -> _Layout:
    """Check the task's names against the objects and name the written bodies after the template's task.

    The task object takes the template's body name.  A stacking template's target is its free support
    block: it takes the template's name and stays free.  Without a target object the template's target
    must be a marker on the table (:func:`marker_target`), written where it was measured if it was.
    """
    names = [o.name for o in objects]
    for field_name, value in (("task.object", task.object), ("task.target", task.target)):
        if articulated:
            break
        if value is not None and value not in names:
            raise ReconstructionError(f"{field_name}: no object {value!r} (objects: {names})")
    if len(set(names)) != len(names):
        raise ReconstructionError(f"objects: duplicate names {names}")
    ttask = tcfg.task
    object_body = task.object_body or (ttask.object_body if ttask else "object")
    target_site = task.target_site or (ttask.target_site if ttask else "target")
    support = ttask.support_body if ttask else None
    roles = {task.object: object_body, **({task.target: support} if support and task.target else {})}
    renamed = {o.name: roles.get(o.name, o.name) for o in objects}
    if len(set(renamed.values())) != len(renamed):
        raise ReconstructionError(
            f"task.object_body: {sorted(roles.values())} clash with an object name {names}"
        )
    by_name = {renamed[o.name]: o for o in objects}
    free = {renamed[o.name]: o.name != task.target or support is not None for o in objects}
    marker = None
    if task.target is None and not articulated:
        marker = marker_target(template, target_site)
        if marker is None:
            raise ReconstructionError(
                f"task.target: none given, and the template's target site {target_site!r} is not on a marker"
            )
        if task.target_xy is not None:
            marker = (float(task.target_xy[0]), float(task.target_xy[1]), *marker[2:])
    return _Layout(
        object_body=object_body,
        target_site=target_site,
        by_name=by_name,
        free=free,
        target=None if articulated else renamed[task.target] if marker is None else marker,
        site_height=0.0 if articulated else by_name[object_body].size[2] / 2.0,
    )


@dataclass(frozen=True)
class _RobotSource:
    """The robot file, the folder copied with it, its path inside that folder, and whether it stays put."""

    file: Path
    src: Path
    rel: Path
    external: bool


def _robot_source(
    template: Path, tcfg: Any, robot_mjcf: str | Path | None, robot_mjcf_dir: str | Path | None
) -> _RobotSource:
    """Which robot file the world uses and whether it is copied (see :func:`write_world`'s arguments).

    A robot file outside the template folder (the user's own, see `r2s2r world new`) stays where it is.
    """
    robot_file = Path(robot_mjcf) if robot_mjcf is not None else tcfg.robot.mjcf
    external = robot_mjcf is None and robot_mjcf_dir is None
    external = external and not robot_file.resolve().is_relative_to(template.resolve())
    robot_src = Path(robot_mjcf_dir) if robot_mjcf_dir is not None else robot_file.parent
    try:
        robot_rel = robot_file.resolve().relative_to(robot_src.resolve())
    except ValueError:
        raise ReconstructionError(
            f"robot_mjcf_dir: {robot_src} does not contain the robot MJCF {robot_file}"
        ) from None
    if tcfg.robot.is_urdf and not external and robot_mjcf is None:
        raise ReconstructionError(
            f"template: robot {robot_file} is a URDF inside the template folder; only an MJCF robot is copied"
        )
    return _RobotSource(file=robot_file, src=robot_src, rel=robot_rel, external=external)


def _robot_yaml(
    raw_robot: dict[str, Any],
    tcfg: Any,
    source: _RobotSource,
    joint_state_noise: tuple[float, float] | None,
    *,
    own_mjcf: bool,
) -> dict[str, Any]:
    """world.yaml's ``robot``: the template's, pointing at the robot file written (or left) for the world.

    ``own_mjcf``: the robot file was given (not the template's); it holds the robot as the template world
    drove it (servos, armature, a compiled xacro) with its own values, so world.yaml settings for the
    template's file, which would override them, are dropped.
    """
    robot = dict(raw_robot)
    if joint_state_noise is not None:
        position_std, velocity_std = (float(v) for v in joint_state_noise)
        robot["joint_state_noise"] = {"position_std": position_std, "velocity_std": velocity_std}
    if source.external:
        robot["urdf" if tcfg.robot.is_urdf else "mjcf"] = str(source.file.resolve())
    else:
        robot.pop("urdf", None)
        robot["mjcf"] = str(Path("robot") / source.rel)
    if own_mjcf:
        for key in ("xacro_args", "packages", "servos", "armature"):
            robot.pop(key, None)
    return robot


def _camera_yaml(cam_cfg: Any, camera: CameraModel) -> dict[str, Any]:
    """world.yaml's camera: the template's ROS name, rate, frame, depth range; the identified size, lens."""
    cam: dict[str, Any] = {
        "name": cam_cfg.name if cam_cfg else "camera",
        "mjcf_camera": cam_cfg.mjcf_camera if cam_cfg else "camera",
        "width": int(camera.width),
        "height": int(camera.height),
        "rate_hz": float(cam_cfg.rate_hz) if cam_cfg else 15.0,
        "frame_id": cam_cfg.frame_id if cam_cfg else "camera_color_optical_frame",
    }
    if cam_cfg:
        cam["depth_range"] = [float(v) for v in cam_cfg.depth_range]
    D = np.asarray(camera.D, dtype=np.float64).ravel()
    if np.any(D != 0.0):
        coefficients = dict(zip(PLUMB_BOB_KEYS, (float(v) for v in D), strict=True))
        cam["distortion"] = {"model": "plumb_bob", **coefficients}
    return cam


def _task_yaml(
    raw_task: dict[str, Any] | None, layout: _Layout, table: TableEstimate, keep_pose_range: bool
) -> dict[str, Any]:
    """world.yaml's ``task``: the template's (a pick-and-place default without one), on the written names."""
    task = dict(
        raw_task or {"type": "pick_place", "success_radius": 0.06, "success_height": 0.06, "timeout": 30.0}
    )
    task.update(
        object_body=layout.object_body, target_site=layout.target_site, table_top_z=float(table.height)
    )
    if not keep_pose_range:
        task.pop("object_pose_range", None)
    return task


def marker_target(template: str | Path, site: str) -> tuple[float, float, float, float] | None:
    """``(x, y, site z, radius)`` of the template's target where it is a marker on the table, else None.

    A marker is a body whose geoms all lack collision (a taped disc, a painted cross): a depth
    reconstruction cannot segment it; :func:`measure_marker` finds it by its colour instead.
    """
    world = SimWorld(template)
    model = world.model
    geoms = _marker_geoms(model, site)
    if not geoms:
        return None
    pos = world.data.site_xpos[model.site(site).id]
    radius = max(float(model.geom_size[g][0]) for g in geoms)
    return float(pos[0]), float(pos[1]), float(pos[2]), radius


def _marker_geoms(model, site: str) -> list[int]:  # mujoco.MjModel
    """The geoms of the marker body carrying ``site``; empty when ``site`` is not on a marker."""
    sid = model.site(site).id if site in {model.site(i).name for i in range(model.nsite)} else -1
    if sid < 0:
        return []
    body = int(model.site_bodyid[sid])
    geoms = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) == body]
    if body == 0 or any(model.geom_contype[g] or model.geom_conaffinity[g] for g in geoms):
        return []
    return geoms


def measure_marker(template: str | Path, site: str, pcd, table: TableEstimate) -> tuple[float, float] | None:
    """Where the template's marker target (see :func:`marker_target`) is, found by its colour in ``pcd``.

    Returns:
        (x, y) in m, world frame; None when the template's target is no marker or its colour is not seen.
    """
    model = SimWorld(template).model
    geoms = _marker_geoms(model, site)
    if not geoms:
        return None
    g = geoms[0]
    mat = int(model.geom_matid[g])
    rgba = model.mat_rgba[mat] if mat >= 0 else model.geom_rgba[g]
    colour = (float(rgba[0]), float(rgba[1]), float(rgba[2]))
    found = find_marker(pcd, table, colour, radius=float(model.geom_size[g][0]))
    return None if found is None else (float(found[0]), float(found[1]))
