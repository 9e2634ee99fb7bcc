"""Joint recordings for identification and the excitation trajectory that produces them."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

import mujoco
import numpy as np
from r2s2r_sim.ranges import check_fields, within

from r2s2r_capture.errors import IdentificationError, refuse_existing

__all__ = [
    "MAX_SAMPLES",
    "ExcitationConfig",
    "JointRecording",
    "excitation_centre",
    "excitation_trajectory",
    "joint_id",
    "move_commands",
]
# The excitation's centre keeps this fraction of each joint's range (at most this many rad or m) from a limit.
_EXCITATION_ROOM = 0.15
_EXCITATION_ROOM_MAX = 0.6

# Largest recording we accept (samples): guards memory when reading untrusted .npz files.
MAX_SAMPLES = 2_000_000


@dataclasses.dataclass(frozen=True)
class JointRecording:
    """Recorded arm motion: time stamps (N,) s, commanded and measured positions (N, J) rad, velocities rad/s.

    Times are shifted to start at 0; columns follow ``joint_names`` (MJCF joint names).  ``effort`` (N, J),
    N·m or N, is the drivers' reported actuator effort (``/joint_states`` effort) when they report it.
    With it :func:`identify` fits efforts beside positions (:mod:`r2s2r_capture.sysid.effort_fit`), both sides
    smoothed first: single-step command-timing jitter puts ``kp * dq`` spikes into it (2.5 N·m RMS on a
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
        out = refuse_existing(path, IdentificationError)
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

    duration_s: float = within(20.0, "> 0")
    rate_hz: float = within(100.0, "> 0")
    base_freq_hz: float = within(0.1, "> 0")
    n_harmonics: int = within(5, ">= 1")
    range_fraction: float = within(0.5, "(0, 1]")
    max_velocity: float = within(1.0, "> 0")
    ramp_s: float = 1.0

    def __post_init__(self) -> None:
        """Validate ranges (errors name the field); the ramp must end before the trajectory does."""
        check_fields(self, error=IdentificationError, prefix="excitation.")
        if not 0 <= self.ramp_s < self.duration_s:
            raise IdentificationError(
                f"excitation ramp_s must be in [0, duration_s): got {self.ramp_s} and {self.duration_s}"
            )


def joint_id(model: mujoco.MjModel, name: str) -> int:
    """The id of joint ``name`` in ``model``; IdentificationError naming the joint if it has none."""
    jid = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name))
    if jid < 0:
        names = [model.joint(i).name for i in range(model.njnt)]
        raise IdentificationError(f"joint {name!r} not in the model (joints: {names})")
    if int(model.jnt_type[jid]) not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
        raise IdentificationError(f"joint {name!r} is not a hinge or slide joint")
    return jid


def excitation_centre(model: mujoco.MjModel, names: Sequence[str], q: np.ndarray) -> np.ndarray:
    """``q`` moved off the joint limits: the excitation's centre.

    The excitation swings each joint by a fraction of the room between its centre and the nearer limit; a
    home pose a few tenths of a radian from a limit (a folded elbow) would leave that joint nearly still and
    its inertia unidentified.  So the centre keeps :data:`_EXCITATION_ROOM` of the range (at most
    :data:`_EXCITATION_ROOM_MAX`) from either limit.
    """
    out = np.array(q, dtype=np.float64)
    for k, n in enumerate(names):
        j = model.joint(n).id
        if model.jnt_limited[j]:
            lo, hi = model.jnt_range[j]
            margin = min(_EXCITATION_ROOM * (hi - lo), _EXCITATION_ROOM_MAX)
            out[k] = min(max(out[k], lo + margin), hi - margin)
    return out


def move_commands(start: np.ndarray, end: np.ndarray, rate_hz: float, speed: float) -> np.ndarray:
    """Commands (N, J) at ``rate_hz`` from ``start`` to ``end`` on a quintic, no joint faster than ``speed``.

    Empty when they coincide.
    """
    step = np.asarray(end, dtype=np.float64) - np.asarray(start, dtype=np.float64)
    largest = float(np.max(np.abs(step))) if step.size else 0.0
    if largest < 1e-9:
        return np.zeros((0, step.size))
    duration = max(1.875 * largest / speed, 0.5)  # a quintic's peak speed is 1.875 x its mean
    r = np.arange(1, int(math.ceil(duration * rate_hz)) + 1) / (duration * rate_hz)
    r = np.clip(r, 0.0, 1.0)
    blend = r**3 * (10 - 15 * r + 6 * r**2)
    return np.asarray(start) + np.outer(blend, step)


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
    (unlimited joints: +-pi around the centre, wherever it is) and within ``max_velocity``; it starts at
    rest at ``center`` (smooth ramp).

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
    ids = [joint_id(model, n) for n in joint_names]
    limited = np.array([bool(model.jnt_limited[j]) for j in ids])
    lo = np.array([model.jnt_range[j, 0] if model.jnt_limited[j] else -math.pi for j in ids])
    hi = np.array([model.jnt_range[j, 1] if model.jnt_limited[j] else math.pi for j in ids])
    c = (lo + hi) / 2 if center is None else np.asarray(center, dtype=np.float64)
    if c.shape == lo.shape:
        # A continuous joint has no limit to keep clear of: half a turn either side of wherever it starts
        # (a home pose at pi, as on a Kinova Gen3's joint_3, is as good a centre as 0).
        lo = np.where(limited, lo, c - math.pi)
        hi = np.where(limited, hi, c + math.pi)
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
