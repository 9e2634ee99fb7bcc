"""A robot file whose actuators have no names: `r2s2r world new` and the world address them by index
(``#i``, as MuJoCo's messages show them) or by the joint or tendon they drive, without editing the file."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from pathlib import Path

import mujoco
import pytest
import yaml
from conftest import edit_yaml
from r2s2r_sim.cli.main import main as r2s2r
from r2s2r_sim.errors import WorldError
from r2s2r_sim.hardware.emulated_arm import EmulatedArm
from r2s2r_sim.hardware.profile import load_hardware_profile
from r2s2r_sim.world.robot_binding import actuator_id
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import WORLDS

TWO_JOINTS = """
<mujoco>
  <worldbody>
    <body>
      <joint name="a" axis="0 0 1"/>
      <geom size="0.1"/>
      <body pos="0 0 0.2">
        <joint name="b" axis="0 1 0"/>
        <geom size="0.1"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position joint="a" kp="10"/>
    <position name="named" joint="b" kp="10"/>
  </actuator>
</mujoco>
"""


def test_an_actuator_is_found_by_name_index_or_joint() -> None:
    spec = mujoco.MjSpec.from_string(TWO_JOINTS)
    spec.actuators[0].name = "#0"  # as the robot loader names an unnamed one
    model = spec.compile()
    assert actuator_id(model, "named") == 1
    assert actuator_id(model, "#0") == 0
    assert actuator_id(model, "<unnamed #0>") == 0
    assert actuator_id(model, "a") == 0  # the joint it drives
    assert actuator_id(model, "#5") == -1
    assert actuator_id(model, "nothing") == -1


@pytest.fixture(scope="module")
def unnamed_robot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled arm with every actuator's name taken out."""
    tmp = tmp_path_factory.mktemp("unnamed")
    robot = shutil.copytree(WORLDS["tabletop-pick-v1"] / "robot", tmp / "robot") / "arm6.xml"
    text = robot.read_text()
    actuators = text[text.index("<actuator>") : text.index("</actuator>")]
    robot.write_text(text.replace(actuators, re.sub(r' name="[^"]+"', "", actuators)))
    return robot


def _world_new(robot: Path, out: Path, *flags: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return r2s2r(["world", "new", "--robot", str(robot), "--out", str(out), *flags])


def _gripper_moves(out: Path) -> None:
    world = SimWorld(out)
    world.reset(0)
    g = world.config.robot.gripper
    assert g is not None
    for command in g.command_range:
        world.set_gripper_command(command)
        world.step(400)
        assert world.joint_state()[0][-2:] == pytest.approx([command, command], abs=0.003)


def test_world_new_on_unnamed_actuators(unnamed_robot: Path, tmp_path: Path) -> None:
    out = tmp_path / "guessed"
    assert _world_new(unnamed_robot, out) == 0
    assert yaml.safe_load((out / "world.yaml").read_text())["robot"]["gripper"]["actuator"] == "#6"
    _gripper_moves(out)


@pytest.mark.parametrize("flag", ["<unnamed #6>", "gripper_tendon"])
def test_the_gripper_actuator_flag_takes_an_index_or_what_it_drives(
    unnamed_robot: Path, tmp_path: Path, flag: str
) -> None:
    out = tmp_path / "world"
    assert _world_new(unnamed_robot, out, "--gripper-actuator", flag) == 0
    _gripper_moves(out)
    # world.yaml takes the same forms
    edit_yaml(out, lambda data: data["robot"]["gripper"].update(actuator="gripper_tendon"))
    _gripper_moves(out)
    edit_yaml(out, lambda data: data["robot"]["gripper"].update(actuator="#9"))
    with pytest.raises(WorldError, match=r"robot\.gripper\.actuator: actuator '#9' not in"):
        SimWorld(out)


def test_a_profile_addresses_unnamed_servos_by_index_or_joint(unnamed_robot: Path, tmp_path: Path) -> None:
    out = tmp_path / "world"
    assert _world_new(unnamed_robot, out) == 0
    with contextlib.redirect_stdout(io.StringIO()):
        assert r2s2r(["profile", "new", "--world", str(out)]) == 0
    path = out / "hardware_profile.yaml"
    data = yaml.safe_load(path.read_text())
    servos = data["physics"]["servos"]
    assert "#0" in servos and "#6" in servos  # the template names them as messages show them
    servos["<unnamed #6>"] = {"kp": 123.0, "kv": 4.5}
    servos["elbow"] = {"kp": 777.0, "kv": 7.0}  # the joint the third actuator drives
    del servos["#6"], servos["#2"]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    model = EmulatedArm(out, load_hardware_profile(path), seed=0).world.model
    for act, (kp, kv) in {6: (123.0, 4.5), 2: (777.0, 7.0)}.items():
        assert model.actuator_gainprm[act, 0] == pytest.approx(kp)
        assert model.actuator_biasprm[act, 2] == pytest.approx(-kv)
