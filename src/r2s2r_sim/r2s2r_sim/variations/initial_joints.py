"""Robot initial state axis: per-joint offsets around home, applied at reset (the model is unchanged)."""

from __future__ import annotations

from collections.abc import Mapping

import mujoco

from r2s2r_sim.variations.config import Axis, RobotStateConfig, symmetric

__all__ = ["RobotStateAxis"]


class RobotStateAxis(Axis):
    """The robotstate axis.

    Parameters: ``<joint>`` offset (rad or m) for each of ``robot_state.joints``.

    Nothing in the model changes; :class:`r2s2r_sim.variations.VariedWorld` adds the offsets to home at
    reset (clipped to the joint limits) and commands the servos there.
    """

    name = "robot_state"

    def dims(self, cfg: RobotStateConfig) -> tuple[str, ...]:
        """See :meth:`Axis.dims`."""
        return cfg.joints

    def realise(
        self, cfg: RobotStateConfig, unit: tuple[float, ...], earlier: Mapping[str, float]
    ) -> dict[str, float]:
        """See :meth:`Axis.realise`."""
        offsets = cfg.offset if len(cfg.offset) == len(cfg.joints) else cfg.offset * len(cfg.joints)
        return {j: symmetric(o, u) for j, o, u in zip(cfg.joints, offsets, unit, strict=True)}

    def apply(self, spec: mujoco.MjSpec, cfg: RobotStateConfig, params: Mapping[str, float]) -> None:
        """See :meth:`Axis.apply`."""
        return None
