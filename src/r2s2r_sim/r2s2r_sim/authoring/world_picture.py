"""The picture ``r2s2r world check --picture`` writes: the robot at home, its tool frame, the task's object.

The view is framed on the tool frame, the task object and its target together, so a scene placed out of
the arm's way is seen to be; the object and target are marked (they may be small or hidden by the arm),
and a legend names every mark's colour.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import cv2
import mujoco
import numpy as np

from r2s2r_sim.world.sim_world import SimWorld

__all__ = ["AXIS_COLOURS", "OBJECT_COLOUR", "TARGET_COLOUR", "Picture", "draw_tool_frame"]

AXIS_LENGTH = 0.08  # m
AXIS_COLOURS = ((1.0, 0.1, 0.1, 1.0), (0.1, 0.9, 0.1, 1.0), (0.1, 0.3, 1.0, 1.0))  # x, y, z: RGBA
OBJECT_COLOUR = (1.0, 0.85, 0.0, 1.0)  # the arrow pointing down at the task object
TARGET_COLOUR = (1.0, 0.2, 1.0, 0.6)  # the translucent sphere at the task's target site
_MARK_DROP = 0.12  # m: the object's arrow starts this far above it
_MIN_DISTANCE = 0.6  # m: the camera's distance when everything is close to the tool
_FIT = 3.0  # camera distance / radius of what must be in view (45 deg vertical field of view, with a margin)
_LEGEND_ORIGIN = (8, 8)  # px, top-left corner of the legend box
_LEGEND_ROW = 18  # px
_SWATCH = 12  # px


@dataclass
class Picture:
    """What was drawn, for a reader of the picture and for its tests.

    ``legend``: each row's label, its swatch's RGB (0-255) and the swatch's centre pixel. ``marks``: where
    each marked point landed, ``(column, row)`` px (``None``: behind the camera).
    """

    legend: list[tuple[str, tuple[int, int, int], tuple[int, int]]] = field(default_factory=list)
    marks: dict[str, tuple[int, int] | None] = field(default_factory=dict)


def _rgb255(rgba: tuple[float, ...]) -> tuple[int, int, int]:
    return int(round(255 * rgba[0])), int(round(255 * rgba[1])), int(round(255 * rgba[2]))


def _add_geom(
    scene: mujoco.MjvScene,
    kind: mujoco.mjtGeom,
    rgba: tuple[float, ...],
    start: np.ndarray,
    end: np.ndarray,
    width: float,
) -> None:
    """Append an arrow (``start`` to ``end``) or a sphere (at ``start``, radius ``width``) to the scene."""
    if scene.ngeom >= scene.maxgeom:
        return
    geom = scene.geoms[scene.ngeom]
    mujoco.mjv_initGeom(geom, kind, np.full(3, width), start, np.eye(3).ravel(), np.asarray(rgba, np.float32))
    if kind == mujoco.mjtGeom.mjGEOM_ARROW:
        mujoco.mjv_connector(geom, kind, width, start, end)
    scene.ngeom += 1


def _project(
    scene: mujoco.MjvScene, fovy_deg: float, point: np.ndarray, width: int, height: int
) -> tuple[int, int] | None:
    """Pixel ``(column, row)`` of a world point through the scene's pinhole camera; ``None`` if behind it."""
    # A mono render looks from between the two eyes' cameras (MuJoCo's mjv_averageCamera).
    eyes = scene.camera[0], scene.camera[1]
    pos = (np.asarray(eyes[0].pos) + np.asarray(eyes[1].pos)) / 2
    forward, up = np.asarray(eyes[0].forward), np.asarray(eyes[0].up)
    right = np.cross(forward, up)
    rel = point - pos
    depth = float(rel @ forward)
    if depth <= 0:
        return None
    focal = height / 2 / np.tan(np.radians(fovy_deg) / 2)  # px; a free camera's fovy is vertical
    return int(round(width / 2 + focal * float(rel @ right) / depth)), int(
        round(height / 2 - focal * float(rel @ up) / depth)
    )


