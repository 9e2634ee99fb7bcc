"""Bring your own arm: `r2s2r world new` on the conformance arms (MJCF and URDF/xacro outside the world
folder), `r2s2r world check`, and an episode and a variation on each new world."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import SHARED_ROBOTS
from r2s2r_sim.cli.main import main as r2s2r
from r2s2r_sim.variations import (
    for_world,
    initial_state_offsets,
    load_variation_config,
    make_world,
    sample_variation,
)
from r2s2r_sim.world.sim_world import SimWorld

pytestmark = pytest.mark.skipif(
    not SHARED_ROBOTS.is_dir(), reason=f"conformance robots not found at {SHARED_ROBOTS}"
)

# robot file, extra `world new` flags, expected arm joints, gripper (actuator, joints) or None
ARMS = {
    "ufactory_xarm7": (
        "ufactory_xarm7/xarm7.xml",
        [],
        [f"joint{i}" for i in range(1, 8)],
        ("gripper", {"left_driver_joint", "right_driver_joint"}),
    ),
    "trs_so_arm100": (
        "trs_so_arm100/so_arm100.xml",
        [],
        ["Rotation", "Pitch", "Elbow", "Wrist_Pitch", "Wrist_Roll"],
        ("Jaw", {"Jaw"}),
    ),
    "kinova_gen3": ("kinova_gen3/gen3.xml", [], [f"joint_{i}" for i in range(1, 8)], None),
    "ur5e_xacro": (
        "ur_description/urdf/ur.urdf.xacro",
        [
            "--xacro-arg",
            "ur_type:=ur5e",
            "--xacro-arg",
            "name:=ur5e",
            "--tool-body",
            "tool0",
            "--home",
            "0,-1.57,1.57,-1.57,-1.57,0",
        ],
        [
            "shoulder_pan_joint",
            "shoulder_lift_joint",
            "elbow_joint",
            "wrist_1_joint",
            "wrist_2_joint",
            "wrist_3_joint",
        ],
        None,
    ),
}


@pytest.fixture(scope="module", params=sorted(ARMS))
def new_world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    name = request.param
    if name.endswith("xacro") and importlib.util.find_spec("xacro") is None:
        pytest.skip("xacro is not installed (pip install xacro)")
    robot, flags, _, _ = ARMS[name]
    out = tmp_path_factory.mktemp(name) / "world"
    assert r2s2r(["world", "new", "--robot", str(SHARED_ROBOTS / robot), "--out", str(out), *flags]) == 0
    return name, out


def test_world_points_at_the_robot_and_guesses_joints(new_world: tuple[str, Path]) -> None:
    name, out = new_world
    _, _, arm, gripper = ARMS[name]
    data = yaml.safe_load((out / "world.yaml").read_text())
    robot = data["robot"]
    key = "urdf" if name.endswith("xacro") else "mjcf"
    # The file where it lies (../shared may be a link: compare real paths).
    assert Path(robot[key]).is_absolute()
    assert Path(robot[key]).resolve().is_relative_to(SHARED_ROBOTS.resolve())
    assert not any(p.suffix in (".stl", ".obj") for p in out.rglob("*"))  # nothing copied in
    assert robot["arm_joints"] == arm
    # Named after the robot file, so two arms' worlds do not share an id.
    assert data["id"] == Path(ARMS[name][0]).name.split(".")[0].lower().replace("_", "-") + "-pick-v1"
    if gripper is None:
        assert "gripper" not in robot
    else:
        assert robot["gripper"]["actuator"] == gripper[0]
        assert set(robot["gripper"]["joints"]) == gripper[1]
    world = SimWorld(out)
    assert world.arm_joint_names == tuple(arm)
    assert world.config.robot.ee_site is not None


def test_world_check_reports_and_draws_the_tool_frame(new_world: tuple[str, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    _, out = new_world
    picture = out / "tool.png"
    assert r2s2r(["world", "check", str(out), "--picture", str(picture)]) == 0
    text = capsys.readouterr().out
    assert "0 error(s)" in text and "K = [[" in text and "tool frame" in text

    from PIL import Image

    pixels = np.asarray(Image.open(picture))  # a real render: not one flat colour
    assert pixels.shape[2] == 3 and pixels.reshape(-1, 3).std(axis=0).max() > 10


def test_episode_on_the_new_world(new_world: tuple[str, Path]) -> None:
    name, out = new_world
    world = SimWorld(out)
    task = world.config.task
    assert task is not None and task.object_pose_range is not None
    world.reset(5)
    cube, _ = world.body_pose(task.object_body)
    assert task.object_pose_range.x[0] <= cube[0] <= task.object_pose_range.x[1]
    assert task.object_pose_range.y[0] <= cube[1] <= task.object_pose_range.y[1]
    home = world.joint_state()[0][: len(world.arm_joint_names)]
    target = np.clip(home + 0.1, world.arm_limits[:, 0], world.arm_limits[:, 1])
    n = int(0.5 / world.timestep)
    for k in range(n):  # ramped (xArm7's wrist limit-cycles on a step)
        assert world.set_arm_command(home + (target - home) * (k + 1) / n).accepted
        world.step()
    if world.gripper_command_range is not None:
        g = world.config.robot.gripper
        assert g is not None
        assert world.set_gripper_command(g.closed_command).accepted
    world.step(int(1.5 / world.timestep))
    q, v, _ = world.joint_state()
    np.testing.assert_allclose(q[: len(home)], target, atol=0.03)
    assert np.abs(v).max() < 0.2
    if world.gripper_command_range is not None:
        g = world.config.robot.gripper
        assert g is not None
        grip = q[len(home)]
        # the gripper moved from open towards closed
        assert abs(grip - g.closed_command) < abs(g.open_command - g.closed_command) * 0.6


def test_variations_derive_from_the_new_world(new_world: tuple[str, Path]) -> None:
    name, out = new_world
    # the world's own variations (world new writes them): the cube inside the arm's reach, the arm's joints
    cfg = for_world(load_variation_config(out / "variations.yaml").only("robot_state", "objects"), out)
    region = yaml.safe_load((out / "world.yaml").read_text())["task"]["object_pose_range"]
    assert list(cfg.objects.x) == region["x"] and list(cfg.objects.y) == region["y"]
    assert list(cfg.robot_state.joints) == ARMS[name][2]
    variation = sample_variation(cfg, 3)
    offsets = initial_state_offsets(variation)
    assert set(offsets) == set(ARMS[name][2])
    world = make_world(out, variation)
    q = world.joint_state()[0][: len(world.arm_joint_names)]
    base = SimWorld(out)
    home = base.joint_state()[0][: len(base.arm_joint_names)]
    expected = np.clip(
        home + [offsets[j] for j in world.arm_joint_names], world.arm_limits[:, 0], world.arm_limits[:, 1]
    )
    np.testing.assert_allclose(q, expected, atol=1e-9)
