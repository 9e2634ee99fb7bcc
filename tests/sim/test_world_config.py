"""world.yaml validation: every malformed case raises WorldError naming the file and field."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
from conftest import BUNDLED, edit_yaml
from r2s2r_sim.cli.main import main as r2s2r
from r2s2r_sim.errors import WorldError
from r2s2r_sim.tasks.config import TaskType
from r2s2r_sim.world.config import WorldConfig, load_world_config
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import WORLDS, world_path


def _where(world_dir: Path, field: str) -> str:
    """Regex matching '<...>/world.yaml: <field>' at the start of the message."""
    return re.escape(f"{world_dir.resolve() / 'world.yaml'}: {field}")


def test_bundled_config_parses() -> None:
    cfg = load_world_config(BUNDLED)
    assert isinstance(cfg, WorldConfig)
    assert cfg.id == "tabletop-pick-v1"
    assert cfg.robot.arm_joints[0] == "shoulder_pan"
    assert cfg.robot.gripper is not None and cfg.robot.gripper.open_command == 0.04
    assert cfg.task is not None and cfg.task.type is TaskType.PICK_PLACE
    assert cfg.cameras[0].depth_range == (0.1, 4.0)
    assert cfg.camera("camera").mjcf_camera == "realsense"
    assert cfg.physics.timestep == 0.002
    assert not cfg.allow_external_paths


def _set(path: list[str | int], value: object):  # type: ignore[no-untyped-def]
    def edit(data: dict) -> None:  # type: ignore[type-arg]
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


def _delete(path: list[str | int]):  # type: ignore[no-untyped-def]
    def edit(data: dict) -> None:  # type: ignore[type-arg]
        node = data
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return edit


# (edit, field named in the message, rest of the message) -- all caught by load_world_config.
SCHEMA_CASES = [
    (_set(["colour"], "red"), "<top level>", "unknown key.*colour"),
    (_set(["robot", "gripper", "force"], 3), "robot.gripper", "unknown key.*force"),
    (_set(["task", "object_pose_range", "z"], [0, 1]), "task.object_pose_range", "unknown key.*'z'"),
    (_delete(["id"]), "id", "required field is missing"),
    (_delete(["robot", "arm_joints"]), "robot.arm_joints", "required field is missing"),
    (_delete(["cameras", 0, "width"]), "cameras[0].width", "required field is missing"),
    (_delete(["task", "target_site"]), "task.target_site", "required field is missing"),
    (_set(["cameras", 0, "width"], "640"), "cameras[0].width", "must be an integer"),
    (_set(["cameras", 0, "rate_hz"], -1), "cameras[0].rate_hz", "must be > 0"),
    (_set(["cameras", 0, "depth_range"], [4.0, 0.1]), "cameras[0].depth_range", "low < high"),
    (_set(["cameras"], {"name": "x"}), "cameras", "must be a list"),
    (_set(["task", "success_radius"], "big"), "task.success_radius", "must be a number"),
    (_set(["task", "timeout"], 0), "task.timeout", "must be > 0"),
    (_set(["task", "type"], "sort"), "task.type", "unknown task type 'sort'"),
    (_set(["task", "type"], "stack"), "task.support_body", "required for task type 'stack'"),
    (_set(["task", "type"], "drawer"), "task.open_threshold", "required"),
    (_delete(["task", "success_radius"]), "task.success_radius", "required field is missing"),
    (_set(["robot", "options_from_robot"], "yes"), "robot.options_from_robot", "must be true or false"),
    (_set(["robot", "arm_joints"], "shoulder_pan"), "robot.arm_joints", "must be a list of strings"),
    (_set(["robot", "arm_joints", 1], 7), "robot.arm_joints[1]", "must be a non-empty string"),
    (_set(["robot", "arm_joints", 1], "shoulder_pan"), "robot.arm_joints", "duplicates"),
    (_set(["robot", "attach", "pos"], [0, 0]), "robot.attach.pos", "must have 3 numbers"),
    (_set(["robot", "attach", "quat"], [0, 0, 0, 0]), "robot.attach.quat", "non-zero"),
    (_set(["robot", "home_qpos"], [0, 0, 0, 0, 0, 0]), "robot.home_keyframe", "exactly one"),
    (_set(["robot", "gripper", "command_range"], [0.0, 0.0]), "robot.gripper.command_range", "must differ"),
    (
        _set(["robot", "gripper", "ctrl_range"], [[0.04, 0.0], [-0.04, 0.0]]),
        "robot.gripper.ctrl_range",
        "has 2 pairs for 1 actuators",
    ),
    (
        _set(["robot", "gripper", "ctrl_range"], [[0.04, "shut"]]),
        "robot.gripper.ctrl_range[0][1]",
        "number",
    ),
    (_set(["robot", "gripper", "joints"], ["elbow"]), "robot.gripper.joints", "also in robot.arm_joints"),
    (_set(["physics", "timestep"], -0.001), "physics.timestep", "must be in"),
    (_set(["physics", "timestep"], float("nan")), "physics.timestep", "must be finite"),
    (_set(["physics", "cone"], "round"), "physics.cone", "must be one of"),
    (_set(["physics", "impratio"], 0.5), "physics.impratio", r"must be in \[1, 1000\]"),
    (_set(["robot", "armature"], {"elbow": -1.0}), "robot.armature", "must be in"),
    (_set(["robot", "armature"], {"elbow": "heavy"}), "robot.armature.elbow", "must be a number"),
    (_set(["scene"], "nope.xml"), "scene", "file 'nope.xml' not found"),
    (_set(["robot", "mjcf"], "robot/missing.xml"), "robot.mjcf", "not found"),
    (_set(["scene"], "../../etc/passwd"), "scene", "escapes the world folder"),
    (_set(["robot", "mjcf"], "/nonexistent/arm.xml"), "robot.mjcf", "not found"),
    (_set(["robot", "urdf"], "robot/arm6.xml"), "robot.mjcf", "exactly one of robot.mjcf"),
    (
        _set(["robot", "mjcf"], "package://no_such_pkg/arm.xml"),
        "robot.mjcf",
        "package 'no_such_pkg' is neither",
    ),
    (
        _set(["robot", "packages"], {"arm": "nowhere"}),
        "robot.packages.arm",
        "package folder 'nowhere' not found",
    ),
    (
        _set(["robot", "tool_frame"], {"body": "wrist_3", "z_axis": [0, 0, 1], "y_axis": [0, 0, 2]}),
        "robot.tool_frame.y_axis",
        "must not be parallel to z_axis",
    ),
    (_set(["robot", "tool_frame"], {"body": "wrist_3"}), "robot.tool_frame", "not both"),
    (_set(["robot", "servos"], {"kp": 0}), "robot.servos.kp", "must be > 0"),
    (_set(["robot"], ["arm"]), "robot", "must be a mapping"),
]


@pytest.mark.parametrize(("edit", "field", "message"), SCHEMA_CASES)
def test_schema_errors(world_copy: Path, edit, field: str, message: str) -> None:  # type: ignore[no-untyped-def]
    edit_yaml(world_copy, edit)
    with pytest.raises(WorldError, match=_where(world_copy, field) + ": .*" + message):
        load_world_config(world_copy)


# Cases that need the MJCF: raised by SimWorld, still naming world.yaml and the field.
MJCF_CASES = [
    (
        _set(["robot", "arm_joints", 2], "elbw"),
        "robot.arm_joints[2]",
        r"joint 'elbw' not in robot/arm6.xml \(joints: ",
    ),
    (_set(["robot", "gripper", "joints", 1], "thumb"), "robot.gripper.joints[1]", "joint 'thumb' not in"),
    (_set(["robot", "gripper", "actuator"], "grip"), "robot.gripper.actuator", "actuator 'grip' not in"),
    (
        _set(["robot", "gripper", "actuator"], "elbow"),
        "robot.gripper.actuator",
        "'elbow' also drives an arm joint",
    ),
    (_set(["robot", "home_keyframe"], "nohome"), "robot.home_keyframe", "keyframe 'nohome' not in"),
    (_set(["robot", "ee_site"], "tcp"), "robot.ee_site", "site 'tcp' not in"),
    (_set(["robot", "armature"], {"elbw": 0.1}), "robot.armature.elbw", "no joint 'elbw' in the robot file"),
    (_set(["robot", "attach", "site"], "nowhere"), "robot.attach.site", "no site or frame 'nowhere'"),
    (_set(["cameras", 0, "mjcf_camera"], "d455"), "cameras[0].mjcf_camera", "camera 'd455' not in scene.xml"),
    (_set(["task", "object_body"], "ball"), "task.object_body", "body 'ball' not in scene.xml"),
    (_set(["task", "target_site"], "bin"), "task.target_site", "site 'bin' not in scene.xml"),
    (_set(["task", "object_body"], "bin"), "task.object_pose_range", "body 'bin' has no free joint"),
]


@pytest.mark.parametrize(("edit", "field", "message"), MJCF_CASES)
def test_mjcf_reference_errors(world_copy: Path, edit, field: str, message: str) -> None:  # type: ignore[no-untyped-def]
    edit_yaml(world_copy, edit)
    with pytest.raises(WorldError, match=_where(world_copy, field) + ": " + message):
        SimWorld(world_copy)


def test_home_qpos_outside_limits(world_copy: Path) -> None:
    def edit(data: dict) -> None:  # type: ignore[type-arg]
        del data["robot"]["home_keyframe"]
        data["robot"]["home_qpos"] = [0, 0, 3.0, 0, 0, 0]

    edit_yaml(world_copy, edit)
    with pytest.raises(WorldError, match=_where(world_copy, "robot.home_qpos") + ".*'elbow'"):
        SimWorld(world_copy)


def test_home_qpos_instead_of_keyframe(world_copy: Path) -> None:
    def edit(data: dict) -> None:  # type: ignore[type-arg]
        del data["robot"]["home_keyframe"]
        data["robot"]["home_qpos"] = [0.1, 0.3, 1.6, 0, 1.2, 0]

    edit_yaml(world_copy, edit)
    world = SimWorld(world_copy)
    q, _, _ = world.joint_state()
    assert q[:6].tolist() == [0.1, 0.3, 1.6, 0, 1.2, 0]
    assert world.gripper_command == 0.04  # opened at reset


def test_missing_mesh(world_copy: Path) -> None:
    robot = world_copy / "robot" / "arm6.xml"
    text = robot.read_text()
    text = text.replace("<worldbody>", '<asset><mesh name="m" file="gone.stl"/></asset>\n  <worldbody>', 1)
    robot.write_text(text)
    with pytest.raises(
        WorldError, match=_where(world_copy, "robot.mjcf") + ": robot/arm6.xml does not compile.*gone"
    ):
        SimWorld(world_copy)


def test_mesh_escaping_world_folder(world_copy: Path) -> None:
    (world_copy.parent / "outside.stl").write_text("solid x\nendsolid x\n")
    robot = world_copy / "robot" / "arm6.xml"
    text = robot.read_text().replace(
        "<worldbody>", '<asset><mesh name="m" file="../../outside.stl"/></asset>\n  <worldbody>', 1
    )
    robot.write_text(text)
    with pytest.raises(WorldError, match=_where(world_copy, "robot.mjcf") + ": .*mesh 'm'.*escapes"):
        SimWorld(world_copy)


_TETRAHEDRON_OBJ = "v 0 0 0\nv 0.01 0 0\nv 0 0.01 0\nv 0 0 0.01\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"


def test_robot_mesh_folder_linked_into_the_robots_folder(
    world_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A robot file outside the world folder keeps its own layout: a linked mesh folder inside the robot's
    folder is accepted; a mesh reached by ``..`` out of it is refused unless its folder is mapped in
    ``robot.packages``."""
    elsewhere = tmp_path / "mesh_store"
    elsewhere.mkdir()
    (elsewhere / "m.obj").write_text(_TETRAHEDRON_OBJ)
    robot_dir = tmp_path / "my_robot"
    robot_dir.mkdir()
    (robot_dir / "meshes").symlink_to(elsewhere, target_is_directory=True)
    arm = (world_copy / "robot" / "arm6.xml").read_text()
    robot = robot_dir / "arm6.xml"
    robot.write_text(
        arm.replace("<worldbody>", '<asset><mesh name="m" file="meshes/m.obj"/></asset>\n  <worldbody>', 1)
    )
    edit_yaml(world_copy, lambda data: data["robot"].update(mjcf=str(robot)))
    assert SimWorld(world_copy).model.nmesh == 1
    robot.write_text(
        arm.replace(
            "<worldbody>", '<asset><mesh name="m" file="../mesh_store/m.obj"/></asset>\n  <worldbody>', 1
        )
    )
    with pytest.raises(WorldError, match="mesh 'm' file '../mesh_store/m.obj' escapes the robot's folders"):
        SimWorld(world_copy)
    # `world new` names the user's robot file, not the scratch world it probes with.
    assert r2s2r(["world", "new", "--robot", str(robot), "--out", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err
    assert f"error: --robot: {robot}: mesh 'm'" in err and "r2s2r-world-new-" not in err
    assert "map the folder that holds it in robot.packages" in err
    # Mapped as a package, the folder is the user's too.
    edit_yaml(world_copy, lambda data: data["robot"].update(packages={"mesh_store": str(elsewhere)}))
    assert SimWorld(world_copy).model.nmesh == 1


def test_robot_user_data_sizes_are_kept_without_a_warning(world_copy: Path) -> None:
    robot = world_copy / "robot" / "arm6.xml"
    robot.write_text(robot.read_text().replace("<worldbody>", '<size nuser_actuator="3"/>\n  <worldbody>', 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert SimWorld(world_copy).model.nuser_actuator == 3


def test_compose_error_is_wrapped(world_copy: Path) -> None:
    # A scene body with the same name as a robot body clashes when attached without a prefix.
    scene = world_copy / "scene.xml"
    scene.write_text(scene.read_text().replace('<body name="table">', '<body name="base_link">'))
    with pytest.raises(
        WorldError, match=_where(world_copy, "robot.mjcf") + ": composing scene.xml with robot/arm6.xml"
    ):
        SimWorld(world_copy)


def test_invalid_yaml(world_copy: Path) -> None:
    (world_copy / "world.yaml").write_text("id: [unclosed\n")
    with pytest.raises(WorldError, match=re.escape(str(world_copy / "world.yaml")) + ": not valid YAML"):
        load_world_config(world_copy)


def test_not_a_mapping(world_copy: Path) -> None:
    (world_copy / "world.yaml").write_text("- a\n- b\n")
    with pytest.raises(WorldError, match="world.yaml: <top level>: must be a mapping"):
        load_world_config(world_copy)


def test_missing_world_file(tmp_path: Path) -> None:
    with pytest.raises(WorldError, match=re.escape(str(tmp_path / "world.yaml")) + ": world file not found"):
        load_world_config(tmp_path)
    with pytest.raises(WorldError, match="world folder not found"):
        load_world_config(tmp_path / "nope")


def test_oversized_world_file(world_copy: Path) -> None:
    (world_copy / "world.yaml").write_text("#" * (2 << 20))
    with pytest.raises(WorldError, match="bytes, more than"):
        load_world_config(world_copy)


def test_external_paths_only_when_allowed(world_copy: Path) -> None:
    outside = world_copy.parent / "scene_outside.xml"
    outside.write_text((world_copy / "scene.xml").read_text())
    edit_yaml(world_copy, _set(["scene"], "../scene_outside.xml"))
    with pytest.raises(WorldError, match="escapes the world folder"):
        load_world_config(world_copy)
    edit_yaml(world_copy, _set(["allow_external_paths"], True))
    assert load_world_config(world_copy).scene == outside.resolve()


def test_registry() -> None:
    assert world_path("tabletop-pick-v1") == WORLDS["tabletop-pick-v1"]
    assert world_path(str(BUNDLED)) == BUNDLED.resolve()
    with pytest.raises(ValueError, match=r"unknown world 'tabletop-pick-v9'.*'tabletop-pick-v1'"):
        world_path("tabletop-pick-v9")


def test_camera_lookup_error() -> None:
    cfg = load_world_config(BUNDLED)
    with pytest.raises(WorldError, match="cameras: no camera 'wrist'"):
        cfg.camera("wrist")
