"""What the task modules share: the settle clock and named reads of free bodies and contacts."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from r2s2r_sim.errors import WorldError
from r2s2r_sim.tasks.config import ObjectPoseRange, TaskConfig, TaskType

if TYPE_CHECKING:
    from r2s2r_sim.world.sim_world import SimWorld

__all__ = [
    "DROP_MARGIN_M",
    "SETTLED_SPEED_M_S",
    "SettleClock",
    "body_speed",
    "check_type",
    "free_qpos_address",
    "place_free_body",
    "rest_z",
    "sample_pose",
    "tilt",
    "touching_robot",
]

# Below the table top by more than this (m), an object has fallen off the table.
DROP_MARGIN_M = 0.05
# An object moving slower than this (m/s, and rad/s for its rotation) is at rest.
SETTLED_SPEED_M_S = 0.02


class SettleClock:
    """How long a condition has held without a break, from samples taken at increasing times.

    Every task with a "comes to rest at the goal" rule keeps one: feed it ``(time, holds)`` at each
    observation; :attr:`held_s` is the time since the first sample of the current unbroken run of ``holds``
    (0 while it does not hold).  A sample earlier than the last one (a new episode) starts over.
    """

    def __init__(self) -> None:
        """Start with nothing held."""
        self._since: float | None = None
        self._last = -math.inf
        self.held_s = 0.0

    @property
    def holding(self) -> bool:
        """The condition held at the last sample."""
        return self._since is not None

    def held_for(self, period_s: float) -> bool:
        """The condition has held, unbroken, for at least ``period_s`` (s) of samples."""
        # The tolerance absorbs the float sum of the physics time at the sample instants.
        return self.holding and self.held_s >= period_s - 1e-9

    def reset(self) -> None:
        """Forget the current run (a new episode)."""
        self._since, self._last, self.held_s = None, -math.inf, 0.0

    def update(self, now: float, holds: bool) -> float:
        """Record one sample at ``now`` (s) and return :attr:`held_s`."""
        if now < self._last:
            self.reset()
        self._last = now
        if not holds:
            self._since, self.held_s = None, 0.0
        else:
            if self._since is None:
                self._since = now
            self.held_s = now - self._since
        return self.held_s


def check_type(config: TaskConfig, expected: TaskType, cls: str) -> None:
    """Refuse a config of another task type.

    Raises:
        WorldError: naming the class, the expected and the given type.
    """
    if config.type is not expected:
        raise WorldError(f"task.type: {cls} needs {expected.value!r}, got {config.type.value!r}")


def free_qpos_address(world: SimWorld, body: str) -> int:
    """``qpos`` address of ``body``'s free joint.

    Raises:
        WorldError: no such body, or it has no free joint.
    """
    model = world.model
    bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
    if bid < 0:
        raise WorldError(f"world {world.world_id!r}: no body {body!r}")
    jnt = int(model.body_jntadr[bid])
    if jnt < 0 or int(model.jnt_type[jnt]) != int(mujoco.mjtJoint.mjJNT_FREE):
        raise WorldError(f"world {world.world_id!r}: body {body!r} has no free joint")
    return int(model.jnt_qposadr[jnt])


def sample_pose(r: ObjectPoseRange, rng: np.random.Generator) -> tuple[float, float, float]:
    """x, y (m) and yaw (rad) drawn uniformly in that order."""
    return float(rng.uniform(*r.x)), float(rng.uniform(*r.y)), float(rng.uniform(*r.yaw))


def place_free_body(world: SimWorld, body: str, x: float, y: float, yaw: float) -> None:
    """Put a free body at ``x, y`` (m) and ``yaw`` (rad) at its current height; writes ``qpos`` only."""
    adr = free_qpos_address(world, body)
    world.data.qpos[adr : adr + 2] = (x, y)
    world.data.qpos[adr + 3 : adr + 7] = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))


def rest_z(world: SimWorld, body: str) -> float:
    """Height (m) of ``body`` in the model's initial state (its resting height on the table)."""
    model = world.model
    bid = model.body(body).id
    jnt = int(model.body_jntadr[bid])
    if jnt >= 0 and int(model.jnt_type[jnt]) == int(mujoco.mjtJoint.mjJNT_FREE):
        return float(model.qpos0[model.jnt_qposadr[jnt] + 2])
    return float(model.body_pos[bid, 2])


def body_speed(world: SimWorld, body: str | int) -> tuple[float, float]:
    """Linear (m/s) and angular (rad/s) speed of ``body``'s frame (name or id) in the world."""
    bid = body if isinstance(body, int) else world.model.body(body).id
    vel = np.zeros(6)
    mujoco.mj_objectVelocity(world.model, world.data, mujoco.mjtObj.mjOBJ_BODY, bid, vel, 0)
    return float(np.linalg.norm(vel[3:])), float(np.linalg.norm(vel[:3]))


def tilt(world: SimWorld, body: str) -> float:
    """Angle (rad) between ``body``'s z axis and the world's."""
    zz = float(world.data.xmat[world.model.body(body).id][8])
    return math.acos(min(1.0, max(-1.0, zz)))


def touching_robot(world: SimWorld, body: str) -> bool:
    """Whether any robot geom touches ``body`` now."""
    model, data = world.model, world.data
    obj = model.body(body).id
    robot = world.robot_body_ids
    for i in range(data.ncon):
        b1 = int(model.geom_bodyid[data.contact.geom1[i]])
        b2 = int(model.geom_bodyid[data.contact.geom2[i]])
        if (b1 == obj and b2 in robot) or (b2 == obj and b1 in robot):
            return True
    return False
