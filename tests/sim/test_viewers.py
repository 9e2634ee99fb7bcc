"""RViz and Foxglove out of the box: the shipped viewer files, ``rviz:=true``, meshes a remote viewer loads.

The URDF names its meshes by ``package://`` URIs of the mesh package, which the ament index resolves and
the Foxglove node's asset service serves; the RViz config and the Foxglove layout name the interface's
topics and frames.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import stat
import struct
import subprocess
import sys
from pathlib import Path

import mujoco
import pytest
import yaml
from ament_index_python.packages import get_package_share_directory
from r2s2r_sim.graph.launcher import Launcher
from r2s2r_sim.graph.node_graph import load_graph, resolve
from r2s2r_sim.interface import load_interface
from r2s2r_sim.paths import FOXGLOVE_LAYOUT, RVIZ_CONFIG
from r2s2r_sim.world.mesh_package import (
    MESH_PACKAGE,
    MeshPackage,
    MeshPackageError,
    ament_prefix_path,
    default_prefix,
    mesh_environment,
    read_package_uri,
)
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path
from urdf_parser_py import urdf

REPO = Path(__file__).resolve().parents[2]
MESH_ROBOT = REPO / "tests" / "worlds" / "kinova_gen3"
STL_HEADER, STL_TRIANGLE = 84, 50  # binary STL: 80-byte header + uint32 count, then 50 bytes a triangle
WS_TIMEOUT_S = 10.0


def _robot_meshes(tmp_path: Path) -> tuple[str, SimWorld]:
    """The URDF the sim node publishes for the mesh robot, its meshes written under ``tmp_path``."""
    ros_state = pytest.importorskip("r2s2r_sim.ros.robot_state", reason="rclpy (ROS 2) is not installed")
    world = SimWorld(MESH_ROBOT)
    state = ros_state.RobotState(world, load_interface(), MeshPackage(tmp_path))
    return state.description_msg().data, world


def _mesh_uris(text: str) -> list[str]:
    robot = urdf.URDF.from_xml_string(text)
    return [
        v.geometry.filename for link in robot.links for v in link.visuals if isinstance(v.geometry, urdf.Mesh)
    ]


def test_published_urdf_names_meshes_that_the_ament_index_resolves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, world = _robot_meshes(tmp_path)
    assert "file://" not in text
    uris = _mesh_uris(text)
    assert uris and all(u.startswith(f"package://{MESH_PACKAGE}/meshes/") for u in uris)
    monkeypatch.setenv("AMENT_PREFIX_PATH", ament_prefix_path(tmp_path, os.environ.get("AMENT_PREFIX_PATH")))
    share = Path(get_package_share_directory(MESH_PACKAGE))
    assert share == tmp_path.resolve() / "share" / MESH_PACKAGE
    # Each URI names an STL holding one of the robot's compiled meshes, triangle for triangle.
    model = world.model
    faces = {
        int(model.mesh_facenum[model.geom_dataid[g]])
        for g in range(model.ngeom)
        if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH
        and int(model.geom_bodyid[g]) in world.robot_body_ids
    }
    counts = set()
    for uri in uris:
        package, _, relative = uri.removeprefix("package://").partition("/")
        path = Path(get_package_share_directory(package)) / relative
        data = path.read_bytes()
        (count,) = struct.unpack_from("<I", data, 80)
        assert len(data) == STL_HEADER + STL_TRIANGLE * count, uri
        counts.add(count)
    assert counts == faces


def test_the_mesh_package_defaults_to_the_users_cache_and_the_graph_puts_it_on_the_ament_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_prefix() == tmp_path / "r2s2r" / "ament"
    prefix = tmp_path / "r2s2r" / "ament"
    env = mesh_environment(
        {"XDG_CACHE_HOME": str(tmp_path), "AMENT_PREFIX_PATH": f"/opt/ros/jazzy{os.pathsep}{prefix}"}
    )
    assert env["AMENT_PREFIX_PATH"].split(os.pathsep) == [str(prefix), "/opt/ros/jazzy"]
    # A child's own cache folder wins: it is where that child's sim node writes the meshes.
    child = mesh_environment({"XDG_CACHE_HOME": str(tmp_path / "child")})
    assert child["AMENT_PREFIX_PATH"] == str(tmp_path / "child" / "r2s2r" / "ament")


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("file:///etc/passwd", "not a package:// URI"),
        ("package://no_such_package_r2s2r/meshes/a.stl", "not in the ament index"),
        (f"package://{MESH_PACKAGE}/../../../etc/passwd.stl", "leaves the share folder"),
        (f"package://{MESH_PACKAGE}/package.xml", "not a mesh or texture"),
        (f"package://{MESH_PACKAGE}/meshes/missing.stl", "no such file"),
    ],
)
def test_a_uri_that_names_no_servable_mesh_is_refused(
    uri: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    MeshPackage(tmp_path).create()
    monkeypatch.setenv("AMENT_PREFIX_PATH", ament_prefix_path(tmp_path, os.environ.get("AMENT_PREFIX_PATH")))
    with pytest.raises(MeshPackageError, match=message):
        read_package_uri(uri)


def test_foxglove_asset_service_sends_the_mesh_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    foxglove = pytest.importorskip("foxglove", reason="foxglove-sdk is not installed; run `make setup`")
    sync_client = pytest.importorskip("websockets.sync.client", reason="websockets is not installed")
    node = pytest.importorskip("r2s2r_sim.ros.foxglove_node", reason="rclpy (ROS 2) is not installed")
    text, _ = _robot_meshes(tmp_path)
    uri = _mesh_uris(text)[0]
    monkeypatch.setenv("AMENT_PREFIX_PATH", ament_prefix_path(tmp_path, os.environ.get("AMENT_PREFIX_PATH")))
    want = (tmp_path / "share" / MESH_PACKAGE / "meshes" / uri.rpartition("/")[2]).read_bytes()
    warnings: list[str] = []
    server = foxglove.start_server(name="test", port=0, asset_handler=node.asset_handler(warnings.append))
    try:
        protocols = ["foxglove.sdk.v1", "foxglove.websocket.v1"]
        url = f"ws://127.0.0.1:{server.port}"
        with sync_client.connect(url, subprotocols=protocols, max_size=None, open_timeout=WS_TIMEOUT_S) as ws:
            info = json.loads(ws.recv(timeout=WS_TIMEOUT_S))
            assert "assets" in info["capabilities"], info
            replies = {}
            for request, asked in enumerate((uri, f"package://{MESH_PACKAGE}/package.xml"), start=1):
                ws.send(json.dumps({"op": "fetchAsset", "uri": asked, "requestId": request}))
                replies[request] = _asset_reply(ws, request)
    finally:
        server.stop()
    assert replies[1] == (0, want)  # status 0: success, the file's bytes
    assert replies[2][0] == 1 and len(warnings) == 1 and "not a mesh" in warnings[0]


def _asset_reply(ws: object, request: int) -> tuple[int, bytes]:
    """``(status, data)`` of the fetchAsset reply to ``request`` (binary opcode 4), skipping other frames."""
    while True:
        frame = ws.recv(timeout=WS_TIMEOUT_S)  # type: ignore[attr-defined]
        if isinstance(frame, bytes) and frame[0] == 0x04:
            got, status, error_len = struct.unpack_from("<IBI", frame, 1)
            if got == request:
                return status, frame[10 + error_len :]


def test_rviz_config_shows_the_robot_tf_and_the_camera_topics_in_the_world_frame() -> None:
    iface = load_interface()
    config = yaml.safe_load((REPO / "config" / RVIZ_CONFIG).read_text())
    manager = config["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == iface.frame("world") == "world"  # REP-105
    displays = {d["Class"]: d for d in manager["Displays"] if d["Class"] != "rviz_default_plugins/Image"}
    model = displays["rviz_default_plugins/RobotModel"]
    assert model["Description Source"] == "Topic" and model["Enabled"]
    assert model["Description Topic"]["Value"] == iface.topic("robot_description")
    assert model["Description Topic"]["Durability Policy"] == "Transient Local"  # it is latched
    assert displays["rviz_default_plugins/TF"]["Enabled"]
    images = [d["Topic"]["Value"] for d in manager["Displays"] if d["Class"] == "rviz_default_plugins/Image"]
    cameras = [c.name for c in SimWorld(world_path("tabletop-pick-v1")).config.cameras]
    assert images == [iface.topic(k, c) for c in cameras for k in ("color_image", "depth_image")]


def test_shipped_foxglove_layout_is_the_one_built_from_the_interface() -> None:
    layout = pytest.importorskip("r2s2r_sim.ros.foxglove_layout", reason="foxglove-sdk is not installed")
    iface = load_interface()
    shipped = (REPO / "config" / FOXGLOVE_LAYOUT).read_text()
    assert shipped == layout.layout_json(iface, [layout.BUNDLED_CAMERA])
    content = json.loads(shipped)["content"]
    scene, images = content["items"][0]["content"], content["items"][1]["content"]["items"]
    assert scene["panelType"] == "ThreeDee" and scene["config"]["followTf"] == iface.frame("world")
    assert iface.topic("robot_description") in scene["config"]["topics"]
    topics = [i["content"]["config"]["imageMode"]["imageTopic"] for i in images]
    assert topics == [iface.topic(k, "camera") for k in ("color_image", "depth_image")]


def test_rviz_is_off_by_default_and_starts_with_the_shipped_config() -> None:
    assert "rviz" not in {n.name for n in resolve(load_graph("world"), {"mode": "sim"})}
    for mode in ("sim", "real"):
        nodes = {n.name: n for n in resolve(load_graph("world"), {"mode": mode, "rviz": "true"})}
        rviz = nodes["rviz"]
        assert (rviz.package, rviz.executable, rviz.optional, rviz.required) == (
            "rviz2",
            "rviz2",
            True,
            False,
        )
        assert rviz.arguments[0] == "-d" and Path(rviz.arguments[1]).is_file()
        assert Path(rviz.arguments[1]).name == RVIZ_CONFIG
        assert rviz.parameters["use_sim_time"] is (mode == "sim")


def _viewer_only() -> list:
    return resolve(
        load_graph("world"), {"mode": "real", "rviz": "true", "run_policy": "false", "evaluate": "false"}
    )


def test_pip_launcher_says_rviz2_is_missing_and_runs_without_it(tmp_path: Path) -> None:
    out = io.StringIO()
    env = {"PATH": str(tmp_path), "AMENT_PREFIX_PATH": str(tmp_path)}  # no rviz2 anywhere
    stand_in = tmp_path / "true"  # a required node that exits cleanly at once
    stand_in.write_text("#!/bin/sh\nexit 0\n")
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IEXEC)
    nodes = [*_viewer_only()]
    required = type(nodes[0])(
        package="none",
        executable="true",
        name="stand_in",
        params_file=None,
        parameters={},
        remappings=(),
        required=True,
    )
    status = Launcher([*nodes, required], env=env, out=out).run()
    assert status == 0, out.getvalue()
    assert "rviz2 is not installed" in out.getvalue() and "running without rviz" in out.getvalue()


def test_pip_launcher_starts_rviz2_with_the_config_and_the_mesh_package(tmp_path: Path) -> None:
    record = tmp_path / "argv.txt"
    fake = tmp_path / "rviz2"  # stands in for rviz2: records its command line and environment
    fake.write_text(f'#!/bin/sh\necho "$@" > {record}\necho "$AMENT_PREFIX_PATH" >> {record}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    out = io.StringIO()
    env = {"PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert Launcher(_viewer_only(), env=env, out=out).run() == 0, out.getvalue()
    argv, prefixes = record.read_text().splitlines()
    assert argv.split()[:2] == ["-d", str(REPO / "config" / RVIZ_CONFIG)]
    assert "--ros-args" in argv.split() and "use_sim_time:=false" in argv
    assert prefixes.split(os.pathsep)[0] == str(tmp_path / "cache" / "r2s2r" / "ament")


@pytest.mark.skipif(
    importlib.util.find_spec("launch_ros") is None,
    reason="launch/launch_ros are on no package registry: `make test` installs them from "
    "../shared/conformance/ros2_jazzy_python where present, and a ROS distro has them",
)
def test_launch_file_logs_a_missing_rviz2_instead_of_failing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction, SetEnvironmentVariable

    from launch import LaunchContext

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    spec = importlib.util.spec_from_file_location("world_launch", REPO / "launch" / "world.launch.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    description = module.generate_launch_description()
    env = [e for e in description.entities if isinstance(e, SetEnvironmentVariable)]
    context = LaunchContext()
    for entity in description.entities:
        if isinstance(entity, DeclareLaunchArgument | SetEnvironmentVariable):
            entity.visit(context)
    assert env and context.environment["AMENT_PREFIX_PATH"].startswith(
        str(tmp_path / "cache" / "r2s2r" / "ament")
    )
    context.launch_configurations.update(mode="real", rviz="true")
    opaque = next(e for e in description.entities if isinstance(e, OpaqueFunction))
    actions = opaque.execute(context)
    logged = [a for a in actions if isinstance(a, LogInfo)]
    assert len(logged) == 1 and "rviz2 is not installed" in logged[0].msg[0].perform(context)
    assert [a.node_executable for a in actions if not isinstance(a, LogInfo)] == [
        "policy_node",
        "evaluator_node",
    ]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


_LAUNCH = """
import sys
from launch import LaunchService
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
service = LaunchService()
arguments = {"mode": "real", "run_policy": "false", "evaluate": "false", "rviz": "true"}
service.include_launch_description(
    IncludeLaunchDescription(PythonLaunchDescriptionSource(sys.argv[1]), launch_arguments=arguments.items())
)
sys.exit(service.run())
"""


@pytest.mark.skipif(
    importlib.util.find_spec("launch_ros") is None,
    reason="launch/launch_ros are on no package registry: `make test` installs them from "
    "../shared/conformance/ros2_jazzy_python where present, and a ROS distro has them",
)
def test_launch_file_starts_rviz2_with_the_shipped_config_and_the_mesh_package(tmp_path: Path) -> None:
    record = tmp_path / "argv.txt"
    fake = (
        tmp_path / "rviz2"
    )  # stands in for rviz2, found on PATH only: records its command line and environment
    fake.write_text(f'#!/bin/sh\necho "$@" > {record}\necho "$AMENT_PREFIX_PATH" >> {record}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = dict(
        os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ['PATH']}", XDG_CACHE_HOME=str(tmp_path / "c")
    )
    proc = subprocess.run(
        [sys.executable, "-c", _LAUNCH, str(REPO / "launch" / "world.launch.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    argv, prefixes = record.read_text().splitlines()
    config = Path(get_package_share_directory("r2s2r_sim")) / "config" / RVIZ_CONFIG
    assert argv.split()[:2] == ["-d", str(config)] and config.is_file()
    assert "__node:=rviz" in argv  # launch_ros passes use_sim_time in a parameter file of its own
    assert prefixes.split(os.pathsep)[0] == str(tmp_path / "c" / "r2s2r" / "ament")
