"""How a hardware profile edits a world's servos, of any transmission.

Geoms are named as :mod:`r2s2r_sim.world.geom_keys` says (``body:<body>/<index>`` for unnamed ones).

**Servos.**  A profile's servo is any actuator whose force is affine in the control, the transmission's
length ``q`` and its velocity: ``force = kp (s ctrl - q) - kv qdot`` (MuJoCo ``<position>``: ``s = 1``;
``<general biastype="affine">`` with any transmission, e.g. a tendon-driven gripper whose control is in
0..255).  The profile sets ``kp`` and ``kv`` in the transmission's units (a joint: N m/rad; a tendon:
N per tendon unit); ``s``, the mapping of the driver's command units to setpoints, stays the world's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

__all__ = [
    "ServoForm",
    "model_servo",
    "set_servo_gains",
    "spec_servo_scale",
]


@dataclass(frozen=True, kw_only=True)
class ServoForm:
    """A servo's gains in a compiled model: ``kp``, ``kv`` and the command-to-setpoint scale ``s``."""

    kp: float
    kv: float
    scale: float


def _affine(gaintype: int, biastype: int, gain: np.ndarray, bias: np.ndarray) -> bool:
    return (
        gaintype == mujoco.mjtGain.mjGAIN_FIXED
        and biastype == mujoco.mjtBias.mjBIAS_AFFINE
        and float(gain[0]) > 0
        and float(bias[0]) == 0.0
        and float(bias[1]) < 0
    )


def model_servo(model: mujoco.MjModel, actuator_id: int) -> ServoForm | None:
    """The servo form of a compiled actuator, or None when its force is not ``kp (s ctrl - q) - kv qdot``."""
    gain, bias = model.actuator_gainprm[actuator_id], model.actuator_biasprm[actuator_id]
    if not _affine(
        int(model.actuator_gaintype[actuator_id]), int(model.actuator_biastype[actuator_id]), gain, bias
    ):
        return None
    kp = -float(bias[1])
    return ServoForm(kp=kp, kv=-float(bias[2]), scale=float(gain[0]) / kp)


def spec_servo_scale(act: mujoco.MjsActuator) -> float | None:
    """``s`` of a spec actuator in servo form (1 for a ``<position>``), or None for another actuator."""
    gain = np.asarray(act.gainprm, dtype=np.float64)
    bias = np.asarray(act.biasprm, dtype=np.float64)
    if not _affine(int(act.gaintype), int(act.biastype), gain, bias):
        return None
    kp = -float(bias[1])
    return 1.0 if math.isclose(float(gain[0]), kp, rel_tol=1e-9) else float(gain[0]) / kp


def set_servo_gains(act: mujoco.MjsActuator, kp: float, kv: float) -> bool:
    """Give a spec actuator in servo form the gains ``kp``, ``kv`` (its ``s`` kept); False if not one.

    An explicit ``kv`` replaces a ``dampratio`` the robot file may give.
    """
    scale = spec_servo_scale(act)
    if scale is None:
        return False
    gain = np.array(act.gainprm, dtype=np.float64)
    bias = np.array(act.biasprm, dtype=np.float64)
    gain[0] = kp if scale == 1.0 else kp * scale
    bias[1], bias[2] = -kp, -kv
    act.gainprm, act.biasprm = gain, bias
    return True
