"""Test policies for the sweep tests (imported by the sweep's worker processes)."""

from __future__ import annotations

import os

from r2s2r_eval.policy import Action, EpisodeInfo, Observation, Policy


class CrashingPolicy(Policy):
    """Ends its worker process on the first action, as a crash in a native library would.

    A policy that raises is a failed episode (``policy_error``), a result; a worker that dies is an error
    of the sweep (``worker_crashed``), the kind no check before the episodes can catch.
    """

    def reset(self, info: EpisodeInfo) -> None:
        self._info = info

    def act(self, observation: Observation) -> Action:
        os._exit(70)


class RaisingPolicy(Policy):
    """Raises on its first action: the episode ends as a failure of the policy (``policy_error``)."""

    def reset(self, info: EpisodeInfo) -> None:
        self._info = info

    def act(self, observation: Observation) -> Action:
        raise RuntimeError("raising policy: act() always fails")
