"""Task classes beyond pick-and-place, one module each; registered in :data:`r2s2r_sim.tasks.registry.TASKS`.

:class:`SettleClock` is the settle/hold rule every task shares: a success counts once it has held, at
rest, for the world's ``task.settle_time`` (pick-and-place) or ``task.hold_s`` (the others).
"""

from r2s2r_sim.tasks.common import SettleClock

__all__ = ["SettleClock"]
