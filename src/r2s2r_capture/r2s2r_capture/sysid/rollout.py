"""A joint recording mapped onto a MuJoCo model: the rollout the fit and the effort correction share.

:class:`RecordingProblem` turns a recording into the toolbox's control matrix, initial states and
delayed-command rollout; :func:`simulate_recording` drives a model with the same delayed, interpolated
commands and records what an arm would (the stand-in for a real capture, and the effort correction's
model side).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mujoco
import numpy as np
from mujoco import sysid

from r2s2r_capture.errors import IdentificationError
from r2s2r_capture.sysid.effort_fit import effort_signals
from r2s2r_capture.sysid.recording import JointRecording, joint_id

__all__ = ["RecordingProblem", "simulate_recording"]


def _actuator_for_joint(model: mujoco.MjModel, jid: int) -> int:
    for a in range(model.nu):
        if (
            int(model.actuator_trntype[a]) == int(mujoco.mjtTrn.mjTRN_JOINT)
            and model.actuator_trnid[a, 0] == jid
        ):
            return a
    raise IdentificationError(f"joint {model.joint(jid).name!r} has no actuator; cannot identify its servo")


def _default_state(model: mujoco.MjModel) -> mujoco.MjData:
    data = mujoco.MjData(model)
    if model.nkey > 0:
        mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_forward(model, data)
    return data


class RecordingProblem:
    """Maps a recording onto a model: control matrix, initial states and a delayed-command rollout."""

    def __init__(self, model: mujoco.MjModel, rec: JointRecording, *, efforts: bool = False) -> None:
        self.model = model
        self.rec = rec
        # Efforts in the residual: their columns come first, where the toolbox finds the sensors.
        self.efforts = efforts and rec.effort is not None
        n = len(rec.joint_names)
        self.q_columns = slice(n, 2 * n) if self.efforts else slice(0, n)
        self.jids = [joint_id(model, n) for n in rec.joint_names]
        self.aids = [_actuator_for_joint(model, j) for j in self.jids]
        base = _default_state(model)
        self.base_qpos = base.qpos.copy()
        # Actuators not in the recording hold their keyframe (or zero) command.
        self.ctrl = np.tile(base.ctrl, (rec.t.size, 1))
        self.ctrl[:, self.aids] = rec.q_cmd
        self.delay_param: str | None = None

    def initial_state(self, i: int) -> np.ndarray:
        """The toolbox's full physics state at sample ``i``: recorded joints, the rest at the keyframe."""
        qpos = self.base_qpos.copy()
        qvel = np.zeros(self.model.nv)
        for k, j in enumerate(self.jids):
            qpos[self.model.jnt_qposadr[j]] = self.rec.q[i, k]
            qvel[self.model.jnt_dofadr[j]] = self.rec.qd[i, k]
        state = sysid.create_initial_state(self.model, qpos, qvel)
        state[0] = self.rec.t[i]  # mjSTATE_FULLPHYSICS starts with time
        return state

    def sequence(self, name: str, spec: mujoco.MjSpec, start: int, stop: int) -> sysid.ModelSequences:
        """Samples ``start:stop`` as one toolbox sequence: measured signals, controls, initial state."""
        rec = self.rec
        names: list[tuple[str, sysid.SignalType]] = [
            (n, sysid.SignalType.MjStateQPos) for n in rec.joint_names
        ]
        names += [(n, sysid.SignalType.MjStateQVel) for n in rec.joint_names]
        columns = [rec.q[start:stop], rec.qd[start:stop]]
        if self.efforts:
            assert rec.effort is not None
            names = effort_signals(rec.joint_names) + names
            columns.insert(0, rec.effort[start:stop])
        sensors = sysid.TimeSeries.from_names(rec.t[start:stop], np.hstack(columns), self.model, names)
        control = sysid.TimeSeries.from_control_names(rec.t[start:stop], self.ctrl[start:stop], self.model)
        return sysid.ModelSequences(
            name, spec, name, self.initial_state(start), control, sensors, allow_missing_sensors=True
        )

    def delayed_rollout(self, **kw: Any) -> Any:
        """Toolbox ``custom_rollout``: commands delayed by the candidate delay, linearly interpolated."""
        controls = []
        for ctrl_ts, params in zip(kw["control_signal"], kw["param_dicts"], strict=True):
            delay = float(params[self.delay_param].value[0]) if self.delay_param else 0.0
            times = np.asarray(ctrl_ts.times) - delay
            data = np.column_stack(
                [np.interp(times, self.rec.t, self.ctrl[:, a]) for a in range(self.model.nu)]
            )
            controls.append(sysid.TimeSeries(ctrl_ts.times, data, ctrl_ts.signal_mapping))
        return sysid.sysid_rollout(
            models=kw["models"],
            datas=kw["datas"],
            control_signal=controls,
            initial_states=kw["initial_states"],
            rollout_signal_mapping=kw["rollout_signal_mapping"],
            rollout_state_mapping=kw["rollout_state_mapping"],
            ctrl_mapping=kw["ctrl_mapping"],
        )


def simulate_recording(
    model: mujoco.MjModel,
    t: np.ndarray,
    q_cmd: np.ndarray,
    joint_names: Sequence[str],
    *,
    delay_s: float = 0.0,
    q0: np.ndarray | None = None,
) -> JointRecording:
    """Simulate what an arm driven by ``q_cmd`` would record (the stand-in for a real capture), efforts too.

    The servo sees the commands delayed by ``delay_s`` and linearly interpolated at each physics step;
    joint states are sampled at ``t``, which must be multiples of the model timestep.

    Raises:
        IdentificationError: ``t`` not on the physics time grid, or unknown joints.
    """
    t = np.asarray(t, dtype=np.float64) - float(t[0])
    dt = float(model.opt.timestep)
    steps = np.rint(t / dt).astype(int)
    if np.any(np.abs(steps * dt - t) > 1e-9) or np.any(np.diff(steps) <= 0):
        raise IdentificationError(f"sample times must be increasing multiples of the timestep {dt} s")
    rec0 = JointRecording(t, q_cmd, q_cmd, np.zeros_like(q_cmd), tuple(joint_names))
    problem = RecordingProblem(model, rec0)
    data = mujoco.MjData(model)
    data.qpos[:] = problem.base_qpos
    for k, j in enumerate(problem.jids):
        data.qpos[model.jnt_qposadr[j]] = q_cmd[0, k] if q0 is None else q0[k]
    mujoco.mj_forward(model, data)
    q = np.empty_like(rec0.q_cmd)
    qd = np.empty_like(rec0.q_cmd)
    effort = np.empty_like(rec0.q_cmd)
    qadr = [model.jnt_qposadr[j] for j in problem.jids]
    vadr = [model.jnt_dofadr[j] for j in problem.jids]
    step = 0
    for i, target in enumerate(steps):
        while step < target:
            ts = step * dt - delay_s
            data.ctrl[:] = [np.interp(ts, t, problem.ctrl[:, a]) for a in range(model.nu)]
            mujoco.mj_step(model, data)
            step += 1
        q[i], qd[i], effort[i] = data.qpos[qadr], data.qvel[vadr], data.qfrc_actuator[vadr]
    return JointRecording(t, rec0.q_cmd, q, qd, tuple(joint_names), effort)
