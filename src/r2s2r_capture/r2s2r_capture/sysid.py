"""Arm dynamics identification with ``mujoco.sysid``: excitation, fitting, fitted MJCF and HTML report."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import math
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import yaml
from mujoco import sysid
from r2s2r_sim.world import COMMAND_DELAY_NUMERIC

from r2s2r_capture.errors import IdentificationError

__all__ = [
    "ExcitationConfig",
    "IdentificationResult",
    "JointRecording",
    "SysidConfig",
    "excitation_trajectory",
    "identify",
    "simulate_recording",
    "write_identification",
]

# Name of the MJCF <custom><numeric> that carries the identified command delay (s); SimWorld applies it.
DELAY_NUMERIC = COMMAND_DELAY_NUMERIC
# Largest recording we accept (samples): guards memory when reading untrusted .npz files.
MAX_SAMPLES = 2_000_000
PARAM_KINDS = ("damping", "armature", "frictionloss", "kp")
# Opt-in kinds (not fitted by default): ``kv``, the position servo's derivative gain.  Joint damping and
# servo kv act alike on position tracking (both are -c qdot), so fit one of the two, not both.
EXTRA_KINDS = ("kv",)


@dataclasses.dataclass(frozen=True)
class JointRecording:
    """Recorded arm motion: time stamps (N,) s, commanded and measured positions (N, J) rad, velocities rad/s.

    Times are shifted to start at 0; columns follow ``joint_names`` (MJCF joint names).  ``effort`` (N, J),
    N·m or N, is the drivers' reported actuator effort (``/joint_states`` effort) when they report it.
    With it :func:`identify` corrects the position fit (:func:`effort_correction`): it is not a residual
    term, because single-step command-timing jitter puts ``kp * dq`` spikes into it (2.5 N·m RMS on a
    5.5 N·m signal for shoulder_lift on the emulator, 0.03 after a 30 ms moving average).
    """

    t: np.ndarray
    q_cmd: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    joint_names: tuple[str, ...]
    effort: np.ndarray | None = None

    def __post_init__(self) -> None:
        """Check shapes, finiteness and monotonic time (errors name the array)."""
        t = np.asarray(self.t, dtype=np.float64)
        if t.ndim != 1 or t.size < 10:
            raise IdentificationError(f"recording t must be 1-D with >= 10 samples: got shape {t.shape}")
        if t.size > MAX_SAMPLES:
            raise IdentificationError(f"recording has {t.size} samples; the limit is {MAX_SAMPLES}")
        if not np.all(np.diff(t) > 0):
            raise IdentificationError("recording t must be strictly increasing")
        n_j = len(self.joint_names)
        if n_j == 0 or len(set(self.joint_names)) != n_j:
            raise IdentificationError(
                f"recording joint_names must be non-empty and unique: {self.joint_names}"
            )
        arrays = {}
        for field in ("q_cmd", "q", "qd", "effort"):
            if getattr(self, field) is None:
                continue
            arr = np.asarray(getattr(self, field), dtype=np.float64)
            if arr.shape != (t.size, n_j):
                raise IdentificationError(
                    f"recording {field} must have shape (len(t), len(joint_names)) = ({t.size}, {n_j}): "
                    f"got {arr.shape}"
                )
            if not np.all(np.isfinite(arr)):
                raise IdentificationError(f"recording {field} has NaN or infinite values")
            arrays[field] = arr
        object.__setattr__(self, "t", t - t[0])
        for field, arr in arrays.items():
            object.__setattr__(self, field, arr)
        object.__setattr__(self, "joint_names", tuple(str(n) for n in self.joint_names))

    @classmethod
    def load_npz(cls, path: str | Path) -> JointRecording:
        """Read ``t, q_cmd, q, qd, joint_names`` (and ``effort`` when present) from an ``.npz`` (no pickles).

        Raises:
            IdentificationError: unreadable file or missing array (named).
        """
        src = Path(path)
        try:
            with np.load(src, allow_pickle=False) as npz:
                missing = [k for k in ("t", "q_cmd", "q", "qd", "joint_names") if k not in npz.files]
                if missing:
                    raise IdentificationError(f"recording {src} lacks arrays {missing} (has {npz.files})")
                effort = npz["effort"] if "effort" in npz.files else None
                return cls(
                    npz["t"], npz["q_cmd"], npz["q"], npz["qd"], tuple(npz["joint_names"].tolist()), effort
                )
        except (OSError, ValueError) as err:
            if isinstance(err, IdentificationError):
                raise
            raise IdentificationError(f"recording {src} cannot be read: {err}") from err

    def save_npz(self, path: str | Path) -> Path:
        """Write the recording as ``.npz``; never overwrites.

        Raises:
            IdentificationError: ``path`` exists.
        """
        out = Path(path)
        if out.exists():
            raise IdentificationError(f"output {out} already exists; refusing to overwrite it")
        with out.open("xb") as f:
            extra = {} if self.effort is None else {"effort": self.effort}
            np.savez(
                f,
                t=self.t,
                q_cmd=self.q_cmd,
                q=self.q,
                qd=self.qd,
                joint_names=np.array(self.joint_names),
                **extra,
            )
        return out

    def split(self, fraction: float) -> tuple[int, int]:
        """Index ranges: the first ``1 - fraction`` is for training, the rest held out for validation."""
        n_val = int(round(self.t.size * fraction))
        return self.t.size - n_val, n_val


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExcitationConfig:
    """Sum-of-sines excitation around a centre pose.

    Attributes:
        duration_s: trajectory length (s).
        rate_hz: command rate (Hz).
        base_freq_hz: fundamental; harmonics ``k * base_freq_hz`` for k = 1..n_harmonics.
        n_harmonics: sines per joint.
        range_fraction: fraction of the half-range between centre and the nearer joint limit to use.
        max_velocity: velocity bound (rad/s) of every joint.
        ramp_s: smooth start from rest at the centre (s).
    """

    duration_s: float = 20.0
    rate_hz: float = 100.0
    base_freq_hz: float = 0.1
    n_harmonics: int = 5
    range_fraction: float = 0.5
    max_velocity: float = 1.0
    ramp_s: float = 1.0

    def __post_init__(self) -> None:
        """Validate positivity and ranges (errors name the field)."""
        for name in ("duration_s", "rate_hz", "base_freq_hz", "max_velocity"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise IdentificationError(f"excitation {name} must be > 0: got {value}")
        if self.n_harmonics < 1:
            raise IdentificationError(f"excitation n_harmonics must be >= 1: got {self.n_harmonics}")
        if not 0 < self.range_fraction <= 1:
            raise IdentificationError(
                f"excitation range_fraction must be in (0, 1]: got {self.range_fraction}"
            )
        if not 0 <= self.ramp_s < self.duration_s:
            raise IdentificationError(
                f"excitation ramp_s must be in [0, duration_s): got {self.ramp_s} and {self.duration_s}"
            )


def _joint_id(model: mujoco.MjModel, name: str) -> int:
    jid = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name))
    if jid < 0:
        names = [model.joint(i).name for i in range(model.njnt)]
        raise IdentificationError(f"joint {name!r} not in the model (joints: {names})")
    if int(model.jnt_type[jid]) not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
        raise IdentificationError(f"joint {name!r} is not a hinge or slide joint")
    return jid


def excitation_trajectory(
    model: mujoco.MjModel,
    joint_names: Sequence[str],
    config: ExcitationConfig | None = None,
    *,
    seed: int,
    center: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded sum-of-sines joint commands within the joint limits and the velocity bound.

    Each joint gets ``n_harmonics`` sines with random amplitudes and phases, scaled so that the
    trajectory stays within ``range_fraction`` of the room between ``center`` and the nearer limit
    (unlimited joints: +-pi) and within ``max_velocity``; it starts at rest at ``center`` (smooth ramp).

    Args:
        model: model giving the joint limits.
        joint_names: joints to excite (hinge or slide).
        config: excitation settings (default :class:`ExcitationConfig`).
        seed: random seed; the same seed gives the same trajectory.
        center: centre pose (J,); default: the middle of each joint's range (0 if unlimited).

    Returns:
        ``t`` (N,) s and ``q_cmd`` (N, J).

    Raises:
        IdentificationError: unknown joint, or a centre outside the limits.
    """
    cfg = config or ExcitationConfig()
    rng = np.random.default_rng(seed)
    ids = [_joint_id(model, n) for n in joint_names]
    lo = np.array([model.jnt_range[j, 0] if model.jnt_limited[j] else -math.pi for j in ids])
    hi = np.array([model.jnt_range[j, 1] if model.jnt_limited[j] else math.pi for j in ids])
    c = (lo + hi) / 2 if center is None else np.asarray(center, dtype=np.float64)
    if c.shape != lo.shape or np.any(c <= lo) or np.any(c >= hi):
        raise IdentificationError(
            f"excitation center {c} must lie strictly inside the joint limits {lo}..{hi}"
        )
    half = cfg.range_fraction * np.minimum(c - lo, hi - c)
    t = np.arange(int(round(cfg.duration_s * cfg.rate_hz)) + 1) / cfg.rate_hz
    ramp = np.ones_like(t)
    if cfg.ramp_s > 0:
        r = np.clip(t / cfg.ramp_s, 0, 1)
        ramp = r**3 * (10 - 15 * r + 6 * r**2)  # quintic smoothstep: zero velocity and acceleration at t=0
    freqs = cfg.base_freq_hz * np.arange(1, cfg.n_harmonics + 1)
    q = np.empty((t.size, len(ids)))
    for j in range(len(ids)):
        amp = rng.uniform(0.3, 1.0, cfg.n_harmonics) / np.arange(1, cfg.n_harmonics + 1) ** 0.5
        phase = rng.uniform(0, 2 * math.pi, cfg.n_harmonics)
        wave = np.sin(2 * math.pi * np.outer(t, freqs) + phase) @ amp
        wave = (wave - np.sin(phase) @ amp) * ramp  # starts exactly at the centre
        wave *= half[j] / max(np.max(np.abs(wave)), 1e-12)
        vmax = np.max(np.abs(np.gradient(wave, t)))
        if vmax > cfg.max_velocity:
            wave *= cfg.max_velocity / vmax
        q[:, j] = c[j] + wave
    return t, q


