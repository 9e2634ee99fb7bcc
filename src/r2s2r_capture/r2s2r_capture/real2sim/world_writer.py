"""Write a reconstructed scene as a world folder: ``scene.xml`` built with ``mujoco.MjSpec``, ``world.yaml``.

The robot, its interface (arm joints, gripper, home) and the task parameters come from a template world;
the table, the objects, the camera and the task's object/target come from the reconstruction.  The folder
is written to a temporary sibling, loaded with :class:`r2s2r_sim.world.sim_world.SimWorld` and only then renamed into
place; an existing output folder is never touched.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import yaml

from r2s2r_capture.errors import ReconstructionError
from r2s2r_capture.reconstruction.scene import PrimitiveKind, ReconstructedObject, TableEstimate

if TYPE_CHECKING:
    from r2s2r_capture.real2sim.articulation import ArticulationEstimate

__all__ = ["TABLE_GEOM", "CameraModel", "TaskSpec", "write_world"]

# Scene geoms collide with the robot (contype 2) and with each other, like the bundled worlds.
_CONTYPE, _CONAFFINITY = 1, 3
TABLE_GEOM = "table_top"  # the table top geom of every written world
_TABLE_THICKNESS = 0.04
_OBJECT_DENSITY = 1000.0  # kg/m^3: vision gives no mass; sysid or a scale may refine it


_PIXEL_PITCH_M = 3e-6  # the written camera's sensor pixel (any pitch gives the same image)


@dataclass(frozen=True, kw_only=True, eq=False)
class CameraModel:
    """The identified camera.

    Attributes:
        K: 3x3 pinhole matrix (px).
        width: image width (px).
        height: image height (px).
        T_world_camera: optical frame (z forward, x right, y down) in the world, 4x4.
        D: plumb_bob lens distortion ``(k1, k2, p1, p2, k3)``; the sim draws its images with it.
    """

    K: np.ndarray
    width: int
    height: int
    T_world_camera: np.ndarray
    D: np.ndarray = field(default_factory=lambda: np.zeros(5))

    def __post_init__(self) -> None:
        K = np.asarray(self.K, dtype=np.float64)
        if K.shape != (3, 3) or not np.all(np.isfinite(K)) or K[1, 1] <= 0:
            raise ReconstructionError(f"camera.K: must be a finite 3x3 matrix with fy > 0, got {K.tolist()}")
        if self.width <= 0 or self.height <= 0:
            raise ReconstructionError(f"camera: width/height must be > 0, got {self.width}x{self.height}")
        T = np.asarray(self.T_world_camera, dtype=np.float64)
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            raise ReconstructionError("camera.T_world_camera: must be a finite 4x4 matrix")
        D = np.asarray(self.D, dtype=np.float64).ravel()
        if D.shape != (5,) or not np.all(np.isfinite(D)):
            raise ReconstructionError(f"camera.D: must be 5 finite plumb_bob coefficients, got {D.tolist()}")

    @property
    def fovy_deg(self) -> float:
        """Vertical field of view (deg): ``2 atan(H / 2 / fy)``."""
        return math.degrees(2.0 * math.atan(self.height / 2.0 / float(self.K[1, 1])))


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


def _optical_to_mujoco_quat(R_opt: np.ndarray) -> np.ndarray:
    import mujoco

    # MuJoCo cameras look along -z with y up: 180 deg about x from the optical frame.
    R = R_opt @ np.diag([1.0, -1.0, -1.0])
    q = np.empty(4)
    mujoco.mju_mat2Quat(q, R.ravel())
    return q


def _rgba(color: tuple[float, float, float]) -> list[float]:
    return [float(np.clip(c, 0.0, 1.0)) for c in color] + [1.0]


def _write_obj(path: Path, vertices: np.ndarray, triangles: np.ndarray) -> None:
    lines = [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in vertices]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in triangles]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _add_object(spec, obj: ReconstructedObject, *, name: str, free: bool, tmp: Path) -> None:
    import mujoco

    body = spec.worldbody.add_body(name=name, pos=obj.position.tolist(), quat=obj.quat.tolist())
    if free:
        body.add_freejoint(name=f"{name}_joint")
    rgba = _rgba(obj.color)
    common = {"rgba": rgba, "contype": _CONTYPE, "conaffinity": _CONAFFINITY, "density": _OBJECT_DENSITY}
    half = obj.size / 2.0
    if obj.primitive in (PrimitiveKind.BOX, PrimitiveKind.CYLINDER):
        cylinder = obj.primitive is PrimitiveKind.CYLINDER
        body.add_geom(
            name=f"{name}_geom",
            type=mujoco.mjtGeom.mjGEOM_CYLINDER if cylinder else mujoco.mjtGeom.mjGEOM_BOX,
            size=[half[0], half[2], 0.0] if cylinder else half.tolist(),
            condim=4,
            friction=[1.0, 0.01, 0.0002],
            **common,
        )
    elif obj.primitive is PrimitiveKind.OPEN_BOX:
        t, f = obj.wall_thickness, obj.floor_thickness
        hx, hy, hz = half
        body.add_geom(
            name=f"{name}_floor",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            size=[hx, hy, f / 2.0],
            pos=[0.0, 0.0, -hz + f / 2.0],
            **common,
        )
        for tag, size, pos in (
            ("px", [t / 2.0, hy, hz], [hx - t / 2.0, 0.0, 0.0]),
            ("nx", [t / 2.0, hy, hz], [-hx + t / 2.0, 0.0, 0.0]),
            ("py", [hx, t / 2.0, hz], [0.0, hy - t / 2.0, 0.0]),
            ("ny", [hx, t / 2.0, hz], [0.0, -hy + t / 2.0, 0.0]),
        ):
            body.add_geom(
                name=f"{name}_wall_{tag}", type=mujoco.mjtGeom.mjGEOM_BOX, size=size, pos=pos, **common
            )
    else:
        if len(obj.hull_triangles) < 4:
            raise ReconstructionError(f"objects: {obj.name}: mesh primitive without a convex hull")
        mesh_dir = tmp / "meshes"
        mesh_dir.mkdir(exist_ok=True)
        _write_obj(mesh_dir / f"{name}.obj", obj.hull_vertices, obj.hull_triangles)
        spec.add_mesh(name=f"{name}_hull", file=f"{name}.obj")
        body.add_geom(
            name=f"{name}_geom",
            type=mujoco.mjtGeom.mjGEOM_MESH,
            meshname=f"{name}_hull",
            condim=4,
            friction=[1.0, 0.01, 0.0002],
            **common,
        )


def _scene_spec(
    tmp: Path,
    *,
    table: TableEstimate,
    objects: dict[str, ReconstructedObject],
    free: dict[str, bool],
    camera: CameraModel,
    camera_name: str,
    target_name: str | tuple[float, float, float, float] | None,
    target_site: str,
    site_height: float,
):  # mujoco.MjSpec
    import mujoco

    spec = mujoco.MjSpec()
    spec.modelname = "reconstructed"
    spec.meshdir = "meshes"
    spec.modelfiledir = str(tmp)  # compile-time resolution of the mesh files written next to scene.xml
    spec.visual.global_.offwidth = max(640, camera.width)
    spec.visual.global_.offheight = max(480, camera.height)
    wb = spec.worldbody
    wb.add_light(
        name="key_light",
        pos=[0.5, -0.5, 2.2],
        dir=[-0.2, 0.2, -1.0],
        diffuse=[0.7, 0.7, 0.7],
        castshadow=True,
    )
    wb.add_light(
        name="fill_light",
        pos=[-0.5, 1.0, 2.0],
        dir=[0.3, -0.4, -1.0],
        diffuse=[0.4, 0.4, 0.4],
        castshadow=False,
    )
    floor_z = table.floor_height if table.floor_height is not None else 0.0
    wb.add_geom(
        name="floor",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        size=[3.0, 3.0, 0.1],
        pos=[0.0, 0.0, floor_z],
        rgba=[0.2, 0.25, 0.3, 1.0],
        contype=_CONTYPE,
        conaffinity=_CONAFFINITY,
    )
    yaw = table.yaw
    tq = [math.cos(yaw / 2.0), 0.0, 0.0, math.sin(yaw / 2.0)]
    tbody = wb.add_body(name="table", pos=[table.center[0], table.center[1], table.height], quat=tq)
    hx, hy = table.size[0] / 2.0, table.size[1] / 2.0
    rgba = _rgba(table.color)
    tbody.add_geom(
        name=TABLE_GEOM,
        type=mujoco.mjtGeom.mjGEOM_BOX,
        size=[hx, hy, _TABLE_THICKNESS / 2.0],
        pos=[0.0, 0.0, -_TABLE_THICKNESS / 2.0],
        rgba=rgba,
        contype=_CONTYPE,
        conaffinity=_CONAFFINITY,
        friction=[0.8, 0.005, 0.0001],
    )
    leg_h = (table.height - _TABLE_THICKNESS - floor_z) / 2.0
    if leg_h > 0:
        for i, (sx, sy) in enumerate(((-1, -1), (1, -1), (-1, 1), (1, 1)), start=1):
            tbody.add_geom(
                name=f"table_leg_{i}",
                type=mujoco.mjtGeom.mjGEOM_BOX,
                size=[0.03, 0.03, leg_h],
                pos=[sx * (hx - 0.05), sy * (hy - 0.05), -_TABLE_THICKNESS - leg_h],
                rgba=rgba,
                contype=0,
                conaffinity=0,
            )
    for name, obj in objects.items():
        _add_object(spec, obj, name=name, free=free[name], tmp=tmp)
    if target_name is None:  # the target is part of an articulated object, added by the caller
        pass
    elif isinstance(target_name, str):
        target = spec.body(target_name)
        t_obj = objects[target_name]
        t_floor = -t_obj.size[2] / 2.0 + (
            t_obj.floor_thickness if t_obj.primitive is PrimitiveKind.OPEN_BOX else t_obj.size[2]
        )
        site_pos = [0.0, 0.0, t_floor + site_height]
    else:  # a marker on the table at the template's place (no collision, as in the template)
        target = wb.add_body(name="target", pos=[target_name[0], target_name[1], table.height])
        target.add_geom(
            name="target_disc",
            type=mujoco.mjtGeom.mjGEOM_CYLINDER,
            size=[target_name[3], 0.0005, 0.0],
            pos=[0.0, 0.0, 0.0005],
            rgba=[0.2, 0.75, 0.3, 1.0],
            contype=0,
            conaffinity=0,
        )
        site_pos = [0.0, 0.0, target_name[2] - table.height]
    if target_name is not None:
        target.add_site(
            name=target_site,
            pos=site_pos,
            size=[0.01, 0.01, 0.01],
            rgba=[0.0, 1.0, 0.0, 0.3],
            group=4,
        )
    T = np.asarray(camera.T_world_camera, dtype=np.float64)
    K = np.asarray(camera.K, dtype=np.float64)
    cam = wb.add_camera(
        name=camera_name,
        pos=T[:3, 3].tolist(),
        quat=_optical_to_mujoco_quat(T[:3, :3]).tolist(),
        fovy=camera.fovy_deg,
    )
    # The calibrated fx, fy, cx, cy, not only the field of view: a sensor of the image's size in pixels of
    # _PIXEL_PITCH_M, MuJoCo's principal offset pointing against OpenCV's pixel axes.
    cam.resolution = [camera.width, camera.height]
    cam.sensor_size = [camera.width * _PIXEL_PITCH_M, camera.height * _PIXEL_PITCH_M]
    cam.focal_pixel = [float(K[0, 0]), float(K[1, 1])]
    cam.principal_pixel = [
        (camera.width - 1) / 2.0 - float(K[0, 2]),
        (camera.height - 1) / 2.0 - float(K[1, 2]),
    ]
    return spec


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
            with this joint (:func:`r2s2r_capture.real2sim.articulation.place_articulated`); ``task`` names are
            ignored and every reconstructed object is a free body.
        friction_scale: factor on the friction of the task object's geoms and the table top, as measured
            by the capture's slide phase (:mod:`r2s2r_capture.real2sim.slide`).
        cone: the friction cone the slide phase chose (``physics.cone`` of world.yaml); ``None`` keeps the
            template's.
        joint_state_noise: ``(position_std, velocity_std)`` of the joint readings seen in the capture
            (``robot.joint_state_noise``: the sim reports its joint states with that noise); None: none.

    Returns:
        ``out_dir``.

    Raises:
        ReconstructionError: existing output, bad template, unknown task names, or a world that does not
            load (the message carries SimWorld's).
    """
    from r2s2r_sim.errors import WorldError
    from r2s2r_sim.world.config import PLUMB_BOB_KEYS, load_world_config
    from r2s2r_sim.world.sim_world import SimWorld

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
    names = [o.name for o in objects]
    if articulated is not None:
        task = TaskSpec(object="", target=None, keep_pose_range=task.keep_pose_range)
    for field_name, value in (("task.object", task.object), ("task.target", task.target)):
        if articulated is not None:
            break
        if value is not None and value not in names:
            raise ReconstructionError(f"{field_name}: no object {value!r} (objects: {names})")
    if len(set(names)) != len(names):
        raise ReconstructionError(f"objects: duplicate names {names}")
    ttask = tcfg.task
    object_body = task.object_body or (ttask.object_body if ttask else "object")
    target_site = task.target_site or (ttask.target_site if ttask else "target")
    # Body names in the written world: the task object takes the template's body name.
    # A stacking template's target is its free support block: it takes the template's name and stays free.
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
    if task.target is None and articulated is None:
        marker = marker_target(template, target_site)
        if marker is None:
            raise ReconstructionError(
                f"task.target: none given, and the template's target site {target_site!r} is not on a marker"
            )
        if task.target_xy is not None:
            marker = (float(task.target_xy[0]), float(task.target_xy[1]), *marker[2:])
    cam_cfg = tcfg.cameras[0] if tcfg.cameras else None
    mjcf_camera = cam_cfg.mjcf_camera if cam_cfg else "camera"

    robot_file = Path(robot_mjcf) if robot_mjcf is not None else tcfg.robot.mjcf
    # A robot file outside the template folder (the user's own, see `r2s2r world new`) stays where it is.
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

    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the world is an ordinary folder
    try:
        if not external:
            shutil.copytree(robot_src, tmp / "robot", ignore=shutil.ignore_patterns("world.yaml", ".*"))
        spec = _scene_spec(
            tmp,
            table=table,
            objects=by_name,
            free=free,
            camera=camera,
            camera_name=mjcf_camera,
            target_name=None if articulated else renamed[task.target] if marker is None else marker,
            target_site=target_site,
            site_height=0.0 if articulated else by_name[object_body].size[2] / 2.0,
        )
        if articulated is not None:
            from r2s2r_capture.real2sim.articulation import place_articulated

            place_articulated(spec, template, articulated)
        if friction_scale != 1.0:
            for geom in [*spec.body(object_body).geoms, spec.geom(TABLE_GEOM)]:
                geom.friction = np.asarray(geom.friction) * friction_scale
        try:
            with warnings.catch_warnings():
                # An attached articulated object keeps its template names (the world's task names it).
                warnings.filterwarnings("ignore", message="Attaching a spec with an empty prefix")
                spec.compile()
                xml = spec.to_xml()
        except ValueError as err:
            raise ReconstructionError(f"scene: MjSpec does not compile: {err}") from err
        (tmp / "scene.xml").write_text(xml, encoding="utf-8")

        robot = dict(raw["robot"])
        if joint_state_noise is not None:
            position_std, velocity_std = (float(v) for v in joint_state_noise)
            robot["joint_state_noise"] = {"position_std": position_std, "velocity_std": velocity_std}
        if external:
            robot["urdf" if tcfg.robot.is_urdf else "mjcf"] = str(robot_file.resolve())
        else:
            robot.pop("urdf", None)
            robot["mjcf"] = str(Path("robot") / robot_rel)
        if robot_mjcf is not None:
            # The given MJCF holds the robot as the template world drove it (servos, armature, a compiled
            # xacro) with its own values: world.yaml settings for the template's file would override them.
            for key in ("xacro_args", "packages", "servos", "armature"):
                robot.pop(key, None)
        world: dict = {"id": world_id, "scene": "scene.xml", "robot": robot}
        cam: dict = {
            "name": cam_cfg.name if cam_cfg else "camera",
            "mjcf_camera": mjcf_camera,
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
        world["cameras"] = [cam]
        task_raw = dict(
            raw.get("task")
            or {"type": "pick_place", "success_radius": 0.06, "success_height": 0.06, "timeout": 30.0}
        )
        task_raw.update(object_body=object_body, target_site=target_site, table_top_z=float(table.height))
        if not task.keep_pose_range:
            task_raw.pop("object_pose_range", None)
        world["task"] = task_raw
        if raw.get("physics") is not None:
            world["physics"] = raw["physics"]
        if cone is not None:
            world["physics"] = {**world.get("physics", {}), "cone": cone}
        header = "# Written by r2s2r reconstruct (r2s2r_capture.real2sim.world_writer) from posed RGB-D frames.\n"
        (tmp / "world.yaml").write_text(header + yaml.safe_dump(world, sort_keys=False), encoding="utf-8")
        try:
            SimWorld(tmp)
        except WorldError as err:
            raise ReconstructionError(f"written world does not load: {err}") from err
        os.rename(tmp, out)  # same filesystem: atomic; out was checked absent above
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def marker_target(template: str | Path, site: str) -> tuple[float, float, float, float] | None:
    """``(x, y, site z, radius)`` of the template's target where it is a marker on the table, else None.

    A marker is a body whose geoms all lack collision (a taped disc, a painted cross): a depth
    reconstruction cannot segment it; :func:`measure_marker` finds it by its colour instead.
    """
    from r2s2r_sim.world.sim_world import SimWorld

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
    from r2s2r_sim.world.sim_world import SimWorld

    from r2s2r_capture.reconstruction.scene import find_marker

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
