"""The captured appearance of a reconstructed scene, as textures a MuJoCo world draws.

A world of primitives in one mean colour each looks like the unit only to a renderer that shades it as
the unit's was; another renderer (another engine, another light) shows a policy another scene.  Here the
scene frames themselves are put back on the reconstruction: the table top, the floor and the faces of each
box-like object the camera saw become thin, collision-free textured quads just outside their primitives
(:mod:`r2s2r_capture.reconstruction.appearance` projects the frames into them), and what lies beyond the
floor becomes a backdrop at the far end of the camera's depth range.  Faces the camera did not see keep the
primitive's mean colour, since the quad is only added over a face seen.

Lights: the template's lights are kept.  The frames carry the unit's shading; the world shades the quads
again with its own lights, so each texture is divided by the world's shading there (a grey render of the
quads from the calibrated camera, shadows included): the texture is the albedo under the world's lights, and
the render from the calibrated camera gives back the frames' colours.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import mujoco
import numpy as np
from r2s2r_sim.cells.camera_frames import CameraFrames
from r2s2r_sim.world.sim_world import SimWorld

from r2s2r_capture.reconstruction.appearance import Surface, project_texture, texel_pixels
from r2s2r_capture.reconstruction.scene import PrimitiveKind, ReconstructedObject, TableEstimate

__all__ = [
    "APPEARANCE_GROUP",
    "TEXTURE_DIR",
    "Appearance",
    "Patch",
    "add_patches",
    "compensate_shading",
    "scene_patches",
]

TEXTURE_DIR = "textures"  # the world folder's PNGs
APPEARANCE_GROUP = 2  # the quads' geom group: drawn, and told apart from the primitives they cover
_LIFT_M = 0.0005  # a quad sits this far outside its primitive's face, clear of its depth
_TABLE_TEXEL_M = 0.002
_OBJECT_TEXEL_M = 0.0015
_FLOOR_TEXEL_M = 0.004
_MIN_SEEN = 0.25  # a face whose texels were seen less than this keeps the flat colour
_FLOOR_HALF_M = 3.0  # the written floor plane's half size (scene_spec)
_GREY = 0.4  # the albedo of the shading render: room for the world's lights to sum above 1
_MIN_SHADING = 0.05


class Appearance(enum.Enum):
    """How real2sim colours the reconstruction."""

    TEXTURED = "textured"  # the scene frames projected onto table, floor, objects and a backdrop
    FLAT = "flat"  # one mean colour per primitive


@dataclass(frozen=True, eq=False)
class Patch:
    """One textured quad: its surface in the world, the body it moves with and its texture.

    Attributes:
        surface: where it is (world frame, as projected).
        body: the body it is attached to (``None``: the world body).
        T_world_body: that body's pose when the frames were taken (4x4).
        rgb: the texture, RGB uint8 (H, W, 3).
    """

    surface: Surface
    body: str | None
    T_world_body: np.ndarray
    rgb: np.ndarray

    @property
    def name(self) -> str:
        """Its texture, material, mesh and geom names derive from this."""
        return f"appearance_{self.surface.name}"


def _pose(position: Sequence[float], yaw: float) -> np.ndarray:
    T = np.eye(4)
    c, s = math.cos(yaw), math.sin(yaw)
    T[:3, :3] = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
    T[:3, 3] = position
    return T


def _in_world(T: np.ndarray, name: str, origin, u, v) -> Surface:
    R, t = T[:3, :3], T[:3, 3]
    return Surface(
        name, R @ np.asarray(origin, float) + t, R @ np.asarray(u, float), R @ np.asarray(v, float)
    )


def _box_faces(name: str, half: np.ndarray, centre_z: float, *, inward: bool = False, top: bool = True):
    """The faces of a box (not its bottom) in its body frame: ``(name, origin, u, v)``, normals outward.

    ``inward``: the faces look into the box (a bin's inner walls); its top is then left out.
    """
    hx, hy, hz = (float(h) for h in half)
    e = -_LIFT_M if inward else _LIFT_M
    z0 = centre_z - hz
    faces = [
        ("px", (hx + e, -hy, z0), (0, 2 * hy, 0), (0, 0, 2 * hz)),
        ("nx", (-hx - e, hy, z0), (0, -2 * hy, 0), (0, 0, 2 * hz)),
        ("py", (hx, hy + e, z0), (-2 * hx, 0, 0), (0, 0, 2 * hz)),
        ("ny", (-hx, -hy - e, z0), (2 * hx, 0, 0), (0, 0, 2 * hz)),
    ]
    if inward:  # the same rectangles seen from inside: swap the edges' order to flip the normal
        faces = [(tag, np.add(o, u), np.negative(u), v) for tag, o, u, v in faces]
    elif top:
        faces.append(("pz", (-hx, -hy, centre_z + hz + e), (2 * hx, 0, 0), (0, 2 * hy, 0)))
    return [(f"{name}_{'in_' if inward else ''}{tag}", o, u, v) for tag, o, u, v in faces]


def _object_faces(name: str, obj: ReconstructedObject):
    """The faces of ``obj`` textures go on, in its body frame; none for a cylinder or a hull."""
    half = np.asarray(obj.size, float) / 2.0
    if obj.primitive is PrimitiveKind.BOX:
        return _box_faces(name, half, 0.0)
    if obj.primitive is not PrimitiveKind.OPEN_BOX:
        return []
    t, f = obj.wall_thickness, obj.floor_thickness
    inner = np.array([half[0] - t, half[1] - t, half[2] - f / 2.0])
    floor = [
        (
            f"{name}_floor",
            (-inner[0], -inner[1], -half[2] + f + _LIFT_M),
            (2 * inner[0], 0, 0),
            (0, 2 * inner[1], 0),
        )
    ]
    return _box_faces(name, half, 0.0, top=False) + _box_faces(name, inner, f / 2.0, inward=True) + floor


def scene_patches(
    frames: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    K: np.ndarray,
    D: np.ndarray,
    T_world_camera: np.ndarray,
    image_size: tuple[int, int],
    table: TableEstimate,
    objects: dict[str, ReconstructedObject],
    backdrop_m: float,
) -> list[Patch]:
    """The textured quads of a scene: its table top, floor, backdrop and the seen faces of its objects.

    Args:
        frames: the scene's raw RGB-D frames (depth in m), from the calibrated camera.
        K: the calibrated camera matrix.
        D: its plumb_bob distortion.
        T_world_camera: its optical frame in the world.
        image_size: ``(width, height)`` of the frames.
        table: the reconstructed table (body ``table`` of the written scene).
        objects: written body name -> reconstructed object (each body sits at the object's pose).
        backdrop_m: distance of the backdrop along the optical axis (beyond the depth the world reports).
    """
    project = lambda s, texel: project_texture(s, frames, K, D, T_world_camera, texel_m=texel)  # noqa: E731
    patches: list[Patch] = []
    T_table = _pose((*table.center, table.height), table.yaw)
    hx, hy = table.size[0] / 2.0, table.size[1] / 2.0
    top = _in_world(T_table, "table_top", (-hx, -hy, _LIFT_M), (2 * hx, 0, 0), (0, 2 * hy, 0))
    patches.append(Patch(top, "table", T_table, project(top, _TABLE_TEXEL_M).rgb))
    floor = _floor_surface(K, D, T_world_camera, image_size, table)
    if floor is not None:
        patches.append(Patch(floor, None, np.eye(4), project(floor, _FLOOR_TEXEL_M).rgb))
    backdrop = _backdrop_surface(K, D, T_world_camera, image_size, backdrop_m)
    texel = backdrop_m / float(max(K[0, 0], K[1, 1]))
    backdrop_tex = project_texture(backdrop, frames, K, D, T_world_camera, texel_m=texel, depth_test=False)
    patches.append(Patch(backdrop, None, np.eye(4), backdrop_tex.rgb))
    for name, obj in objects.items():
        T_obj = _pose(obj.position, obj.yaw)
        for face, origin, u, v in _object_faces(name, obj):
            surface = _in_world(T_obj, face, origin, u, v)
            texture = project(surface, _OBJECT_TEXEL_M)
            if texture.seen_fraction >= _MIN_SEEN:
                patches.append(Patch(surface, name, T_obj, texture.rgb))
    return patches


def _view_rays(K: np.ndarray, D: np.ndarray, image_size: tuple[int, int]) -> np.ndarray:
    """Undistorted optical-frame rays (N, 3), z = 1, through the image's border pixels."""
    w, h = image_size
    xs, ys = np.linspace(0, w - 1, 33), np.linspace(0, h - 1, 25)
    border = np.concatenate(
        [np.stack([xs, np.zeros_like(xs)], 1), np.stack([xs, np.full_like(xs, h - 1)], 1)]
        + [np.stack([np.zeros_like(ys), ys], 1), np.stack([np.full_like(ys, w - 1), ys], 1)]
    )
    xy = cv2.undistortPoints(border.reshape(-1, 1, 2), K, D).reshape(-1, 2)
    return np.column_stack([xy, np.ones(len(xy))])


def _floor_surface(
    K: np.ndarray, D: np.ndarray, T_wc: np.ndarray, image_size: tuple[int, int], table: TableEstimate
) -> Surface | None:
    """The part of the floor plane in view (within the written plane), or None if the view misses it."""
    floor_z = table.floor_height if table.floor_height is not None else 0.0
    rays = _view_rays(K, D, image_size) @ T_wc[:3, :3].T
    cam = T_wc[:3, 3]
    down = rays[:, 2] < -1e-6
    hits = [cam[:2]]
    if np.any(down):
        s = (floor_z - cam[2]) / rays[down, 2]
        hits.append(cam[:2] + s[:, None] * rays[down, :2])
    xy = np.clip(np.vstack(hits), -_FLOOR_HALF_M, _FLOOR_HALF_M)
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    if np.any(hi - lo < 0.05):
        return None
    z = floor_z + _LIFT_M
    return Surface(
        "floor", np.array([lo[0], lo[1], z]), np.array([hi[0] - lo[0], 0, 0]), np.array([0, hi[1] - lo[1], 0])
    )


def _backdrop_surface(
    K: np.ndarray, D: np.ndarray, T_wc: np.ndarray, image_size: tuple[int, int], distance: float
) -> Surface:
    """A rectangle facing the camera at ``distance`` along its axis, just larger than the view there."""
    rays = _view_rays(K, D, image_size)
    lo, hi = rays[:, :2].min(axis=0) * 1.05, rays[:, :2].max(axis=0) * 1.05
    R, t = T_wc[:3, :3], T_wc[:3, 3]
    # Optical frame: x right, y down; origin at the top-left, u along x, v along y: normal u x v = +z, away
    # from the camera, so the edges go the other way round to face it.
    origin = np.array([lo[0], hi[1], 1.0]) * distance
    u = np.array([hi[0] - lo[0], 0.0, 0.0]) * distance
    v = np.array([0.0, lo[1] - hi[1], 0.0]) * distance
    return Surface("backdrop", R @ origin + t, R @ u, R @ v)


def add_patches(spec: mujoco.MjSpec, folder: Path, patches: Sequence[Patch]) -> None:
    """Write each patch's PNG under ``folder/textures`` and add its quad to ``spec`` on its body.

    The quads are meshes with their own texture coordinates (corner ``(0, 0)`` at the surface's origin),
    collision-free and massless, in :data:`APPEARANCE_GROUP`.
    """
    tex_dir = folder / TEXTURE_DIR
    tex_dir.mkdir(exist_ok=True)
    spec.texturedir = TEXTURE_DIR
    for p in patches:
        write_png(tex_dir / f"{p.name}.png", p.rgb)
        spec.add_texture(name=p.name, type=mujoco.mjtTexture.mjTEXTURE_2D, file=f"{p.name}.png")
        mat = spec.add_material(name=p.name, specular=0.0, shininess=0.0, reflectance=0.0)
        mat.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = p.name
        inv = np.linalg.inv(p.T_world_body)
        s = p.surface
        corners = np.array([s.origin, s.origin + s.u, s.origin + s.u + s.v, s.origin + s.v])
        local = corners @ inv[:3, :3].T + inv[:3, 3]
        spec.add_mesh(
            name=p.name,
            uservert=local.ravel().tolist(),
            userface=[0, 1, 2, 0, 2, 3],
            usertexcoord=[0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0],
            inertia=mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL,
        )
        body = spec.worldbody if p.body is None else spec.body(p.body)
        body.add_geom(
            name=p.name,
            type=mujoco.mjtGeom.mjGEOM_MESH,
            meshname=p.name,
            material=p.name,
            contype=0,
            conaffinity=0,
            density=0.0,
            group=APPEARANCE_GROUP,
        )


def write_png(path: Path, rgb: np.ndarray) -> None:
    """An RGB uint8 image as a PNG."""
    if not cv2.imwrite(str(path), np.ascontiguousarray(rgb[..., ::-1])):
        raise OSError(f"{path}: could not write the PNG")


def compensate_shading(
    world_dir: Path, patches: Sequence[Patch], K: np.ndarray, D: np.ndarray, T_wc: np.ndarray
) -> float:
    """Divide each written texture by the world's shading of its quad, seen from the calibrated camera.

    The world is drawn once with every quad a flat grey of albedo :data:`_GREY` (its lights, shadows and
    the arm as the world starts); a texel's shading is that render at the texel's pixel over the grey.
    Texels out of view keep their colour.

    Returns:
        The table top's median shading (the world's light level on the table, 1 = the texture as seen).
    """
    world = SimWorld(world_dir)
    model, cam = world.model, world.config.cameras[0]
    mats = [model.material(p.name).id for p in patches]
    model.mat_texid[mats, :] = -1
    model.mat_rgba[mats] = [_GREY, _GREY, _GREY, 1.0]
    mujoco.mj_forward(model, world.data)
    with CameraFrames(model, cam.mjcf_camera, cam, world.config.render_profile(cam)) as frames:
        grey = frames.render(world.data).rgb.astype(np.float32) / 255.0
    shading = np.maximum(grey / _GREY, _MIN_SHADING)
    h, w = shading.shape[:2]
    table_level = 1.0
    for p in patches:
        height, width = p.rgb.shape[:2]
        uv, z = texel_pixels(p.surface.points(width, height), K, D, T_wc)
        mx, my = uv[..., 0].astype(np.float32), uv[..., 1].astype(np.float32)
        seen = cv2.remap(shading, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        inside = (
            (z > 0) & (uv[..., 0] >= 0) & (uv[..., 0] <= w - 1) & (uv[..., 1] >= 0) & (uv[..., 1] <= h - 1)
        )
        factor = np.where(inside[..., None], np.maximum(seen, _MIN_SHADING), 1.0)
        albedo = p.rgb / factor
        # Where the world's shading is too dark for the colour seen (its shadow where the unit had none), a
        # texel saturates: scale all three channels alike so it keeps its hue.
        peak = albedo.max(axis=2, keepdims=True)
        albedo = np.where(peak > 255.0, albedo * (255.0 / np.maximum(peak, 1e-9)), albedo)
        albedo = np.clip(np.rint(albedo), 0, 255).astype(np.uint8)
        write_png(world_dir / TEXTURE_DIR / f"{p.name}.png", albedo)
        if p.surface.name == "table_top" and np.any(inside):
            table_level = float(np.median(factor[inside]))
    return table_level
