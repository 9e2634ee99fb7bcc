"""Tasks: what each episode starts from and when it ends and why, with a registry by task type."""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import mujoco
import numpy as np

from r2s2r_sim.errors import WorldError
from r2s2r_sim.tasks.common import SettleClock, body_speed, touching_robot
from r2s2r_sim.tasks.config import TaskConfig, TaskType

if TYPE_CHECKING:
    from r2s2r_sim.tasks.world_view import TaskWorld

__all__ = [
    "SETTLE_SAMPLE_S",
    "TASKS",
    "EpisodeJudge",
    "ObjectPose",
    "Outcome",
    "PickPlaceTask",
    "Task",
    "judge_now",
    "make_task",
    "settle_period_s",
]

SETTLE_SAMPLE_S = 0.01
"""Period (s of simulated time) at which the world shows a task its state and judges the episode.

A fixed period in simulated time, so the verdict and its time are the same however a caller chunks the
physics steps (the sim node steps one at a time, the episode runner one control period at a time).  See
:class:`EpisodeJudge`."""


@dataclass(frozen=True)
class ObjectPose:
    """Where a person (or a variation) puts the task object on the table.

    Attributes:
        x, y: position of the object's centre in the world frame (m); its height stays the resting one.
        yaw: rotation about the world z axis (rad).
    """

    x: float
    y: float
    yaw: float


@dataclass(frozen=True)
class Outcome:
    """End of an episode.

    Attributes:
        success: the task was achieved.
        reason: ``"success"``, a task's failure (``"object_dropped"``, what is missing), ``"timeout"`` or
            ``"<missing> (timeout)"``, ``"<missing> (max_steps)"`` (see :func:`judge_now`).
        metrics: named diagnostic terms (see :class:`PickPlaceTask`).
        time_s: simulated time since the reset (s) at which :class:`EpisodeJudge` reached the verdict;
            None for a verdict not taken by it (a judge's call, a lost policy).
    """

    success: bool
    reason: str
    metrics: dict[str, float] = field(default_factory=dict)
    time_s: float | None = None


def settle_period_s(config: TaskConfig) -> float:
    """How long (s) an episode runs on after the policy says it is done, before the task is judged.

    The task's own settle period: pick-and-place's ``settle_time``, every other task's ``hold_s``; a
    success must have held for it, so judging earlier could only fail a settling object.
    """
    return float(config.settle_time if config.type is TaskType.PICK_PLACE else config.hold_s)


def _timed_out(outcome: Outcome) -> bool:
    """Whether ``outcome`` is a task's timeout verdict (``timeout`` or ``<shortfall> (timeout)``)."""
    return outcome.reason == "timeout" or outcome.reason.endswith("(timeout)")


def judge_now(
    task: Task, world: TaskWorld, *, ended: str | None = None, verdict: Outcome | None = None
) -> Outcome:
    """The task's verdict on the state now, as a judge gives it when an episode ends.

    ``success``, a failure the task ends episodes on (``object_dropped``, ``support_toppled``), else what the
    task says is missing (its ``shortfall``, e.g. ``drawer_not_opened``) or ``not_achieved``.  The task's own
    timeout verdict stands only when the timeout ended the episode (``ended="timeout"``); another ending
    (``"max_steps"``) is appended to a failure as ``(max_steps)``; ``ended=None``: judged on request (the
    policy said done, or a judge was asked), nothing appended.

    Args:
        task: the world's task (its holds already timed by the world's samples).
        world: the world to judge.
        ended: what ended the episode (``"timeout"``, ``"max_steps"``) or None.
        verdict: ``task.evaluate(world)`` already taken at this instant (else it is taken here).
    """
    if verdict is None:
        verdict = task.evaluate(world)
    if verdict is not None and (verdict.success or not _timed_out(verdict) or ended == "timeout"):
        return verdict
    metrics = verdict.metrics if verdict is not None else task.metrics(world)
    shortfall = getattr(task, "shortfall", None)
    reason = "not_achieved" if shortfall is None else shortfall(world, metrics)
    return Outcome(False, reason if ended is None else f"{reason} ({ended})", metrics)


