"""Object configuration axis: the task object's start pose (x, y, yaw) on the table."""

from __future__ import annotations

import math
from collections.abc import Mapping

import mujoco

from r2s2r_sim.variations.config import Axis, ObjectsConfig, lerp, not_found

__all__ = ["ObjectsAxis"]


class ObjectsAxis(Axis):
    """The objects axis.

    Parameters: ``x``, ``y`` (m, world frame) and ``yaw`` (rad) of ``objects.body``.

    The body's default pose in the model is set to it (its height stays the MJCF one), and a world built
    with :func:`r2s2r_sim.variations.make_world` resets the object there.
    """

    name = "objects"

    def dims(self, cfg: ObjectsConfig) -> tuple[str, ...]:
        """See :meth:`Axis.dims`."""
        return ("x", "y", "yaw")

    def realise(
        self, cfg: ObjectsConfig, unit: tuple[float, ...], earlier: Mapping[str, float]
    ) -> dict[str, float]:
        """See :meth:`Axis.realise`."""
        return {"x": lerp(cfg.x, unit[0]), "y": lerp(cfg.y, unit[1]), "yaw": lerp(cfg.yaw, unit[2])}

    def apply(self, spec: mujoco.MjSpec, cfg: ObjectsConfig, params: Mapping[str, float]) -> None:
        """See :meth:`Axis.apply`."""
        body = spec.body(cfg.body)
        if body is None:
            raise not_found("objects.body", "body", cfg.body, [b.name for b in spec.bodies if b.name])
        pos = list(body.pos)
        body.pos = [params["x"], params["y"], pos[2]]
        half = params["yaw"] / 2.0
        body.quat = [math.cos(half), 0.0, 0.0, math.sin(half)]
        body.alt.type = mujoco.mjtOrientation.mjORIENTATION_QUAT
