"""The ``MjSpec`` of a reconstructed scene: table, objects, the task's target and the calibrated camera.

:func:`r2s2r_capture.real2sim.world_writer.write_world` adds the template's robot (and an articulated object)
to it and writes it as the world's ``scene.xml``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from r2s2r_capture.errors import ReconstructionError
from r2s2r_capture.reconstruction.scene import PrimitiveKind, ReconstructedObject, TableEstimate

__all__ = ["TABLE_GEOM", "CameraModel", "scene_spec"]

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


def _optical_to_mujoco_quat(R_opt: np.ndarray) -> np.ndarray:
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


def scene_spec(
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
) -> mujoco.MjSpec:
    """The scene: lights, floor, table, objects, the target's site and the calibrated camera.

    ``target_name``: the target object's name, a marker's ``(x, y, site z, radius)`` on the table, or
    None where the target is part of an articulated object the caller adds.
    """
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
    _add_floor_and_table(wb, table)
    for name, obj in objects.items():
        _add_object(spec, obj, name=name, free=free[name], tmp=tmp)
    if target_name is not None:  # else the target is part of an articulated object, added by the caller
        _add_target(spec, objects, table, target_name, target_site, site_height)
    _add_camera(wb, camera, camera_name)
    return spec


def _add_floor_and_table(wb: mujoco.MjsBody, table: TableEstimate) -> None:
    """The floor plane (at the floor seen, else z = 0); the table top as identified, legs collision-free."""
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


def _add_target(
    spec: mujoco.MjSpec,
    objects: dict[str, ReconstructedObject],
    table: TableEstimate,
    target: str | tuple[float, float, float, float],
    target_site: str,
    site_height: float,
) -> None:
    """The task's target site: ``site_height`` above the target object's floor, or on a marker's disc.

    A marker (a taped disc) is written at its place on the table without collision, as in the template.
    """
    if isinstance(target, str):
        body = spec.body(target)
        t_obj = objects[target]
        t_floor = -t_obj.size[2] / 2.0 + (
            t_obj.floor_thickness if t_obj.primitive is PrimitiveKind.OPEN_BOX else t_obj.size[2]
        )
        site_pos = [0.0, 0.0, t_floor + site_height]
    else:
        body = spec.worldbody.add_body(name="target", pos=[target[0], target[1], table.height])
        body.add_geom(
            name="target_disc",
            type=mujoco.mjtGeom.mjGEOM_CYLINDER,
            size=[target[3], 0.0005, 0.0],
            pos=[0.0, 0.0, 0.0005],
            rgba=[0.2, 0.75, 0.3, 1.0],
            contype=0,
            conaffinity=0,
        )
        site_pos = [0.0, 0.0, target[2] - table.height]
    body.add_site(name=target_site, pos=site_pos, size=[0.01, 0.01, 0.01], rgba=[0.0, 1.0, 0.0, 0.3], group=4)


def _add_camera(wb: mujoco.MjsBody, camera: CameraModel, camera_name: str) -> None:
    """The identified camera at its pose, with the calibrated fx, fy, cx, cy, not only the field of view.

    A sensor of the image's size in pixels of ``_PIXEL_PITCH_M``, MuJoCo's principal offset pointing
    against OpenCV's pixel axes.
    """
    T = np.asarray(camera.T_world_camera, dtype=np.float64)
    K = np.asarray(camera.K, dtype=np.float64)
    cam = wb.add_camera(
        name=camera_name,
        pos=T[:3, 3].tolist(),
        quat=_optical_to_mujoco_quat(T[:3, :3]).tolist(),
        fovy=camera.fovy_deg,
    )
    cam.resolution = [camera.width, camera.height]
    cam.sensor_size = [camera.width * _PIXEL_PITCH_M, camera.height * _PIXEL_PITCH_M]
    cam.focal_pixel = [float(K[0, 0]), float(K[1, 1])]
    cam.principal_pixel = [
        (camera.width - 1) / 2.0 - float(K[0, 2]),
        (camera.height - 1) / 2.0 - float(K[1, 2]),
    ]
