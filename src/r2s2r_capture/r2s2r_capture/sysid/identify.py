"""Arm dynamics identification with ``mujoco.sysid``: the parameters, the fit and its errors.

Recordings and the excitation trajectory are in :mod:`r2s2r_capture.sysid.recording`, the recording mapped
onto the model and the simulated stand-in recording in :mod:`r2s2r_capture.sysid.rollout`, the result and
what is written to disk in :mod:`r2s2r_capture.sysid.report`.
"""

from __future__ import annotations

import dataclasses
import io
import math
import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from mujoco import sysid
from r2s2r_sim.ranges import check_fields, within

from r2s2r_capture.errors import IdentificationError
from r2s2r_capture.sysid.effort_correction import apply_effort_correction, effort_correction
from r2s2r_capture.sysid.effort_fit import effort_residual, with_effort_sensors
from r2s2r_capture.sysid.recording import JointRecording, joint_id
from r2s2r_capture.sysid.report import IdentificationResult, quiet_toolbox
from r2s2r_capture.sysid.rollout import RecordingProblem
from r2s2r_capture.sysid.uncertainty import after_effort_correction, standard_errors

__all__ = ["EXTRA_KINDS", "PARAM_KINDS", "SysidConfig", "build_params", "centred_weights", "identify"]

PARAM_KINDS = ("damping", "armature", "frictionloss", "kp")
# Opt-in kinds (not fitted by default): ``kv``, the position servo's derivative gain.  Joint damping and
# servo kv act alike on position tracking (both are -c qdot), so fit one of the two, not both.
EXTRA_KINDS = ("kv",)
# mujoco.minimize's last words in its log: "Terminated after 12 iterations: <reason>. y: ..."
_STOP_RE = re.compile(r"Terminated after (\d+) iterations?: ([^.]*)")


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
        use_effort: use the recording's efforts, when it has them.  A joint damping parameter is added
            when kv is fitted and damping is not: the efforts carry kv and not the damping.
        effort_in_fit: the efforts are a residual term beside positions and velocities
            (:mod:`r2s2r_capture.sysid.effort_fit`), compared after a ``effort_fit_smoothing_s`` moving
            average.  Otherwise they correct the position fit afterwards (:func:`effort_correction`):
            each joint's gains, armature and friction loss rescaled together, viscous friction split
            between the servo's kv and joint damping (the added damping is then corrected only).
        effort_fit_smoothing_s: moving-average window (s) of the efforts in the fit.
        effort_smoothing_s: moving-average window (s) of the correction's comparison.
    """

    joints: tuple[str, ...] | None = None
    kinds: tuple[str, ...] = PARAM_KINDS
    fit_delay: bool = True
    scale_range: tuple[float, float] = (0.2, 5.0)
    frictionloss_max: float = within(5.0, "> 0")
    armature_max: float = 1.0
    delay_max_s: float = within(0.1, "> 0")
    validation_fraction: float = within(0.25, "(0, 0.9)")
    max_iters: int = within(30, ">= 1")
    n_threads: int | None = None
    use_effort: bool = True
    effort_in_fit: bool = True
    effort_fit_smoothing_s: float = within(0.25, ">= 0")
    effort_smoothing_s: float = 0.03

    def __post_init__(self) -> None:
        """Validate kinds and ranges (errors name the field)."""
        bad = [k for k in self.kinds if k not in PARAM_KINDS + EXTRA_KINDS]
        if bad:
            raise IdentificationError(f"sysid kinds {bad} unknown; valid: {list(PARAM_KINDS + EXTRA_KINDS)}")
        if not self.kinds and not self.fit_delay:
            raise IdentificationError("sysid has nothing to fit: kinds is empty and fit_delay is false")
        lo, hi = self.scale_range
        if not 0 < lo < 1 < hi:
            raise IdentificationError(
                f"sysid scale_range must satisfy 0 < lo < 1 < hi: got {self.scale_range}"
            )
        check_fields(self, error=IdentificationError, prefix="sysid.")


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


def build_params(
    spec: mujoco.MjSpec, model: mujoco.MjModel, problem: RecordingProblem, cfg: SysidConfig
) -> sysid.ParameterDict:
    """The toolbox parameters ``cfg`` asks for, each with its nominal value, bounds and spec modifier."""
    params = sysid.ParameterDict()
    joints = cfg.joints if cfg.joints is not None else problem.rec.joint_names
    lo, hi = cfg.scale_range
    for joint in joints:
        if joint not in problem.rec.joint_names:
            raise IdentificationError(
                f"sysid joint {joint!r} is not in the recording {problem.rec.joint_names}"
            )
        jid = joint_id(model, joint)
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
            if kind == "kv" and nominal == 0:
                # A servo modelled without damping (the joint's own damping stands in for it, as in
                # several vendors' files): search up to ``hi`` times its critical damping.
                params.add(
                    sysid.Parameter(name, 0.0, 0.0, hi * _critical_kv(model, aid, dof), modifier=modifier)
                )
                continue
            if kind == "damping" and nominal == 0:
                # Nor do they all have damping: search up to the servo's own kv (gear and bearing drag).
                kv = max(-float(model.actuator_biasprm[aid, 2]), 1.0)
                params.add(sysid.Parameter(name, 0.0, 0.0, hi * kv, modifier=modifier))
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
            # Positions see only kv + damping; the efforts carry kv alone.  In the fit, the damping is
            # optimised; otherwise it is set from the efforts after the fit.  Its bound scales with the
            # servo's kv: a world with no damping (e.g. Kinova Gen3's file) would otherwise clip the
            # damping the efforts find at a fixed number and lose it from the sum.
            nominal = float(model.dof_damping[dof])
            kv_nominal = -float(model.actuator_biasprm[aid, 2])
            params.add(
                sysid.Parameter(
                    f"{joint}/damping",
                    nominal,
                    0.0,
                    max(hi * nominal, hi * kv_nominal, 1.0),
                    frozen=not problem.efforts,
                    modifier=_set_joint_attr("damping", joint),
                )
            )
    if cfg.fit_delay:
        params.add(sysid.Parameter("command_delay_s", 0.0, 0.0, cfg.delay_max_s))
        problem.delay_param = "command_delay_s"
    return params


def _critical_kv(model: mujoco.MjModel, aid: int, dof: int) -> float:
    """The servo's critical damping ``2 sqrt(kp M)`` on its joint at ``qpos0`` (N·m·s/rad), at least 1."""
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    inertia = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, inertia)
    kp = max(float(model.actuator_gainprm[aid, 0]), 0.0)
    return max(2.0 * math.sqrt(kp * float(inertia[dof, dof])), 1.0)


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
        elif float(p.nominal[0]) == 0:  # searched over an absolute range (armature, damping)
            scale.append(0.1 * float(p.max_value[0]))
        else:
            scale.append(float(p.nominal[0]))
    return np.array(scale)


