"""``/diagnostics`` (diagnostic_msgs/DiagnosticArray) from a node's own counters, about once a wall second.

Each node hands a ``read(window)`` function that turns its counters into a :class:`Reading`; ``window`` holds
the counter rates over the last period (per wall second), so nodes need no timing code of their own.
The timer runs on the steady clock: diagnostics keep coming while the sim is paused or waits for a policy,
which is when they are wanted. The array's stamp is the node's clock (sim time under ``use_sim_time``), as
diagnostic_updater stamps it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType
from rclpy.node import Node

from r2s2r_sim.interface import Interface
from r2s2r_sim.ros.driver_io import interface_publisher

__all__ = [
    "ERROR",
    "OK",
    "WARN",
    "DiagnosticsPublisher",
    "RateWindow",
    "Reading",
    "evaluation_reading",
    "serving_reading",
]

OK, WARN, ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR
PERIOD_S = 1.0


@dataclass(frozen=True)
class Reading:
    """One status: level (``OK``/``WARN``/``ERROR``), a one-line message and named values (SI units)."""

    level: bytes
    message: str
    values: Mapping[str, object] = field(default_factory=dict)


class RateWindow:
    """Per-second rates of increasing counters between two calls of :meth:`update` (first call: 0)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last: dict[str, tuple[float, float]] = {}

    def update(self, counters: Mapping[str, float]) -> dict[str, float]:
        """Rates of ``counters`` (per wall second) since the previous call; new counters give 0."""
        now = self._clock()
        rates = {}
        for name, value in counters.items():
            then = self._last.get(name)
            rates[name] = (value - then[1]) / (now - then[0]) if then and now > then[0] else 0.0
            self._last[name] = (now, float(value))
        return rates


def _text(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


class DiagnosticsPublisher:
    """Publishes ``read(rates)`` as one ``DiagnosticStatus`` named ``<node name>: <name>`` every ``period_s``.

    Args:
        node: the node that publishes (its interface profile names the topic).
        iface: the interface profile (topic ``diagnostics``).
        name: what the status is about, e.g. ``simulation``.
        hardware_id: the device or world, e.g. the world id.
        counters: the node's increasing counters, sampled each period for :class:`RateWindow`.
        read: turns the rates into a :class:`Reading`.
    """

    def __init__(
        self,
        node: Node,
        iface: Interface,
        *,
        name: str,
        hardware_id: str,
        counters: Callable[[], Mapping[str, float]],
        read: Callable[[Mapping[str, float]], Reading],
        period_s: float = PERIOD_S,
    ) -> None:
        self._node = node
        self._name = f"{node.get_name()}: {name}"
        self.hardware_id = hardware_id
        self._counters, self._read = counters, read
        self._window = RateWindow()
        self._window.update(counters())
        self._pub = interface_publisher(node, iface, "diagnostics")
        self.published = 0
        self._timer = node.create_timer(period_s, self.publish, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def publish(self) -> None:
        """Sample the counters and publish one status."""
        reading = self._read(self._window.update(self._counters()))
        status = DiagnosticStatus(
            level=reading.level, name=self._name, message=reading.message, hardware_id=self.hardware_id
        )
        status.values = [KeyValue(key=k, value=_text(v)) for k, v in reading.values.items()]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self._node.get_clock().now().to_msg()
        self._pub.publish(msg)
        self.published += 1


# A real-time run slower than this fraction of the wall clock is reported as a warning.
MIN_REAL_TIME_FACTOR = 0.9


def serving_reading(
    rates: Mapping[str, float],
    *,
    running: bool,
    cameras: int,
    frames_dropped: int,
    episodes: int,
    paced: bool,
    sim_time: bool,
) -> Reading:
    """The status of a node serving the driver topics (the sim node or the emulated hardware).

    Args:
        rates: per-wall-second rates of the counters ``time_s`` (the served clock, s), ``frames`` (camera
            frames published, all cameras) and, for lockstep, ``lockstep_wait_s`` (wall s spent waiting for
            the policy); missing ones count as 0.
        running: the serving threads are alive.
        cameras: number of cameras served.
        frames_dropped: camera frames dropped so far (renderer busy).
        episodes: episodes ended (outcomes published, or resets for the emulated hardware).
        paced: the clock is meant to follow the wall clock (real-time factor ~1).
        sim_time: the node serves sim time (``/clock``) rather than the wall clock.

    Returns:
        ERROR when the serving threads stopped; WARN when paced below ``MIN_REAL_TIME_FACTOR`` or frames were
        dropped in the last period; else OK.
    """
    rtf = rates.get("time_s", 0.0)
    camera_hz = rates.get("frames", 0.0) / cameras if cameras else 0.0
    values: dict[str, object] = {
        "real_time_factor": rtf,
        "camera_rate_hz": camera_hz,
        "frames_dropped": frames_dropped,
        "frames_dropped_per_s": rates.get("frames_dropped", 0.0),
        "lockstep_wait_fraction": rates.get("lockstep_wait_s", 0.0),
        "episodes": episodes,
        "clock": "sim time (/clock)" if sim_time else "wall clock",
    }
    if not running:
        return Reading(ERROR, "stopped: the physics or render thread ended", values)
    problems = []
    if paced and rtf < MIN_REAL_TIME_FACTOR:
        problems.append(f"real-time factor {rtf:.2f} < {MIN_REAL_TIME_FACTOR}")
    if rates.get("frames_dropped", 0.0) > 0:
        problems.append(f"dropping camera frames ({frames_dropped} so far)")
    if problems:
        return Reading(WARN, "; ".join(problems), values)
    return Reading(OK, f"real-time factor {rtf:.2f}, cameras {camera_hz:.1f} Hz, {episodes} episodes", values)


def evaluation_reading(planned: int, outcomes: Mapping[str, int], seed: int | None) -> Reading:
    """The evaluator's status; always OK, since failed episodes are results, not faults.

    Args:
        planned: episodes the evaluator will run.
        outcomes: episodes with an outcome, by ``succeeded`` / ``failed``.
        seed: the seed of the episode running, ``None`` between episodes.
    """
    done = sum(outcomes.values())
    values: dict[str, object] = {
        "episodes_planned": planned,
        "episodes_with_outcome": done,
        **{f"episodes_{k}": v for k, v in outcomes.items()},
        "current_seed": "none" if seed is None else seed,
    }
    state = f"episode seed {seed} running" if seed is not None else "between episodes"
    return Reading(OK, f"{done}/{planned} episodes done, {state}", values)