class EpisodeJudge:
    """When an episode ends and how it is judged: the one rule every cell, the sim node and the runner share.

    An episode ends in one of three ways:

    * the policy says it is done (:meth:`policy_done` at time ``t``): the episode runs on with the arm holding
      the policy's last command for the task's settle period (:func:`settle_period_s`), then the task is
      judged once (:func:`judge_now`): a success must have held through that period;
    * before any done, a success that has held without a break for the task's settle period ends the
      episode as a success at once (a policy that never says done, e.g. behaviour cloning, is not run to
      the timeout after it has succeeded; the task's success condition already is that hold);
    * otherwise the task's timeout ends it with the task's timeout verdict, or with the failure the task
      sees then (``object_dropped``: an object off the table stays there, and the timeout still ends it).

    A failure seen earlier (a drop, a toppled support) does not end the episode (the policy may still redo
    it), nor does a success that has not held for the settle period.
    The world calls :meth:`sample` every :data:`SETTLE_SAMPLE_S` of simulated time as it steps: the task
    observes the state (its hold clocks) and the verdict, once due, is kept with its time until the next
    reset.  Whoever reads :attr:`outcome` (at every physics step, or at the end of a control period) gets
    the same verdict at the same simulated time, through the ROS graph and in process alike.
    """

    def __init__(self) -> None:
        """Start with no verdict."""
        self.outcome: Outcome | None = None
        self.judge_at: float | None = None

    def clear(self) -> None:
        """Forget the verdict and the policy's done (a new episode)."""
        self.outcome = None
        self.judge_at = None

    def policy_done(self, task: Task, at: float) -> None:
        """The policy said it is done at ``at`` (s of episode time): judge one settle period later.

        Only the first done of an episode counts; a done after the verdict changes nothing.
        """
        if self.judge_at is None and self.outcome is None:
            self.judge_at = at + settle_period_s(task.config)

    def sample(self, task: Task, world: TaskWorld) -> None:
        """Show ``task`` the state at this sample instant; keep the verdict once the episode has ended.

        The task goes on being shown the state after the verdict (until the next reset), so that its holds
        stay timed for whoever asks it later (a judge's call, :func:`judge_now` at a step limit).  A task
        with an ``observe`` method keeps its clocks there and its ``evaluate`` only reads them: once the
        verdict is kept, only ``observe`` is called.
        """
        observe = getattr(task, "observe", None)
        if observe is not None:
            observe(world)  # tasks that time a settle period keep their own clock
            if self.outcome is not None:
                return
        verdict = task.evaluate(world)  # every sample, so the holds are timed as time passes
        if self.outcome is not None:
            return
        if verdict is not None and verdict.success and self.judge_at is None:
            ended: str | None = None  # held through the settle period without a done
        elif verdict is not None and (_timed_out(verdict) or world.time >= task.config.timeout):
            ended = "timeout"  # also past a failure the task keeps seeing (a dropped object stays dropped)
        elif self.judge_at is not None and world.time >= self.judge_at - 1e-9:
            ended = None
        else:
            return
        self.outcome = dataclasses.replace(
            judge_now(task, world, ended=ended, verdict=verdict), time_s=world.time
        )


