"""Checking a whole excitation plan against its safety envelope in the template world, before it moves."""

from __future__ import annotations

import copy
import dataclasses
import math

import mujoco
import numpy as np
from r2s2r_sim.world.sim_world import SimWorld

from r2s2r_capture.errors import EnvelopeViolation, IdentificationError
from r2s2r_capture.sysid.envelope import ArmTemplate, SafetyEnvelope

__all__ = [
    "EnvelopeReport",
    "ExcitationPlan",
    "Trajectory",
    "approach_trajectory",
    "check_excitation",
    "plan_excitation",
]

# A trajectory scaled to exactly a cap (excitation_trajectory's max_velocity) meets it to rounding, not more.
_RTOL = 1e-6
# The collision pass also measures distances this far beyond the clearance, so the report can say how close
# the arm came even where it stayed clear (m).
_REPORT_REACH_M = 0.05
# A quintic from rest to rest: peak speed 1.875 x, peak acceleration 10/sqrt(3) x the mean over its duration.
_QUINTIC_PEAK_V = 1.875
_QUINTIC_PEAK_A = 10.0 / math.sqrt(3.0)


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """Joint positions over time: ``t`` (N,) s increasing, ``q`` (N, J) rad or m.

    ``qd`` (rad/s) and ``qdd`` (rad/s²), (N, J), are derived by finite differences (``numpy.gradient``)
    when left empty.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0))
    qdd: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0))

    def __post_init__(self) -> None:
        """Check shapes, finiteness and increasing time (errors name the array); derive what is missing."""
        t = np.asarray(self.t, dtype=np.float64)
        q = np.asarray(self.q, dtype=np.float64)
        if t.ndim != 1 or t.size < 1 or q.ndim != 2 or q.shape[0] != t.size:
            raise IdentificationError(
                f"trajectory t must be (N,) and q (N, J) with N >= 1: got {t.shape} and {q.shape}"
            )
        if t.size > 1 and not np.all(np.diff(t) > 0):
            raise IdentificationError("trajectory t must be strictly increasing")
        arrays = {"t": t, "q": q}
        for name in ("qd", "qdd"):
            given = getattr(self, name)
            if np.size(given):
                arrays[name] = np.asarray(given, dtype=np.float64)
                if arrays[name].shape != q.shape:
                    raise IdentificationError(
                        f"trajectory {name} must have q's shape {q.shape}: got {arrays[name].shape}"
                    )
        for name, arr in arrays.items():
            if not np.all(np.isfinite(arr)):
                raise IdentificationError(f"trajectory {name} has NaN or infinite values")
        if "qd" not in arrays:
            arrays["qd"] = np.gradient(q, t, axis=0) if t.size > 1 else np.zeros_like(q)
        if "qdd" not in arrays:
            arrays["qdd"] = np.gradient(arrays["qd"], t, axis=0) if t.size > 1 else np.zeros_like(q)
        for name, arr in arrays.items():
            object.__setattr__(self, name, arr)


@dataclasses.dataclass(frozen=True)
class EnvelopeReport:
    """How much of the envelope a plan uses: per joint (J,) and for the tool point and the clearance.

    Attributes:
        joint_names: the joints, in column order.
        q_min, q_max: the positions reached; ``lower``, ``upper``: the allowed range (rad or m).
        peak_velocity, peak_acceleration, peak_effort: largest magnitudes (rad/s, rad/s², N·m).
        velocity_cap, acceleration_cap: the envelope's caps; ``effort_cap`` (J,), inf where none.
        tool_min, tool_max: the box (3,) the tool point swept (m, world frame).
        min_distance_m: the closest the moving arm came to anything it may collide with (m); inf when nothing
            came within the clearance plus 5 cm; ``closest_pair`` names the two geoms.
        duration_s: the plan's length (s).
    """

    joint_names: tuple[str, ...]
    q_min: np.ndarray
    q_max: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    peak_velocity: np.ndarray
    velocity_cap: float
    peak_acceleration: np.ndarray
    acceleration_cap: float
    peak_effort: np.ndarray
    effort_cap: np.ndarray
    tool_min: np.ndarray
    tool_max: np.ndarray
    min_distance_m: float
    closest_pair: tuple[str, str] | None
    duration_s: float

    def describe(self) -> str:
        """The margins used, one row per joint, then the tool box and the closest approach."""
        lines = [
            f"{'joint':<16} {'range used':>18} {'allowed':>18} {'peak v/cap':>14} {'peak a/cap':>14} "
            f"{'peak effort/cap':>18}"
        ]
        for j, name in enumerate(self.joint_names):
            cap = "none" if math.isinf(self.effort_cap[j]) else f"{self.effort_cap[j]:.1f}"
            lines.append(
                f"{name:<16} {f'[{self.q_min[j]:.2f}, {self.q_max[j]:.2f}]':>18} "
                f"{f'[{self.lower[j]:.2f}, {self.upper[j]:.2f}]':>18} "
                f"{f'{self.peak_velocity[j]:.2f}/{self.velocity_cap:.2f}':>14} "
                f"{f'{self.peak_acceleration[j]:.2f}/{self.acceleration_cap:.2f}':>14} "
                f"{f'{self.peak_effort[j]:.1f}/{cap}':>18}"
            )
        box = ", ".join(
            f"{a} [{lo:.3f}, {hi:.3f}]" for a, lo, hi in zip("xyz", self.tool_min, self.tool_max, strict=True)
        )
        lines.append(f"tool point swept {box} m")
        if self.closest_pair is None:
            lines.append(f"closest approach: nothing within {_REPORT_REACH_M:.2f} m beyond the clearance")
        else:
            a, b = self.closest_pair
            lines.append(f"closest approach: {self.min_distance_m:.3f} m between {a!r} and {b!r}")
        lines.append(f"duration {self.duration_s:.2f} s")
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class _Violation:
    index: int
    rule: str
    subject: str
    what: str  # e.g. "elbow velocity 1.42 rad/s exceeds the cap 1.00 rad/s"
    value: float
    bound: float


def _first(mask: np.ndarray) -> tuple[int, int] | None:
    """The first (sample, column) where ``mask`` (N, K) holds, samples first."""
    rows = np.flatnonzero(mask.any(axis=1))
    if rows.size == 0:
        return None
    k = int(rows[0])
    return k, int(np.flatnonzero(mask[k])[0])


def _joint_rules(arm: ArmTemplate, traj: Trajectory, env: SafetyEnvelope) -> list[_Violation]:
    """The first breach of each joint-space rule: range margin, velocity, acceleration."""
    bounds = arm.bounds(env)
    lower = np.array([b.lower for b in bounds])
    upper = np.array([b.upper for b in bounds])
    found = []
    hit = _first((traj.q < lower - _RTOL) | (traj.q > upper + _RTOL))
    if hit is not None:
        k, j = hit
        value = float(traj.q[k, j])
        side, bound, limit = (
            ("lower", lower[j], arm.lower[j]) if value < lower[j] else ("upper", upper[j], arm.upper[j])
        )
        found.append(
            _Violation(
                k,
                "joint_margin_rad",
                arm.joint_names[j],
                f"{arm.joint_names[j]} position {value:.3f} rad is within {env.joint_margin_rad:.3f} rad "
                f"of its {side} limit {limit:.3f} rad (allowed to {bound:.3f} rad)",
                value,
                float(bound),
            )
        )
    for rule, values, cap, unit in (
        ("velocity_cap_rad_s", traj.qd, env.velocity_cap_rad_s, "rad/s"),
        ("acceleration_cap_rad_s2", traj.qdd, env.acceleration_cap_rad_s2, "rad/s²"),
    ):
        hit = _first(np.abs(values) > cap * (1 + _RTOL))
        if hit is not None:
            k, j = hit
            value = float(values[k, j])
            name = rule.split("_")[0]
            found.append(
                _Violation(
                    k,
                    rule,
                    arm.joint_names[j],
                    f"{arm.joint_names[j]} {name} {value:.3f} {unit} exceeds the cap {cap:.3f} {unit}",
                    value,
                    cap,
                )
            )
    return found


class _Sweep:
    """The template world run through the plan, sample by sample: tool point, closest contact, efforts."""

    def __init__(self, arm: ArmTemplate, env: SafetyEnvelope) -> None:
        self.arm = arm
        self.clearance = env.min_clearance_m
        # Collisions on a copy whose moving geoms carry a margin: MuJoCo then reports every pair closer than
        # it, with its distance, and the template's own physics is left as it is.
        self.cmodel = copy.deepcopy(arm.model)
        m = self.cmodel
        moving_geom = np.isin(m.geom_bodyid, list(arm.moving_bodies))
        m.geom_margin[moving_geom] = self.clearance + _REPORT_REACH_M
        m.geom_gap[moving_geom] = 0.0
        self.moving_geom = moving_geom
        self.cdata = mujoco.MjData(m)
        self.idata = mujoco.MjData(arm.model)

    def run(self, traj: Trajectory) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, int]]]:
        """Tool positions (N, 3), closest distances (N,), efforts (N, J) and each sample's closest pair."""
        arm, cm, cd, idata = self.arm, self.cmodel, self.cdata, self.idata
        n = traj.t.size
        tool = np.empty((n, 3))
        dist = np.full(n, np.inf)
        pairs = [(-1, -1)] * n
        effort = np.empty_like(traj.q)
        for k in range(n):
            cd.qpos[:] = arm.qpos
            cd.qpos[arm.qadr] = traj.q[k]
            mujoco.mj_kinematics(cm, cd)
            mujoco.mj_collision(cm, cd)
            tool[k] = cd.site_xpos[arm.tool_site] if arm.tool_site >= 0 else cd.xpos[arm.tool_body]
            if cd.ncon:
                geoms = cd.contact.geom[: cd.ncon]
                counted = self.moving_geom[geoms].any(axis=1)
                if counted.any():
                    d = np.where(counted, cd.contact.dist[: cd.ncon], np.inf)
                    i = int(np.argmin(d))
                    dist[k], pairs[k] = float(d[i]), (int(geoms[i, 0]), int(geoms[i, 1]))
            idata.qpos[:] = arm.qpos
            idata.qpos[arm.qadr] = traj.q[k]
            idata.qvel[:] = 0.0
            idata.qvel[arm.dofadr] = traj.qd[k]
            idata.qacc[:] = 0.0
            idata.qacc[arm.dofadr] = traj.qdd[k]
            mujoco.mj_inverse(arm.model, idata)
            # The whole generalized force the joint needs, gravity included: what the real motor gives.
            effort[k] = idata.qfrc_inverse[arm.dofadr]
        return tool, dist, effort, pairs

    def geom_name(self, g: int) -> str:
        """A geom's name, else its body's name and the geom's id."""
        m = self.cmodel
        return m.geom(g).name or f"{m.body(int(m.geom_bodyid[g])).name} geom {g}"


