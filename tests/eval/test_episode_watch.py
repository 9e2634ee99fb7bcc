"""How an episode's wait ends: outcome, timeout, lost policy (world answers) or lost world."""

from __future__ import annotations

import threading

import pytest
from r2s2r_eval.episodes.episode_watch import EpisodeEnd, episode_key, wait_episode_end
from r2s2r_sim.serving.liveness import Liveness


class FakeClock:
    """Advances by the poll slice each time the condition is waited on (no real waiting)."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class TickingCondition:
    """A Condition stand-in whose wait_for advances the fake clock by the timeout instead of sleeping."""

    def __init__(self, clock: FakeClock, on_tick=None) -> None:  # type: ignore[no-untyped-def]
        self.clock = clock
        self.on_tick = on_tick
        self._lock = threading.Lock()

    def __enter__(self) -> TickingCondition:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def wait_for(self, predicate, timeout):  # type: ignore[no-untyped-def]
        if predicate():
            return True
        self.clock.t += timeout
        if self.on_tick:
            self.on_tick(self.clock.t)
        return predicate()


def _wait(
    clock: FakeClock,
    cv: TickingCondition,
    finished,
    *,
    publishers=1,
    world=True,
    policy=False,  # type: ignore[no-untyped-def]
    timeout=60.0,
):
    watch = Liveness(5.0, clock=clock)
    watch.arm()
    cv.watch = watch  # type: ignore[attr-defined]
    probes: list[float] = []
    silences: list[float] = []
    cv.silences = silences  # type: ignore[attr-defined]

    def world_alive() -> bool:
        probes.append(clock.t)
        return world

    end = wait_episode_end(
        cv,  # type: ignore[arg-type]
        finished,
        timeout_s=timeout,
        policy=watch,
        policy_publishers=lambda: publishers,
        world_alive=world_alive,
        policy_alive=lambda: policy,
        what="/ack",
        on_silent=silences.append,
        poll_s=0.5,
        clock=clock,
    )
    return end, probes


def test_outcome_ends_the_wait() -> None:
    clock = FakeClock()
    done = {"v": False}

    def tick(t: float) -> None:
        cv.watch.beat()  # type: ignore[attr-defined]
        done["v"] = t >= 3.0

    cv = TickingCondition(clock, tick)
    end, probes = _wait(clock, cv, lambda: done["v"])
    assert end.end is EpisodeEnd.FINISHED and end.waited_s == pytest.approx(3.0) and probes == []


def test_silent_policy_with_a_live_world_is_lost_after_the_timeout() -> None:
    clock = FakeClock()
    cv = TickingCondition(clock)
    end, probes = _wait(clock, cv, lambda: False)
    assert end.end is EpisodeEnd.POLICY_LOST
    assert 5.0 <= end.waited_s <= 5.5 and "no acknowledgement on /ack for 5" in end.detail
    assert "the policy's node does not answer" in end.detail
    assert len(probes) == 1


def test_policy_without_publishers_is_lost_sooner() -> None:
    clock = FakeClock()
    cv = TickingCondition(clock)
    end, _ = _wait(clock, cv, lambda: False, publishers=0)
    assert end.end is EpisodeEnd.POLICY_LOST and end.waited_s < 2.0 and "no publisher left" in end.detail


def test_a_silent_policy_whose_node_answers_is_reported_not_lost() -> None:
    clock = FakeClock()
    cv = TickingCondition(clock)
    end, _ = _wait(clock, cv, lambda: False, policy=True, timeout=17.0)
    assert end.end is EpisodeEnd.TIMEOUT  # holding on stale observations: the time limit ends it
    assert len(cv.silences) == 3 and all(5.0 <= s <= 5.5 for s in cv.silences)  # type: ignore[attr-defined]


def test_silence_with_a_dead_world_is_the_world_lost() -> None:
    clock = FakeClock()
    cv = TickingCondition(clock)
    end, _ = _wait(clock, cv, lambda: False, world=False)
    assert end.end is EpisodeEnd.WORLD_LOST


def test_timeout_with_a_live_policy_and_world() -> None:
    clock = FakeClock()
    cv = TickingCondition(clock, lambda t: cv.watch.beat())  # type: ignore[attr-defined]
    end, probes = _wait(clock, cv, lambda: False, timeout=10.0)
    assert end.end is EpisodeEnd.TIMEOUT and end.waited_s == pytest.approx(10.0) and len(probes) == 1


def test_episode_key_names_mode_policy_parameters_world_and_seed() -> None:
    base = dict(mode="sim", policy="reference", parameters={"a": 1, "b": 2}, world="w", seed=3)
    key = episode_key(**base)  # type: ignore[arg-type]
    assert key.startswith("evaluator/sim/reference/") and key.endswith("/w/seed=3")
    assert episode_key(**{**base, "parameters": {"b": 2, "a": 1}}) == key  # type: ignore[arg-type]
    for change in (
        {"seed": 4},
        {"mode": "real"},
        {"parameters": {"a": 2, "b": 2}},
        {"world": "v"},
        {"policy": "bc"},
    ):
        assert episode_key(**{**base, **change}) != key  # type: ignore[arg-type]


def test_a_policy_replaced_during_the_episode_is_lost_even_if_the_new_one_acts() -> None:
    clock = FakeClock()
    cv = TickingCondition(clock, lambda t: cv.watch.beat())  # type: ignore[attr-defined]
    watch = Liveness(5.0, clock=clock)
    watch.arm()
    cv.watch = watch  # type: ignore[attr-defined]
    end = wait_episode_end(
        cv,  # type: ignore[arg-type]
        lambda: False,
        timeout_s=60.0,
        policy=watch,
        policy_publishers=lambda: 1,
        world_alive=lambda: True,
        policy_alive=lambda: True,
        what="/ack",
        policy_replaced=lambda: clock.t >= 2.0,
        poll_s=0.5,
        clock=clock,
    )
    assert end.end is EpisodeEnd.POLICY_LOST and "restarted during the episode" in end.detail
    assert end.waited_s == pytest.approx(2.0)
