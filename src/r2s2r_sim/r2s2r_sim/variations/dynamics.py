"""Dynamics axis: arm parameters drawn around an identification (absolute values, one dimension each).

Where the physics axis scales a world's values by one factor, this axis sets each identified parameter
(``<joint>/<kind>`` or the command delay) to a value of its own range; the ranges are what
``r2s2r real2sim`` could not pin down.  It is applied after the physics axis, so it wins on the joints and
servos it names.
"""

from __future__ import annotations

from collections.abc import Mapping

import mujoco
import numpy as np

from r2s2r_sim.variations.config import COMMAND_DELAY, Axis, DynamicsVariationConfig, lerp, not_found
from r2s2r_sim.world.compose import COMMAND_DELAY_NUMERIC

__all__ = ["DynamicsAxis"]


def _servo(spec: mujoco.MjSpec, joint: str, field: str) -> mujoco.MjsActuator:
    for act in spec.actuators:
        if act.trntype == mujoco.mjtTrn.mjTRN_JOINT and act.target == joint:
            return act
    raise not_found(field, "actuator driving joint", joint, [a.target for a in spec.actuators])


def _set(spec: mujoco.MjSpec, name: str, value: float, field: str) -> None:
    if name == COMMAND_DELAY:
        for numeric in spec.numerics:
            if numeric.name.endswith(COMMAND_DELAY_NUMERIC):
                numeric.data = [value]
                return
        spec.add_numeric(name=COMMAND_DELAY_NUMERIC, data=[value])
        return
    joint_name, _, kind = name.rpartition("/")
    joint = spec.joint(joint_name)
    if joint is None:
        raise not_found(field, "joint", joint_name, [j.name for j in spec.joints if j.name])
    if kind in ("kp", "kv"):
        act = _servo(spec, joint_name, field)
        gain = np.array(act.gainprm, dtype=np.float64)
        bias = np.array(act.biasprm, dtype=np.float64)
        if kind == "kp":
            gain[0], bias[1] = value, -value
        else:
            bias[2] = -value
        act.gainprm, act.biasprm = gain, bias
    elif kind == "damping":
        coef = np.array(joint.damping, dtype=np.float64).ravel()  # polynomial; the linear term
        coef[0] = value
        joint.damping = coef
    else:
        setattr(joint, kind, value)


class DynamicsAxis(Axis):
    """The dynamics axis.

    Parameters: one per entry of ``parameters``, named as the entry (``<joint>/<kind>``,
    ``command_delay_s``), in SI units.
    """

    name = "dynamics"

    def dims(self, cfg: DynamicsVariationConfig) -> tuple[str, ...]:
        """See :meth:`Axis.dims`."""
        return tuple(p.name for p in cfg.parameters)

    def realise(
        self, cfg: DynamicsVariationConfig, unit: tuple[float, ...], earlier: Mapping[str, float]
    ) -> dict[str, float]:
        """See :meth:`Axis.realise`."""
        return {p.name: lerp(p.range, u) for p, u in zip(cfg.parameters, unit, strict=True)}

    def apply(self, spec: mujoco.MjSpec, cfg: DynamicsVariationConfig, params: Mapping[str, float]) -> None:
        """See :meth:`Axis.apply`."""
        for i, p in enumerate(cfg.parameters):
            _set(spec, p.name, params[p.name], f"dynamics.parameters[{i}].name")
