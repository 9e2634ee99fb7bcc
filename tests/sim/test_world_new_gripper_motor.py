"""Grippers as robot files have them: one on a force motor gets a position servo in the world (not its
opening sent as a force), one that opens too little for the task's cube is refused with the figures, and
fingers that touch at home are excluded from contact in the world's own world.yaml.

The robots are edits of the bundled arm, written here, so nothing depends on ../shared.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import pytest
import yaml
from r2s2r_sim.authoring.world_check import check_world, self_contacts
from r2s2r_sim.cli.main import main as r2s2r
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import WORLDS


def _motor_gripper(tmp: Path, finger_range: str) -> Path:
    """The bundled arm with its gripper servo replaced by a force motor on one finger (the other follows
    through the joint equality), its fingers sliding over ``finger_range``."""
    robot = shutil.copytree(WORLDS["tabletop-pick-v1"] / "robot", tmp / "robot") / "arm6.xml"
    text = robot.read_text()
    text = text[: text.index("<tendon>")] + text[text.index("</tendon>") + len("</tendon>") :]
    start = text.index('<position name="gripper"')
    text = (
        text[:start]
        + '<motor name="gripper" joint="right_finger" ctrlrange="-5 5"/>'
        + text[text.index("/>", start) + 2 :]
    )
    text = text.replace('type="slide" range="0 0.045"', f'type="slide" range="{finger_range}"')
    robot.write_text(text)
    return robot


def _world_new(robot: Path, out: Path) -> tuple[int, str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = r2s2r(["world", "new", "--robot", str(robot), "--out", str(out)])
    return code, printed.getvalue()


def test_a_force_motor_gripper_gets_a_position_servo(tmp_path: Path) -> None:
    robot = _motor_gripper(tmp_path, "0 0.045")
    out = tmp_path / "world"
    code, printed = _world_new(robot, out)
    assert code == 0, printed
    assert "force motors drive the gripper joints ['right_finger']" in printed
    assert "gripper: opens 90 mm" in printed
    assert yaml.safe_load((out / "world.yaml").read_text())["robot"]["servos"]["kp"] > 0
    world = SimWorld(out)
    model = world.model
    act = model.actuator("gripper").id
    assert model.actuator_gainprm[act, 0] == pytest.approx(-model.actuator_biasprm[act, 1])  # a servo
    assert model.actuator_forcerange[act] == pytest.approx([-5.0, 5.0])  # the motor's force limit
    world.reset(0)
    g = world.config.robot.gripper
    assert g is not None
    for command in g.command_range:
        world.set_gripper_command(command)
        world.step(600)
        assert world.joint_state()[0][-1] == pytest.approx(command, abs=0.003)


def test_a_gripper_that_opens_less_than_the_cube_is_refused(tmp_path: Path) -> None:
    robot = _motor_gripper(tmp_path, "0 0.008")
    out = tmp_path / "world"
    code, printed = _world_new(robot, out)
    assert code == 2
    assert (
        "the gripper opens 16 mm between its fingers; the table task's 40 mm cube needs at least 46 mm"
        in printed
    )
    assert not (out / "world.yaml").exists()


def test_fingers_that_touch_at_home_are_excluded_in_the_worlds_scene(tmp_path: Path) -> None:
    """Fingers that collide with each other and overlap 4 mm in the home pose (closed): `world new` excludes
    the pair in the world's own world.yaml and leaves the robot file as it was."""
    robot = shutil.copytree(WORLDS["tabletop-pick-v1"] / "robot", tmp_path / "robot") / "arm6.xml"
    text = robot.read_text()
    text = text.replace(
        '<geom type="box" size="0.008 0.006 0.025"',
        '<geom type="box" size="0.008 0.006 0.025" contype="3" conaffinity="3"',
    )
    text = text.replace('pos="0 0.006 0"', 'pos="0 0.004 0"').replace('pos="0 -0.006 0"', 'pos="0 -0.004 0"')
    text = text.replace(
        'qpos="0 0.3 1.6 0 1.2416 0 0.04 0.04" ctrl="0 0.3 1.6 0 1.2416 0 0.04"',
        'qpos="0 0.3 1.6 0 1.2416 0 0 0" ctrl="0 0.3 1.6 0 1.2416 0 0"',
    )
    robot.write_text(text)
    out = tmp_path / "world"
    code, printed = _world_new(robot, out)
    assert code == 0, printed
    assert "links 'left_finger_link' and 'right_finger_link' touch at home" in printed
    assert robot.read_text() == text
    excludes = yaml.safe_load((out / "world.yaml").read_text())["robot"]["contact_exclude"]
    assert [set(pair) for pair in excludes] == [{"left_finger_link", "right_finger_link"}]
    world = SimWorld(out)
    world.reset(0)
    assert self_contacts(world) == []
    assert "touch at home" not in check_world(out).text()
