"""Scene reconstruction and world writing, checked on RGB-D views of the bundled world rendered by MuJoCo.

The one camera of ``tabletop_pick`` is moved around the table (``model.cam_pos/cam_quat``) to render a sweep
of posed views; the robot stays in the scene and is filtered out with a keep-out cylinder at its base.
"""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import math  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from r2s2r_capture.errors import ReconstructionError  # noqa: E402
from r2s2r_capture.real2sim.scene_spec import CameraModel  # noqa: E402
from r2s2r_capture.real2sim.world_writer import TaskSpec, write_world  # noqa: E402
from r2s2r_capture.reconstruction import scene as rc  # noqa: E402
from r2s2r_capture.reconstruction.tsdf import integrate_tsdf  # noqa: E402
from r2s2r_sim.render.renderer import RgbdRenderer, camera_intrinsics  # noqa: E402
from r2s2r_sim.world.sim_world import SimWorld  # noqa: E402

pytestmark = pytest.mark.study  # a rendered RGB-D capture fused and segmented (a minute of CPU)

WORLD = Path(__file__).resolve().parents[2] / "src/r2s2r_sim/r2s2r_sim/worlds/tabletop_pick"
W, H = 640, 480
TABLE_TOP_Z = 0.75
CUBE_SIZE = 0.04
BOUNDS = ((-0.5, -1.0, 0.5), (1.5, 1.5, 2.0))


