"""The arm's scene model of a world for scripted policies, on the kinematic copy ``r2s2r world new`` uses."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import mujoco
import numpy as np
from r2s2r_sim.tasks.config import TaskConfig
from r2s2r_sim.world.config import WorldConfig
from r2s2r_sim.world.kinematics import KinematicArm
from r2s2r_sim.world.sim_world import SimWorld

from r2s2r_eval.policy import PolicyError

__all__ = ["ArmScene", "arm_scene", "body_geom", "half_height"]


@dataclass(frozen=True)
class ArmScene:
    """Static knowledge of a world from its MJCF: the arm's kinematics and the compiled model.

    Attributes:
        arm: kinematic copy of the arm (own ``MjData``).
        model: the compiled world model (read-only use: sizes, colours, sites at ``qpos0``).
        base_pose: 4x4 pose of the robot base in the model's world frame.
        data: an ``MjData`` of ``model`` at ``qpos0`` after ``mj_kinematics`` (sites, bodies at rest).
        robot_bodies: ids of the robot's bodies (what the camera may see of the arm itself).
        joint_names: the robot's joint names as the driver publishes them (unprefixed).
        prefix: the robot's name prefix in the compiled model.
        config: the world's configuration (``world.yaml``).
        task: its task (an arm scene needs one).
    """

    arm: KinematicArm
    model: mujoco.MjModel
    base_pose: np.ndarray
    data: mujoco.MjData
    robot_bodies: frozenset[int]
    joint_names: tuple[str, ...]
    prefix: str
    config: WorldConfig
    task: TaskConfig

    def site(self, name: str) -> np.ndarray:
        """World position (m) of a site at ``qpos0``."""
        return np.asarray(self.data.site_xpos[self.model.site(name).id].copy())


@lru_cache(maxsize=8)
def arm_scene(world_dir: Path, policy: str = "scripted") -> ArmScene:
    """Compile ``world_dir`` once and keep its model (never the simulator's state).

    Each policy keeps its own copy (``policy`` names it in errors too): a :class:`KinematicArm` has a
    private ``MjData``.

    Raises:
        PolicyError: the world has no task or no ``robot.ee_site``.
    """
    world = SimWorld(world_dir)
    cfg = world.config
    if cfg.task is None or cfg.robot.ee_site is None:
        raise PolicyError(f"{policy} policy: world {cfg.id!r} ({world_dir}) needs a task and robot.ee_site")
    model = world.model
    prefix = cfg.robot.prefix
    arm = KinematicArm(model, tuple(prefix + n for n in cfg.robot.arm_joints), prefix + cfg.robot.ee_site)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    # The robot's root body is the top ancestor of the tool below the world body.
    body = int(model.site_bodyid[arm.site])
    while int(model.body_parentid[body]) != 0:
        body = int(model.body_parentid[body])
    base = np.eye(4)
    base[:3, :3] = data.xmat[body].reshape(3, 3)
    base[:3, 3] = data.xpos[body]
    return ArmScene(
        arm=arm,
        model=model,
        base_pose=base,
        data=data,
        robot_bodies=frozenset(world.robot_body_ids),
        joint_names=tuple(world.joint_names),
        prefix=prefix,
        config=cfg,
        task=cfg.task,
    )


def body_geom(model: mujoco.MjModel, body: str, policy: str) -> int:
    """The first geom of ``body``: what a scripted policy reads an object's colour and size from.

    Raises:
        PolicyError: the body has no geom (named with ``policy``).
    """
    bid = model.body(body).id
    geoms = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) == bid]
    if not geoms:
        raise PolicyError(f"{policy} policy: body {body!r} has no geom")
    return geoms[0]


def half_height(model: mujoco.MjModel, geom: int) -> float:
    """Half the vertical extent (m) of an upright geom, whatever its shape.

    A real2sim world fits boxes, cylinders or hulls to what it saw.
    """
    size, kind = model.geom_size[geom], int(model.geom_type[geom])
    if kind == int(mujoco.mjtGeom.mjGEOM_CYLINDER):
        return float(size[1])
    if kind == int(mujoco.mjtGeom.mjGEOM_CAPSULE):
        return float(size[0] + size[1])
    if kind == int(mujoco.mjtGeom.mjGEOM_SPHERE):
        return float(size[0])
    if kind == int(mujoco.mjtGeom.mjGEOM_MESH):
        return float(model.geom_aabb[geom][5])
    return float(size[2])
