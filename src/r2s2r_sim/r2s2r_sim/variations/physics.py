"""Physics axis: friction, mass, joint damping and position-servo gain scales."""

from __future__ import annotations

import math
from collections.abc import Mapping

import mujoco
import numpy as np

from r2s2r_sim.variations.config import Axis, PhysicsVariationConfig, lerp, not_found

__all__ = ["PhysicsAxis"]


def _is_position_servo(act: mujoco.MjsActuator) -> bool:
    kp = float(act.gainprm[0])
    return (
        act.biastype == mujoco.mjtBias.mjBIAS_AFFINE
        and kp > 0
        and math.isclose(kp, -float(act.biasprm[1]), rel_tol=1e-9)
    )


class PhysicsAxis(Axis):
    """The physics axis.

    Parameters: ``friction_scale``, ``mass_scale``, ``damping_scale``, ``gain_scale`` (dimensionless).
    """

    name = "physics"

    def dims(self, cfg: PhysicsVariationConfig) -> tuple[str, ...]:
        """See :meth:`Axis.dims`."""
        return ("friction_scale", "mass_scale", "damping_scale", "gain_scale")

    def realise(
        self, cfg: PhysicsVariationConfig, unit: tuple[float, ...], earlier: Mapping[str, float]
    ) -> dict[str, float]:
        """See :meth:`Axis.realise`."""
        return {n: lerp(getattr(cfg, n), u) for n, u in zip(self.dims(cfg), unit, strict=True)}

    def apply(self, spec: mujoco.MjSpec, cfg: PhysicsVariationConfig, params: Mapping[str, float]) -> None:
        """See :meth:`Axis.apply`."""
        for i, name in enumerate(cfg.friction_geoms):
            geom = spec.geom(name)
            if geom is None:
                raise not_found(
                    f"physics.friction_geoms[{i}]", "geom", name, [g.name for g in spec.geoms if g.name]
                )
            geom.friction = np.array(geom.friction, dtype=np.float64) * params["friction_scale"]
        for i, name in enumerate(cfg.mass_bodies):
            body = spec.body(name)
            if body is None:
                raise not_found(
                    f"physics.mass_bodies[{i}]", "body", name, [b.name for b in spec.bodies if b.name]
                )
            for geom in body.geoms:
                if math.isnan(geom.mass):
                    geom.density = geom.density * params["mass_scale"]
                else:
                    geom.mass = geom.mass * params["mass_scale"]
        for joint in spec.joints:
            joint.damping = np.array(joint.damping, dtype=np.float64) * params["damping_scale"]
        for act in spec.actuators:
            if _is_position_servo(act):
                gain = np.array(act.gainprm, dtype=np.float64)
                bias = np.array(act.biasprm, dtype=np.float64)
                gain[0] *= params["gain_scale"]
                bias[1] = -gain[0]
                act.gainprm = gain
                act.biasprm = bias
