"""What the task modules share: the settle clock and named reads of free bodies and contacts."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from r2s2r_sim.errors import WorldError
from r2s2r_sim.tasks.config import ObjectPoseRange, TaskConfig, TaskType

if TYPE_CHECKING:
    from r2s2r_sim.tasks.world_view import TaskWorld

__all__ = [
    "DROP_MARGIN_M",
    "SETTLED_SPEED_M_S",
    "SettleClock",
    "WorldIds",
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
        return self._since is not None and self.held_s >= period_s - 1e-9  # holding, without the call

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


class WorldIds:
    """The ids and resting heights a task reads in one world, each looked up once.

    A task reads them at every judge sample (every ``SETTLE_SAMPLE_S`` of simulated time), so it keeps one
    of these per world (:meth:`of`) instead of looking names up each time.  Ids are found as
    :meth:`TaskWorld.body_pose` and :meth:`TaskWorld.site_pose` find them; resting heights are :func:`rest_z`.
    It holds the world's model and data (not the world, which holds the task).
    """

    __slots__ = ("_bodies", "_rest", "_sites", "data", "model")

    def __init__(self, world: TaskWorld) -> None:
        """Start empty for ``world`` (its model and data as they are now)."""
        self.model: mujoco.MjModel = world.model
        self.data: mujoco.MjData = world.data
        self._bodies: dict[str, int] = {}
        self._sites: dict[str, int] = {}
        self._rest: dict[str, float] = {}

    @staticmethod
    def of(cached: WorldIds | None, world: TaskWorld) -> WorldIds:
        """``cached`` when it was made for ``world`` (its model and data), else a new one for it."""
        if cached is None or cached.model is not world.model or cached.data is not world.data:
            return WorldIds(world)
        return cached

    def body(self, world: TaskWorld, name: str) -> int:
        """Id of body ``name`` (raises :class:`WorldError` as :meth:`TaskWorld.body_pose` does)."""
        bid = self._bodies.get(name)
        if bid is None:
            bid = self._bodies[name] = world.body_id(name)
        return bid

    def site(self, world: TaskWorld, name: str) -> int:
        """Id of site ``name`` (raises :class:`WorldError` as :meth:`TaskWorld.site_pose` does)."""
        sid = self._sites.get(name)
        if sid is None:
            sid = self._sites[name] = world.site_id(name)
        return sid

    def rest_z(self, world: TaskWorld, name: str) -> float:
        """:func:`rest_z` of body ``name`` (it depends on the model only)."""
        z = self._rest.get(name)
        if z is None:
            z = self._rest[name] = rest_z(world, name)
        return z


def check_type(config: TaskConfig, expected: TaskType, cls: str) -> None:
    """Refuse a config of another task type.

    Raises:
        WorldError: naming the class, the expected and the given type.
    """
    if config.type is not expected:
        raise WorldError(f"task.type: {cls} needs {expected.value!r}, got {config.type.value!r}")


def free_qpos_address(world: TaskWorld, body: str) -> int:
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


def place_free_body(world: TaskWorld, body: str, x: float, y: float, yaw: float) -> None:
    """Put a free body at ``x, y`` (m) and ``yaw`` (rad) at its current height; writes ``qpos`` only."""
    adr = free_qpos_address(world, body)
    world.data.qpos[adr : adr + 2] = (x, y)
    world.data.qpos[adr + 3 : adr + 7] = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))


def rest_z(world: TaskWorld, body: str) -> float:
    """Height (m) of ``body`` in the model's initial state (its resting height on the table)."""
    model = world.model
    bid = model.body(body).id
    jnt = int(model.body_jntadr[bid])
    if jnt >= 0 and int(model.jnt_type[jnt]) == int(mujoco.mjtJoint.mjJNT_FREE):
        return float(model.qpos0[model.jnt_qposadr[jnt] + 2])
    return float(model.body_pos[bid, 2])


def body_speed(world: TaskWorld, body: str | int) -> tuple[float, float]:
    """Linear (m/s) and angular (rad/s) speed of ``body``'s frame (name or id) in the world."""
    bid = body if isinstance(body, int) else world.model.body(body).id
    vel = np.zeros(6)
    mujoco.mj_objectVelocity(world.model, world.data, mujoco.mjtObj.mjOBJ_BODY, bid, vel, 0)
    return float(np.linalg.norm(vel[3:])), float(np.linalg.norm(vel[:3]))


def tilt(world: TaskWorld, body: str | int) -> float:
    """Angle (rad) between ``body``'s (name or id) z axis and the world's."""
    bid = body if isinstance(body, int) else world.model.body(body).id
    zz = float(world.data.xmat[bid, 8])
    return math.acos(min(1.0, max(-1.0, zz)))


def touching_robot(world: TaskWorld, body: str | int) -> bool:
    """Whether any robot geom touches ``body`` (name or id) now."""
    model, data = world.model, world.data
    obj = body if isinstance(body, int) else model.body(body).id
    if data.ncon == 0:
        return False
    # All contacts at once: the bodies of both geoms of each, against the world's robot bodies.
    contact = data.contact
    b1 = model.geom_bodyid[contact.geom1]
    b2 = model.geom_bodyid[contact.geom2]
    robot = world.robot_body_mask
    return bool((((b1 == obj) & robot[b2]) | ((b2 == obj) & robot[b1])).any())
