"""Wall-clock watchdog of a peer that must keep answering: the one rule behind "no silent waits".

A :class:`Liveness` is armed when an answer is due (an episode starts, an observation is published), fed on
each answer (:meth:`beat`) and asked whether the silence has outlived its timeout (:meth:`expired`), which
reports each silence once. It knows nothing of ROS: the nodes feed it from their callbacks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["Liveness"]


class Liveness:
    """Armed/disarmed silence timer on a monotonic clock; thread-safe.

    Args:
        timeout_s: silence (s, wall clock) after which the peer counts as lost; 0 disables the watchdog.
        clock: monotonic time source in seconds (injected by tests).

    Raises:
        ValueError: a negative or non-finite ``timeout_s``.
    """

    def __init__(self, timeout_s: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        """Create a disarmed watchdog."""
        if not timeout_s >= 0.0 or timeout_s == float("inf"):
            raise ValueError(f"timeout_s must be a finite number >= 0, got {timeout_s}")
        self.timeout_s = float(timeout_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._armed = False
        self._fired = False
        self._since = 0.0
        self.beats = 0
        self.expirations = 0

    def arm(self) -> None:
        """Start waiting for answers now (the silence counts from here)."""
        with self._lock:
            self._armed, self._fired, self._since = True, False, self._clock()

    def disarm(self) -> None:
        """Stop watching (nothing is due)."""
        with self._lock:
            self._armed = False

    def beat(self) -> None:
        """An answer arrived: the silence restarts, and a reported loss is over."""
        with self._lock:
            self._since = self._clock()
            self._fired = False
            self.beats += 1

    def silence(self) -> float:
        """Seconds since the last answer (or since :meth:`arm`)."""
        with self._lock:
            return self._clock() - self._since

    def expired(self) -> float | None:
        """The silence (s) the first time it exceeds the timeout while armed; None otherwise."""
        with self._lock:
            if not self._armed or self._fired or self.timeout_s == 0.0:
                return None
            silence = self._clock() - self._since
            if silence < self.timeout_s:
                return None
            self._fired = True
            self.expirations += 1
            return silence
