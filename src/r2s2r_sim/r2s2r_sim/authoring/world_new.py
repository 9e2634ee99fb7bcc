"""``r2s2r world new``: a world folder for the bundled table task around the user's robot file.

What the robot file does not say (arm joints, gripper, tool frame, home) is guessed from the model and can
be confirmed or overridden (:mod:`r2s2r_sim.authoring.robot_guess`).  The scene is the bundled table, cube
and bin: the arm is turned on its mount to face it, the cube region and the bin are scaled to (or moved out
to) where the arm reaches tool-down, and the camera keeps its offset from them
(:mod:`r2s2r_sim.authoring.layout`).
"""

from __future__ import annotations

import math
import re
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from r2s2r_sim.authoring.layout import BUNDLED_LAYOUT, Layout, SceneLayout, choose_layout, start_pose
from r2s2r_sim.authoring.robot_guess import TABLE_Z, GuessedRobot, NewWorldOptions, guess_robot
from r2s2r_sim.authoring.world_check import self_contacts
from r2s2r_sim.authoring.world_variations import write_variations
from r2s2r_sim.errors import WorldError
from r2s2r_sim.world.kinematics import KinematicArm, base_footprint, tool_down_reach
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import WORLD_VARIATIONS_FILE, WORLDS

# GuessedRobot, NewWorldOptions and guess_robot are re-exported: callers of write_world use them.
__all__ = ["GuessedRobot", "NewWorldOptions", "guess_robot", "world_id", "write_world"]

_BUNDLED = WORLDS["tabletop-pick-v1"]
# The bundled scene's camera and cube region centre (m): the template the scene is placed from.
_CAMERA_POS = (1.2, 0.1, 1.35)
_WORKSPACE_CENTRE = (0.45, -0.05, 0.77)


