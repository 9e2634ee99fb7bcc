"""The privileged demonstration expert: succeeds, is memoryless, and recovers from a missed grasp."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.learning.demo_expert import PrivilegedExpert
from r2s2r_eval.policy import Action, EpisodeInfo, Observation, Policy

WORLD = "tabletop-pick-v1"


class _Traced(Policy):
    """Runs the expert and keeps its rules; ``on_step`` may disturb the world between steps."""

    requires = PrivilegedExpert.requires

    def __init__(self, expert: PrivilegedExpert, on_step=None) -> None:
        super().__init__()
        self.expert = expert
        self.rules: list[str] = []
        self.on_step = on_step

    @property
    def done(self) -> bool:
        return self.expert.done  # the episode ends where the expert's would

    def reset(self, info: EpisodeInfo) -> None:
        self.expert.reset(info)
        self.rules = []

    def act(self, observation: Observation) -> Action:
        action = self.expert.act(observation)
        self.rules.append(self.expert.rule)
        if self.on_step is not None:
            self.on_step(self)
        return action


def _phases(rules: list[str]) -> list[str]:
    return [r for i, r in enumerate(rules) if i == 0 or rules[i - 1] != r]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expert_picks_and_places(seed: int) -> None:
    with EpisodeRunner(WORLD) as runner:
        traced = _Traced(PrivilegedExpert(runner.world))
        result = runner.run(traced, seed, control_rate_hz=10.0, camera_rate_hz=1e-3)
    assert result.success, (result.reason, _phases(traced.rules))
    assert _phases(traced.rules)[-5:] == ["lift", "carry", "lower", "release", "leave"]
    assert traced.expert.done


def test_expert_is_memoryless() -> None:
    """At every step a fresh expert, given the same observation and world, commands the same: no hidden
    phase or timer, which is what makes the labels learnable from the observed state."""
    with EpisodeRunner(WORLD) as runner:
        mismatches: list[int] = []

        class Compare(_Traced):
            def act(self, observation: Observation) -> Action:
                action = super().act(observation)
                fresh = PrivilegedExpert(runner.world)
                fresh.reset(self.expert._info)
                again = fresh.act(observation)
                if not (
                    np.allclose(again.arm_positions, action.arm_positions, atol=1e-9)
                    and again.gripper == action.gripper
                ):
                    mismatches.append(len(self.rules))
                return action

        traced = Compare(PrivilegedExpert(runner.world))
        result = runner.run(traced, 3, control_rate_hz=10.0, camera_rate_hz=1e-3)
    assert result.success
    assert len(traced.rules) > 20
    assert mismatches == []


def test_expert_regrasps_after_a_miss() -> None:
    """The cube is pushed 3 cm away while the gripper closes: the expert opens, re-approaches, succeeds."""
    with EpisodeRunner(WORLD) as runner:
        world = runner.world
        body = world.model.body(world.config.task.object_body).id
        qadr = int(world.model.jnt_qposadr[world.model.body_jntadr[body]])
        pushed = []

        def push(traced: _Traced) -> None:
            if traced.rules[-1] == "close" and not pushed:
                world.data.qpos[qadr] += 0.03
                world.data.qvel[:] = 0.0
                mujoco.mj_forward(world.model, world.data)
                pushed.append(True)

        traced = _Traced(PrivilegedExpert(world), on_step=push)
        result = runner.run(traced, 0, control_rate_hz=10.0, camera_rate_hz=1e-3)
    phases = _phases(traced.rules)
    assert pushed
    assert "regrasp" in phases or phases.count("descend") >= 2, phases
    assert phases.count("close") >= 2, phases
    assert result.success, (result.reason, phases)