def centred_weights(measured: np.ndarray) -> np.ndarray:
    """Per-column weights that turn ``mujoco.sysid``'s residual normalisation into a centred one.

    The toolbox divides each signal's error by the norm of the measured signal, offset included, so a
    joint swinging about pi weighs several times less than the same motion about 0, and the fit changes
    with where the encoder's zero is. Multiplying by ``norm(m) / norm(m - mean(m))`` leaves each error
    divided by its own excitation instead: the identified dynamics do not depend on the joint's zero.
    """
    m = np.asarray(measured, dtype=float)
    centred = np.linalg.norm(m - m.mean(axis=0), axis=0)
    raw = np.linalg.norm(m, axis=0)
    return raw / np.maximum(centred, 1e-9 * np.maximum(raw, 1.0))


def _rms_q(residual_fn: Any, params: sysid.ParameterDict, q: slice) -> float:
    """RMS joint position error (rad) of a rollout with ``params`` against the measured positions."""
    _, preds, records = residual_fn(params.as_vector(), params, return_pred_all=True)
    err = [p[0].data[:, q] - r[0].data[:, q] for p, r in zip(preds, records, strict=True)]
    return float(np.sqrt(np.mean(np.concatenate(err) ** 2)))


def _check_excited(rec: JointRecording, cfg: SysidConfig) -> None:
    joints = cfg.joints if cfg.joints is not None else rec.joint_names
    span = np.ptp(rec.q_cmd, axis=0)
    static = [n for n in joints if n in rec.joint_names and span[rec.joint_names.index(n)] < 0.05]
    if static:
        raise IdentificationError(
            f"joints {static} barely move in the recording (command span < 0.05); record an excitation "
            "trajectory (r2s2r_capture.sysid.recording.excitation_trajectory) that moves every identified "
            "joint"
        )


