"""Task classes beyond pick-and-place, one module each; registered in :data:`r2s2r_sim.task.TASKS`.

:class:`HoldTimer` is the settle/hold rule every task shares: a success counts once it has held, at rest,
for the world's ``task.hold_s``.
"""

from r2s2r_sim.tasks._common import HoldTimer

__all__ = ["HoldTimer"]
