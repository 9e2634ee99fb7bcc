"""The r2s2r node graph, defined once: `world.launch.py` and the pip-mode `r2s2r launch` both read it.

A graph is plain data: launch arguments (with defaults, descriptions and allowed values) and nodes
(package, executable, parameters, remappings, the modes they run in, and whether the graph stops
when they exit). :func:`resolve` turns argument values into the concrete node list; the launch file
wraps each entry in a ``launch_ros`` ``Node`` and the pip-mode launcher starts each as an OS process
with the same ``--ros-args``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from r2s2r_sim.interface import InterfaceError, available_profiles, load_interface
from r2s2r_sim.paths import RVIZ_CONFIG, config_dir
from r2s2r_sim.tasks.config import AUTO_POLICY, TaskType, reference_policy
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.worlds import world_path


class GraphError(ValueError):
    """A launch argument or graph definition is invalid; the message names the argument."""


@dataclass(frozen=True, kw_only=True)
class Argument:
    """A launch argument: ``name:=value`` on the command line."""

    name: str
    default: str
    description: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class NodeSpec:
    """One node of the graph.

    ``parameters`` values are strings in which ``{arg}`` is replaced by a launch argument's value;
    the result is parsed as YAML (so ``"true"`` is a bool and ``"15"`` an int), as ``-p name:=value``
    does in ROS 2. ``params_file`` names a file in ``config/`` passed with ``--params-file``. ``arguments``
    go before ``--ros-args`` (``{config_dir}`` is the folder of the shipped config files). An ``optional``
    node is a viewer: where its executable is not installed the graph says so and runs without it.
    """

    package: str
    executable: str
    name: str
    modes: frozenset[str]
    params_file: str | None = None
    parameters: Mapping[str, str] = field(default_factory=dict)
    remappings: tuple[tuple[str, str], ...] = ()
    when: str | None = None  # name of a boolean argument that must be true for the node to run
    required: bool = False  # the whole graph stops when this node exits
    respawn: str | None = None  # name of a boolean argument: when true, the node is restarted when it exits
    arguments: tuple[str, ...] = ()
    optional: bool = False


@dataclass(frozen=True, kw_only=True)
class Graph:
    """A named set of launch arguments and nodes."""

    name: str
    description: str
    arguments: tuple[Argument, ...]
    nodes: tuple[NodeSpec, ...]

    def argument(self, name: str) -> Argument:
        """Return the argument called ``name`` or raise :class:`GraphError` listing the valid ones."""
        for arg in self.arguments:
            if arg.name == name:
                return arg
        valid = ", ".join(a.name for a in self.arguments)
        raise GraphError(f"graph '{self.name}' has no argument '{name}' (arguments: {valid})")


@dataclass(frozen=True, kw_only=True)
class ResolvedNode:
    """A node with every value filled in, ready to become a process or a ``launch_ros`` action."""

    package: str
    executable: str
    name: str
    params_file: Path | None
    parameters: dict[str, object]
    remappings: tuple[tuple[str, str], ...]
    required: bool
    respawn: bool = False
    arguments: tuple[str, ...] = ()
    optional: bool = False

    def ros_args(self) -> list[str]:
        """The ``--ros-args`` a process needs to become this node, as ``ros2 run`` would pass them."""
        args = ["--ros-args", "-r", f"__node:={self.name}"]
        if self.params_file is not None:
            args += ["--params-file", str(self.params_file)]
        for key, value in self.parameters.items():
            args += ["-p", f"{key}:={_yaml_scalar(value)}"]
        for src, dst in self.remappings:
            args += ["-r", f"{src}:={dst}"]
        return args


def _yaml_scalar(value: object) -> str:
    text = yaml.safe_dump(value, default_flow_style=True).strip()
    return text.removesuffix("\n...").strip()


_BOOL = ("true", "false")
# The driver-faithful profile of config/interface.yaml; every node of the graph gets the same one.
DEFAULT_INTERFACE = "realsense2_camera"
# The emulated hardware's stand-in services (an operator's reset, a human judge); real hardware has neither.
EMULATED_RESET = "/emulated_hardware/reset_episode"
EMULATED_JUDGE = "/emulated_hardware/judge"


# The launch arguments of the world graph, as `ros2 launch r2s2r_sim world.launch.py --show-args` lists them.
WORLD_ARGUMENTS = (
    Argument(
        name="mode",
        default="sim",
        choices=("sim", "real"),
        description="sim: the MuJoCo sim node publishes the driver topics and /clock; "
        "real: the robot's own drivers do, on wall-clock time.",
    ),
    Argument(
        name="world",
        default="tabletop-pick-v1",
        description="Bundled world id or path of a world folder (world.yaml + MJCF).",
    ),
    Argument(
        name="interface",
        default=DEFAULT_INTERFACE,
        description="Topic, QoS and frame conventions: a profile of config/interface.yaml "
        f"({DEFAULT_INTERFACE}: the real drivers' defaults; sensor_data: "
        "best-effort images under /<camera>/; ur_robot_driver, franka_ros2, xarm_ros2, kortex: "
        "those drivers' controllers, commanded by trajectory) or the path of your own interface file.",
    ),
    Argument(
        name="policy",
        default=AUTO_POLICY,
        description="Policy name (entry point in r2s2r.policies) or package.module:Class; "
        "auto: the scripted reference policy of the world's task.",
    ),
    Argument(
        name="emulate_hardware",
        default="false",
        choices=_BOOL,
        description="Real mode only: start the emulated hardware (a stand-in for the arm "
        "driver + RealSense, not a robot) instead of relying on real drivers.",
    ),
    Argument(
        name="hardware_profile",
        default="",
        description="Real mode with emulate_hardware: the emulator's hardware profile, a "
        "shipped "
        "one by name (realistic, ideal) or a YAML path (empty: realistic).",
    ),
    Argument(
        name="foxglove",
        default="false",
        choices=_BOOL,
        description="Start a Foxglove WebSocket server (foxglove-sdk) with the cameras, /tf, "
        "joint states and robot description: a live view without a ROS distro.",
    ),
    Argument(
        name="rviz",
        default="false",
        choices=_BOOL,
        description="Start RViz (rviz2) with the shipped config/r2s2r.rviz: robot model, /tf and the "
        "camera images; where rviz2 is not installed the graph says so and runs without it.",
    ),
    Argument(
        name="foxglove_port",
        default="8765",
        description="TCP port of the Foxglove WebSocket server (ws://127.0.0.1:<port>).",
    ),
    Argument(name="run_policy", default="true", choices=_BOOL, description="Start the policy node."),
    Argument(
        name="respawn_policy",
        default="false",
        choices=_BOOL,
        description="Restart the policy node when it exits or dies; the evaluator then records "
        "the lost episode as policy_lost and goes on at the next seed (false: the "
        "evaluator stops with exit 1).",
    ),
    Argument(
        name="episode_timeout_s",
        default="120.0",
        description="Wall-clock limit (s) of one episode; a lost policy or world is detected "
        "within seconds regardless, so on a slow machine this can be generous.",
    ),
    Argument(
        name="evaluate",
        default="true",
        choices=_BOOL,
        description="Start the evaluator that resets, runs and records episodes.",
    ),
    Argument(
        name="episodes",
        default="3",
        description="Number of episodes the evaluator runs before the graph exits.",
    ),
    Argument(
        name="seed",
        default="0",
        description="Variation seed of the first episode; episode i uses seed + i.",
    ),
    Argument(
        name="lockstep",
        default="true",
        choices=_BOOL,
        description="Sim only: advance physics and /clock only after the policy answered "
        "the latest observation, for load-independent, reproducible runs.",
    ),
    Argument(
        name="real_time",
        default="false",
        choices=_BOOL,
        description="Sim only: pace physics to the wall clock instead of as fast as possible.",
    ),
    Argument(
        name="render_profile",
        default="",
        description="Sim only: the world's render profile every camera is drawn with (full, "
        "fast, or another named in world.yaml); empty: each camera's own.",
    ),
    Argument(
        name="results",
        default="out/results.sqlite",
        description="SQLite file the evaluator appends episode rows to; a relative path is taken from the "
        "folder the graph is started in. The evaluator prints its full path when it is done.",
    ),
    Argument(
        name="reset_hook",
        default="auto",
        description="Real mode: who resets the cell before each episode. prompt (the operator "
        "presses Enter; needs the evaluator on a terminal), service:<name> "
        "(r2s2r_msgs/srv/ResetEpisode) or auto: "
        f"service:{EMULATED_RESET} with emulate_hardware, else prompt.",
    ),
    Argument(
        name="judge_hook",
        default="auto",
        description="Real mode: who judges each episode. prompt (the operator answers y/n), "
        "service:<name> (std_srvs/srv/Trigger) or auto: "
        f"service:{EMULATED_JUDGE} with emulate_hardware, else prompt.",
    ),
)

# Its nodes: the sim or the emulated hardware (by mode), the policy, the evaluator and the viewers.
WORLD_NODES = (
    NodeSpec(
        package="r2s2r_sim",
        executable="sim_node",
        name="sim_node",
        modes=frozenset({"sim"}),
        params_file="sim_node.yaml",
        required=True,
        parameters={
            "world": "{world}",
            "interface": "{interface}",
            "seed": "{seed}",
            "lockstep": "{lockstep}",
            "real_time": "{real_time}",
            "policy_id": "{policy}",
            "render_profile": "{render_profile}",
        },
    ),
    NodeSpec(
        # The node name must stay emulated_hardware: its services are private (~/reset_episode).
        package="r2s2r_sim",
        executable="emulated_hardware_node",
        name="emulated_hardware",
        modes=frozenset({"real"}),
        params_file="emulated_hardware_node.yaml",
        when="emulate_hardware",
        required=True,
        parameters={
            "world": "{world}",
            "interface": "{interface}",
            "seed": "{seed}",
            "profile": "{hardware_profile}",
        },
    ),
    NodeSpec(
        package="r2s2r_eval",
        executable="policy_node",
        name="policy_node",
        modes=frozenset({"sim", "real"}),
        params_file="policy_node.yaml",
        when="run_policy",
        respawn="respawn_policy",
        parameters={
            "policy": "{policy}",
            "world": "{world}",
            "interface": "{interface}",
            "seed": "{seed}",
            "use_sim_time": "{use_sim_time}",
        },
    ),
    NodeSpec(
        package="r2s2r_eval",
        executable="evaluator_node",
        name="evaluator_node",
        modes=frozenset({"sim", "real"}),
        params_file="evaluator_node.yaml",
        when="evaluate",
        required=True,
        parameters={
            "episodes": "{episodes}",
            "seed0": "{seed}",
            "policy": "{policy}",
            "world": "{world}",
            "interface": "{interface}",
            "mode": "{mode}",
            "results": "{results}",
            "use_sim_time": "{use_sim_time}",
            "reset_hook": "{reset_hook}",
            "judge_hook": "{judge_hook}",
            "on_policy_lost": "{on_policy_lost}",
            "episode_timeout_s": "{episode_timeout_s}",
        },
    ),
    NodeSpec(
        package="r2s2r_sim",
        executable="foxglove_node",
        name="foxglove_server",
        modes=frozenset({"sim", "real"}),
        params_file="foxglove_node.yaml",
        when="foxglove",
        parameters={
            "world": "{world}",
            "interface": "{interface}",
            "port": "{foxglove_port}",
            "use_sim_time": "{use_sim_time}",
        },
    ),
    NodeSpec(
        package="rviz2",
        executable="rviz2",
        name="rviz",
        modes=frozenset({"sim", "real"}),
        when="rviz",
        arguments=("-d", f"{{config_dir}}/{RVIZ_CONFIG}"),
        parameters={"use_sim_time": "{use_sim_time}"},
        optional=True,
    ),
)


def world_graph() -> Graph:
    """The main graph: a world (simulated, or the real drivers), a policy and the episode evaluator."""
    return Graph(
        name="world",
        description="Serve a world on the robot's topic interface and evaluate a policy in it.",
        arguments=WORLD_ARGUMENTS,
        nodes=WORLD_NODES,
    )


GRAPHS = {"world": world_graph}


def load_graph(name: str) -> Graph:
    """Return the graph registered as ``name``; unknown names raise :class:`GraphError` listing them."""
    try:
        return GRAPHS[name]()
    except KeyError:
        raise GraphError(f"unknown graph '{name}' (graphs: {', '.join(sorted(GRAPHS))})") from None


def parse_arguments(graph: Graph, tokens: list[str]) -> dict[str, str]:
    """Parse ``name:=value`` tokens against the graph's arguments; refuse anything else by name."""
    values: dict[str, str] = {}
    for token in tokens:
        name, sep, value = token.partition(":=")
        if not sep or not name:
            raise GraphError(f"argument '{token}' is not of the form name:=value")
        graph.argument(name)
        values[name] = value
    return values


