"""Joint trajectories and their spline, sampled in time as joint_trajectory_controller samples them.

Between two points the interpolation is linear when the points give only positions, a cubic when both give
velocities and a quintic when both give accelerations too (ros2_controllers' spline interpolator). Before the
first point the trajectory runs from the state it started from; after the last it holds the last point.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Sample", "Trajectory", "TrajectoryPoint"]


@dataclass(frozen=True)
class TrajectoryPoint:
    """One waypoint: positions (rad or m) at ``time_from_start`` (s), optionally velocities, accelerations."""

    time_from_start: float
    positions: np.ndarray
    velocities: np.ndarray | None = None
    accelerations: np.ndarray | None = None


@dataclass(frozen=True)
class Sample:
    """The desired state at one instant; ``before_last_point`` while the last point's time is ahead."""

    positions: np.ndarray
    velocities: np.ndarray
    accelerations: np.ndarray
    before_last_point: bool


def _coefficients(a: TrajectoryPoint, b: TrajectoryPoint, duration: float) -> tuple[np.ndarray, ...]:
    """Polynomial coefficients (in the time since ``a``) of the segment from ``a`` to ``b``."""
    p0, p1, t = a.positions, b.positions, duration
    if a.velocities is None or b.velocities is None:
        return p0, (p1 - p0) / t
    v0, v1 = a.velocities, b.velocities
    if a.accelerations is None or b.accelerations is None:
        c2 = (3.0 * (p1 - p0) - (2.0 * v0 + v1) * t) / t**2
        c3 = (2.0 * (p0 - p1) + (v0 + v1) * t) / t**3
        return p0, v0, c2, c3
    a0, a1 = a.accelerations, b.accelerations
    c3 = (20.0 * (p1 - p0) - (8.0 * v1 + 12.0 * v0) * t - (3.0 * a0 - a1) * t**2) / (2.0 * t**3)
    c4 = (30.0 * (p0 - p1) + (14.0 * v1 + 16.0 * v0) * t + (3.0 * a0 - 2.0 * a1) * t**2) / (2.0 * t**4)
    c5 = (12.0 * (p1 - p0) - 6.0 * (v1 + v0) * t - (a0 - a1) * t**2) / (2.0 * t**5)
    return p0, v0, 0.5 * a0, c3, c4, c5


def _evaluate(coeffs: Sequence[np.ndarray], tau: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Position, velocity and acceleration of the polynomial ``coeffs`` at ``tau``."""
    zero = np.zeros_like(coeffs[0])
    pos, vel, acc = zero.copy(), zero.copy(), zero.copy()
    for k, c in enumerate(coeffs):
        pos = pos + c * tau**k
        if k >= 1:
            vel = vel + k * c * tau ** (k - 1)
        if k >= 2:
            acc = acc + k * (k - 1) * c * tau ** (k - 2)
    return pos, vel, acc


class Trajectory:
    """A trajectory in the robot's joint order, started at ``start_time`` (s) from a start state.

    Args:
        start_time: when ``time_from_start`` counts from (s of the controller's clock).
        start: the state the trajectory starts from: the first segment runs from it to the first point. Its
            velocities and accelerations are used only where the first point gives them.
        points: waypoints with strictly increasing ``time_from_start`` (the goal's validation checks it).
    """

    def __init__(self, start_time: float, start: TrajectoryPoint, points: Sequence[TrajectoryPoint]) -> None:
        if not points:
            raise ValueError("a trajectory needs at least one point")
        self.start_time = start_time
        first = points[0]
        n = len(first.positions)
        start = TrajectoryPoint(
            0.0,
            np.asarray(start.positions, dtype=np.float64),
            _like(start.velocities, first.velocities, n),
            _like(start.accelerations, first.accelerations, n),
        )
        self._points = (start, *points)
        self._times = np.array([p.time_from_start for p in self._points])
        self._coeffs: list[tuple[np.ndarray, ...] | None] = [None] * (len(self._points) - 1)

    @property
    def end_time(self) -> float:
        """When the last point is due (s of the controller's clock)."""
        return self.start_time + float(self._times[-1])

    @property
    def last_point(self) -> TrajectoryPoint:
        """The trajectory's last waypoint."""
        return self._points[-1]

    def sample(self, t: float) -> Sample:
        """The desired state at time ``t`` (s of the controller's clock)."""
        since = t - self.start_time
        points = self._points
        if since >= self._times[-1]:
            return _at(points[-1], before_last_point=False)
        if since <= 0.0:
            return _at(points[0], before_last_point=True, still=True)
        i = int(np.searchsorted(self._times, since, side="right")) - 1
        a, b = points[i], points[i + 1]
        duration = b.time_from_start - a.time_from_start
        if duration <= 0.0:  # a first point at time 0: it is reached at once
            return _at(b, before_last_point=True)
        coeffs = self._coeffs[i]
        if coeffs is None:
            coeffs = self._coeffs[i] = _coefficients(a, b, duration)
        pos, vel, acc = _evaluate(coeffs, since - a.time_from_start)
        return Sample(pos, vel, acc, before_last_point=True)


def _like(value: np.ndarray | None, template: np.ndarray | None, n: int) -> np.ndarray | None:
    """The start state's ``value`` where the first point gives that derivative (zero if unknown)."""
    if template is None:
        return None
    return np.zeros(n) if value is None else np.asarray(value, dtype=np.float64)


def _at(point: TrajectoryPoint, *, before_last_point: bool, still: bool = False) -> Sample:
    """The state of ``point`` itself (``still``: at rest there, as before a trajectory starts)."""
    zero = np.zeros_like(point.positions)
    vel = zero if still or point.velocities is None else point.velocities
    acc = zero if still or point.accelerations is None else point.accelerations
    return Sample(point.positions.copy(), vel.copy(), acc.copy(), before_last_point)