class PickPlaceTask:
    """Pick the object off the table and place it at the target.

    **Task description:** grasp ``task.object_body`` (a free body on the table) and release it at
    ``task.target_site`` (e.g. the centre of a bin).

    **Randomizations:** :meth:`initialize_episode` draws the object's x, y (m) and yaw (rad) uniformly from
    ``task.object_pose_range`` (``tabletop-pick-v1``: x in [0.35, 0.55], y in [-0.15, 0.05], yaw in
    [-pi, pi]), unless the episode names a pose; the height stays the MJCF resting height.

    **Success conditions:** the object *rests at the target*: at every observation (every
    :data:`SETTLE_SAMPLE_S` of simulated time, shown by the world through :meth:`observe`) for at least
    ``settle_time`` (0.5 s by default) without a break, all of: horizontal object-to-target distance <=
    ``success_radius`` (0.06 m in ``tabletop-pick-v1``); ``|object z - target z|`` <= ``success_height``
    (0.06 m); the object released (the gripper command at least half open, where the arm has a gripper, and
    no robot geom touching the object); its linear speed <= ``settle_speed`` (0.02 m/s by default) and its
    angular speed <= ``settle_angular_speed`` (0.5 rad/s by default).  An object held at the target, or
    passing through it while falling or bouncing, is not a success.
    **Failures:** ``object_dropped`` when the object centre falls below ``table_top_z - 0.05`` m (or, without
    ``table_top_z``, 0.05 m below its MJCF resting height); ``timeout`` when ``world.time >= timeout``.
    Checked in that order: success, object_dropped, timeout.

    Metrics (all floats): ``object_to_target_m`` (horizontal distance, >= 0), ``object_height_m`` (object
    centre height above its resting height on the table), ``object_lifted`` (1.0 if more than
    ``LIFT_THRESHOLD_M`` above rest, else 0.0), ``gripper_released`` (1.0 if released as above, else 0.0),
    ``object_above_target_m`` (object z - target z), ``object_speed_m_s`` (linear speed, >= 0),
    ``object_settled_s`` (how long the object has rested at the target so far, >= 0).
    """

    LIFT_THRESHOLD_M = 0.02
    DROP_MARGIN_M = 0.05

    def __init__(self, config: TaskConfig) -> None:
        """Bind a task config (``WorldConfig.task``).

        Raises:
            WorldError: if the config is not a pick-and-place task.
        """
        if config.type is not TaskType.PICK_PLACE:
            raise WorldError(
                f"task.type: PickPlaceTask needs {TaskType.PICK_PLACE.value!r}, got {config.type}"
            )
        self.config = config
        self.settle = SettleClock()
        # The object's and the target's ids and positions in the world last seen: looked up once per
        # world, as the world samples the task every SETTLE_SAMPLE_S on the sim node's physics thread.
        self._where: _PickPoints | None = None

    def initialize_episode(
        self, world: TaskWorld, rng: np.random.Generator, object_pose: ObjectPose | None = None
    ) -> None:
        """Put the object where this episode starts: ``object_pose``, else drawn from the pose range.

        x, y and yaw are drawn in that order from ``rng``; without a range (or a free joint) the object
        stays where the model puts it.  Only ``qpos`` is written: the caller runs ``mj_forward``.
        """
        self.settle.reset()
        if object_pose is None:
            r = self.config.object_pose_range
            if r is None or not world.task_object_is_free:
                return
            object_pose = ObjectPose(rng.uniform(*r.x), rng.uniform(*r.y), rng.uniform(*r.yaw))
        world.place_task_object(object_pose.x, object_pose.y, object_pose.yaw)

    def _points(self, world: TaskWorld) -> _PickPoints:
        """The object's and the target's ids and positions in ``world`` (looked up once per world)."""
        where = self._where
        if where is None or where.data is not world.data or where.model is not world.model:
            model = world.model
            body = int(model.body(self.config.object_body).id)
            site = int(model.site(self.config.target_site).id)
            where = self._where = _PickPoints(world, body, site, self._rest_z(world))
        return where

    def _rest_z(self, world: TaskWorld) -> float:
        model = world.model
        bid = model.body(self.config.object_body).id
        jnt = int(model.body_jntadr[bid])
        if jnt >= 0:
            return float(model.qpos0[model.jnt_qposadr[jnt] + 2])
        return float(model.body_pos[bid, 2])

    def _released(self, world: TaskWorld) -> bool:
        open_fraction = world.gripper_open_fraction
        if open_fraction is not None and open_fraction < 0.5:
            return False
        return not touching_robot(world, self._points(world).body)

    def _at_rest_at_target(self, world: TaskWorld, where: _PickPoints) -> bool:
        """One sample of the success condition; the cheap geometric tests first."""
        cfg = self.config
        assert cfg.success_radius is not None and cfg.success_height is not None  # required for pick_place
        ox, oy, oz = where.obj_pos.tolist()  # Python floats: the same differences, without numpy scalars
        tx, ty, tz = where.target_pos.tolist()
        if math.hypot(ox - tx, oy - ty) > cfg.success_radius:
            return False
        if abs(oz - tz) > cfg.success_height:
            return False
        linear, angular = body_speed(world, where.body)
        if linear > cfg.settle_speed or angular > cfg.settle_angular_speed:
            return False
        return self._released(world)

    def observe(self, world: TaskWorld) -> None:
        """Take one sample of the state for the settle rule (the world calls this every SETTLE_SAMPLE_S)."""
        where = self._points(world)
        self.settle.update(where.data.time, self._at_rest_at_target(world, where))  # data: the world's

    def metrics(self, world: TaskWorld) -> dict[str, float]:
        """Named diagnostic terms for the current state (see the class docstring)."""
        cfg = self.config
        obj, _ = world.body_pose(cfg.object_body)
        target, _ = world.site_pose(cfg.target_site)
        rest_z = self._rest_z(world)
        height = float(obj[2] - rest_z)
        linear, _ = body_speed(world, cfg.object_body)
        return {
            "object_to_target_m": float(np.linalg.norm(obj[:2] - target[:2])),
            "object_height_m": height,
            "object_lifted": float(height > self.LIFT_THRESHOLD_M),
            "gripper_released": float(self._released(world)),
            "object_above_target_m": float(obj[2] - target[2]),
            "object_speed_m_s": linear,
            "object_settled_s": float(self.settle.held_s),
        }

    def evaluate(self, world: TaskWorld) -> Outcome | None:
        """Return the outcome if the episode is over, else None (reads the settle clock; changes nothing).

        The metrics are computed only for a verdict: the world calls this at every sample instant.
        """
        cfg = self.config
        if self.settle.held_for(cfg.settle_time):
            return Outcome(True, "success", self.metrics(world))
        where = self._points(world)
        floor_z = (cfg.table_top_z if cfg.table_top_z is not None else where.rest_z) - self.DROP_MARGIN_M
        if where.obj_pos.item(2) < floor_z:
            return Outcome(False, "object_dropped", self.metrics(world))
        if where.data.time >= cfg.timeout:
            return Outcome(False, "timeout", self.metrics(world))
        return None


