"""Bring up a world and evaluate a policy in it: ``ros2 launch r2s2r_sim world.launch.py mode:=sim``.

The node list is not written here: it comes from ``r2s2r_sim.graph.node_graph``, the single definition that
the pip-mode ``r2s2r launch world`` also runs. This file only turns it into launch_ros actions.
"""

from __future__ import annotations

import os
from pathlib import Path

from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction, SetEnvironmentVariable, Shutdown
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare
from r2s2r_sim.graph.launcher import LaunchError, find_executable
from r2s2r_sim.graph.node_graph import load_graph, resolve
from r2s2r_sim.world.mesh_package import mesh_environment

from launch import LaunchContext, LaunchDescription

GRAPH = "world"


def _nodes(context: LaunchContext) -> list[Node | LogInfo]:
    graph = load_graph(GRAPH)
    given = {arg.name: context.launch_configurations[arg.name] for arg in graph.arguments}
    config = Path(FindPackageShare("r2s2r_sim").perform(context)) / "config"
    actions: list[Node | LogInfo] = []
    for node in resolve(graph, given, config=config):
        executable = None
        if node.optional:  # a viewer: say it is missing rather than fail the launch
            try:
                executable = str(find_executable(node, os.environ))  # also one on PATH only
            except LaunchError:
                missing = f"{node.executable} is not installed: running without {node.name}"
                actions.append(LogInfo(msg=missing))
                continue
        parameters: list[object] = [str(node.params_file)] if node.params_file else []
        parameters.append(node.parameters)
        actions.append(
            Node(
                package=None if executable else node.package,
                executable=executable or node.executable,
                name=node.name,
                output="screen",
                parameters=parameters,
                arguments=list(node.arguments),
                remappings=list(node.remappings),
                on_exit=Shutdown(reason=f"required node {node.name} exited") if node.required else None,
                respawn=node.respawn,
                respawn_delay=1.0 if node.respawn else None,
            )
        )
    return actions


def generate_launch_description() -> LaunchDescription:
    """Declare the graph's arguments (mode, world, ... with defaults and descriptions), then its nodes."""
    graph = load_graph(GRAPH)
    declared = [
        DeclareLaunchArgument(
            arg.name,
            default_value=arg.default,
            description=arg.description,
            choices=list(arg.choices) or None,
        )
        for arg in graph.arguments
    ]
    env = [SetEnvironmentVariable(name, value) for name, value in mesh_environment(os.environ).items()]
    return LaunchDescription([*declared, *env, OpaqueFunction(function=_nodes)])
