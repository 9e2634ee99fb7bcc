"""The arm of a world as a scripted policy models it, and a speed-limited Cartesian set-point follower."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import mujoco
import numpy as np

from r2s2r_eval.policies.reference.kinematics import KinematicArm, tool_down_rotation
from r2s2r_eval.policy import PolicyError

__all__ = ["ArmScene", "CartesianMover", "arm_scene", "tool_yaw"]

# Cartesian, tool-yaw and joint speed limits at speed = 1 (as the reference policy's).
LINEAR_SPEED = 0.15  # m/s
YAW_SPEED = 1.0  # rad/s
JOINT_SPEED = 1.5  # rad/s


@dataclass(frozen=True)
class ArmScene:
    """Static knowledge of a world from its MJCF: the arm's kinematics and the compiled model.

    Attributes:
        arm: kinematic copy of the arm (own ``MjData``).
        model: the compiled world model (read-only use: sizes, colours, sites at ``qpos0``).
        base_pose: 4x4 pose of the robot base in the model's world frame.
        data: an ``MjData`` of ``model`` at ``qpos0`` after ``mj_kinematics`` (sites, bodies at rest).
    """

    arm: KinematicArm
    model: mujoco.MjModel
    base_pose: np.ndarray
    data: mujoco.MjData

    def site(self, name: str) -> np.ndarray:
        """World position (m) of a site at ``qpos0``."""
        return np.asarray(self.data.site_xpos[self.model.site(name).id].copy())


@lru_cache(maxsize=8)
def arm_scene(world_dir: Path) -> ArmScene:
    """Compile ``world_dir`` once and keep its model (never the simulator's state).

    Raises:
        PolicyError: the world has no task or no ``robot.ee_site``.
    """
    from r2s2r_sim.world import SimWorld

    world = SimWorld(world_dir)
    cfg = world.config
    if cfg.task is None or cfg.robot.ee_site is None:
        raise PolicyError(f"scripted policy: world {cfg.id!r} ({world_dir}) needs a task and robot.ee_site")
    model = world.model
    prefix = cfg.robot.prefix
    arm = KinematicArm(model, tuple(prefix + n for n in cfg.robot.arm_joints), prefix + cfg.robot.ee_site)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    body = int(model.site_bodyid[arm.site])
    while int(model.body_parentid[body]) != 0:
        body = int(model.body_parentid[body])
    base = np.eye(4)
    base[:3, :3] = data.xmat[body].reshape(3, 3)
    base[:3, 3] = data.xpos[body]
    return ArmScene(arm=arm, model=model, base_pose=base, data=data)


def tool_yaw(rot: np.ndarray) -> float:
    """Yaw of the tool's finger (y) axis about world z."""
    return math.atan2(rot[1, 1], rot[0, 1])


class CartesianMover:
    """Moves a tool-down set-point toward goals at bounded Cartesian, yaw and joint speeds, through IK."""

    def __init__(self, arm: KinematicArm, q_meas: np.ndarray, speed: float = 1.0) -> None:
        """Start at the measured joint positions ``q_meas`` (command order); ``speed`` scales every limit."""
        self.arm = arm
        self.speed = speed
        self.q_cmd = np.asarray(q_meas, dtype=np.float64).copy()
        pos, rot = arm.fk(self.q_cmd)
        self.pos = pos
        self.yaw = tool_yaw(rot)

    def step(self, goal: np.ndarray, yaw: float, dt: float, *, linear_speed: float = LINEAR_SPEED) -> bool:
        """Move the set-point one control period ``dt`` (s) toward ``goal`` (m) and ``yaw`` (rad).

        Returns:
            Whether the set-point is at the goal (position and yaw).
        """
        delta = np.asarray(goal, dtype=np.float64) - self.pos
        dist = float(np.linalg.norm(delta))
        max_step = linear_speed * self.speed * dt
        self.pos = goal.copy() if dist <= max_step else self.pos + delta * (max_step / dist)
        dyaw = yaw - self.yaw
        max_yaw = YAW_SPEED * self.speed * dt
        self.yaw += float(np.clip(dyaw, -max_yaw, max_yaw))
        q_des, _ = self.arm.ik(self.pos, tool_down_rotation(self.yaw), self.q_cmd)
        max_dq = JOINT_SPEED * self.speed * dt
        self.q_cmd = self.q_cmd + np.clip(q_des - self.q_cmd, -max_dq, max_dq)
        return dist <= max_step and abs(dyaw) <= max_yaw

    def tool(self, q_meas: np.ndarray) -> np.ndarray:
        """Measured tool position (m) for joint positions ``q_meas``."""
        pos, _ = self.arm.fk(q_meas)
        return np.asarray(pos)
