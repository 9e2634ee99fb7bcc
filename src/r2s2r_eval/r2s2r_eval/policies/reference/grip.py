"""Grasp and slip judgement of a parallel gripper from its measured finger joint (what hardware gives)."""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["GripMonitor", "GripState", "closure_fraction"]


def closure_fraction(position: float, command_range: tuple[float, float]) -> float:
    """How closed the fingers are: 0 at the open command, 1 at the closed one (unclipped).

    Args:
        position: the measured position of the gripper's first joint, in the units of ``command_range``
            (the world's ``gripper.command_range`` is given in that joint's units).
        command_range: ``(open, closed)`` gripper command.

    Raises:
        ValueError: the two ends of ``command_range`` are equal.
    """
    open_cmd, closed_cmd = command_range
    if open_cmd == closed_cmd:
        raise ValueError(f"gripper command_range: open and closed must differ, got {command_range}")
    return (position - open_cmd) / (closed_cmd - open_cmd)


class GripState(enum.Enum):
    """What the finger joint says about the object between the fingers."""

    HELD = "held"
    WEAK = "weak"  # the fingers creep closed: the object turns or slides in the grip
    SLIPPED = "slipped"  # the fingers closed on nothing: the object is gone


@dataclass(frozen=True, kw_only=True)
class GripMonitor:
    """Thresholds on the finger closure (fraction of the gripper's range) that judge a grasp.

    A parallel gripper closing on an object stops short of fully closed; closing on nothing it reaches the
    closed end.  Once the object is held, the fingers creeping further closed (``weak_drift``) means the
    object is turning or sliding in the grip, and closing by ``slip_drift`` (or to ``empty_closure``) means
    it has gone.

    A real gripper reports its position with noise (encoder counts, electrical noise): one sample's scatter
    can exceed ``weak_drift``.  So while carrying, :meth:`judge` compares medians, the closure over the
    first ``window_s`` after the grasp against the closure over the last ``window_s``, and widens both
    drifts by four standard errors of that difference, the noise read from the samples themselves (the
    scatter of successive samples; a slow creep barely adds to it).  Without noise that margin is zero.

    Attributes:
        empty_closure: closure at or beyond which the fingers hold nothing; in (0, 1.5].
        weak_drift: closure increase since the grasp that marks a weak grip; > 0.
        slip_drift: closure increase since the grasp that marks a lost object; > ``weak_drift``.
        window_s: span of the medians (s); > 0.
    """

    empty_closure: float = 0.93
    weak_drift: float = 0.02
    slip_drift: float = 0.12
    window_s: float = 0.4

    def __post_init__(self) -> None:
        if not (math.isfinite(self.empty_closure) and 0.0 < self.empty_closure <= 1.5):
            raise ValueError(f"empty_closure: must be in (0, 1.5], got {self.empty_closure}")
        if not (math.isfinite(self.weak_drift) and self.weak_drift > 0.0):
            raise ValueError(f"weak_drift: must be > 0, got {self.weak_drift}")
        if not (math.isfinite(self.slip_drift) and self.slip_drift > self.weak_drift):
            raise ValueError(f"slip_drift: must be > weak_drift ({self.weak_drift}), got {self.slip_drift}")
        if not (math.isfinite(self.window_s) and self.window_s > 0.0):
            raise ValueError(f"window_s: must be > 0, got {self.window_s}")

    def grasped(self, closure: float) -> bool:
        """The fingers stopped on something after closing."""
        return closure < self.empty_closure

    def state(self, grasp_closure: float, closure: float, margin: float = 0.0) -> GripState:
        """The grip now (``closure``), given the closure when the grasp was confirmed.

        ``margin`` widens the drifts by the measurement's own uncertainty.
        """
        drift = closure - grasp_closure
        if closure >= self.empty_closure + margin or drift >= self.slip_drift + margin:
            return GripState.SLIPPED
        if drift >= self.weak_drift + margin:
            return GripState.WEAK
        return GripState.HELD

    def judge(self, held: Sequence[tuple[float, float]]) -> GripState:
        """The grip from the ``(stamp, closure)`` samples since the grasp was confirmed (class docstring)."""
        stamps = np.array([s for s, _ in held], dtype=np.float64)
        values = np.array([v for _, v in held], dtype=np.float64)
        first = values[stamps <= stamps[0] + self.window_s]
        last = values[stamps >= stamps[-1] - self.window_s]
        # Robust per-sample noise from successive differences (MAD; a difference holds two samples' noise).
        noise = 0.0
        if values.size > 2:
            noise = 1.4826 * float(np.median(np.abs(np.diff(values)))) / math.sqrt(2.0)
        # A median's standard error is about 1.25 times the mean's.
        margin = 4.0 * 1.2533 * noise * math.sqrt(1.0 / first.size + 1.0 / last.size)
        return self.state(float(np.median(first)), float(np.median(last)), margin)