class _PickPoints:
    """Where :class:`PickPlaceTask` reads one world: ids, the resting z and live views of the positions."""

    __slots__ = ("body", "data", "model", "obj_pos", "rest_z", "site", "target_pos")

    def __init__(self, world: TaskWorld, body: int, site: int, rest_z: float) -> None:
        self.model: mujoco.MjModel = world.model
        self.data: mujoco.MjData = world.data
        self.body, self.site, self.rest_z = body, site, rest_z
        # Views into the world's MjData: they follow every step (its arrays never move).
        self.obj_pos: np.ndarray = world.data.xpos[body]
        self.target_pos: np.ndarray = world.data.site_xpos[site]


class Task(Protocol):
    """What every task offers the world, the cells and the nodes (see :class:`PickPlaceTask`)."""

    config: TaskConfig

    def initialize_episode(
        self, world: TaskWorld, rng: np.random.Generator, object_pose: ObjectPose | None = None
    ) -> None:
        """Put the task's objects where this episode starts (``qpos`` only)."""
        ...

    def metrics(self, world: TaskWorld) -> dict[str, float]:
        """Named diagnostic terms for the current state."""
        ...

    def evaluate(self, world: TaskWorld) -> Outcome | None:
        """The outcome if the episode is over, else None; call it as time advances (holds are timed)."""
        ...


def _lazy(target: str) -> Callable[[TaskConfig], Task]:
    """A factory importing ``module:Class`` on first use (the task modules import this one)."""

    def factory(config: TaskConfig) -> Task:
        module, _, name = target.partition(":")
        cls: Callable[[TaskConfig], Task] = getattr(importlib.import_module(module), name)
        return cls(config)

    return factory


TASKS: dict[TaskType, Callable[[TaskConfig], Task]] = {
    TaskType.PICK_PLACE: PickPlaceTask,
    TaskType.PUSH: _lazy("r2s2r_sim.tasks.push:PushTask"),
    TaskType.STACK: _lazy("r2s2r_sim.tasks.stack:StackTask"),
    TaskType.DRAWER: _lazy("r2s2r_sim.tasks.drawer:DrawerTask"),
}
"""Task type -> factory; a world's ``task.type`` picks its entry."""


def make_task(config: TaskConfig) -> Task:
    """The task for a world's ``task`` config.

    Raises:
        WorldError: no task is registered for ``config.type``; the message lists the registered ones.
    """
    factory = TASKS.get(config.type)
    if factory is None:
        raise WorldError(
            f"task.type: no task registered for {config.type!r} "
            f"(registered: {sorted(t.value for t in TASKS)})"
        )
    return factory(config)