def _check_interface(value: str) -> str:
    """The profile name, or the interface file as an absolute path (nodes may start elsewhere).

    Raises:
        GraphError: ``value`` is neither a shipped profile nor a readable interface file.
    """
    try:
        load_interface(value)
    except InterfaceError as err:
        raise GraphError(f"argument interface:={value}: {err}") from None
    return value if not value or value in available_profiles() else str(Path(value).resolve())


def _world_task(world: str) -> TaskType:
    """The task type ``world`` (a bundled id or a world folder) declares, for ``policy:=auto``.

    A world that cannot be read here (a folder on another machine, a typo) counts as pick-and-place: the
    node that serves the world is the one that reports what is wrong with it.
    """
    try:
        task = load_world_config(world_path(world)).task
    except (ValueError, OSError):
        task = None
    return task.type if task is not None else TaskType.PICK_PLACE


def argument_values(graph: Graph, given: Mapping[str, str]) -> dict[str, str]:
    """Defaults overlaid with ``given``, validated, ``policy:=auto`` resolved, ``use_sim_time`` added."""
    values = {arg.name: arg.default for arg in graph.arguments}
    for name, value in given.items():
        arg = graph.argument(name)
        if arg.choices and value not in arg.choices:
            raise GraphError(f"argument {name}:={value} is not one of {', '.join(arg.choices)}")
        values[name] = value
    if "interface" in values:
        values["interface"] = _check_interface(values["interface"])
    # use_sim_time follows the mode: in sim everything but the simulator runs on /clock.
    values["use_sim_time"] = "true" if values.get("mode") == "sim" else "false"
    if values.get("policy") == AUTO_POLICY:
        values["policy"] = reference_policy(AUTO_POLICY, _world_task(values.get("world", "")))
    # A restarted policy is waited for; without restarts a lost policy ends the run.
    values["on_policy_lost"] = "continue" if values.get("respawn_policy") == "true" else "stop"
    # Real-mode hooks: auto asks the emulated hardware's stand-in services when it runs, else the operator.
    emulated = values.get("emulate_hardware") == "true"
    for hook, service in (("reset_hook", EMULATED_RESET), ("judge_hook", EMULATED_JUDGE)):
        if values.get(hook) == "auto":
            values[hook] = f"service:{service}" if emulated else "prompt"
    return values