def _world_rules(
    template: ArmTemplate,
    sweep: _Sweep,
    envelope: SafetyEnvelope,
    tool: np.ndarray,
    dist: np.ndarray,
    effort: np.ndarray,
    pairs: list[tuple[int, int]],
) -> list[_Violation]:
    """The first breach of each rule the template world measures: the tool box, the clearance, the efforts."""
    found = []
    lo, hi = np.array(envelope.workspace_min_m), np.array(envelope.workspace_max_m)
    hit = _first(np.hstack([tool < lo - _RTOL, tool > hi + _RTOL]))
    if hit is not None:
        k, c = hit
        axis, side = "xyz"[c % 3], ("min" if c < 3 else "max")
        bound = float(lo[c] if c < 3 else hi[c - 3])
        relation = "below" if c < 3 else "above"
        found.append(
            _Violation(
                k,
                f"workspace_{side}_m",
                f"tool point {template.tool_name!r}",
                f"tool point {template.tool_name!r} {axis} {tool[k, c % 3]:.3f} m is {relation} "
                f"the workspace {side} {bound:.3f} m",
                float(tool[k, c % 3]),
                bound,
            )
        )
    close = np.flatnonzero(dist < envelope.min_clearance_m - 1e-9)
    if close.size:
        k = int(close[0])
        g1, g2 = pairs[k] if sweep.moving_geom[pairs[k][0]] else pairs[k][::-1]  # the moving geom first
        a, b = sweep.geom_name(g1), sweep.geom_name(g2)
        verb = f"penetrates {-dist[k]:.3f} m into" if dist[k] < 0 else f"comes {dist[k]:.3f} m from"
        found.append(
            _Violation(
                k,
                "min_clearance_m",
                f"{a!r} and {b!r}",
                f"{a!r} {verb} {b!r}, closer than the clearance {envelope.min_clearance_m:.3f} m (collision)",
                float(dist[k]),
                envelope.min_clearance_m,
            )
        )
    effort_cap = np.array([b.effort for b in template.bounds(envelope)])
    hit = _first(np.abs(effort) > effort_cap * (1 + _RTOL))
    if hit is not None:
        k, j = hit
        nm_binds = envelope.effort_cap_nm is not None and effort_cap[j] == envelope.effort_cap_nm
        found.append(
            _Violation(
                k,
                "effort_cap_nm" if nm_binds else "effort_cap_fraction",
                template.joint_names[j],
                f"{template.joint_names[j]} effort {effort[k, j]:.2f} N·m "
                f"exceeds the cap {effort_cap[j]:.2f} N·m",
                float(effort[k, j]),
                float(effort_cap[j]),
            )
        )
    return found