@dataclasses.dataclass(frozen=True, kw_only=True)
class SysidConfig:
    """What to identify and how.

    Attributes:
        joints: joints whose parameters are fitted (default: all recorded joints).
        kinds: per-joint parameters to fit, from ``damping, armature, frictionloss, kp`` (and the opt-in
            ``kv``, see ``EXTRA_KINDS``).
        fit_delay: fit one command delay (s) shared by all joints.
        scale_range: bounds for damping/armature/kp as multiples of the nominal value.
        frictionloss_max: upper bound of friction loss (N m or N).
        armature_max: upper bound of armature (kg m² or kg) for a joint whose model has none.
        delay_max_s: upper bound of the command delay (s).
        validation_fraction: trailing part of the recording held out for validation.
        max_iters: optimiser iterations.
        n_threads: rollout threads (default: up to 4 CPUs).
        use_effort: when the recording has efforts, correct the position fit with them
            (:func:`effort_correction`): each joint's gains, armature and friction loss are rescaled
            together and viscous friction is split between the servo's kv and joint damping.  A joint
            damping parameter is added (not optimised, corrected only) when kv is fitted and damping is
            not.
        effort_smoothing_s: moving-average window (s) of that comparison.
    """

    joints: tuple[str, ...] | None = None
    kinds: tuple[str, ...] = PARAM_KINDS
    fit_delay: bool = True
    scale_range: tuple[float, float] = (0.2, 5.0)
    frictionloss_max: float = 5.0
    armature_max: float = 1.0
    delay_max_s: float = 0.1
    validation_fraction: float = 0.25
    max_iters: int = 30
    n_threads: int | None = None
    use_effort: bool = True
    effort_smoothing_s: float = 0.03

    def __post_init__(self) -> None:
        """Validate kinds and ranges (errors name the field)."""
        bad = [k for k in self.kinds if k not in PARAM_KINDS + EXTRA_KINDS]
        if bad:
            raise IdentificationError(
                f"sysid kinds {bad} unknown; valid: {list(PARAM_KINDS + EXTRA_KINDS)}"
            )
        if not self.kinds and not self.fit_delay:
            raise IdentificationError("sysid has nothing to fit: kinds is empty and fit_delay is false")
        lo, hi = self.scale_range
        if not 0 < lo < 1 < hi:
            raise IdentificationError(
                f"sysid scale_range must satisfy 0 < lo < 1 < hi: got {self.scale_range}"
            )
        if not self.frictionloss_max > 0 or not self.delay_max_s > 0:
            raise IdentificationError(
                f"sysid frictionloss_max and delay_max_s must be > 0: got {self.frictionloss_max} and "
                f"{self.delay_max_s}"
            )
        if not 0 < self.validation_fraction < 0.9:
            raise IdentificationError(
                f"sysid validation_fraction must be in (0, 0.9): got {self.validation_fraction}"
            )
        if self.max_iters < 1:
            raise IdentificationError(f"sysid max_iters must be >= 1: got {self.max_iters}")