def _legend(image: np.ndarray, rows: list[tuple[str, tuple[float, ...]]]) -> list:
    """Draw the legend box on ``image`` (RGB, in place); return its rows with their swatch centres."""
    x0, y0 = _LEGEND_ORIGIN
    font, scale = cv2.FONT_HERSHEY_SIMPLEX, 0.45
    wide = max(cv2.getTextSize(label, font, scale, 1)[0][0] for label, _ in rows)
    box_w, box_h = _SWATCH + wide + 20, _LEGEND_ROW * len(rows) + 8
    cv2.rectangle(image, (x0, y0), (x0 + box_w, y0 + box_h), (30, 30, 30), thickness=-1)
    out = []
    for i, (label, rgba) in enumerate(rows):
        top = y0 + 6 + i * _LEGEND_ROW
        colour = _rgb255(rgba)
        cv2.rectangle(image, (x0 + 6, top), (x0 + 6 + _SWATCH, top + _SWATCH), colour, thickness=-1)
        cv2.putText(
            image, label, (x0 + _SWATCH + 12, top + _SWATCH - 1), font, scale, (255, 255, 255), 1, cv2.LINE_AA
        )
        out.append((label, colour, (x0 + 6 + _SWATCH // 2, top + _SWATCH // 2)))
    return out


def draw_tool_frame(world: object, path: Path, *, size: tuple[int, int] = (640, 480)) -> Picture:
    """Render the robot at home, its tool frame's axes, the task object and target, and a legend, to a PNG.

    Raises:
        OSError: the PNG cannot be written.
    """
    assert isinstance(world, SimWorld)
    model, data = world.model, world.data
    pos, quat = world.ee_pose()
    rot = np.empty(9)
    mujoco.mju_quat2Mat(rot, quat)
    rot = rot.reshape(3, 3)
    task = world.config.task
    points = {"tool frame": pos}
    if task is not None:
        points["task object"] = world.body_pose(task.object_body)[0]
        points["target"] = world.site_pose(task.target_site)[0]
    stack = np.array(list(points.values()))
    centre = (stack.min(axis=0) + stack.max(axis=0)) / 2
    radius = float(np.linalg.norm(stack - centre, axis=1).max()) + 0.1
    width = min(size[0], int(model.vis.global_.offwidth))
    height = min(size[1], int(model.vis.global_.offheight))
    camera = mujoco.MjvCamera()
    camera.type = mujoco.mjtCamera.mjCAMERA_FREE
    camera.lookat[:] = centre
    camera.distance = max(_MIN_DISTANCE, _FIT * radius)
    camera.azimuth = 135.0
    camera.elevation = -25.0
    rows: list[tuple[str, tuple[float, ...]]] = [
        ("tool frame x", AXIS_COLOURS[0]),
        ("tool frame y (finger axis)", AXIS_COLOURS[1]),
        ("tool frame z (approach)", AXIS_COLOURS[2]),
    ]
    picture = Picture()
    with mujoco.Renderer(model, height=height, width=width) as renderer:
        renderer.update_scene(data, camera=camera)
        scene = renderer.scene
        for axis in range(3):
            _add_geom(
                scene,
                mujoco.mjtGeom.mjGEOM_ARROW,
                AXIS_COLOURS[axis],
                pos,
                pos + AXIS_LENGTH * rot[:, axis],
                0.006,
            )
        if task is not None:
            obj, target = points["task object"], points["target"]
            top = obj + np.array([0.0, 0.0, _MARK_DROP])
            _add_geom(scene, mujoco.mjtGeom.mjGEOM_ARROW, OBJECT_COLOUR, top, obj + [0.0, 0.0, 0.03], 0.008)
            _add_geom(scene, mujoco.mjtGeom.mjGEOM_SPHERE, TARGET_COLOUR, target, target, 0.015)
            rows += [
                (f"task object {task.object_body!r}", OBJECT_COLOUR),
                (f"target {task.target_site!r}", TARGET_COLOUR),
            ]
        fovy = float(model.vis.global_.fovy)
        picture.marks = {name: _project(scene, fovy, point, width, height) for name, point in points.items()}
        image = np.ascontiguousarray(renderer.render())
    picture.legend = _legend(image, rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not cv2.imwrite(str(path), cv2.cvtColor(image, cv2.COLOR_RGB2BGR)):
        raise OSError(f"could not write {path}")
    return picture
