"""How a hardware profile names and edits a world's elements: geoms by body, servos of any transmission.

**Geoms without names.**  Robot files often leave collision geoms (finger pads among them) unnamed.  A
profile addresses such a geom by its body: ``body:<body>/<index>``, the ``index``-th geom (from 0) of that
body in the order of the robot file, counting every geom of the body, visual ones included.  A named geom
may be given either way.  Robot names are unprefixed, as in ``world.yaml``.

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
    "GEOM_BY_BODY",
    "ServoForm",
    "find_geom",
    "geom_address",
    "model_servo",
    "set_servo_gains",
    "spec_servo_scale",
]

GEOM_BY_BODY = "body:"


def _strip(name: str, prefix: str) -> str:
    return name[len(prefix) :] if prefix and name.startswith(prefix) else name


def geom_address(model: mujoco.MjModel, geom_id: int, prefix: str = "") -> str:
    """The profile key of geom ``geom_id``: its unprefixed name, or ``body:<body>/<index>`` without one."""
    name = model.geom(geom_id).name
    if name:
        return _strip(name, prefix)
    body = int(model.geom_bodyid[geom_id])
    index = geom_id - int(model.body_geomadr[body])
    return f"{GEOM_BY_BODY}{_strip(model.body(body).name, prefix)}/{index}"


def find_geom(spec: mujoco.MjSpec, key: str, prefix: str = "") -> mujoco.MjsGeom | None:
    """The geom of ``spec`` a profile key names (see the module docstring), or None."""
    if not key.startswith(GEOM_BY_BODY):
        return spec.geom(key) or (spec.geom(prefix + key) if prefix else None)
    body_name, sep, index = key[len(GEOM_BY_BODY) :].rpartition("/")
    if not sep or not index.isdigit():
        return None
    body = spec.body(body_name) or (spec.body(prefix + body_name) if prefix else None)
    if body is None:
        return None
    geoms = body.geoms
    i = int(index)
    return geoms[i] if i < len(geoms) else None


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
