"""The grasp trial of `r2s2r world check`: the arm's own servos approach, close and lift the task object from
the table at the centre and two corners of its start region, and a gripper that cannot grasp it fails."""

from __future__ import annotations

from pathlib import Path

from conftest import edit_yaml
from r2s2r_sim.authoring.grasp_trial import grasp_trial
from r2s2r_sim.authoring.world_check import check_world
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import WORLDS


def test_the_bundled_gripper_lifts_the_cube_across_its_region() -> None:
    world = SimWorld(WORLDS["tabletop-pick-v1"])
    trial = grasp_trial(world, 0.55, 0.05)
    assert trial.reached and trial.held
    assert 0.09 <= trial.lifted_m <= 0.101  # rose with the tool, a few mm of slip at most
    report = check_world(WORLDS["tabletop-pick-v1"], picture=None)
    assert report.text().count(": held, lifted") == 3, report.text()


def test_fingers_that_open_less_than_the_cube_fail_the_trial(world_copy: Path) -> None:
    """Opened 8 mm a finger (16 mm in all) the fingers land on the 40 mm cube: the squeeze test, which
    closes them inside it, would hold it; lifted from the table it stays there."""
    edit_yaml(
        world_copy,
        lambda d: d["robot"]["gripper"].update(command_range=[0.008, 0.0], ctrl_range=[0.008, 0.0]),
    )
    trial = grasp_trial(SimWorld(world_copy), 0.45, -0.05)
    assert trial.reached and not trial.held
    assert trial.lifted_m < 0.02
    errors = check_world(world_copy, picture=None).errors
    assert any("grasp trial" in e and "slipped" in e and "does not hold the object" in e for e in errors), (
        errors
    )
