"""The generated URDF against MuJoCo: parsed by the ROS URDF parser, its kinematics are the bodies'."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
from r2s2r_sim.interface import load_interface
from r2s2r_sim.world.mesh_package import MeshPackage
from r2s2r_sim.world.robot_description import RobotDescription, RobotDescriptionError, write_stl
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path
from transforms3d import affines, euler, quaternions

urdf = pytest.importorskip("urdf_parser_py.urdf", reason="urdf-parser-py is not installed; run `make setup`")

REPO = Path(__file__).resolve().parents[2]
WORLDS = [world_path("tabletop-pick-v1"), *sorted(p for p in (REPO / "tests/worlds").iterdir() if p.is_dir())]


def _describe(world: SimWorld) -> RobotDescription:
    from r2s2r_sim.ros.robot_state import describe_robot

    return describe_robot(world, load_interface())


def _matrix(xyz: list[float], rpy: list[float]) -> np.ndarray:
    return affines.compose(xyz, euler.euler2mat(*rpy, "sxyz"), np.ones(3))


def _body_matrix(data: mujoco.MjData, body: int) -> np.ndarray:
    return affines.compose(data.xpos[body], quaternions.quat2mat(data.xquat[body]), np.ones(3))


def _urdf_fk(robot: object, positions: dict[str, float]) -> dict[str, np.ndarray]:
    """Each link's pose in the root link: the URDF's joints applied as robot_state_publisher applies them."""
    root = robot.get_root()
    poses = {root: np.eye(4)}
    pending = list(robot.joints)
    while pending:
        joint = next(j for j in pending if j.parent in poses)
        pending.remove(joint)
        origin = _matrix(joint.origin.xyz, joint.origin.rpy)
        motion = np.eye(4)
        if joint.type in ("revolute", "continuous"):
            motion[:3, :3] = quaternions.quat2mat(quaternions.axangle2quat(joint.axis, positions[joint.name]))
        elif joint.type == "prismatic":
            motion[:3, 3] = np.asarray(joint.axis) * positions[joint.name]
        poses[joint.child] = poses[joint.parent] @ origin @ motion
    return poses


@pytest.mark.parametrize("folder", WORLDS, ids=[p.name for p in WORLDS])
def test_urdf_parses_and_its_kinematics_are_mujocos(folder: Path, tmp_path: Path) -> None:
    world = SimWorld(folder)
    desc = _describe(world)
    text = desc.urdf(MeshPackage(tmp_path))
    robot = urdf.URDF.from_xml_string(text)
    iface = load_interface()
    model, data = world.model, world.data
    # Every robot body is a link, plus the end-effector link; the root is the interface's base frame.
    assert robot.get_root() == iface.frame("base")
    assert len(robot.links) == len(world.robot_body_ids) + (1 if world.config.robot.ee_site else 0)
    moving = {j.name for j in robot.joints if j.type != "fixed"}
    assert set(world.joint_names) <= moving, "every /joint_states name is a URDF joint"
    for joint in robot.joints:
        if joint.type == "revolute":
            mj = model.joint(world.config.robot.prefix + joint.name)
            assert (joint.limit.lower, joint.limit.upper) == pytest.approx(tuple(mj.range))
    # Random joint positions (inside the limits): URDF forward kinematics = MuJoCo's body poses.
    rng = np.random.default_rng(0)
    names = {j.name: j for j in robot.joints if j.type != "fixed"}
    positions = {}
    for name, joint in names.items():
        low, high = (joint.limit.lower, joint.limit.upper) if joint.limit is not None else (-3.0, 3.0)
        positions[name] = float(rng.uniform(max(low, -3.0), min(high, 3.0)))
        data.qpos[model.joint(world.config.robot.prefix + name).qposadr[0]] = positions[name]
    mujoco.mj_kinematics(model, data)
    fk = _urdf_fk(robot, positions)
    base = _body_matrix(data, desc.root)
    for link in desc.links:
        if link.geometry:
            want = np.linalg.inv(base) @ _body_matrix(data, link.body)
        else:  # the end-effector link sits at the ee site
            site = mujoco.mj_name2id(
                model, mujoco.mjtObj.mjOBJ_SITE, world.config.robot.prefix + world.config.robot.ee_site
            )
            ee = affines.compose(data.site_xpos[site], data.site_xmat[site].reshape(3, 3), np.ones(3))
            want = np.linalg.inv(base) @ ee
        np.testing.assert_allclose(fk[link.name], want, atol=1e-6, err_msg=link.name)
    # The transforms the nodes publish (robot_state_publisher's computation) agree too.
    tree = {
        child: (parent, pos, quat)
        for parent, child, pos, quat in desc.joint_poses(data.qpos, fixed=False)
        + desc.joint_poses(None, fixed=True)
    }
    for link in desc.links[1:]:
        parent, pos, quat = tree[link.name]
        got = affines.compose(pos, quaternions.quat2mat(quat), np.ones(3))
        want = np.linalg.inv(fk[parent]) @ fk[link.name]
        np.testing.assert_allclose(got, want, atol=1e-6, err_msg=link.name)


def test_visual_geoms_become_primitives_and_meshes(tmp_path: Path) -> None:
    robot = urdf.URDF.from_xml_string(
        _describe(SimWorld(world_path("tabletop-pick-v1"))).urdf(MeshPackage(tmp_path))
    )
    kinds = {type(v.geometry).__name__ for link in robot.links for v in link.visuals}
    assert {"Box", "Cylinder", "Sphere"} <= kinds  # the bundled arm: boxes, cylinders, capsules (+ spheres)
    # A mesh robot: every mesh geom is written as an STL the URDF points at, with the model's triangles.
    world = SimWorld(REPO / "tests" / "worlds" / "kinova_gen3")
    robot = urdf.URDF.from_xml_string(_describe(world).urdf(MeshPackage(tmp_path)))
    meshes = [
        v.geometry.filename
        for link in robot.links
        for v in link.visuals
        if type(v.geometry).__name__ == "Mesh"
    ]
    assert meshes and all(m.startswith("package://r2s2r_meshes/meshes/") for m in meshes)
    files = sorted(MeshPackage(tmp_path).folder.glob("*.stl"))
    assert {m.rpartition("/")[2] for m in meshes} == {f.name for f in files}
    m = world.model
    visual_meshes = {
        int(m.geom_dataid[g])
        for g in range(m.ngeom)
        if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH
        and m.geom_group[g] < 3
        and m.geom_bodyid[g] in world.robot_body_ids
    }
    triangles = sorted(int(m.mesh_facenum[mesh]) for mesh in visual_meshes)
    assert sorted((f.stat().st_size - 84) // 50 for f in files) == triangles


def test_stl_is_never_overwritten_with_other_content(tmp_path: Path) -> None:
    verts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=float)
    faces = np.array([[0, 1, 2]])
    path = tmp_path / "a.stl"
    write_stl(path, verts, faces)
    write_stl(path, verts, faces)  # same content: fine
    with pytest.raises(RobotDescriptionError, match=r"a\.stl: exists with other content"):
        write_stl(path, verts * 2, faces)


def test_a_body_with_two_joints_is_refused_by_name() -> None:
    model = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><body name='base'><body name='wrist'>"
        "<joint name='a' axis='1 0 0'/><joint name='b' axis='0 1 0'/><geom size='0.1'/>"
        "</body></body></worldbody></mujoco>"
    )
    with pytest.raises(RobotDescriptionError, match=r"body 'wrist' has 2 joints; URDF allows one"):
        RobotDescription(model, 1, prefix="", base_frame="base_link")
