"""The privileged push expert: pushes the object into the target disc, is memoryless, and re-approaches."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.learning.demo_expert import privileged_expert
from r2s2r_eval.learning.push_expert import PushExpert
from r2s2r_eval.policy import Action, EpisodeInfo, Observation, Policy, PolicyError

WORLD = "tabletop-push-v1"


class _Traced(Policy):
    """Runs the expert and keeps its rules; ``on_step`` may disturb the world between steps."""

    requires = PushExpert.requires

    def __init__(self, expert: PushExpert, on_step=None) -> None:
        super().__init__()
        self.expert = expert
        self.rules: list[str] = []
        self.on_step = on_step

    @property
    def done(self) -> bool:
        return self.expert.done

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


def _object_to_target(runner: EpisodeRunner) -> float:
    task = runner.world.config.task
    obj, _ = runner.world.body_pose(task.object_body)
    target, _ = runner.world.site_pose(task.target_site)
    return float(np.linalg.norm(obj[:2] - target[:2]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expert_pushes_into_the_target(seed: int) -> None:
    with EpisodeRunner(WORLD) as runner:
        expert = privileged_expert(runner.world)
        assert isinstance(expert, PushExpert)
        traced = _Traced(expert)
        start = _object_to_target(runner)
        result = runner.run(traced, seed, control_rate_hz=10.0, camera_rate_hz=1e-3)
        end = _object_to_target(runner)
    phases = _phases(traced.rules)
    assert result.success, (result.reason, phases)
    assert phases[:3] == ["approach", "descend", "push"], phases
    assert phases[-1] == "leave" and traced.expert.done
    assert start > 0.1 and end < 0.02, (start, end)


def test_expert_is_memoryless() -> None:
    """A fresh expert given the same observation and world commands the same at every step."""
    with EpisodeRunner(WORLD) as runner:
        mismatches: list[int] = []

        class Compare(_Traced):
            def act(self, observation: Observation) -> Action:
                action = super().act(observation)
                fresh = PushExpert(runner.world)
                fresh.reset(self.expert._info)
                again = fresh.act(observation)
                if not np.allclose(again.arm_positions, action.arm_positions, atol=1e-9):
                    mismatches.append(len(self.rules))
                return action

        traced = Compare(PushExpert(runner.world))
        result = runner.run(traced, 3, control_rate_hz=10.0, camera_rate_hz=1e-3)
    assert result.success
    assert len(traced.rules) > 20
    assert mismatches == []


def test_expert_goes_round_again_when_the_object_slips_sideways() -> None:
    """Mid-push the object is moved 4 cm across the line: the expert rises, re-approaches and succeeds."""
    with EpisodeRunner(WORLD) as runner:
        world = runner.world
        body = world.model.body(world.config.task.object_body).id
        qadr = int(world.model.jnt_qposadr[world.model.body_jntadr[body]])
        moved = []

        def shove(traced: _Traced) -> None:
            if traced.rules.count("push") == 5 and not moved:
                world.data.qpos[qadr] += 0.04  # world x: across a push that runs along +y
                world.data.qvel[:] = 0.0
                mujoco.mj_forward(world.model, world.data)
                moved.append(True)

        traced = _Traced(PushExpert(world), on_step=shove)
        result = runner.run(traced, 0, control_rate_hz=10.0, camera_rate_hz=1e-3)
    phases = _phases(traced.rules)
    assert moved
    assert phases.count("push") >= 2 and "rise" in phases, phases
    assert result.success, (result.reason, phases)


def test_tasks_without_a_privileged_expert_are_named() -> None:
    with EpisodeRunner("tabletop-drawer-v1") as runner:
        with pytest.raises(PolicyError, match="'drawer' task; the privileged experts do pick-and-place"):
            privileged_expert(runner.world)
