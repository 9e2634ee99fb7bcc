"""The /diagnostics core: counter rates and the serving nodes' status levels."""

from __future__ import annotations

import pytest

pytest.importorskip("diagnostic_msgs", reason="diagnostic_msgs is not installed; run `make setup`")

from r2s2r_sim.ros.diagnostics import (  # noqa: E402
    ERROR,
    OK,
    WARN,
    RateWindow,
    evaluation_reading,
    serving_reading,
)


def test_rate_window_gives_per_second_rates_between_calls() -> None:
    now = [10.0]
    window = RateWindow(clock=lambda: now[0])
    assert window.update({"frames": 5, "time_s": 1.0}) == {"frames": 0.0, "time_s": 0.0}
    now[0] = 12.0
    assert window.update({"frames": 35, "time_s": 2.0}) == {"frames": 15.0, "time_s": 0.5}
    assert window.update({"frames": 35, "time_s": 2.0}) == {"frames": 0.0, "time_s": 0.0}  # no time passed


def _reading(**kw: object) -> object:
    args = {
        "running": True,
        "cameras": 2,
        "frames_dropped": 0,
        "episodes": 3,
        "paced": True,
        "sim_time": True,
    }
    args.update(kw)
    rates = args.pop("rates", {"time_s": 1.0, "frames": 30.0})
    return serving_reading(rates, **args)  # type: ignore[arg-type]


def test_serving_reading_values_and_ok() -> None:
    r = _reading()
    assert r.level == OK
    assert r.values["real_time_factor"] == 1.0 and r.values["camera_rate_hz"] == 15.0
    assert r.values["episodes"] == 3 and r.values["frames_dropped"] == 0
    assert r.message == "real-time factor 1.00, cameras 15.0 Hz, 3 episodes"


def test_serving_reading_warns_on_slow_pacing_and_drops_and_errors_when_stopped() -> None:
    assert _reading(rates={"time_s": 0.5, "frames": 30.0}).level == WARN
    assert _reading(rates={"time_s": 0.5}, paced=False).level == OK  # as fast as possible / lockstep
    dropping = _reading(rates={"time_s": 1.0, "frames_dropped": 2.0}, frames_dropped=7)
    assert dropping.level == WARN and "dropping camera frames (7 so far)" in dropping.message
    stopped = _reading(running=False)
    assert stopped.level == ERROR and stopped.message.startswith("stopped")


def test_evaluation_reading_counts_episodes() -> None:
    r = evaluation_reading(5, {"succeeded": 2, "failed": 1}, 7)
    assert r.level == OK and r.message == "3/5 episodes done, episode seed 7 running"
    assert r.values == {
        "episodes_planned": 5,
        "episodes_with_outcome": 3,
        "episodes_succeeded": 2,
        "episodes_failed": 1,
        "current_seed": 7,
    }
    assert evaluation_reading(5, {"succeeded": 0, "failed": 0}, None).message.endswith("between episodes")
