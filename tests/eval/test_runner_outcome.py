"""The in-process runner ends an episode where the world judged it, and gives the policy episode time."""

from __future__ import annotations

import numpy as np
import pytest
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.episodes.sensor_arrays import episode_stamp
from r2s2r_eval.policy import Action, EpisodeInfo, Observation, ObservationKind, Policy

WORLD = "tabletop-pick-v1"
RATE_HZ = 6.25  # a 0.16 s period: the 30 s timeout falls inside a control period, not at its end


class _Still(Policy):
    """Holds the arm at its first measured position and records the stamps it is shown."""

    requires = frozenset({ObservationKind.JOINT_STATE})

    def reset(self, info: EpisodeInfo) -> None:
        self.info = info
        self.hold: np.ndarray | None = None
        self.stamps: list[float] = []

    def act(self, observation: Observation) -> Action:
        self.stamps.append(observation.stamp)
        if self.hold is None:
            self.hold = observation.positions(self.info.arm_joint_names)
        return Action(arm_positions=self.hold.copy(), gripper=self.info.gripper_command_range[1])


def test_the_episode_ends_at_the_verdict_inside_the_last_control_period() -> None:
    policy = _Still()
    with EpisodeRunner(WORLD) as runner:
        result = runner.run(policy, seed=4, control_rate_hz=RATE_HZ)
        verdict = runner.world.verdict
        timeout = runner.world.config.task.timeout
    period = 1.0 / RATE_HZ
    assert verdict is not None and verdict.reason == result.reason == "timeout"
    # The world judged at its 10 ms instants; the runner stepped to the end of that control period but
    # records the verdict's time and metrics, as the sim node does (it publishes at the judged step).
    assert result.duration_s == verdict.time_s and result.metrics == verdict.metrics
    assert timeout - 1e-9 <= result.duration_s <= timeout + 0.01 + 1e-9
    assert result.steps * period - result.duration_s > 0.05
    # The policy's time is since the episode's first observation, exact to the nanosecond of the period.
    assert policy.stamps[:3] == [0.0, episode_stamp(160_000_000), episode_stamp(320_000_000)]
    assert policy.stamps[-1] == pytest.approx((result.steps - 1) * period, abs=1e-12)
