"""The base of the task classes whose success must hold: the type check, the timed hold and the timeout."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from r2s2r_sim.tasks.common import SettleClock, WorldIds, check_type
from r2s2r_sim.tasks.config import TaskConfig, TaskType
from r2s2r_sim.tasks.registry import Outcome

if TYPE_CHECKING:
    from r2s2r_sim.tasks.world_view import TaskWorld

__all__ = ["HeldTask"]


class HeldTask:
    """A task that succeeds once its success condition has held for ``task.hold_s``.

    A subclass sets ``TASK_TYPE``, computes its condition in ``metrics`` and records it with
    :meth:`_record_hold`; ``evaluate`` asks :meth:`_held` first and ends with :meth:`_timeout`.
    """

    TASK_TYPE: ClassVar[TaskType]

    def __init__(self, config: TaskConfig) -> None:
        """Bind a task config (``WorldConfig.task``).

        Raises:
            WorldError: the config is of another task type (the message names the class and both types).
        """
        check_type(config, self.TASK_TYPE, type(self).__name__)
        self.config = config
        self._hold = SettleClock()
        self._holds = False  # whether the success condition held at the last metrics()
        self._ids: WorldIds | None = None

    def _world_ids(self, world: TaskWorld) -> WorldIds:
        """The ids and resting heights this task reads in ``world``, looked up once per world."""
        ids = self._ids = WorldIds.of(self._ids, world)
        return ids

    def _record_hold(self, world: TaskWorld, holds: bool, m: dict[str, float]) -> dict[str, float]:
        """Feed the condition at ``world.time`` to the hold clock; adds ``held_s`` to ``m`` and returns it."""
        self._holds = holds
        m["held_s"] = self._hold.update(world.time, holds)
        return m

    def _held(self, m: dict[str, float]) -> bool:
        """The condition holds now and has held for ``hold_s``."""
        return self._holds and m["held_s"] >= self.config.hold_s

    def shortfall(self, world: TaskWorld, m: dict[str, float] | None = None) -> str:
        """What keeps the episode from success now (each task names its own reasons)."""
        raise NotImplementedError

    def _timeout(self, world: TaskWorld, m: dict[str, float]) -> Outcome | None:
        """``<shortfall> (timeout)`` once ``world.time`` reaches ``timeout``, else None."""
        if world.time >= self.config.timeout:
            return Outcome(False, f"{self.shortfall(world, m)} (timeout)", m)
        return None
