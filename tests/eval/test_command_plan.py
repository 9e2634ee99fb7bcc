"""TrajectoryCommandPlan: one streamed point per action, a gripper goal only when the target moves."""

from __future__ import annotations

import numpy as np
import pytest
from r2s2r_eval.episodes.command_plan import ArmPoint, GripperGoal, TrajectoryCommandPlan
from r2s2r_eval.policy import Action

JOINTS = ("j1", "j2", "j3")


def _plan(**kw: object) -> TrajectoryCommandPlan:
    args: dict = {"arm_joints": JOINTS, "period": 0.1, "gripper_range": (0.0, 0.04), "max_effort": 20.0}
    return TrajectoryCommandPlan(**{**args, **kw})


def _act(arm: list[float], gripper: float) -> Action:
    return Action(arm_positions=np.array(arm), gripper=gripper)


def test_arm_point_reaches_the_targets_one_period_ahead() -> None:
    point = _plan(period=0.05).arm_point(_act([0.1, -0.2, 0.3], 0.0))
    assert point == ArmPoint(JOINTS, (0.1, -0.2, 0.3), 0.05)


def test_arm_point_refuses_the_wrong_number_of_joints() -> None:
    with pytest.raises(ValueError, match="2 arm positions, the arm has 3 joints"):
        _plan().arm_point(_act([0.1, 0.2], 0.0))


def test_gripper_goal_on_change_and_at_each_episode_start() -> None:
    plan = _plan()
    arm = [0.0, 0.0, 0.0]
    assert plan.gripper_goal(_act(arm, 0.04), first=False) == GripperGoal(0.04, 20.0)  # none sent yet
    assert plan.gripper_goal(_act(arm, 0.04), first=True) == GripperGoal(0.04, 20.0)
    assert plan.gripper_goal(_act(arm, 0.04), first=False) is None
    assert plan.gripper_goal(_act(arm, 0.04 - 1e-6), first=False) is None  # within 0.1 % of the range
    assert plan.gripper_goal(_act(arm, 0.0), first=False) == GripperGoal(0.0, 20.0)
    assert plan.gripper_goal(_act(arm, 0.0), first=True) == GripperGoal(0.0, 20.0)  # a new episode
    assert plan.gripper_goal(_act(arm, 0.0), first=False) is None
    plan.forget_gripper()  # the goal did not go out: sent again
    assert plan.gripper_goal(_act(arm, 0.0), first=False) == GripperGoal(0.0, 20.0)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"arm_joints": ()}, "at least one joint"),
        ({"period": 0.0}, "period must be"),
        ({"period": float("nan")}, "period must be"),
        ({"max_effort": -1.0}, "max_effort must be"),
        ({"max_effort": float("inf")}, "max_effort must be"),
    ],
)
def test_bad_settings_are_refused(kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _plan(**kw)