@dataclasses.dataclass(frozen=True)
class IdentificationResult:
    """Fitted parameters and fit quality.

    Attributes:
        nominal: parameter name -> value in the given model (delay: 0).
        fitted: parameter name -> identified value.  Names are ``<joint>/<kind>`` and ``command_delay_s``.
        rms_train_before, rms_train_after: RMS joint position error (rad) on the training part.
        rms_val_before, rms_val_after: the same on the held-out part.
        n_train, n_val: samples in each part.
        wall_s: optimisation wall time (s).
        effort_corrections: joint -> (scale, viscous friction moved from kv to damping, N m s/rad), when
            efforts were recorded.
    """

    nominal: dict[str, float]
    fitted: dict[str, float]
    rms_train_before: float
    rms_train_after: float
    rms_val_before: float
    rms_val_after: float
    n_train: int
    n_val: int
    wall_s: float
    effort_corrections: dict[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    # The toolbox objects, for the report and the fitted MJCF.
    _spec: Any = dataclasses.field(repr=False, compare=False, default=None)
    _ctx: Any = dataclasses.field(repr=False, compare=False, default=None)

    def summary(self) -> str:
        """Human-readable table of the fit."""
        lines = [f"{'parameter':<28}{'nominal':>12}{'fitted':>12}"]
        lines += [f"{k:<28}{self.nominal[k]:>12.5g}{v:>12.5g}" for k, v in self.fitted.items()]
        lines.append(
            f"RMS joint error (rad): train {self.rms_train_before:.5f} -> {self.rms_train_after:.5f}, "
            f"validation {self.rms_val_before:.5f} -> {self.rms_val_after:.5f}"
        )
        return "\n".join(lines)


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


class _Problem:
    """Maps a recording onto a model: control matrix, initial states and a delayed-command rollout."""

    def __init__(self, model: mujoco.MjModel, rec: JointRecording) -> None:
        self.model = model
        self.rec = rec
        self.jids = [_joint_id(model, n) for n in rec.joint_names]
        self.aids = [_actuator_for_joint(model, j) for j in self.jids]
        base = _default_state(model)
        self.base_qpos = base.qpos.copy()
        # Actuators not in the recording hold their keyframe (or zero) command.
        self.ctrl = np.tile(base.ctrl, (rec.t.size, 1))
        self.ctrl[:, self.aids] = rec.q_cmd
        self.delay_param: str | None = None

    def initial_state(self, i: int) -> np.ndarray:
        qpos = self.base_qpos.copy()
        qvel = np.zeros(self.model.nv)
        for k, j in enumerate(self.jids):
            qpos[self.model.jnt_qposadr[j]] = self.rec.q[i, k]
            qvel[self.model.jnt_dofadr[j]] = self.rec.qd[i, k]
        state = sysid.create_initial_state(self.model, qpos, qvel)
        state[0] = self.rec.t[i]  # mjSTATE_FULLPHYSICS starts with time
        return state

    def sequence(self, name: str, spec: mujoco.MjSpec, start: int, stop: int) -> sysid.ModelSequences:
        rec = self.rec
        names: list[tuple[str, sysid.SignalType]] = [
            (n, sysid.SignalType.MjStateQPos) for n in rec.joint_names
        ]
        names += [(n, sysid.SignalType.MjStateQVel) for n in rec.joint_names]
        sensors = sysid.TimeSeries.from_names(
            rec.t[start:stop], np.hstack([rec.q[start:stop], rec.qd[start:stop]]), self.model, names
        )
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


def _set_joint_attr(kind: str, joint: str) -> Any:
    def modifier(spec: mujoco.MjSpec, p: sysid.Parameter) -> None:
        target = spec.joint(joint)
        if kind == "damping":
            # MuJoCo 4 joint damping is a polynomial (linear, quadratic, cubic); only the linear term is fit.
            coef = np.array(target.damping, dtype=np.float64).ravel()
            coef[0] = float(p.value[0])
            target.damping = coef
        else:
            setattr(target, kind, float(p.value[0]))

    return modifier


def _set_kp(actuator: str) -> Any:
    def modifier(spec: mujoco.MjSpec, p: sysid.Parameter) -> None:
        sysid.apply_pgain(spec, actuator, float(p.value[0]))

    return modifier


def _set_kv(actuator: str) -> Any:
    def modifier(spec: mujoco.MjSpec, p: sysid.Parameter) -> None:
        sysid.apply_dgain(spec, actuator, float(p.value[0]))

    return modifier


def _build_params(
    spec: mujoco.MjSpec, model: mujoco.MjModel, problem: _Problem, cfg: SysidConfig
) -> sysid.ParameterDict:
    params = sysid.ParameterDict()
    joints = cfg.joints if cfg.joints is not None else problem.rec.joint_names
    lo, hi = cfg.scale_range
    for joint in joints:
        if joint not in problem.rec.joint_names:
            raise IdentificationError(
                f"sysid joint {joint!r} is not in the recording {problem.rec.joint_names}"
            )
        jid = _joint_id(model, joint)
        aid = problem.aids[problem.rec.joint_names.index(joint)]
        dof = model.jnt_dofadr[jid]
        for kind in cfg.kinds:
            name = f"{joint}/{kind}"
            if kind == "frictionloss":
                nominal = float(model.dof_frictionloss[dof])
                params.add(
                    sysid.Parameter(
                        name,
                        nominal,
                        0.0,
                        max(cfg.frictionloss_max, 2 * nominal),
                        modifier=_set_joint_attr(kind, joint),
                    )
                )
                continue
            if kind in ("kp", "kv"):
                if not sysid.model_modifier.is_position_actuator(spec.actuator(model.actuator(aid).name)):
                    raise IdentificationError(
                        f"actuator {model.actuator(aid).name!r} is not a position servo"
                    )
                if kind == "kp":
                    nominal = float(model.actuator_gainprm[aid, 0])
                    modifier = _set_kp(model.actuator(aid).name)
                else:
                    nominal = -float(model.actuator_biasprm[aid, 2])
                    modifier = _set_kv(model.actuator(aid).name)
            else:
                nominal = float(model.dof_damping[dof] if kind == "damping" else model.dof_armature[dof])
                modifier = _set_joint_attr(kind, joint)
            if kind == "armature" and nominal == 0:
                # Many robot files leave armature out: search an absolute range instead of multiples.
                params.add(sysid.Parameter(name, 0.0, 0.0, cfg.armature_max, modifier=modifier))
                continue
            if nominal <= 0:
                raise IdentificationError(
                    f"joint {joint!r} has nominal {kind} {nominal}; scale bounds need a positive nominal"
                )
            params.add(sysid.Parameter(name, nominal, lo * nominal, hi * nominal, modifier=modifier))
        if (
            cfg.use_effort
            and problem.rec.effort is not None
            and "kv" in cfg.kinds
            and "damping" not in cfg.kinds
        ):
            # Not optimised (positions see only kv + damping); set from the efforts after the fit.
            nominal = float(model.dof_damping[dof])
            params.add(
                sysid.Parameter(
                    f"{joint}/damping",
                    nominal,
                    0.0,
                    max(hi * nominal, 1.0),
                    frozen=True,
                    modifier=_set_joint_attr("damping", joint),
                )
            )
    if cfg.fit_delay:
        params.add(sysid.Parameter("command_delay_s", 0.0, 0.0, cfg.delay_max_s))
        problem.delay_param = "command_delay_s"
    return params


def _x_scale(params: sysid.ParameterDict, cfg: SysidConfig) -> np.ndarray:
    scale = []
    for name in params.keys():
        p = params[name]
        if p.frozen:
            continue  # not in the optimiser's vector
        if name == "command_delay_s":
            scale.append(0.01)
        elif name.endswith("/frictionloss"):
            scale.append(max(float(p.nominal[0]), 0.1 * cfg.frictionloss_max))
        elif name.endswith("/armature") and float(p.nominal[0]) == 0:
            scale.append(0.1 * cfg.armature_max)
        else:
            scale.append(float(p.nominal[0]))
    return np.array(scale)


def _rms_q(residual_fn: Any, params: sysid.ParameterDict, n_joints: int) -> float:
    """RMS joint position error (rad) of a rollout with ``params`` against the measured positions."""
    _, preds, records = residual_fn(params.as_vector(), params, return_pred_all=True)
    err = [p[0].data[:, :n_joints] - r[0].data[:, :n_joints] for p, r in zip(preds, records, strict=True)]
    return float(np.sqrt(np.mean(np.concatenate(err) ** 2)))


# Kinds that scale together along the direction joint positions cannot see (small link inertia).
_SCALED_KINDS = ("kp", "kv", "damping", "armature", "frictionloss")


def _smooth(x: np.ndarray, n: int) -> np.ndarray:
    kernel = np.ones(n) / n
    return np.column_stack([np.convolve(x[:, c], kernel, mode="valid") for c in range(x.shape[1])])


def _gravcomp(model: mujoco.MjModel, problem: _Problem, q: np.ndarray) -> np.ndarray:
    """Gravity compensation the actuators carry (``actuatorgravcomp`` joints) at each row of ``q``."""
    data = mujoco.MjData(model)
    data.qpos[:] = problem.base_qpos
    qadr = [model.jnt_qposadr[j] for j in problem.jids]
    dadr = [model.jnt_dofadr[j] for j in problem.jids]
    on = model.jnt_actgravcomp[problem.jids].astype(float)
    out = np.empty_like(q)
    for i in range(q.shape[0]):
        data.qpos[qadr] = q[i]
        mujoco.mj_forward(model, data)
        out[i] = data.qfrc_gravcomp[dadr] * on
    return out


def effort_correction(
    model: mujoco.MjModel, rec: JointRecording, *, delay_s: float, smoothing_s: float = 0.03
) -> tuple[np.ndarray, np.ndarray]:
    """Per joint ``(c, beta)`` with recorded effort ~= ``c`` x modelled effort + ``beta`` x velocity.

    The model is driven by the recorded commands (delayed by ``delay_s``) from the recorded start; its
    actuator effort and the recorded one, both less gravity compensation (which does not scale), are
    smoothed over ``smoothing_s`` (a command applied one physics step early or late puts ``kp * dq``
    spikes into an effort) and fitted by least squares.  Two things positions alone cannot see show up
    here: scaling a joint's kp, kv, damping, armature and friction loss together by ``c`` leaves its
    motion unchanged when its link inertia is small but scales its effort; and moving viscous friction
    ``beta`` from the servo's kv into passive joint damping leaves the motion unchanged but not the
    effort, which carries kv and not the damping.  Joints with no effort signal get ``nan``.

    Raises:
        IdentificationError: the recording has no efforts.
    """
    if rec.effort is None:
        raise IdentificationError("the recording has no efforts (JointState.effort) to compare")
    dt = float(model.opt.timestep)
    steps = np.rint(rec.t / dt).astype(int)
    keep = np.concatenate([[True], np.diff(steps) > 0])
    sim = simulate_recording(
        model, steps[keep] * dt, rec.q_cmd[keep], rec.joint_names, delay_s=delay_s, q0=rec.q[0]
    )
    assert sim.effort is not None
    problem = _Problem(model, rec)
    n = max(1, int(round(smoothing_s / dt)))
    measured = _smooth(rec.effort[keep] - _gravcomp(model, problem, rec.q[keep]), n)
    modelled = _smooth(sim.effort - _gravcomp(model, problem, sim.q), n)
    velocity = _smooth(sim.qd, n)
    c = np.full(len(rec.joint_names), np.nan)
    beta = np.full(len(rec.joint_names), np.nan)
    for k in range(len(rec.joint_names)):
        X = np.column_stack([modelled[:, k], velocity[:, k]])
        if np.linalg.matrix_rank(X) < 2:
            continue
        (c[k], beta[k]), *_ = np.linalg.lstsq(X, measured[:, k], rcond=None)
    return c, beta


def _apply_effort_correction(
    fitted: sysid.ParameterDict, joints: Sequence[str], c: np.ndarray, beta: np.ndarray
) -> dict[str, tuple[float, float]]:
    """Scale each joint's parameters by ``c`` and move ``beta`` from kv into damping (in place)."""
    applied: dict[str, tuple[float, float]] = {}
    keys = set(fitted.keys())
    for joint, cj, bj in zip(joints, c, beta, strict=True):
        names = {kind: f"{joint}/{kind}" for kind in _SCALED_KINDS}
        if not np.isfinite(cj) or not np.isfinite(bj) or cj <= 0 or f"{joint}/kp" not in keys:
            continue
        if names["kv"] not in keys or names["damping"] not in keys:
            bj = 0.0  # nowhere to move it
        for kind, name in names.items():
            if name not in keys:
                continue
            p = fitted[name]
            value = p.value * cj
            if kind == "kv":
                value = value - bj
            elif kind == "damping":
                value = value + bj
            p.value = np.clip(value, p.min_value, p.max_value)
        applied[joint] = (float(cj), float(bj))
    return applied


def _check_excited(rec: JointRecording, cfg: SysidConfig) -> None:
    joints = cfg.joints if cfg.joints is not None else rec.joint_names
    span = np.ptp(rec.q_cmd, axis=0)
    static = [n for n in joints if n in rec.joint_names and span[rec.joint_names.index(n)] < 0.05]
    if static:
        raise IdentificationError(
            f"joints {static} barely move in the recording (command span < 0.05); record an excitation "
            "trajectory (r2s2r_capture.sysid.excitation_trajectory) that moves every identified joint"
        )


@contextlib.contextmanager
def _quiet_toolbox() -> Any:
    """Silence toolbox absl warnings that do not apply here (state-only observations, start on bound 0)."""
    absl_logger = logging.getLogger("absl")
    level = absl_logger.level
    absl_logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        absl_logger.setLevel(level)


def identify(
    model_path: str | Path, recording: JointRecording, config: SysidConfig | None = None
) -> IdentificationResult:
    """Fit per-joint damping, armature, friction loss, servo kp and the command delay with ``mujoco.sysid``.

    With recorded efforts, the position fit is then corrected per joint by :func:`effort_correction`
    (scale of the gains, armature and friction loss; split of viscous friction between kv and damping).

    The first ``1 - validation_fraction`` of the recording is fitted; the rest is held out, simulated from
    its own measured initial state, and reported as validation error before and after.

    Args:
        model_path: MJCF of the arm (or of a world holding it) with position-servo actuators.
        recording: commanded and measured joint motion, columns named by MJCF joint names.
        config: what to fit (default :class:`SysidConfig`).

    Raises:
        IdentificationError: bad model file, unknown joint, static arm, too short a recording.
    """
    cfg = config or SysidConfig()
    path = Path(model_path)
    try:
        spec = mujoco.MjSpec.from_file(str(path))
        model = spec.compile()
    except (OSError, ValueError) as err:
        raise IdentificationError(f"model {path} cannot be loaded: {err}") from err
    _check_excited(recording, cfg)
    n_train, n_val = recording.split(cfg.validation_fraction)
    if n_train < 20 or n_val < 10:
        raise IdentificationError(
            f"recording too short: {recording.t.size} samples give {n_train} train / {n_val} validation; "
            "need >= 20 / 10"
        )
    problem = _Problem(model, recording)
    params = _build_params(spec, model, problem, cfg)
    n_threads = cfg.n_threads or min(4, os.cpu_count() or 1)
    with _quiet_toolbox():
        train = problem.sequence("train", spec, 0, n_train)
        val = problem.sequence("validation", spec, n_train, recording.t.size)
    common = {"custom_rollout": problem.delayed_rollout, "n_threads": n_threads}
    train_fn = sysid.build_residual_fn(models_sequences=[train], **common)
    val_fn = sysid.build_residual_fn(models_sequences=[val], **common)
    nj = len(recording.joint_names)
    before = (_rms_q(train_fn, params, nj), _rms_q(val_fn, params, nj))
    start = time.perf_counter()
    log = io.StringIO()  # per-iteration log (kept: the report's optimisation trace needs the full log)
    with _quiet_toolbox():
        fitted, opt_result = sysid.optimize(
            params,
            train_fn,
            optimizer="mujoco",
            verbose=False,
            max_iters=cfg.max_iters,
            x_scale=_x_scale(params, cfg),
            output=log,
        )
    corrections: dict[str, tuple[float, float]] = {}
    if cfg.use_effort and recording.effort is not None:
        fitted_model = sysid.model_modifier.apply_param_modifiers(fitted, spec)
        delay = float(fitted["command_delay_s"].value[0]) if problem.delay_param else 0.0
        train_rec = dataclasses.replace(
            recording,
            t=recording.t[:n_train],
            q_cmd=recording.q_cmd[:n_train],
            q=recording.q[:n_train],
            qd=recording.qd[:n_train],
            effort=recording.effort[:n_train],
        )
        c, beta = effort_correction(
            fitted_model, train_rec, delay_s=delay, smoothing_s=cfg.effort_smoothing_s
        )
        corrections = _apply_effort_correction(fitted, recording.joint_names, c, beta)
    wall = time.perf_counter() - start
    after = (_rms_q(train_fn, fitted, nj), _rms_q(val_fn, fitted, nj))
    return IdentificationResult(
        nominal={k: float(params[k].nominal[0]) for k in params.keys()},
        fitted={k: float(fitted[k].value[0]) for k in fitted.keys()},
        rms_train_before=before[0],
        rms_train_after=after[0],
        rms_val_before=before[1],
        rms_val_after=after[1],
        n_train=n_train,
        n_val=n_val,
        wall_s=wall,
        effort_corrections=corrections,
        _spec=spec,
        _ctx={
            "params": params,
            "fitted": fitted,
            "opt_result": opt_result,
            "train": train,
            "train_fn": train_fn,
            "model_path": path,
            "log": log.getvalue(),
        },
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
    problem = _Problem(model, rec0)
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


def write_identification(
    result: IdentificationResult, out_dir: str | Path, *, report: bool = True
) -> dict[str, Path]:
    """Write the fitted MJCF, a ``sysid.yaml`` summary and the toolbox's HTML report into a new folder.

    Everything is written to a temporary sibling folder first, then moved into place, so a failure leaves
    nothing half-done.

    Returns:
        ``{"mjcf": ..., "summary": ..., "report": ...}`` (no ``report`` if ``report=False``).

    Raises:
        IdentificationError: ``out_dir`` exists.
    """
    out = Path(out_dir)
    if out.exists():
        raise IdentificationError(f"output {out} already exists; refusing to overwrite it")
    out.parent.mkdir(parents=True, exist_ok=True)
    ctx = result._ctx
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; the result is an ordinary output folder
        model_path: Path = ctx["model_path"]
        spec = mujoco.MjSpec.from_file(str(model_path))
        # Keep asset paths valid from the new location.
        for attr in ("meshdir", "texturedir"):
            value = getattr(spec, attr, "")
            if value and not Path(value).is_absolute():
                setattr(spec, attr, str((model_path.parent / value).resolve()))
        sysid.apply_param_modifiers_spec(ctx["fitted"], spec)
        if "command_delay_s" in result.fitted:
            spec.add_numeric(name=DELAY_NUMERIC, data=[result.fitted["command_delay_s"]])
        spec.compile()
        mjcf = tmp / f"{model_path.stem}_identified.xml"
        mjcf.write_text(spec.to_xml(), encoding="utf-8")
        summary = {
            "model": str(model_path),
            "parameters": {k: {"nominal": result.nominal[k], "fitted": v} for k, v in result.fitted.items()},
            "rms_joint_error_rad": {
                "train": {"before": result.rms_train_before, "after": result.rms_train_after},
                "validation": {"before": result.rms_val_before, "after": result.rms_val_after},
            },
            "samples": {"train": result.n_train, "validation": result.n_val},
            "effort_corrections": {
                j: {"scale": c, "kv_to_damping": b} for j, (c, b) in result.effort_corrections.items()
            },
            "wall_s": result.wall_s,
        }
        (tmp / "sysid.yaml").write_text(yaml.safe_dump(summary, sort_keys=False), encoding="utf-8")
        (tmp / "optimizer.log").write_text(ctx["log"], encoding="utf-8")
        paths = {"mjcf": mjcf, "summary": tmp / "sysid.yaml", "log": tmp / "optimizer.log"}
        if report:
            with _quiet_toolbox():
                sysid.default_report(
                    models_sequences=[ctx["train"]],
                    initial_params=ctx["params"],
                    opt_params=ctx["fitted"],
                    residual_fn=ctx["train_fn"],
                    opt_result=ctx["opt_result"],
                    title="r2s2r arm identification",
                    save_path=tmp,
                    generate_videos=False,
                )
            paths["report"] = tmp / "report.html"
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {k: out / p.name for k, p in paths.items()}
