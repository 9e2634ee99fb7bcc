"""Watching an excitation as it runs on the arm: go on, or stop and hold where the arm is."""

from __future__ import annotations

import dataclasses
import enum
import math
import threading
from collections.abc import Sequence

import numpy as np

from r2s2r_capture.errors import IdentificationError
from r2s2r_capture.sysid.envelope import ArmTemplate, SafetyEnvelope

__all__ = ["ExcitationMonitor", "MonitorVerdict", "StopReason"]


class StopReason(enum.Enum):
    """Why the monitor stopped the excitation."""

    STALE_STATE = "stale_state"
    TRACKING_ERROR = "tracking_error"
    OUTSIDE_ENVELOPE = "outside_envelope"
    STOP_REQUESTED = "stop_requested"


@dataclasses.dataclass(frozen=True)
class MonitorVerdict:
    """Go on (``stop`` False), or stop: why, in words, and the positions to command instead (``hold``)."""

    stop: bool
    reason: StopReason | None = None
    detail: str = ""
    hold: np.ndarray | None = None
    time_s: float = math.nan  # when the monitor decided to stop (the caller's clock)


_GO = MonitorVerdict(False)


class ExcitationMonitor:
    """Decides at each control tick whether the excitation goes on, from the joint states and the set-point.

    It stops, once and for good, when no joint state has come for ``envelope.state_timeout_s``, when a
    joint is further than ``envelope.tracking_error_rad`` from the set-point about to be sent, when a
    measured position enters a joint's margin or a measured speed passes the velocity cap, or when a stop
    was requested (Ctrl-C; :meth:`request_stop` may be called from another thread or a signal handler).
    The hold it returns is the last measured position: the arm stops where it is instead of where the plan
    would have taken it.  Time is whatever clock the caller gives (sim time or wall time), in s.

    The tool box and the clearance are not watched here: the plan was checked against them
    (:func:`~r2s2r_capture.sysid.excitation_check.check_excitation`), and the tracking bound keeps the arm
    near the plan.
    """

    def __init__(
        self,
        envelope: SafetyEnvelope,
        joint_names: Sequence[str],
        lower: np.ndarray,
        upper: np.ndarray,
        *,
        start_s: float,
        start_q: np.ndarray,
    ) -> None:
        """Watch joints with limits ``lower``/``upper`` (J,), from ``start_q`` measured at ``start_s``.

        ``start_q`` is the joint state the plan was made from: staleness counts from ``start_s`` until the
        first sample, and it is the hold if the arm never reports.

        Raises:
            IdentificationError: arrays whose sizes differ from ``joint_names``.
        """
        self.envelope = envelope
        self.joint_names = tuple(joint_names)
        n = len(self.joint_names)
        self._lower = np.asarray(lower, dtype=np.float64) + envelope.joint_margin_rad
        self._upper = np.asarray(upper, dtype=np.float64) - envelope.joint_margin_rad
        q0 = np.asarray(start_q, dtype=np.float64)
        for name, arr in (("lower", self._lower), ("upper", self._upper), ("start_q", q0)):
            if arr.shape != (n,):
                raise IdentificationError(
                    f"monitor {name} must have {n} values (one per joint), got {arr.shape}"
                )
        self._last_s = float(start_s)
        self._q = q0.copy()
        self._qd = np.zeros(n)
        self._fresh = False  # a sample came since the last check
        self._stop_requested = threading.Event()
        self._stop_why = ""
        self._verdict = _GO

    @classmethod
    def for_arm(
        cls, arm: ArmTemplate, envelope: SafetyEnvelope, *, start_s: float, start_q: np.ndarray
    ) -> ExcitationMonitor:
        """A monitor for the template's joints and limits."""
        return cls(envelope, arm.joint_names, arm.lower, arm.upper, start_s=start_s, start_q=start_q)

    @property
    def stopped(self) -> bool:
        """Whether the monitor has stopped the excitation (for good)."""
        return self._verdict.stop

    def joint_state(self, stamp_s: float, q: np.ndarray, qd: np.ndarray) -> None:
        """Take a joint state measured at ``stamp_s``: ``q`` rad and ``qd`` rad/s in ``joint_names`` order.

        A sample older than the last one is ignored (out-of-order delivery).
        """
        if stamp_s < self._last_s:
            return
        self._last_s = float(stamp_s)
        self._q = np.array(q, dtype=np.float64)
        self._qd = np.array(qd, dtype=np.float64)
        self._fresh = True

    def request_stop(self, why: str = "stop requested") -> None:
        """Stop at the next check (Ctrl-C, an operator's button); safe from any thread."""
        self._stop_why = why
        self._stop_requested.set()

    def check(self, now_s: float, setpoint: np.ndarray) -> MonitorVerdict:
        """Whether ``setpoint`` (J,) may be sent at ``now_s``: go on, or stop with the hold to send instead.

        Once stopped, every later check returns the same verdict.
        """
        if self._verdict.stop:
            return self._verdict
        reason, detail = self._fault(now_s, np.asarray(setpoint, dtype=np.float64))
        self._fresh = False
        if reason is None:
            return _GO
        self._verdict = MonitorVerdict(True, reason, detail, self._q.copy(), float(now_s))
        return self._verdict

    def _fault(self, now_s: float, setpoint: np.ndarray) -> tuple[StopReason | None, str]:
        env = self.envelope
        if self._stop_requested.is_set():
            return StopReason.STOP_REQUESTED, self._stop_why
        age = now_s - self._last_s
        if age > env.state_timeout_s:
            return StopReason.STALE_STATE, (
                f"no joint state for {age:.3f} s (timeout {env.state_timeout_s:.3f} s, "
                f"last at {self._last_s:.3f} s)"
            )
        if not np.all(np.isfinite(self._q)) or not np.all(np.isfinite(self._qd)):
            return StopReason.OUTSIDE_ENVELOPE, "the joint state has NaN or infinite values"
        error = np.abs(setpoint - self._q)
        if not np.all(np.isfinite(setpoint)) or np.any(error > env.tracking_error_rad):
            j = int(np.nanargmax(np.where(np.isfinite(error), error, np.inf)))
            return StopReason.TRACKING_ERROR, (
                f"{self.joint_names[j]} is {error[j]:.3f} rad from its set-point "
                f"(bound {env.tracking_error_rad:.3f} rad)"
            )
        if not self._fresh:
            return None, ""  # the sample was judged at the last check
        outside = np.flatnonzero((self._q < self._lower) | (self._q > self._upper))
        if outside.size:
            j = int(outside[0])
            return StopReason.OUTSIDE_ENVELOPE, (
                f"{self.joint_names[j]} measured at {self._q[j]:.3f} rad, outside its allowed range "
                f"[{self._lower[j]:.3f}, {self._upper[j]:.3f}] rad"
            )
        fast = np.flatnonzero(np.abs(self._qd) > env.velocity_cap_rad_s)
        if fast.size:
            j = int(fast[0])
            return StopReason.OUTSIDE_ENVELOPE, (
                f"{self.joint_names[j]} measured moving at {self._qd[j]:.3f} rad/s, over the cap "
                f"{env.velocity_cap_rad_s:.3f} rad/s"
            )
        return None, ""
