"""The drivers' reported efforts as a residual term of the identification, beside positions and velocities.

Positions alone barely see a joint's armature or its friction loss where the servo is stiff: the servo
hides them in a fraction of a milliradian of tracking error.  The effort the servo spends is where they
show (``(M + armature) qdd + friction``), and a rollout of the candidate world predicts it through the
same integrator, so the fit needs no model of how MuJoCo integrates (its implicit damping adds
``dt (kv + damping)`` to a joint's apparent inertia, several times a small joint's armature).

What the rollout cannot reproduce is when each command took effect: a driver holds a command until its
next tick, while the rollout interpolates the delayed commands.  One step of difference puts
``kp * dq`` spikes into the effort (newton metres on a stiff servo), so both the measured and the
predicted efforts are smoothed (a quarter second by default, under the period of the excitation's
fastest sine, 0.6 s) and compared there (``docs/concepts/variations.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mujoco
import numpy as np
from mujoco import sysid
from scipy.ndimage import uniform_filter1d

__all__ = ["EFFORT_SENSOR", "effort_residual", "effort_signals", "with_effort_sensors"]

EFFORT_SENSOR = "r2s2r_effort/{}"


def with_effort_sensors(spec: mujoco.MjSpec, joints: Sequence[str]) -> mujoco.MjSpec:
    """A copy of ``spec`` whose only sensors are the actuator force on each of ``joints``, in that order.

    The toolbox finds a sensor's measured column at the sensor's address in the model, so the model's
    own sensors (a wrist force-torque sensor, say) are left out of the copy used for identification.
    """
    out = spec.copy()
    for sensor in list(out.sensors):
        out.delete(sensor)
    for joint in joints:
        out.add_sensor(
            name=EFFORT_SENSOR.format(joint),
            type=mujoco.mjtSensor.mjSENS_JOINTACTFRC,
            objtype=mujoco.mjtObj.mjOBJ_JOINT,
            objname=joint,
        )
    return out


def effort_signals(joints: Sequence[str]) -> list[tuple[str, sysid.SignalType]]:
    """The measured signals of the efforts, first in the recording's columns (where the sensors are)."""
    return [(EFFORT_SENSOR.format(j), sysid.SignalType.MjSensor) for j in joints]


def effort_residual(n_effort: int, window: int, sensor_weights: Any) -> Any:
    """The toolbox's ``modify_residual``: its default residual, efforts smoothed first.

    The first ``n_effort`` columns (the efforts) of both sides go through a ``window``-sample moving
    average before the weighted difference.
    """

    def modify_residual(
        params: Any, pred: Any, measured: Any, model: mujoco.MjModel, return_pred_all: bool, state: Any
    ) -> tuple[np.ndarray, Any, Any]:
        qpos, qvel, act, _ = sysid.TimeSeries.compute_all_state_mappings(model)
        state_ts = sysid.TimeSeries(times=state[:, 0], data=state[:, 1:], signal_mapping=qpos | qvel | act)
        measured, pred = sysid.construct_ts_from_defaults(state_ts, pred, measured, ())
        measured = sysid.apply_delayed_ts_window(measured, pred, 0.0, 0.0)
        pred = pred.resample(measured.times)
        m, p = measured.data.copy(), pred.data.copy()
        if window > 1:
            m[:, :n_effort] = uniform_filter1d(m[:, :n_effort], window, axis=0, mode="nearest")
            p[:, :n_effort] = uniform_filter1d(p[:, :n_effort], window, axis=0, mode="nearest")
        # A rollout's first efforts are its start-up, not the arm's: the sensor reads 0 before the first
        # step and the servo's force builds over a few more.  The first window is left out.
        p[:window, :n_effort] = m[:window, :n_effort]
        res = sysid.weighted_diff(
            predicted_data=p, measured_data=m, model=model, sensor_weights=sensor_weights
        )
        return sysid.normalize_residual(res, m), pred, measured

    return modify_residual
