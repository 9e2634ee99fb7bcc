"""`r2s2r world new` on an arm shorter than the bundled one: the tool-down reach it measures, the
`variations.yaml` it writes inside that reach, and the refusal of a variations file drawn for another arm.

The robots are written here as strings (or edits of the bundled arm), so nothing depends on ../shared.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml
from conftest import edit_yaml
from r2s2r_sim.authoring.world_check import check_world
from r2s2r_sim.cli.main import main as r2s2r
from r2s2r_sim.paths import config_dir
from r2s2r_sim.variations import VariationError, for_world, load_variation_config
from r2s2r_sim.world.kinematics import KinematicArm, tool_down_reach
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import WORLDS, default_variations_file

# Pan, then three pitch joints: upper arm 0.30 m and forearm 0.25 m from a shoulder 0.3 m up, then a 0.1 m
# tool.  Pointing straight down, the tool is right below the wrist, so it reaches 0.55 m from the pan axis;
# the links summed are 0.95 m.
PLANAR_ARM = """
<mujoco model="planar">
  <compiler angle="radian" autolimits="true"/>
  <worldbody>
    <body name="base">
      <geom type="cylinder" size="0.05 0.05" pos="0 0 0.05"/>
      <body name="turret" pos="0 0 0.3">
        <joint name="pan" axis="0 0 1" range="-3 3"/>
        <geom type="sphere" size="0.03"/>
        <body name="upper">
          <joint name="lift" axis="0 1 0" range="-2.5 2.5"/>
          <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.02"/>
          <body name="fore" pos="0 0 0.3">
            <joint name="elbow" axis="0 1 0" range="-2.6 2.6"/>
            <geom type="capsule" fromto="0 0 0 0 0 0.25" size="0.02"/>
            <body name="hand" pos="0 0 0.25">
              <joint name="wrist" axis="0 1 0" range="-2.6 2.6"/>
              <geom type="capsule" fromto="0 0 0 0 0 0.1" size="0.015"/>
              <site name="tool" pos="0 0 0.1"/>
            </body>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_tool_down_reach_is_the_horizontal_links_not_their_sum() -> None:
    model = mujoco.MjModel.from_xml_string(PLANAR_ARM)
    arm = KinematicArm(model, ("pan", "lift", "elbow", "wrist"), "tool")
    reach = tool_down_reach(arm, np.zeros(2), floor_z=0.0)
    assert 0.535 <= reach <= 0.55 + 0.003  # within the inverse kinematics tolerance
    assert tool_down_reach(arm, np.zeros(2), floor_z=0.0) == reach  # deterministic
    # Above the shoulder the wrist must rise, so the links reach less far out.
    assert tool_down_reach(arm, np.zeros(2), floor_z=0.3) < reach - 0.01


@pytest.fixture(scope="module")
def short_arm(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The bundled arm with upper arm and forearm shortened to 0.2 and 0.17 m; its new world and output."""
    tmp = tmp_path_factory.mktemp("short-arm")
    robot = shutil.copytree(WORLDS["tabletop-pick-v1"] / "robot", tmp / "robot") / "arm6.xml"
    robot.write_text(robot.read_text().replace("0 0 0.35", "0 0 0.2").replace('0 0 0.3"', '0 0 0.17"'))
    out = tmp / "world"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert r2s2r(["world", "new", "--robot", str(robot), "--out", str(out)]) == 0
    return out, printed.getvalue()


def test_world_new_writes_its_variations_inside_the_reach(short_arm: tuple[Path, str]) -> None:
    out, printed = short_arm
    world = yaml.safe_load((out / "world.yaml").read_text())
    own = yaml.safe_load((out / "variations.yaml").read_text())
    assert default_variations_file(out) == out / "variations.yaml"
    region = world["task"]["object_pose_range"]
    assert own["objects"]["x"] == region["x"] and own["objects"]["y"] == region["y"]
    assert region["x"][1] < 0.45  # scaled in from the bundled 0.55 m
    keep_out = {k["name"]: k for k in own["clutter"]["keep_out"]}
    sim = SimWorld(out)
    bin_xy = sim.data.body("bin").xpos[:2]
    assert np.mean(keep_out["bin"]["x"]) == pytest.approx(bin_xy[0], abs=1e-3)
    assert np.mean(keep_out["bin"]["y"]) == pytest.approx(bin_xy[1], abs=1e-3)
    assert keep_out["cube_start"]["x"][0] < region["x"][0] and keep_out["cube_start"]["x"][1] > region["x"][1]
    assert own["robot_state"]["joints"] == world["robot"]["arm_joints"]
    # the world's own file fits its arm; the package's (the bundled arm's cube region) is refused
    assert for_world(load_variation_config(out / "variations.yaml"), out).objects.x == tuple(region["x"])
    with pytest.raises(
        VariationError, match=r"variations\.yaml: objects\.x .* refused, the arm .* does not reach"
    ):
        for_world(load_variation_config(config_dir() / "variations.yaml"), out)
    # one reach figure: what world new printed and wrote is what world check prints
    said = re.search(r"tool-down reach (\d\.\d{3}) m", printed)
    assert said is not None, printed
    assert f"(tool-down reach {said.group(1)} m" in (out / "world.yaml").read_text()
    assert f"arm reach {said.group(1)} m tool-down" in check_world(out).text()
    assert 0.25 < float(said.group(1)) < 0.2 + 0.17 + 0.05  # not the links summed (about 0.6 m)


def test_world_check_says_a_task_object_beyond_the_reach(short_arm: tuple[Path, str], tmp_path: Path) -> None:
    out = shutil.copytree(short_arm[0], tmp_path / "world")
    edit_yaml(out, lambda data: data["task"]["object_pose_range"].update(x=[0.7, 0.7], y=[0.0, 0.0]))
    report = check_world(out)
    assert any(
        "task object is 0.7" in e and "beyond the arm's tool-down reach" in e for e in report.errors
    ), report.text()
