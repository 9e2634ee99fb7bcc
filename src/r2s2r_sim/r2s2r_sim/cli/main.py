"""The ``r2s2r`` command: ``r2s2r launch world mode:=sim ...``, ``r2s2r demo``, and plug-in subcommands.

Other packages add subcommands through the ``r2s2r.commands`` entry-point group: each entry point is
a function ``register(subparsers) -> None`` that adds one parser and sets ``func`` on it, the
function that runs the command and returns its exit status.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, entry_points, version

from r2s2r_sim.cli import profile as profile_cli
from r2s2r_sim.cli import world as world_cli
from r2s2r_sim.cli.common import plain_help
from r2s2r_sim.graph.launcher import EXIT_NOT_STARTED, Launcher
from r2s2r_sim.graph.node_graph import Graph, GraphError, load_graph, parse_arguments, resolve

__all__ = ["build_parser", "main"]

DEMO_ARGS = ("mode:=sim", "episodes:=3", "seed:=0", "results:=out/demo.sqlite")
PACKAGES = ("r2s2r_sim", "r2s2r_capture", "r2s2r_eval")  # the distributions `r2s2r --version` names
EXIT_BROKEN_PIPE = 1  # stdout closed by its reader: Python's own status on EPIPE (signal module docs)


def _versions() -> str:
    """The installed version of each package, e.g. ``r2s2r_sim 0.1.0, r2s2r_capture 0.1.0, ...``."""
    found = []
    for name in PACKAGES:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def _show_args(graph: Graph) -> str:
    lines = [f"Arguments (pass arguments as '<name>:=<value>') of graph '{graph.name}':", ""]
    for arg in graph.arguments:
        choices = f" (one of: {', '.join(arg.choices)})" if arg.choices else ""
        lines += [
            f"    '{arg.name}':",
            f"        {arg.description}{choices}",
            f"        (default: '{arg.default}')",
            "",
        ]
    return "\n".join(lines)


def _show_graph(graph: Graph, tokens: list[str]) -> str:
    lines = []
    for node in resolve(graph, parse_arguments(graph, tokens)):
        flag = " (required)" if node.required else ""
        lines.append(f"{node.package}/{node.executable} as {node.name}{flag}: {' '.join(node.ros_args())}")
    return "\n".join(lines)


def cmd_launch(ns: argparse.Namespace) -> int:
    """Start the graph's nodes as processes; see :mod:`r2s2r_sim.graph.launcher` for semantics."""
    try:
        graph = load_graph(ns.graph)
        if ns.show_args:
            print(_show_args(graph))
            return 0
        if ns.print:
            print(_show_graph(graph, ns.arguments))
            return 0
        nodes = resolve(graph, parse_arguments(graph, ns.arguments))
    except (GraphError, FileNotFoundError) as err:
        print(f"r2s2r launch: error: {err}", file=sys.stderr)
        return EXIT_NOT_STARTED
    return Launcher(nodes).run()


def cmd_demo(ns: argparse.Namespace) -> int:
    """Run the main job on the bundled world: the reference policy for a few sim episodes."""
    ns.graph, ns.show_args, ns.print = "world", False, False
    ns.arguments = [*DEMO_ARGS, *ns.arguments]
    print(f"r2s2r demo: r2s2r launch world {' '.join(ns.arguments)}", flush=True)
    return cmd_launch(ns)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``r2s2r`` command."""
    parser = argparse.ArgumentParser(prog="r2s2r", description=__doc__)
    parser.add_argument("--version", action="version", version=_versions())
    sub = parser.add_subparsers(dest="command", required=True)
    launch = sub.add_parser("launch", help="start a node graph (pip-mode `ros2 launch`)")
    launch.add_argument("graph", help="graph name, e.g. world")
    launch.add_argument("arguments", nargs="*", metavar="name:=value", help="launch arguments")
    launch.add_argument("--show-args", action="store_true", help="list the graph's arguments and exit")
    launch.add_argument("--print", action="store_true", help="print the resolved nodes and exit")
    launch.set_defaults(func=cmd_launch)
    demo = sub.add_parser("demo", help="run the reference policy on the bundled world in sim")
    demo.add_argument("arguments", nargs="*", metavar="name:=value", help="override demo arguments")
    demo.set_defaults(func=cmd_demo)
    world_cli.register(sub)
    profile_cli.register(sub)
    for entry in sorted(entry_points(group="r2s2r.commands"), key=lambda e: e.name):
        try:
            register = entry.load()
        except (ImportError, AttributeError) as err:
            # A broken plug-in must not take the other subcommands down with it; say which one.
            print(
                f"r2s2r: warning: subcommand '{entry.name}' ({entry.value}) unavailable: {err}",
                file=sys.stderr,
            )
            continue
        register(sub)
    return plain_help(parser)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``r2s2r`` console script.

    A reader that closes stdout early (``r2s2r metrics t.csv | head -1``) ends the command quietly, as the
    note on SIGPIPE in Python's ``signal`` docs recommends.
    """
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, inside the try, after --help's SystemExit too
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at devnull so that flush cannot fail.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    ns, extra = parser.parse_known_args(argv)
    # Options may come between launch arguments (`launch world --print mode:=sim`): argparse then leaves
    # the arguments after the option unparsed; they are launch arguments all the same.
    if extra and isinstance(getattr(ns, "arguments", None), list) and all(":=" in e for e in extra):
        ns.arguments += extra
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return int(ns.func(ns))


if __name__ == "__main__":
    sys.exit(main())