def identify(
    model_path: str | Path | mujoco.MjSpec,
    recording: JointRecording,
    config: SysidConfig | None = None,
    *,
    on_iteration: Callable[[int], None] | None = None,
) -> IdentificationResult:
    """Fit per-joint damping, armature, friction loss, servo kp and the command delay with ``mujoco.sysid``.

    With recorded efforts, they are fitted beside the positions (:mod:`r2s2r_capture.sysid.effort_fit`), or,
    with ``effort_in_fit=False``, correct the position fit per joint afterwards (:func:`effort_correction`:
    scale of the gains, armature and friction loss; split of viscous friction between kv and damping).

    The first ``1 - validation_fraction`` of the recording is fitted; the rest is held out, simulated from
    its own measured initial state, and reported as validation error before and after.  Each parameter
    gets a standard error from the fit's residuals (:mod:`r2s2r_capture.sysid.uncertainty`).

    Args:
        model_path: MJCF of the arm (or of a world holding it) with position-servo actuators, or its
            ``MjSpec`` (a URDF robot with the servos its world adds); a spec is used as given.
        recording: commanded and measured joint motion, columns named by MJCF joint names.
        config: what to fit (default :class:`SysidConfig`).
        on_iteration: called with the optimiser iterations done so far (at most ``max_iters``), after each.

    Raises:
        IdentificationError: bad model file, unknown joint, static arm, too short a recording.
    """
    cfg = config or SysidConfig()
    efforts = cfg.use_effort and cfg.effort_in_fit and recording.effort is not None
    path, model_xml, spec, model = _load_model(model_path, recording.joint_names if efforts else None)
    _check_excited(recording, cfg)
    n_train, n_val = recording.split(cfg.validation_fraction)
    if n_train < 20 or n_val < 10:
        raise IdentificationError(
            f"recording too short: {recording.t.size} samples give {n_train} train / {n_val} validation; "
            "need >= 20 / 10"
        )
    problem = RecordingProblem(model, recording, efforts=efforts)
    params = build_params(spec, model, problem, cfg)
    train, train_fn, val_fn = _residual_fns(problem, spec, cfg, n_train)
    q = problem.q_columns
    before = (_rms_q(train_fn, params, q), _rms_q(val_fn, params, q))
    start = time.perf_counter()
    log = io.StringIO()  # per-iteration log (kept: the report's optimisation trace needs the full log)
    with quiet_toolbox():
        fitted, opt_result = sysid.optimize(
            params,
            train_fn,
            optimizer="mujoco",
            verbose=False,
            max_iters=cfg.max_iters,
            x_scale=_x_scale(params, cfg),
            output=log,
            **_iteration_callback(on_iteration, cfg.max_iters),
        )
    corrections: dict[str, tuple[float, float]] = {}
    if cfg.use_effort and recording.effort is not None and not efforts:
        std, tau, corrections = _correct_by_efforts(
            spec, problem, fitted, opt_result.jac, train_fn, n_train, cfg
        )
    else:
        std, tau = standard_errors(train_fn, fitted, opt_result.jac)
    wall = time.perf_counter() - start
    after = (_rms_q(train_fn, fitted, q), _rms_q(val_fn, fitted, q))
    stopped = _STOP_RE.search(log.getvalue())
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
        std=after_effort_correction(std, corrections, list(fitted.keys())),
        residual_autocorrelation_time=tau,
        iterations=int(stopped.group(1)) if stopped else -1,
        stop_reason=stopped.group(2).strip() if stopped else "",
        spec=spec,
        toolbox={
            "params": params,
            "fitted": fitted,
            "opt_result": opt_result,
            "train": train,
            "train_fn": train_fn,
            "model_path": path,
            "model_xml": model_xml,
            "model_dir": Path(spec.modelfiledir) if model_xml is not None else path.parent,
            "log": log.getvalue(),
        },
    )