def check_excitation(
    arm: ArmTemplate | SimWorld,
    trajectory: Trajectory | tuple[np.ndarray, np.ndarray],
    envelope: SafetyEnvelope,
) -> EnvelopeReport:
    """Run the whole plan in the template world and refuse it if it leaves ``envelope`` anywhere.

    Kinematically, sample by sample: the joint positions against the limits less the margin, velocities and
    accelerations against the caps, the tool point against the workspace box, the moving arm's distance to
    everything the model lets it collide with against the clearance (``mj_collision``), and the efforts
    inverse dynamics asks for (``mj_inverse``, gravity included) against the effort caps.

    Args:
        arm: the template (:class:`ArmTemplate`, or a ``SimWorld`` taken in its current pose).
        trajectory: the plan (a :class:`Trajectory` or ``(t, q)`` as ``excitation_trajectory`` returns it).
        envelope: the bounds.

    Returns:
        The margins the plan uses.

    Raises:
        EnvelopeViolation: the earliest breach (at one instant, joint rules before the tool box, the
            clearance and the efforts), naming the rule, the joint or geoms, the time, value and bound.
        IdentificationError: the trajectory's shape does not fit the arm.
    """
    template = arm if isinstance(arm, ArmTemplate) else ArmTemplate.from_world(arm)
    traj = trajectory if isinstance(trajectory, Trajectory) else Trajectory(*trajectory)
    if traj.q.shape[1] != len(template.joint_names):
        raise IdentificationError(
            f"trajectory q has {traj.q.shape[1]} columns; the arm has joints {list(template.joint_names)}"
        )
    sweep = _Sweep(template, envelope)
    tool, dist, effort, pairs = sweep.run(traj)
    found = _joint_rules(template, traj, envelope)
    found += _world_rules(template, sweep, envelope, tool, dist, effort, pairs)
    if found:
        v = min(found, key=lambda f: f.index)  # stable: at one instant, the first rule listed wins
        time_s = float(traj.t[v.index])
        raise EnvelopeViolation(
            f"excitation refused before anything moved: {v.what} at t = {time_s:.3f} s (envelope {v.rule})",
            rule=v.rule,
            subject=v.subject,
            time_s=time_s,
            value=v.value,
            bound=v.bound,
        )
    bounds = template.bounds(envelope)
    k_min = int(np.argmin(dist))
    g1, g2 = pairs[k_min]
    return EnvelopeReport(
        joint_names=template.joint_names,
        q_min=traj.q.min(axis=0),
        q_max=traj.q.max(axis=0),
        lower=np.array([b.lower for b in bounds]),
        upper=np.array([b.upper for b in bounds]),
        peak_velocity=np.abs(traj.qd).max(axis=0),
        velocity_cap=envelope.velocity_cap_rad_s,
        peak_acceleration=np.abs(traj.qdd).max(axis=0),
        acceleration_cap=envelope.acceleration_cap_rad_s2,
        peak_effort=np.abs(effort).max(axis=0),
        effort_cap=np.array([b.effort for b in bounds]),
        tool_min=tool.min(axis=0),
        tool_max=tool.max(axis=0),
        min_distance_m=float(dist[k_min]),
        closest_pair=None if math.isinf(dist[k_min]) else (sweep.geom_name(g1), sweep.geom_name(g2)),
        duration_s=float(traj.t[-1] - traj.t[0]),
    )