def world_id(opts: NewWorldOptions) -> str:
    """The new world's id: the user's, or one named after the robot file (``xarm7-pick-v1``)."""
    if opts.world_id is not None:
        return opts.world_id
    stem = opts.robot_file.name.split(".")[0]
    return (re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-") or "my-arm") + "-pick-v1"


def _scene(out: Path, scene: SceneLayout) -> dict[str, Any]:
    """Copy the bundled scene with cube, bin and camera moved to ``scene`` (the camera keeps its offset)."""
    tree = ET.parse(_BUNDLED / "scene.xml")
    root = tree.getroot()
    cx, cy = (float(v) for v in scene.centre)
    for body in root.iter("body"):
        if body.get("name") == "cube":
            body.set("pos", f"{cx:.4f} {cy:.4f} {_WORKSPACE_CENTRE[2]}")
        if body.get("name") == "bin":
            body.set("pos", f"{scene.bin_xy[0]:.4f} {scene.bin_xy[1]:.4f} {TABLE_Z}")
    for cam in root.iter("camera"):
        if cam.get("name") == "realsense":
            # the bundled camera's view direction and distance to its workspace: objects keep their image size
            centre = np.array([cx, cy, _WORKSPACE_CENTRE[2]])
            pos = centre + (np.array(_CAMERA_POS) - np.array(_WORKSPACE_CENTRE))
            cam.set("pos", " ".join(f"{v:.4f}" for v in pos))
    tree.write(out / "scene.xml", encoding="unicode", xml_declaration=False)
    bundled = yaml.safe_load((_BUNDLED / "world.yaml").read_text(encoding="utf-8"))
    task = dict(bundled["task"])
    task["object_pose_range"] = {
        "x": [round(v, 4) for v in scene.cube_x],
        "y": [round(v, 4) for v in scene.cube_y],
        "yaw": task["object_pose_range"]["yaw"],
    }
    return {
        "cameras": bundled["cameras"],
        "render_profiles": bundled["render_profiles"],
        "task": task,
        "physics": bundled["physics"],
    }


def _write(
    out: Path,
    opts: NewWorldOptions,
    robot: dict[str, Any],
    scene: SceneLayout,
    comment: str,
    physics: Mapping[str, Any],
) -> Path:
    rest = _scene(out, scene)
    rest["physics"] = {**rest["physics"], **physics}
    world = {"id": world_id(opts), "scene": "scene.xml", "robot": robot, **rest}
    header = (
        f"# {world_id(opts)}: the table task (pick the cube, place it in the bin) with the robot "
        f"{opts.robot}.\n# Written by `r2s2r world new`; check it with `r2s2r world check {out}`.\n{comment}"
    )
    text = header + yaml.safe_dump(world, sort_keys=False, default_flow_style=None)
    (out / "world.yaml").write_text(text, encoding="utf-8")
    return out / "world.yaml"


def _span(bounds: tuple[float, float]) -> str:
    return f"[{bounds[0]:.3f}, {bounds[1]:.3f}]"


def _arm(world: SimWorld) -> KinematicArm:
    robot = world.config.robot
    assert robot.ee_site is not None  # world new always writes a tool frame
    return KinematicArm(
        world.model, tuple(robot.prefix + j for j in robot.arm_joints), robot.prefix + robot.ee_site
    )


def _layout(guess: GuessedRobot, opts: NewWorldOptions) -> tuple[Layout, float, float]:
    """Turn and scale for the arm, from a probe world: the arm unturned on the table, the bundled scene.

    Returns:
        the layout, the arm's tool-down reach above the table (m, from its first joint's axis) and the
        horizontal radius (m) of the robot's base about its mount.
    """
    with tempfile.TemporaryDirectory(prefix="r2s2r-world-new-") as tmp:
        probe_dir = Path(tmp)
        _write(probe_dir, opts, guess.robot, BUNDLED_LAYOUT, "", guess.physics)
        try:
            world = SimWorld(probe_dir)
        except WorldError as err:
            # The probe world is this command's own scratch: name the user's robot file, not it.
            scratch = re.escape(f"{probe_dir / 'world.yaml'}: ") + r"(robot\.(mjcf|urdf): )?"
            raise WorldError(re.sub(scratch, "--robot: ", str(err))) from None
        world.reset(0)
        home = world.joint_state()[0][: len(world.arm_joint_names)].copy()
        first = world.model.joint(world.config.robot.prefix + world.config.robot.arm_joints[0]).id
        base_xy = world.data.xanchor[first][:2].copy()
        mount = np.asarray(guess.robot["attach"]["pos"][:2], dtype=np.float64)
        base = base_footprint(world.model, world.data, first, world.robot_body_ids, mount)
        reach = tool_down_reach(_arm(world), base_xy, TABLE_Z)
        return choose_layout(_arm(world), home, mount, TABLE_Z, base_xy, reach, base), reach, base


def _start_pose(out: Path, layout: Layout) -> np.ndarray | None:
    """A start pose that leaves the camera's view of the cube region and the bin clear (None: home does)."""
    world = SimWorld(out)
    world.reset(0)
    model, robot = world.model, world.config.robot
    arm_ids = [model.joint(robot.prefix + j).id for j in robot.arm_joints]
    camera = world.camera_id(world.config.cameras[0].name)
    scene = layout.scene
    # The cube region grown by a cube edge, two cubes high: an arm beside the cube merges with it in a mask.
    grow, tall = 0.04, 0.08
    xs, ys = (
        (scene.cube_x[0] - grow, scene.cube_x[1] + grow),
        (scene.cube_y[0] - grow, scene.cube_y[1] + grow),
    )
    points = [np.array([x, y, TABLE_Z + z]) for x in xs for y in ys for z in (0.0, tall)]
    # turn the arm away from the bin first: the joint direction that swings the tool to the bin's far side
    axis_z = float(world.data.xaxis[arm_ids[0]][2])
    away = -math.copysign(1.0, scene.bin_xy[1]) * math.copysign(1.0, axis_z if abs(axis_z) > 1e-6 else 1.0)
    return start_pose(model, world.data.qpos.copy(), arm_ids, camera, points, world.robot_body_ids, away)


def _touching(out: Path, prefix: str) -> list[tuple[str, str, float]]:
    """The robot's links that touch at home in the world at ``out`` (unprefixed names, depth in m)."""
    world = SimWorld(out)
    world.reset(0)
    return [(a[len(prefix) :], b[len(prefix) :], depth) for a, b, depth in self_contacts(world)]


def write_world(out: Path, opts: NewWorldOptions) -> tuple[Path, GuessedRobot]:
    """Write ``out/world.yaml``, ``out/scene.xml`` and ``out/variations.yaml``, never over a world.

    The scene is laid out for the arm by :mod:`r2s2r_sim.authoring.layout`; the variations are the
    package's axes moved to this scene (:mod:`r2s2r_sim.authoring.world_variations`), so that a sweep draws
    the cube where this arm reaches.

    Raises:
        WorldError: ``out`` holds a world already, or the robot cannot be guessed (names the flag).
    """
    if any((out / name).exists() for name in ("world.yaml", "scene.xml", WORLD_VARIATIONS_FILE)):
        raise WorldError(f"--out: {out} already holds a world; not overwriting it")
    guess = guess_robot(opts)
    layout, reach, base_radius = _layout(guess, opts)
    robot = dict(guess.robot)
    yaw = layout.yaw if abs(layout.yaw) > 1e-9 else 0.0
    half = yaw / 2
    robot["attach"] = {
        "pos": robot["attach"]["pos"],
        "quat": [round(math.cos(half), 6), 0.0, 0.0, round(math.sin(half), 6)],
    }
    notes = list(guess.notes)
    facing = f"turned {math.degrees(yaw):.0f} deg on its mount to face the scene"
    placed = (
        f"workspace moved {layout.shift:.3f} m out from the arm"
        if layout.shift
        else f"workspace scaled to {layout.scale:.2f} of the bundled one"
    )
    notes.append(f"{facing}; {placed}")
    if not layout.reached:
        notes.append(
            "the arm does not reach the whole workspace tool-down at any scale or outward move; check it"
        )
    comment = f"# Arm {facing}; {placed} (tool-down reach {reach:.3f} m from the first joint).\n"
    out.mkdir(parents=True, exist_ok=True)
    path = _write(out, opts, robot, layout.scene, comment, guess.physics)
    start = _start_pose(out, layout)
    if start is not None:
        key = robot.pop("home_keyframe", None)
        robot = {k: v for k, v in robot.items() if k != "home_qpos"}
        items = list(robot.items())
        at = [k for k, _ in items].index("prefix") + 1
        robot = dict(items[:at] + [("home_qpos", [round(float(v), 6) for v in start])] + items[at:])
        was = f"keyframe {key!r}" if key else "home"
        notes.append(f"start pose: the {was} with the first joint turned, so the camera sees the workspace")
        path = _write(out, opts, robot, layout.scene, comment, guess.physics)
    touching = _touching(out, robot.get("prefix", ""))
    if touching:
        # Links that touch where the robot stands rub whenever it moves: the world keeps them apart.
        robot["contact_exclude"] = [[a, b] for a, b, _ in touching]
        path = _write(out, opts, robot, layout.scene, comment, guess.physics)
        notes += [
            f"robot: links {a!r} and {b!r} touch at home ({1000 * depth:.1f} mm deep): kept out of contact "
            "by robot.contact_exclude in world.yaml (the robot file stays as it is)"
            for a, b, depth in touching
        ]
    mount = (float(robot["attach"]["pos"][0]), float(robot["attach"]["pos"][1]))
    write_variations(out / WORLD_VARIATIONS_FILE, layout.scene, mount, base_radius, robot["arm_joints"])
    notes.append(
        f"variations: {WORLD_VARIATIONS_FILE} with the cube drawn in x {_span(layout.scene.cube_x)}, "
        f"y {_span(layout.scene.cube_y)} m (inside the tool-down reach {reach:.3f} m) and keep-outs at this "
        "world's bin, cube and robot base"
    )
    return path, GuessedRobot(robot=robot, reach=reach, notes=tuple(notes), physics=guess.physics)
