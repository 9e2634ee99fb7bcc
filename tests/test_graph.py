"""The single node-graph definition: which nodes run per mode, their parameters and conditions."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from r2s2r_sim.graph.node_graph import GraphError, load_graph, parse_arguments, resolve
from r2s2r_sim.paths import config_dir

REPO = Path(__file__).resolve().parents[1]


def _names(**given: str) -> list[str]:
    return [n.name for n in resolve(load_graph("world"), given)]


def test_sim_mode_runs_sim_policy_and_evaluator() -> None:
    assert _names(mode="sim") == ["sim_node", "policy_node", "evaluator_node"]


def test_real_mode_has_no_simulator_and_wall_time() -> None:
    nodes = resolve(load_graph("world"), {"mode": "real"})
    assert [n.name for n in nodes] == ["policy_node", "evaluator_node"]
    assert all(n.parameters["use_sim_time"] is False for n in nodes)


def test_real_mode_can_run_the_emulated_hardware_stand_in() -> None:
    nodes = {
        n.name: n
        for n in resolve(
            load_graph("world"), {"mode": "real", "emulate_hardware": "true", "hardware_profile": "/p.yaml"}
        )
    }
    assert list(nodes) == ["emulated_hardware", "policy_node", "evaluator_node"]
    assert nodes["emulated_hardware"].required
    assert nodes["emulated_hardware"].parameters == {
        "world": "tabletop-pick-v1",
        "interface": "realsense2_camera",
        "seed": 0,
        "profile": "/p.yaml",
    }
    # The emulator is a real-mode stand-in only: sim mode never starts it.
    assert "emulated_hardware" not in _names(mode="sim", emulate_hardware="true")


def test_use_sim_time_follows_mode_but_sim_node_runs_on_wall_time() -> None:
    nodes = {n.name: n for n in resolve(load_graph("world"), {"mode": "sim"})}
    assert nodes["policy_node"].parameters["use_sim_time"] is True
    assert nodes["evaluator_node"].parameters["use_sim_time"] is True
    assert nodes["evaluator_node"].parameters["seed0"] == 0
    assert "use_sim_time" not in nodes["sim_node"].parameters  # it publishes /clock


def test_policy_node_counts_episodes_from_the_evaluators_seed0() -> None:
    nodes = {n.name: n for n in resolve(load_graph("world"), {"seed": "42"})}
    assert nodes["policy_node"].parameters["seed"] == nodes["evaluator_node"].parameters["seed0"] == 42


def test_conditions_drop_nodes() -> None:
    assert _names(mode="sim", run_policy="false", evaluate="false") == ["sim_node"]


def test_parameters_are_typed_from_arguments() -> None:
    nodes = {
        n.name: n
        for n in resolve(load_graph("world"), {"seed": "42", "lockstep": "false", "world": "/tmp/my world"})
    }
    assert nodes["sim_node"].parameters == {
        "world": "/tmp/my world",
        "interface": "realsense2_camera",
        "seed": 42,
        "lockstep": False,
        "real_time": False,
        "policy_id": "reference",
        "render_profile": "",
    }
    assert nodes["sim_node"].required and nodes["evaluator_node"].required
    assert not nodes["policy_node"].required


def test_interface_argument_reaches_every_node_and_defaults_to_the_driver_profile(tmp_path: Path) -> None:
    graph = load_graph("world")
    assert graph.argument("interface").default == "realsense2_camera"
    for mode, extra in (("sim", {}), ("real", {"emulate_hardware": "true"})):
        nodes = resolve(graph, {"mode": mode, **extra, "interface": "sensor_data"})
        assert {n.name: n.parameters["interface"] for n in nodes} == {n.name: "sensor_data" for n in nodes}
    own = tmp_path / "mine.yaml"
    own.write_text("extends: realsense2_camera\ntopics: {joint_states: {name: /arm/joint_states}}\n")
    nodes = resolve(graph, {"interface": str(own)})
    assert {n.parameters["interface"] for n in nodes} == {str(own.resolve())}
    with pytest.raises(GraphError, match=r"argument interface:=nope: interface 'nope': no such profile"):
        resolve(graph, {"interface": "nope"})
    with pytest.raises(GraphError, match=r"argument interface:=.*missing\.yaml: interface file not found"):
        resolve(graph, {"interface": str(tmp_path / "missing.yaml")})


def test_foxglove_live_view_is_off_by_default_and_follows_the_graph_when_on() -> None:
    assert "foxglove_server" not in _names(mode="sim")
    for mode in ("sim", "real"):
        nodes = {
            n.name: n
            for n in resolve(
                load_graph("world"), {"mode": mode, "foxglove": "true", "foxglove_port": "9001", "world": "w"}
            )
        }
        live = nodes["foxglove_server"]
        assert (live.package, live.executable, live.required) == ("r2s2r_sim", "foxglove_node", False)
        assert live.parameters == {
            "world": "w",
            "interface": "realsense2_camera",
            "port": 9001,
            "use_sim_time": mode == "sim",
        }


def test_render_profile_argument_reaches_the_sim_node() -> None:
    node = resolve(load_graph("world"), {"render_profile": "fast"})[0]
    assert node.name == "sim_node" and node.parameters["render_profile"] == "fast"
    assert "render_profile:=fast" in node.ros_args()


def test_ros_args_are_what_ros2_run_passes() -> None:
    node = resolve(load_graph("world"), {"seed": "3"})[0]
    args = node.ros_args()
    assert args[:3] == ["--ros-args", "-r", "__node:=sim_node"]
    assert args[args.index("--params-file") + 1] == str(config_dir() / "sim_node.yaml")
    assert "seed:=3" in args and "lockstep:=true" in args


def test_every_node_has_its_parameter_file() -> None:
    for mode in ("sim", "real"):
        for node in resolve(load_graph("world"), {"mode": mode}):
            assert node.params_file is not None and node.params_file.is_file()


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        (["mode:=banana"], "argument mode:=banana is not one of sim, real"),
        (["bogus:=1"], "graph 'world' has no argument 'bogus'"),
        (["mode"], "not of the form name:=value"),
    ],
)
def test_bad_arguments_are_refused(tokens: list[str], message: str) -> None:
    graph = load_graph("world")
    with pytest.raises(GraphError, match=message):
        resolve(graph, parse_arguments(graph, tokens))


def test_unknown_graph_lists_graphs() -> None:
    with pytest.raises(GraphError, match=r"unknown graph 'x' \(graphs: world\)"):
        load_graph("x")


@pytest.mark.skipif(
    importlib.util.find_spec("launch_ros") is None,
    reason="launch/launch_ros are on no package registry: `make test` installs them from "
    "../shared/conformance/ros2_jazzy_python where present, and a ROS distro has them",
)
def test_launch_file_yields_the_same_graph() -> None:
    from launch.actions import DeclareLaunchArgument, OpaqueFunction

    from launch import LaunchContext, LaunchDescription

    spec = importlib.util.spec_from_file_location("world_launch", REPO / "launch" / "world.launch.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    description: LaunchDescription = module.generate_launch_description()
    declared = [e for e in description.entities if isinstance(e, DeclareLaunchArgument)]
    assert [d.name for d in declared] == [a.name for a in load_graph("world").arguments]
    context = LaunchContext()
    for d in declared:
        d.visit(context)
    context.launch_configurations["mode"] = "real"
    opaque = next(e for e in description.entities if isinstance(e, OpaqueFunction))
    nodes = opaque.execute(context)
    assert [n.node_executable for n in nodes] == ["policy_node", "evaluator_node"]


def test_real_mode_hooks_follow_emulate_hardware() -> None:
    def hooks(**given: str) -> tuple[object, object]:
        node = {n.name: n for n in resolve(load_graph("world"), given)}["evaluator_node"]
        return node.parameters["reset_hook"], node.parameters["judge_hook"]

    assert hooks(mode="real", emulate_hardware="true") == (
        "service:/emulated_hardware/reset_episode",
        "service:/emulated_hardware/judge",
    )
    assert hooks(mode="real") == ("prompt", "prompt")  # real drivers: the operator resets and judges
    assert hooks(
        mode="real", emulate_hardware="true", judge_hook="prompt", reset_hook="service:/cell/reset"
    ) == ("service:/cell/reset", "prompt")
    args = {n.name: n for n in resolve(load_graph("world"), {"mode": "real", "emulate_hardware": "true"})}
    assert "reset_hook:=service:/emulated_hardware/reset_episode" in args["evaluator_node"].ros_args()


def test_every_parameter_the_graph_passes_is_one_the_node_declares() -> None:
    # The parameter files list every parameter a node declares (with its default), so a name the graph
    # passes but the node never declares (silently ignored by rclpy) shows up here.
    import yaml

    for mode, extra in (("sim", {"foxglove": "true"}), ("real", {"emulate_hardware": "true"})):
        for node in resolve(load_graph("world"), {"mode": mode, **extra}):
            assert node.params_file is not None
            declared = yaml.safe_load(node.params_file.read_text())[node.name]["ros__parameters"]
            unknown = set(node.parameters) - set(declared) - {"use_sim_time"}
            assert not unknown, f"{node.name} is passed {sorted(unknown)} but declares {sorted(declared)}"


def test_respawn_policy_restarts_the_policy_and_tells_the_evaluator_to_wait() -> None:
    plain = {n.name: n for n in resolve(load_graph("world"), {"mode": "sim"})}
    assert not any(n.respawn for n in plain.values())
    assert plain["evaluator_node"].parameters["on_policy_lost"] == "stop"
    nodes = {n.name: n for n in resolve(load_graph("world"), {"mode": "real", "respawn_policy": "true"})}
    assert nodes["policy_node"].respawn and not nodes["evaluator_node"].respawn
    assert nodes["evaluator_node"].parameters["on_policy_lost"] == "continue"


@pytest.mark.parametrize(
    ("world", "policy"),
    [
        ("tabletop-pick-v1", "reference"),
        ("tabletop-push-v1", "push_reference"),
        ("tabletop-stack-v1", "stack_reference"),
        ("tabletop-drawer-v1", "drawer_reference"),
    ],
)
def test_the_default_policy_is_the_reference_of_the_worlds_task(world: str, policy: str) -> None:
    nodes = {n.name: n for n in resolve(load_graph("world"), {"mode": "sim", "world": world})}
    assert nodes["policy_node"].parameters["policy"] == policy
    assert nodes["evaluator_node"].parameters["policy"] == policy  # what the results rows record
    given = {
        n.name: n for n in resolve(load_graph("world"), {"mode": "sim", "world": world, "policy": "topdown"})
    }
    assert given["policy_node"].parameters["policy"] == "topdown"


def test_auto_policy_on_a_world_not_readable_here_is_the_pick_reference(tmp_path: Path) -> None:
    nodes = {n.name: n for n in resolve(load_graph("world"), {"mode": "sim", "world": str(tmp_path / "x")})}
    assert nodes["policy_node"].parameters["policy"] == "reference"
