"""Push an object across the table into a target region (non-prehensile)."""

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
    touching_robot,
)
from r2s2r_sim.tasks.config import TaskType
from r2s2r_sim.tasks.registry import ObjectPose, Outcome

if TYPE_CHECKING:
    from r2s2r_sim.tasks.world_view import TaskWorld

__all__ = ["PushTask"]


class PushTask(HeldTask):
    """Push the object, without lifting it, until it rests inside the target region.

    **Task description:** slide ``task.object_body`` (a free body on the table) into the disc of radius
    ``success_radius`` around ``task.target_site``.  Contact friction and the object's inertia decide where
    it stops, so identification and the friction variation axis matter.

    **Randomizations:** :meth:`initialize_episode` draws x, y (m) and yaw (rad) uniformly from
    ``task.object_pose_range`` (``tabletop-push-v1``: x in [0.38, 0.5], y in [-0.2, -0.1], yaw in
    [-pi, pi]), unless the episode names a pose.

    **Success conditions:** horizontal object-to-target distance <= ``success_radius`` (0.05 m in
    ``tabletop-push-v1``) AND ``|object z - resting z|`` <= ``success_height`` (on the table, 0.02 m) AND the
    object at rest (linear and angular speed < 0.02), all held for ``hold_s`` (0.5 s).
    **Failures:** ``object_dropped`` when the object centre falls ``0.05`` m below the table top (or its
    resting height); at ``timeout``: ``object_outside_region (timeout)``, ``object_lifted (timeout)`` or
    ``not_settled (timeout)`` (in the region, not yet at rest for ``hold_s``).

    Metrics: ``object_to_target_m`` (>= 0), ``object_height_m`` (z above resting), ``object_speed_m_s``,
    ``robot_contact`` (1.0 if a robot geom touches the object), ``held_s`` (how long success has held).
    """

    TASK_TYPE = TaskType.PUSH

    def initialize_episode(
        self, world: TaskWorld, rng: np.random.Generator, object_pose: ObjectPose | None = None
    ) -> None:
        """Put the object at ``object_pose``, else at a pose drawn from ``object_pose_range``."""
        if object_pose is None:
            r = self.config.object_pose_range
            if r is None:
                return
            object_pose = ObjectPose(*sample_pose(r, rng))
        place_free_body(world, self.config.object_body, object_pose.x, object_pose.y, object_pose.yaw)

    def _in_region(self, m: dict[str, float]) -> bool:
        cfg = self.config
        assert cfg.success_radius is not None and cfg.success_height is not None
        near = m["object_to_target_m"] <= cfg.success_radius
        return near and abs(m["object_height_m"]) <= cfg.success_height

    def metrics(self, world: TaskWorld) -> dict[str, float]:
        """Named diagnostic terms for the current state (see the class docstring); updates the hold."""
        cfg = self.config
        ids = self._world_ids(world)
        body = ids.body(world, cfg.object_body)
        obj = world.data.xpos[body]
        target = world.data.site_xpos[ids.site(world, cfg.target_site)]
        lin, ang = body_speed(world, body)
        m = {
            "object_to_target_m": float(np.linalg.norm(obj[:2] - target[:2])),
            "object_height_m": float(obj[2] - ids.rest_z(world, cfg.object_body)),
            "object_speed_m_s": lin,
            "robot_contact": float(touching_robot(world, body)),
        }
        at_rest = lin < SETTLED_SPEED_M_S and ang < SETTLED_SPEED_M_S
        return self._record_hold(world, self._in_region(m) and at_rest, m)

    def shortfall(self, world: TaskWorld, m: dict[str, float] | None = None) -> str:
        """What keeps the episode from success now: ``object_outside_region``, ``object_lifted``, ...."""
        m = self.metrics(world) if m is None else m
        cfg = self.config
        assert cfg.success_radius is not None and cfg.success_height is not None
        if m["object_to_target_m"] > cfg.success_radius:
            return "object_outside_region"
        if abs(m["object_height_m"]) > cfg.success_height:
            return "object_lifted"
        return "not_settled"

    def evaluate(self, world: TaskWorld) -> Outcome | None:
        """Return the outcome if the episode is over, else None (call as time advances: holds are timed)."""
        cfg = self.config
        m = self.metrics(world)
        if self._held(m):
            return Outcome(True, "success", m)
        rest = self._world_ids(world).rest_z(world, cfg.object_body)
        floor = cfg.table_top_z if cfg.table_top_z is not None else rest
        if m["object_height_m"] + rest < floor - DROP_MARGIN_M:
            return Outcome(False, "object_dropped", m)
        return self._timeout(world, m)
