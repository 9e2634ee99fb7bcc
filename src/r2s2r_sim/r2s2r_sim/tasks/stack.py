"""Stack one block on another."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from r2s2r_sim.tasks.base import HeldTask
from r2s2r_sim.tasks.common import (
    DROP_MARGIN_M,
    SETTLED_SPEED_M_S,
    body_speed,
    place_free_body,
    sample_pose,
    tilt,
    touching_robot,
)
from r2s2r_sim.tasks.config import TaskConfig, TaskType
from r2s2r_sim.tasks.registry import ObjectPose, Outcome

if TYPE_CHECKING:
    from r2s2r_sim.tasks.world_view import TaskWorld

__all__ = ["StackTask"]

# Tilt (rad) past which the support block counts as knocked over (a cube on its side is at pi/2).
TOPPLE_TILT_RAD = 0.5


class StackTask(HeldTask):
    """Put the object block on top of the support block and let go; it must stay there.

    **Task description:** pick ``task.object_body`` and release it on ``task.support_body``, so that its
    centre rests at ``task.target_site`` (a site of the support block at its top face plus the object's
    half height: it moves with the support block).

    **Randomizations:** :meth:`initialize_episode` draws the object's x, y (m), yaw (rad) from
    ``task.object_pose_range``, then the support block's from ``task.support_pose_range``
    (``tabletop-stack-v1``: object x in [0.36, 0.5], y in [-0.2, -0.08]; support x in [0.4, 0.52],
    y in [0.06, 0.18]; yaws in [-pi, pi] and [-pi/4, pi/4]).  An episode's ``object_pose`` replaces the
    object's draw.

    **Success conditions:** horizontal object-to-target distance <= ``success_radius`` (0.015 m) AND
    ``|object z - target z|`` <= ``success_height`` (0.01 m) AND no robot geom touches the object AND both
    blocks at rest (speeds < 0.02) AND the support upright, all held for ``hold_s`` (0.5 s).
    **Failures:** ``object_dropped`` (object centre 0.05 m below the table top), ``support_toppled``
    (support tilted more than 0.5 rad or fallen off the table); at ``timeout``: ``object_not_on_support``,
    ``object_held`` (still touched by the robot) or ``not_settled``, each followed by ``(timeout)``.

    Metrics: ``object_to_target_m``, ``object_above_target_m`` (object z - target z), ``support_tilt_rad``,
    ``support_moved_m`` (horizontal drift of the support since the episode's first evaluation, m),
    ``object_speed_m_s``, ``gripper_released`` (1.0 if no robot geom touches the object), ``held_s``.
    """

    TASK_TYPE = TaskType.STACK

    def __init__(self, config: TaskConfig) -> None:
        """Bind a task config (see :class:`HeldTask`)."""
        super().__init__(config)
        self._support_start: np.ndarray | None = None  # first seen this episode
        self._last_time = 0.0

    def initialize_episode(
        self, world: TaskWorld, rng: np.random.Generator, object_pose: ObjectPose | None = None
    ) -> None:
        """Place the object (``object_pose`` or drawn), then the support block (drawn)."""
        cfg = self.config
        assert cfg.support_body is not None
        r = cfg.object_pose_range
        drawn = None if r is None else ObjectPose(*sample_pose(r, rng))
        pose = object_pose if object_pose is not None else drawn
        if pose is not None:
            place_free_body(world, cfg.object_body, pose.x, pose.y, pose.yaw)
        if cfg.support_pose_range is not None:
            place_free_body(world, cfg.support_body, *sample_pose(cfg.support_pose_range, rng))

    def _support_xy(self, world: TaskWorld) -> np.ndarray:
        """The support block's x, y (m): a view into the world's state (copy it to keep it)."""
        assert self.config.support_body is not None
        return world.data.xpos[self._world_ids(world).body(world, self.config.support_body), :2]

    def _stacked(self, m: dict[str, float]) -> bool:
        cfg = self.config
        assert cfg.success_radius is not None and cfg.success_height is not None
        return (
            m["object_to_target_m"] <= cfg.success_radius
            and abs(m["object_above_target_m"]) <= cfg.success_height
        )

    def metrics(self, world: TaskWorld) -> dict[str, float]:
        """Named diagnostic terms for the current state (see the class docstring); updates the hold."""
        cfg = self.config
        assert cfg.support_body is not None
        ids = self._world_ids(world)
        body, support_body = ids.body(world, cfg.object_body), ids.body(world, cfg.support_body)
        obj = world.data.xpos[body]
        target = world.data.site_xpos[ids.site(world, cfg.target_site)]
        lin, ang = body_speed(world, body)
        s_lin, s_ang = body_speed(world, support_body)
        support = self._support_xy(world)
        if self._support_start is None or world.time < self._last_time:  # a new episode
            self._support_start = support.copy()
        self._last_time = world.time
        released = not touching_robot(world, body)
        m = {
            "object_to_target_m": float(np.linalg.norm(obj[:2] - target[:2])),
            "object_above_target_m": float(obj[2] - target[2]),
            "support_tilt_rad": tilt(world, support_body),
            "support_moved_m": float(np.linalg.norm(support - self._support_start)),
            "object_speed_m_s": lin,
            "gripper_released": float(released),
        }
        at_rest = max(lin, ang, s_lin, s_ang) < SETTLED_SPEED_M_S
        upright = m["support_tilt_rad"] < TOPPLE_TILT_RAD
        return self._record_hold(world, self._stacked(m) and released and at_rest and upright, m)

    def shortfall(self, world: TaskWorld, m: dict[str, float] | None = None) -> str:
        """What keeps the episode from success now: ``object_not_on_support``, ``object_held`` or ..."""
        m = self.metrics(world) if m is None else m
        if m["support_tilt_rad"] >= TOPPLE_TILT_RAD:
            return "support_toppled"
        if not self._stacked(m):
            return "object_not_on_support"
        if m["gripper_released"] < 0.5:
            return "object_held"
        return "not_settled"

    def evaluate(self, world: TaskWorld) -> Outcome | None:
        """Return the outcome if the episode is over, else None (call as time advances: holds are timed)."""
        cfg = self.config
        assert cfg.support_body is not None
        m = self.metrics(world)
        if self._held(m):
            return Outcome(True, "success", m)
        table = cfg.table_top_z
        ids = self._world_ids(world)
        obj = world.data.xpos[ids.body(world, cfg.object_body)]
        sup = world.data.xpos[ids.body(world, cfg.support_body)]
        obj_floor = (table if table is not None else ids.rest_z(world, cfg.object_body)) - DROP_MARGIN_M
        sup_floor = (table if table is not None else ids.rest_z(world, cfg.support_body)) - DROP_MARGIN_M
        if obj[2] < obj_floor:
            return Outcome(False, "object_dropped", m)
        if m["support_tilt_rad"] >= TOPPLE_TILT_RAD or sup[2] < sup_floor:
            return Outcome(False, "support_toppled", m)
        return self._timeout(world, m)
