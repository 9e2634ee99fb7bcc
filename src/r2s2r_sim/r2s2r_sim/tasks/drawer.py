"""Open a drawer: an articulated object whose one joint must be held past a threshold."""

from __future__ import annotations

from typing import TYPE_CHECKING

import mujoco
import numpy as np

from r2s2r_sim.errors import WorldError
from r2s2r_sim.tasks.base import HeldTask
from r2s2r_sim.tasks.common import touching_robot
from r2s2r_sim.tasks.config import TaskType
from r2s2r_sim.tasks.registry import ObjectPose, Outcome

if TYPE_CHECKING:
    from r2s2r_sim.tasks.world_view import TaskWorld

__all__ = ["DrawerTask"]

# The joint is at rest below this speed (m/s for a slide joint, rad/s for a hinge).
SETTLED_JOINT_SPEED = 0.01


class DrawerTask(HeldTask):
    """Pull the drawer open past ``open_threshold`` and leave it there.

    **Task description:** ``task.object_body`` is the moving part of an articulated object with exactly one
    slide or hinge joint (the drawer and its slide); ``task.target_site`` marks its handle.  The joint's
    axis, limits, damping and friction come from the MJCF, so reconstruction and identification matter.

    **Randomizations:** :meth:`initialize_episode` draws the joint's start position uniformly from
    ``task.joint_start_range`` (``tabletop-drawer-v1``: [0, 0.03] m); without one it starts at the MJCF's
    ``qpos0``.  Where the cabinet stands is a variation (its ``objects`` axis cannot move a fixed body).

    **Success conditions:** joint position >= ``open_threshold`` (0.12 m in ``tabletop-drawer-v1``) AND the
    joint at rest (speed < 0.01) AND no robot geom touching the drawer, all held for ``hold_s`` (0.5 s): the
    drawer stays open on its own.
    **Failures:** at ``timeout`` only: ``drawer_not_opened`` (below the threshold), ``drawer_held``
    (open but still touched by the robot) or ``not_settled``, each followed by ``(timeout)``.

    Metrics: ``joint_position`` (m or rad), ``open_fraction`` (joint position / ``open_threshold``),
    ``joint_speed``, ``robot_contact`` (1.0 if a robot geom touches the drawer), ``held_s``.
    """

    TASK_TYPE = TaskType.DRAWER
    # (model, qpos address, dof address) of the drawer's joint, once found (set per instance).
    _joint_found: tuple[mujoco.MjModel, int, int] | None = None

    def _joint(self, world: TaskWorld) -> tuple[int, int]:
        """``qpos`` and ``dof`` addresses of the drawer's one joint (looked up once per model).

        Raises:
            WorldError: the body has no joint, several, or one that is neither slide nor hinge.
        """
        found = self._joint_found
        if found is not None and found[0] is world.model:
            return found[1], found[2]
        qadr, dadr = self._find_joint(world)
        self._joint_found = (world.model, qadr, dadr)
        return qadr, dadr

    def _find_joint(self, world: TaskWorld) -> tuple[int, int]:
        model = world.model
        body = self.config.object_body
        bid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
        if bid < 0:
            raise WorldError(f"world {world.world_id!r}: task.object_body: no body {body!r}")
        jnt = int(model.body_jntadr[bid])
        kinds = (int(mujoco.mjtJoint.mjJNT_SLIDE), int(mujoco.mjtJoint.mjJNT_HINGE))
        if int(model.body_jntnum[bid]) != 1 or int(model.jnt_type[jnt]) not in kinds:
            raise WorldError(
                f"world {world.world_id!r}: task.object_body: body {body!r} needs exactly one slide or "
                f"hinge joint (has {int(model.body_jntnum[bid])})"
            )
        return int(model.jnt_qposadr[jnt]), int(model.jnt_dofadr[jnt])

    def initialize_episode(
        self, world: TaskWorld, rng: np.random.Generator, object_pose: ObjectPose | None = None
    ) -> None:
        """Set the joint's start position from ``joint_start_range`` (``object_pose`` does not apply)."""
        qadr, _ = self._joint(world)
        r = self.config.joint_start_range
        if r is not None:
            world.data.qpos[qadr] = rng.uniform(*r)

    def metrics(self, world: TaskWorld) -> dict[str, float]:
        """Named diagnostic terms for the current state (see the class docstring); updates the hold."""
        cfg = self.config
        assert cfg.open_threshold is not None
        qadr, dadr = self._joint(world)
        q = float(world.data.qpos[qadr])
        speed = abs(float(world.data.qvel[dadr]))
        contact = touching_robot(world, self._world_ids(world).body(world, cfg.object_body))
        m = {
            "joint_position": q,
            "open_fraction": q / cfg.open_threshold if cfg.open_threshold else 0.0,
            "joint_speed": speed,
            "robot_contact": float(contact),
        }
        return self._record_hold(
            world, q >= cfg.open_threshold and speed < SETTLED_JOINT_SPEED and not contact, m
        )

    def shortfall(self, world: TaskWorld, m: dict[str, float] | None = None) -> str:
        """What keeps the episode from success now: ``drawer_not_opened``, ``drawer_held`` or ..."""
        m = self.metrics(world) if m is None else m
        assert self.config.open_threshold is not None
        if m["joint_position"] < self.config.open_threshold:
            return "drawer_not_opened"
        if m["robot_contact"] > 0.5:
            return "drawer_held"
        return "not_settled"

    def evaluate(self, world: TaskWorld) -> Outcome | None:
        """Return the outcome if the episode is over, else None (call as time advances: holds are timed)."""
        m = self.metrics(world)
        if self._held(m):
            return Outcome(True, "success", m)
        return self._timeout(world, m)
