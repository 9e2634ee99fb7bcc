"""What real2sim takes from its template world's robot: a fitted, self-contained copy, and its base's size."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from mujoco import sysid as mjsysid
from r2s2r_sim.world.kinematics import base_footprint
from r2s2r_sim.world.robot_source import load_robot_spec, set_armature
from r2s2r_sim.world.sim_world import SimWorld

from r2s2r_capture.sysid.report import DELAY_NUMERIC

__all__ = ["base_radius", "robot_with_fit", "template_robot_spec"]


def template_robot_spec(template_cfg: Any) -> Any:
    """The template world's robot (MJCF, URDF or xacro) as an ``MjSpec``, as the world drives it.

    With the world's servos (a URDF has none of its own) and joint armature; the tool frame stays in
    world.yaml.

    Raises:
        WorldError: the robot file does not load (names the file and the field).
    """
    robot = template_cfg.robot
    spec = load_robot_spec(
        robot.mjcf,
        field="robot.urdf" if robot.is_urdf else "robot.mjcf",
        xacro_args=robot.xacro_args,
        packages=robot.packages,
        servo_joints=robot.arm_joints + (robot.gripper.joints if robot.gripper else ()),
        servos=robot.servos,
    )
    set_armature(spec, robot.armature)
    return spec


def robot_with_fit(template_cfg: Any, fitted: dict[str, float], params: Any, dst: Path) -> Path:
    """Write the template robot as MJCF with the fitted values to ``dst``, with copies of its asset files.

    The robot file may sit anywhere (its own folder, a user's package, next to other robots) and be MJCF,
    URDF or xacro (:func:`template_robot_spec`): the files it references (meshes, textures, height fields,
    skins) are copied to ``dst/assets`` and the MJCF points there, so the identified world is self-contained.
    Returns the MJCF's path (``<name>.xml`` for a URDF ``<name>.urdf`` or ``<name>.urdf.xacro``).
    """
    src = template_cfg.robot.mjcf
    spec = template_robot_spec(template_cfg)
    base = Path(spec.modelfiledir or src.parent)
    dst.mkdir(parents=True)
    (dst / "assets").mkdir()
    taken: set[str] = set()
    for assets, folder in (
        (spec.meshes, spec.meshdir),
        (spec.textures, spec.texturedir),
        (spec.hfields, spec.meshdir),
        (spec.skins, spec.meshdir),
    ):
        for asset in assets:
            if not asset.file:
                continue
            path = Path(asset.file)
            if not path.is_absolute():
                path = base / folder / path
            name, k = path.name, 1
            while name in taken:
                name, k = f"{path.stem}_{k}{path.suffix}", k + 1
            taken.add(name)
            shutil.copy2(path, dst / "assets" / name)
            asset.file = name
    spec.meshdir = spec.texturedir = "assets"
    spec.modelfiledir = str(dst)  # the copies resolve from where the MJCF is written (a URDF's spec has none)
    mjsysid.apply_param_modifiers_spec(params, spec)
    if "command_delay_s" in fitted:
        spec.add_numeric(name=DELAY_NUMERIC, data=[fitted["command_delay_s"]])
    spec.compile()
    mjcf = dst / (f"{src.name.split('.')[0]}.xml" if template_cfg.robot.is_urdf else src.name)
    mjcf.write_text(spec.to_xml(), encoding="utf-8")
    return mjcf


def base_radius(template_dir: Path, most: float = 0.15) -> float:
    """Keep-out radius (m) around the robot base: its root body's horizontal reach, at most ``most``.

    Any part of the robot inside the cylinder marks its whole cluster as robot, so the base suffices; a
    wider cylinder would swallow objects placed close to a small arm.
    """
    world = SimWorld(template_dir)
    model, data = world.model, world.data
    base, _ = world.base_pose()
    first = model.joint(world.config.robot.prefix + world.arm_joint_names[0]).id
    radius = base_footprint(model, data, first, world.robot_body_ids, base)
    return min(most, radius or most)