def _iteration_callback(on_iteration: Callable[[int], None] | None, max_iters: int) -> dict[str, Any]:
    """The optimiser's ``iter_callback`` reporting the iterations done (its trace ends with one extra)."""
    if on_iteration is None:
        return {}
    return {"iter_callback": lambda trace: on_iteration(min(len(trace), max_iters))}


def _load_model(
    model_path: str | Path | mujoco.MjSpec, effort_joints: Sequence[str] | None
) -> tuple[Path, str | None, mujoco.MjSpec, mujoco.MjModel]:
    """The spec to fit and its model: ``(path, XML of a given spec, spec, model)``.

    A given spec has no file to reload the model from when the result is written, so its XML is kept.
    With ``effort_joints`` the spec is a copy whose sensors are those joints' efforts (the toolbox finds
    each measured column at its sensor's address).
    """
    given = isinstance(model_path, mujoco.MjSpec)
    path = Path("<MjSpec>") if given else Path(model_path)
    model_xml = model_path.to_xml() if given else None
    try:
        spec = model_path if given else mujoco.MjSpec.from_file(str(path))
        if effort_joints is not None:
            spec = with_effort_sensors(spec, effort_joints)
        model = spec.compile()
    except (OSError, ValueError) as err:
        raise IdentificationError(f"model {path} cannot be loaded: {err}") from err
    return path, model_xml, spec, model


def _residual_fns(
    problem: RecordingProblem, spec: mujoco.MjSpec, cfg: SysidConfig, n_train: int
) -> tuple[sysid.ModelSequences, Any, Any]:
    """The training sequence and the residual functions of the training and held-out parts.

    Only the training residual is weighted (:func:`centred_weights`): it is what the optimiser sees; the
    held-out one reports errors.  With efforts in the fit both smooth the efforts first
    (:func:`effort_residual`).
    """
    recording = problem.rec
    with quiet_toolbox():
        train = problem.sequence("train", spec, 0, n_train)
        val = problem.sequence("validation", spec, n_train, recording.t.size)
    n_threads = cfg.n_threads or min(4, os.cpu_count() or 1)
    common = {"custom_rollout": problem.delayed_rollout, "n_threads": n_threads}
    weights = centred_weights(train.sensordata[0].data)
    if not problem.efforts:
        train_fn = sysid.build_residual_fn(models_sequences=[train], sensor_weights=weights, **common)
        return train, train_fn, sysid.build_residual_fn(models_sequences=[val], **common)
    dt = float(np.median(np.diff(recording.t)))
    window = max(1, int(round(cfg.effort_fit_smoothing_s / dt)))
    nj = len(recording.joint_names)
    train_fn = sysid.build_residual_fn(
        models_sequences=[train], modify_residual=effort_residual(nj, window, weights), **common
    )
    val_fn = sysid.build_residual_fn(
        models_sequences=[val], modify_residual=effort_residual(nj, window, None), **common
    )
    return train, train_fn, val_fn


def _correct_by_efforts(
    spec: mujoco.MjSpec,
    problem: RecordingProblem,
    fitted: sysid.ParameterDict,
    jacobian: np.ndarray,
    train_fn: Any,
    n_train: int,
    cfg: SysidConfig,
) -> tuple[dict[str, float], float, dict[str, tuple[float, float]]]:
    """Standard errors and per-joint corrections where the efforts correct the position fit afterwards.

    The errors are taken at the position fit's optimum with each joint's scale known from the efforts
    (:func:`effort_correction` on the training part); the correction is then applied to ``fitted`` in place.
    """
    recording = problem.rec
    assert recording.effort is not None
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
    c, beta, c_std = effort_correction(
        fitted_model, train_rec, delay_s=delay, smoothing_s=cfg.effort_smoothing_s
    )
    scale_std = {j: float(e / abs(v)) for j, v, e in zip(recording.joint_names, c, c_std, strict=True)}
    std, tau = standard_errors(train_fn, fitted, jacobian, scale_std=scale_std)
    return std, tau, apply_effort_correction(fitted, recording.joint_names, c, beta)
