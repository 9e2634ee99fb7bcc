"""The scripted policies' shared mover: each step moves the set-point by the time it stands for, so a policy
the node holds on stale observations catches up instead of stalling, and a long stall is capped."""

from __future__ import annotations

import math

import numpy as np
import pytest
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.policies.drawer import DrawerPolicy
from r2s2r_eval.policies.push import PushPolicy
from r2s2r_eval.policies.reference import ReferencePolicy
from r2s2r_eval.policies.scripted.motion import MAX_STEP_PERIODS, StepClock
from r2s2r_eval.policies.stack import StackPolicy
from r2s2r_eval.policies.topdown.policy import TopdownPolicy
from r2s2r_eval.policy import Action, Observation, Policy

# Every scripted policy on the world it is written for.
POLICIES = [
    ("tabletop-pick-v1", ReferencePolicy),
    ("tabletop-pick-v1", TopdownPolicy),
    ("tabletop-push-v1", PushPolicy),
    ("tabletop-stack-v1", StackPolicy),
    ("tabletop-drawer-v1", DrawerPolicy),
]
# The node calls the policy once every HOLD control periods (the others are held), for STEPS periods.
HOLD = MAX_STEP_PERIODS
STEPS = 4 * HOLD + 1


def test_step_clock_is_one_period_per_step_and_catches_up_capped() -> None:
    clock = StepClock(0.1)
    assert clock.tick(2.0) == 0.1  # the first step
    assert clock.tick(2.1) == 0.1 and clock.tick(2.23) == 0.1  # every step taken: one period each
    assert clock.elapsed == pytest.approx(0.23)
    assert clock.tick(2.53) == pytest.approx(0.3)  # two steps held: caught up
    assert clock.tick(3.53) == pytest.approx(MAX_STEP_PERIODS * 0.1)  # a long stall: capped
    assert clock.elapsed == pytest.approx(1.53 - (1.0 - MAX_STEP_PERIODS * 0.1))
    assert math.isnan(StepClock(0.1).elapsed)


def _run(runner: EpisodeRunner, policy: Policy, hold: int) -> tuple[np.ndarray, np.ndarray]:
    """First and last arm command over ``STEPS`` periods, the node calling the policy every ``hold``."""
    act = policy.act
    commands: list[Action] = []

    def held(obs: Observation) -> Action:
        # The node holds the policy on stale observations: it repeats the last command without calling it.
        if commands and len(commands) % hold:
            commands.append(commands[-1])
        else:
            commands.append(act(obs))
        return commands[-1]

    policy.act = held  # type: ignore[method-assign]
    result = runner.run(policy, 0, camera_rate_hz=1.0, max_steps=STEPS)
    assert len(commands) == STEPS, result
    return commands[0].arm_positions, commands[-1].arm_positions


@pytest.mark.parametrize(("world", "cls"), POLICIES, ids=[c[1].__name__ for c in POLICIES])
def test_held_policy_catches_up(world: str, cls: type[Policy]) -> None:
    """Called one step in five, the policy commands about where it does when called every step."""
    with EpisodeRunner(world, render_profile="fast") as runner:
        start, every = _run(runner, cls(), 1)
        _, held = _run(runner, cls(), HOLD)
    moved = float(np.linalg.norm(every - start))
    assert moved > 0.1, moved  # the arm is on its way
    # Moving one period per call leaves the held policy ~0.7 x the way short (a phase's end is checked only
    # when called, so even catching up it lags by up to 0.3 x).
    assert float(np.linalg.norm(held - every)) <= 0.5 * moved, (start, every, held)