def resolve(
    graph: Graph, given: Mapping[str, str] | None = None, *, config: Path | None = None
) -> list[ResolvedNode]:
    """The nodes that run for these argument values, with parameters filled in.

    Raises:
        GraphError: unknown argument, a value outside its choices, or a parameter template naming
            an argument the graph lacks.
        FileNotFoundError: a node's parameter file is missing from ``config/``.
    """
    values = argument_values(graph, given or {})
    config = config or config_dir()
    nodes = []
    for spec in graph.nodes:
        if values.get("mode") not in spec.modes:
            continue
        if spec.when is not None and values[spec.when] != "true":
            continue
        params: dict[str, object] = {}
        for key, template in spec.parameters.items():
            try:
                text = template.format(**values)
            except KeyError as err:
                raise GraphError(f"node {spec.name}: parameter {key} uses unknown argument {err}") from None
            params[key] = yaml.safe_load(text) if text else ""
        try:
            arguments = tuple(a.format(**values, config_dir=config) for a in spec.arguments)
        except KeyError as err:
            raise GraphError(f"node {spec.name}: an argument uses unknown argument {err}") from None
        params_file = None
        if spec.params_file is not None:
            params_file = config / spec.params_file
            if not params_file.is_file():
                raise FileNotFoundError(f"node {spec.name}: parameter file {params_file} is missing")
        nodes.append(
            ResolvedNode(
                package=spec.package,
                executable=spec.executable,
                name=spec.name,
                params_file=params_file,
                parameters=params,
                remappings=spec.remappings,
                required=spec.required,
                respawn=spec.respawn is not None and values.get(spec.respawn) == "true",
                arguments=arguments,
                optional=spec.optional,
            )
        )
    return nodes
