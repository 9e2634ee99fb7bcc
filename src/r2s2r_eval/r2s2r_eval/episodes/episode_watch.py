"""How an episode's wait ends: its outcome, a timeout, a lost policy or a lost world; and resumable keys.

The evaluator waits for an episode's end in short slices and, in each, asks a :class:`Liveness` on the
policy's acknowledgements whether the policy has gone silent. A silence is then told apart by probes: a world
(sim node or drivers) that does not answer is lost; a policy process that does not answer (or has left the
graph) is lost; a policy that answers but does not act (holding on stale observations under load) is only
reported, and the wait goes on to the episode's time limit. Pure Python: the node passes its callbacks in.
"""

from __future__ import annotations

import enum
import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from r2s2r_sim.serving.liveness import Liveness

__all__ = [
    "POLICY_LOST",
    "Ending",
    "EpisodeEnd",
    "PolicyLostError",
    "WorldLostError",
    "episode_key",
    "wait_episode_end",
]

POLICY_LOST = "policy_lost"  # the failure reason of an episode whose policy stopped answering


class PolicyLostError(RuntimeError):
    """The policy stopped answering and the evaluator was told to stop (not to wait for a restart)."""


class WorldLostError(RuntimeError):
    """The world (sim node or the robot's drivers) stopped answering: the run cannot go on."""


class EpisodeEnd(enum.Enum):
    """Why an episode's wait ended."""

    FINISHED = "finished"  # the awaited outcome (or done signal) arrived
    TIMEOUT = "timeout"  # episode_timeout_s of wall time passed with a live policy and world
    POLICY_LOST = "policy_lost"
    WORLD_LOST = "world_lost"


@dataclass(frozen=True)
class Ending:
    """How and after how long (s, wall clock) an episode's wait ended; ``detail`` says why in words."""

    end: EpisodeEnd
    waited_s: float
    detail: str = ""


def wait_episode_end(
    cv: threading.Condition,
    finished: Callable[[], bool],
    *,
    timeout_s: float,
    policy: Liveness,
    policy_publishers: Callable[[], int],
    world_alive: Callable[[], bool],
    policy_alive: Callable[[], bool],
    what: str,
    policy_replaced: Callable[[], bool] = lambda: False,
    on_silent: Callable[[float], None] = lambda _s: None,
    poll_s: float = 0.2,
    clock: Callable[[], float] = time.monotonic,
) -> Ending:
    """Wait on ``cv`` until ``finished()`` (checked under ``cv``), a timeout, or a lost policy or world.

    Args:
        cv: the condition the outcome callbacks notify.
        finished: the end the episode waits for (called with ``cv`` held).
        timeout_s: the episode's wall-clock limit (s).
        policy: armed watchdog on the policy's acknowledgements; its expiry ends the wait.
        policy_publishers: number of live publishers of the acknowledgement topic; 0 for longer than a
            second (while silent) ends the wait sooner than the watchdog (a policy that exited cleanly).
        world_alive: probe of the world, asked when the policy is silent or the time is up (may block
            for a bounded time).
        policy_alive: probe of the policy's process, asked when it is silent (bounded time).
        what: the policy's acknowledgement topic, for the detail text.
        policy_replaced: whether another policy process took over during the episode (a respawn): the
            episode's policy is then lost, whatever the new one does.
        on_silent: told the silence (s) of a policy that answers the probe but does not act.
        poll_s: slice of each wait (s).
        clock: monotonic time source (s).
    """
    started = clock()
    deadline = started + timeout_s
    while True:
        with cv:
            if cv.wait_for(finished, poll_s):
                return Ending(EpisodeEnd.FINISHED, clock() - started)
        now = clock()
        if policy_replaced():
            return Ending(
                EpisodeEnd.POLICY_LOST, now - started, f"the policy was restarted during the episode ({what})"
            )
        silent = policy.expired()
        if silent is None and policy.silence() > 1.0 and policy_publishers() == 0:
            silent = policy.silence()
        if silent is not None:
            if not world_alive():
                return Ending(EpisodeEnd.WORLD_LOST, now - started, "the world does not answer")
            publishers = policy_publishers()
            if publishers and policy_alive():
                on_silent(silent)
                policy.arm()  # alive but holding: ask again after another timeout
            else:
                return Ending(
                    EpisodeEnd.POLICY_LOST,
                    now - started,
                    f"no acknowledgement on {what} for {silent:.1f} s, "
                    + ("the policy's node does not answer" if publishers else "no publisher left")
                    + ", while the world answers",
                )
        if now >= deadline:
            if not world_alive():
                return Ending(EpisodeEnd.WORLD_LOST, now - started, "the world does not answer")
            return Ending(EpisodeEnd.TIMEOUT, now - started, f"no outcome within {timeout_s:g} s")


def episode_key(*, mode: str, policy: str, parameters: Mapping[str, Any], world: str, seed: int) -> str:
    """The evaluator's identity of one episode; a store that holds it has that episode (resume skips it).

    Same mode, policy, policy parameters, world and seed: the same episode, whichever run recorded it.
    """
    params = hashlib.sha256(json.dumps(dict(parameters), sort_keys=True).encode()).hexdigest()[:16]
    return f"evaluator/{mode}/{policy}/{params}/{world}/seed={int(seed)}"