def approach_trajectory(
    current_q: np.ndarray,
    start_q: np.ndarray,
    envelope: SafetyEnvelope,
    *,
    rate_hz: float = 100.0,
    min_duration_s: float = 0.5,
) -> Trajectory:
    """A quintic from rest at ``current_q`` to rest at ``start_q`` within the velocity and acceleration caps.

    The duration is the longest of what the velocity cap, the acceleration cap and ``min_duration_s`` need
    for the joint that moves furthest; sampled at ``rate_hz`` from t = 0, ending exactly at ``start_q``.
    Used to reach an excitation's first point and to go home after its last.

    Raises:
        IdentificationError: poses of different sizes, non-finite values, or a rate that is not positive.
    """
    a = np.asarray(current_q, dtype=np.float64)
    b = np.asarray(start_q, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise IdentificationError(
            f"approach poses must be finite (J,) of one size: got {a.shape} and {b.shape}"
        )
    if not (math.isfinite(rate_hz) and rate_hz > 0):
        raise IdentificationError(f"approach rate_hz must be > 0, got {rate_hz}")
    step = b - a
    dist = float(np.max(np.abs(step))) if step.size else 0.0
    if dist < 1e-12:
        return Trajectory(np.zeros(1), b[None, :])
    duration = max(
        _QUINTIC_PEAK_V * dist / envelope.velocity_cap_rad_s,
        math.sqrt(_QUINTIC_PEAK_A * dist / envelope.acceleration_cap_rad_s2),
        min_duration_s,
    )
    n = int(math.ceil(duration * rate_hz))
    t = np.arange(n + 1) / rate_hz
    r = t / t[-1]
    blend = r**3 * (10 - 15 * r + 6 * r**2)
    return Trajectory(t, a + np.outer(blend, step))


@dataclasses.dataclass(frozen=True)
class ExcitationPlan:
    """What is sent to the arm: approach, excitation and return home as one checked trajectory.

    ``excitation_start_s`` and ``excitation_end_s`` bound the excitation within ``trajectory.t``.
    """

    trajectory: Trajectory
    excitation_start_s: float
    excitation_end_s: float
    report: EnvelopeReport


def plan_excitation(
    arm: ArmTemplate,
    current_q: np.ndarray,
    excitation: Trajectory | tuple[np.ndarray, np.ndarray],
    envelope: SafetyEnvelope,
    *,
    home_q: np.ndarray | None = None,
) -> ExcitationPlan:
    """The excitation with its approach and its return home, checked as a whole by :func:`check_excitation`.

    The approach starts from ``current_q`` and the return ends at ``home_q`` (default: ``current_q``), both
    sampled at the excitation's rate.

    Raises:
        EnvelopeViolation: any part of the plan leaves the envelope (nothing has moved).
    """
    exc = excitation if isinstance(excitation, Trajectory) else Trajectory(*excitation)
    if exc.t.size < 2:
        raise IdentificationError("an excitation needs at least two samples")
    rate = 1.0 / float(np.median(np.diff(exc.t)))
    home = np.asarray(current_q if home_q is None else home_q, dtype=np.float64)
    there = approach_trajectory(current_q, exc.q[0], envelope, rate_hz=rate)
    back = approach_trajectory(exc.q[-1], home, envelope, rate_hz=rate)
    start = float(there.t[-1])
    t_exc = exc.t - exc.t[0] + start
    end = float(t_exc[-1])
    t = np.concatenate([there.t[:-1], t_exc, back.t[1:] + end])
    q = np.vstack([there.q[:-1], exc.q, back.q[1:]])
    whole = Trajectory(t, q)
    return ExcitationPlan(whole, start, end, check_excitation(arm, whole, envelope))