def _pose(pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    R = np.empty(9)
    mujoco.mju_quat2Mat(R, quat)
    T[:3, :3] = R.reshape(3, 3)
    T[:3, 3] = pos
    return T


def _look_at_quat(pos: np.ndarray, target: np.ndarray) -> np.ndarray:
    """MuJoCo camera quat (looks along -z, y up) from ``pos`` towards ``target``."""
    f = (target - pos) / np.linalg.norm(target - pos)
    right = np.cross(f, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, f)
    q = np.empty(4)
    mujoco.mju_mat2Quat(q, np.stack([right, up, -f], axis=1).ravel())
    return q


@pytest.fixture(scope="module")
def capture() -> dict:
    world = SimWorld(WORLD)
    model, data = world.model, world.data
    cid = world.camera_id("camera")
    original_cam = _pose(*world.camera_pose("camera"))
    K = camera_intrinsics(model, "realsense", W, H)
    target = np.array([0.4, 0.15, 0.76])
    frames, poses = [], []
    with RgbdRenderer(model, W, H) as renderer:
        for i, az in enumerate(np.deg2rad([-60, -20, 20, 60, 100, 140, -100, 0])):
            pos = target + np.array([0.8 * math.cos(az), 0.8 * math.sin(az), 0.9 if i % 2 else 0.7])
            model.cam_pos[cid] = pos
            model.cam_quat[cid] = _look_at_quat(pos, target)
            mujoco.mj_forward(model, data)
            frames.append(renderer.render(data, "realsense", depth_range=(0.1, 4.0)))
            poses.append(_pose(*world.camera_pose("camera")))
    scene = integrate_tsdf(frames, K, poses, voxel=0.004, bounds=BOUNDS)
    config = rc.SegmentConfig(keepout=rc.RobotKeepOut(center=tuple(world.base_pose()[0])))
    result = rc.segment_scene(scene.point_cloud(), config)
    return {
        "world": world,
        "K": K,
        "frames": frames,
        "poses": poses,
        "original_cam": original_cam,
        "result": result,
        "cube_pos": world.body_pose("cube")[0],
        "bin_pos": world.body_pose("bin")[0],
    }


def _nearest(result: rc.SceneResult, pos: np.ndarray) -> rc.ReconstructedObject:
    return min(result.objects, key=lambda o: np.linalg.norm(o.position[:2] - pos[:2]))


def test_table_plane_and_robot_filtered(capture: dict) -> None:
    result = capture["result"]
    assert abs(result.table.height - TABLE_TOP_Z) < 0.01
    # 1.0 x 1.2 m top at (0.35, 0.05); the footprint is seen up to a few cm.
    assert np.allclose(sorted(result.table.size), [1.0, 1.2], atol=0.03)
    assert np.allclose(result.table.center, [0.35, 0.05], atol=0.03)
    r, g, b = result.table.color
    assert r > g > b  # brown
    assert result.n_robot_clusters >= 1
    assert len(result.objects) == 2  # cube and bin, nothing of the robot


def test_cube_pose_size_colour(capture: dict) -> None:
    cube = _nearest(capture["result"], capture["cube_pos"])
    assert np.linalg.norm(cube.position - capture["cube_pos"]) < 0.01
    assert np.all(np.abs(cube.size - CUBE_SIZE) < 0.01)
    assert cube.primitive is rc.PrimitiveKind.BOX
    r, g, b = cube.color
    assert r > 2 * g and r > 2 * b  # red
    assert len(cube.hull_triangles) >= 4


def test_bin_found_as_open_box(capture: dict) -> None:
    bin_ = _nearest(capture["result"], capture["bin_pos"])
    assert np.linalg.norm(bin_.position[:2] - capture["bin_pos"][:2]) < 0.01
    assert np.allclose(bin_.size, [0.16, 0.16, 0.055], atol=0.01)
    assert bin_.primitive is rc.PrimitiveKind.OPEN_BOX
    assert 0.004 <= bin_.wall_thickness <= 0.02
    r, g, b = bin_.color
    assert b > r and b > g  # blue


def _task(capture: dict) -> TaskSpec:
    result = capture["result"]
    cube = _nearest(result, capture["cube_pos"])
    bin_ = _nearest(result, capture["bin_pos"])
    return TaskSpec(object=cube.name, target=bin_.name)


def test_written_world_loads_with_camera_and_cube(capture: dict, tmp_path: Path) -> None:
    result = capture["result"]
    camera = CameraModel(K=capture["K"], width=W, height=H, T_world_camera=capture["original_cam"])
    out = write_world(
        tmp_path / "world",
        template=WORLD,
        table=result.table,
        objects=result.objects,
        camera=camera,
        task=_task(capture),
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["world"]  # no temp folder left behind
    world = SimWorld(out)
    assert world.config.task is not None and world.config.task.object_body == "cube"
    assert world.config.task.object_pose_range is None
    assert world.config.robot.arm_joints == SimWorld(WORLD).config.robot.arm_joints
    K = camera_intrinsics(world.model, "realsense", W, H)
    assert np.allclose(K, capture["K"], atol=1e-6)
    assert np.allclose(_pose(*world.camera_pose("camera")), capture["original_cam"], atol=1e-6)
    assert np.linalg.norm(world.body_pose("cube")[0] - capture["cube_pos"]) < 0.01
    # The cube rests on the table: a second of physics moves it by less than 5 mm.
    start = world.body_pose("cube")[0]
    world.step(500)
    assert np.linalg.norm(world.body_pose("cube")[0] - start) < 0.005
    # The bin's target site sits inside the bin, where the original's is.
    site = world.site_pose("bin_center")[0]
    original = SimWorld(WORLD).site_pose("bin_center")[0]
    assert np.linalg.norm(site - original) < 0.01
    # Refuses to overwrite.
    with pytest.raises(ReconstructionError, match="already exists"):
        write_world(
            out,
            template=WORLD,
            table=result.table,
            objects=result.objects,
            camera=camera,
            task=_task(capture),
        )


def test_mesh_primitive_is_written(capture: dict, tmp_path: Path) -> None:
    import dataclasses

    result = capture["result"]
    cube = _nearest(result, capture["cube_pos"])
    as_mesh = tuple(
        dataclasses.replace(o, primitive=rc.PrimitiveKind.MESH) if o is cube else o for o in result.objects
    )
    camera = CameraModel(K=capture["K"], width=W, height=H, T_world_camera=capture["original_cam"])
    out = write_world(
        tmp_path / "w",
        template=WORLD,
        table=result.table,
        objects=as_mesh,
        camera=camera,
        task=_task(capture),
    )
    assert (out / "meshes" / "cube.obj").is_file()
    world = SimWorld(out)
    assert np.linalg.norm(world.body_pose("cube")[0] - capture["cube_pos"]) < 0.01


def test_bad_input_errors(capture: dict, tmp_path: Path) -> None:
    K = capture["K"]
    with pytest.raises(ReconstructionError, match="no RGB-D frames"):
        integrate_tsdf([], K, [])
    rgb, depth = capture["frames"][0]
    with pytest.raises(ReconstructionError, match=r"frames\[0\].depth"):
        integrate_tsdf([(rgb, depth[:10])], K, capture["poses"][:1])
    with pytest.raises(ReconstructionError, match=r"poses\[0\]"):
        integrate_tsdf([(rgb, depth)], K, [np.zeros((4, 4))])
    with pytest.raises(ReconstructionError, match="no valid depth"):
        integrate_tsdf([(rgb, np.zeros_like(depth))], K, capture["poses"][:1])
    with pytest.raises(ReconstructionError, match="task.object"):
        result = capture["result"]
        write_world(
            tmp_path / "x",
            template=WORLD,
            table=result.table,
            objects=result.objects,
            camera=CameraModel(K=K, width=W, height=H, T_world_camera=np.eye(4)),
            task=TaskSpec(object="nope", target=result.objects[0].name),
        )
    assert not (tmp_path / "x").exists()


def test_cli_reconstruct(capture: dict, tmp_path: Path) -> None:
    frames = tmp_path / "frames.npz"
    np.savez(
        frames,
        rgb=np.stack([f[0] for f in capture["frames"]]),
        depth=np.stack([f[1] for f in capture["frames"]]),
        K=capture["K"],
        poses=np.stack(capture["poses"]),
    )
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "r2s2r_capture.cli.reconstruct",
        str(frames),
        "--template",
        str(WORLD),
        "--out",
        str(out),
        "--bounds=" + ",".join(map(str, BOUNDS[0] + BOUNDS[1])),  # '=': the vector starts with a minus
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "cube" in proc.stdout
    world = SimWorld(out)
    assert np.linalg.norm(world.body_pose("cube")[0] - capture["cube_pos"]) < 0.01
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "already exists" in proc.stderr


def test_marker_target_is_kept_from_the_template(capture: dict, tmp_path: Path) -> None:
    """A push target is a taped disc (no depth): the world keeps the template's, the object is measured."""
    from r2s2r_capture.real2sim.world_writer import marker_target

    push = WORLD.parent / "tabletop_push"
    assert marker_target(push, "target_center") == pytest.approx((0.44, 0.15, 0.77, 0.05))
    assert marker_target(WORLD, "bin_center") is None  # the bin is a solid object: reconstructed
    result = capture["result"]
    cube = _nearest(result, capture["cube_pos"])
    camera = CameraModel(K=capture["K"], width=W, height=H, T_world_camera=capture["original_cam"])

    def write(name: str, template: Path) -> Path:
        return write_world(
            tmp_path / name,
            template=template,
            table=result.table,
            objects=(cube,),
            camera=camera,
            task=TaskSpec(object=cube.name, target=None),
        )

    world = SimWorld(write("push", push))
    assert world.config.task is not None and world.config.task.type.value == "push"
    assert np.allclose(world.site_pose("target_center")[0], [0.44, 0.15, 0.77], atol=1e-6)
    assert np.linalg.norm(world.body_pose("puck")[0] - capture["cube_pos"]) < 0.01
    with pytest.raises(ReconstructionError, match="template's target site 'bin_center' is not on a marker"):
        write("pick", WORLD)
    assert not (tmp_path / "pick").exists()


def test_stacking_template_keeps_the_support_free(capture: dict, tmp_path: Path) -> None:
    """With a stacking template, the larger object is the free support block, named as the template's."""
    result = capture["result"]
    cube = _nearest(result, capture["cube_pos"])
    bin_ = _nearest(result, capture["bin_pos"])
    camera = CameraModel(K=capture["K"], width=W, height=H, T_world_camera=capture["original_cam"])
    out = write_world(
        tmp_path / "stack",
        template=WORLD.parent / "tabletop_stack",
        table=result.table,
        objects=(cube, bin_),
        camera=camera,
        task=TaskSpec(object=cube.name, target=bin_.name),
    )
    world = SimWorld(out)
    assert world.config.task is not None and world.config.task.support_body == "support"
    support = world.model.body("support")
    assert world.model.body_jntnum[support.id] == 1  # free: it may be knocked over, as in the template
    assert int(world.model.site_bodyid[world.model.site("stack_target").id]) == support.id
