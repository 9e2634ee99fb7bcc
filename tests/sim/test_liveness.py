"""The silence watchdog behind every bounded wait."""

from __future__ import annotations

import pytest
from r2s2r_sim.serving.liveness import Liveness


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_fires_once_per_silence_only_while_armed() -> None:
    clock = FakeClock()
    watch = Liveness(2.0, clock=clock)
    clock.t += 10
    assert watch.expired() is None  # disarmed: nothing is due
    watch.arm()
    clock.t += 1.9
    assert watch.expired() is None
    clock.t += 0.2
    assert watch.expired() == pytest.approx(2.1)
    assert watch.expired() is None  # reported once
    watch.beat()
    clock.t += 2.5
    assert watch.expired() == pytest.approx(2.5)  # a new silence after an answer is reported again
    assert watch.expirations == 2 and watch.beats == 1
    watch.disarm()
    clock.t += 10
    assert watch.expired() is None


def test_rearming_restarts_the_silence() -> None:
    clock = FakeClock()
    watch = Liveness(1.0, clock=clock)
    watch.arm()
    clock.t += 0.9
    watch.arm()
    clock.t += 0.9
    assert watch.expired() is None and watch.silence() == pytest.approx(0.9)


def test_zero_timeout_never_fires() -> None:
    clock = FakeClock()
    watch = Liveness(0.0, clock=clock)
    watch.arm()
    clock.t += 1e6
    assert watch.expired() is None


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_invalid_timeout_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="timeout_s must be a finite number >= 0"):
        Liveness(bad)
