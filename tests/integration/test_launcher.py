"""The pip-mode launcher runs real rclpy processes over DDS with launch semantics."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from r2s2r_sim.graph.launcher import EXIT_INTERRUPTED, EXIT_NOT_STARTED, EXIT_OUTPUT_CLOSED, Launcher
from r2s2r_sim.graph.node_graph import Graph, NodeSpec, resolve

pytestmark = pytest.mark.integration
NODES = Path(__file__).with_name("graph_nodes.py")
PKG = "r2s2r_launch_test"


@pytest.fixture
def prefix(tmp_path: Path, ros_env: dict[str, str]) -> dict[str, str]:
    """An install prefix laid out as colcon does (lib/<package>/<exe>) holding the test nodes."""
    lib = tmp_path / "prefix" / "lib" / PKG
    lib.mkdir(parents=True)
    for role in ("talker", "counter", "listener", "echo_params", "crasher"):
        exe = lib / role
        exe.write_text(f'#!/bin/sh\nexec {sys.executable} {NODES} {role} "$@"\n')
        exe.chmod(0o755)
    env = dict(ros_env)
    env["AMENT_PREFIX_PATH"] = f"{tmp_path / 'prefix'}{os.pathsep}{env.get('AMENT_PREFIX_PATH', '')}"
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "echo.yaml").write_text("echo:\n  ros__parameters:\n    greeting: from-file\n")
    return env


def _graph(*nodes: NodeSpec) -> Graph:
    return Graph(name="t", description="test graph", arguments=(), nodes=nodes)


def _node(role: str, name: str | None = None, **kw: object) -> NodeSpec:
    return NodeSpec(package=PKG, executable=role, name=name or role, modes=frozenset({None}), **kw)  # type: ignore[arg-type]


class _Out(list[str]):
    def write(self, text: str) -> None:
        self.extend(text.splitlines())

    def flush(self) -> None:
        pass


# How long a test node may take to stop after SIGINT before the launcher escalates: a bound for a loaded
# machine (an idle one takes ~0.2 s), never waited out when the node stops.
SIGINT_TIMEOUT_S = 30.0


def _run(nodes: list, env: dict[str, str]) -> tuple[int, list[str]]:
    out = _Out()
    code = Launcher(nodes, env=env, out=out, sigint_timeout=SIGINT_TIMEOUT_S).run()  # type: ignore[arg-type]
    return code, list(out)


def _resolve(graph: Graph, tmp_path: Path) -> list:
    # Test graphs have no mode argument: run every node (modes={None} matches values.get("mode")).
    return resolve(graph, {}, config=tmp_path / "config")


def test_talker_listener_over_dds_and_required_exit(prefix: dict[str, str], tmp_path: Path) -> None:
    graph = _graph(_node("talker"), _node("listener", required=True, parameters={"want": "5"}))
    code, out = _run(_resolve(graph, tmp_path), prefix)
    assert code == 0, out
    assert any(line.startswith("[listener-2] listener received 5 messages") for line in out), out
    # The talker never exits by itself: the launcher stopped it with SIGINT once the listener was done.
    assert "[r2s2r] sending SIGINT to talker-1" in out
    assert "[talker-1] talker stopped by SIGINT" in out


def test_parameters_file_and_overrides_reach_the_node(prefix: dict[str, str], tmp_path: Path) -> None:
    echo = _node(
        "echo_params",
        name="echo",
        params_file="echo.yaml",
        required=True,
        parameters={"count": "7", "flag": "true"},
    )
    code, out = _run(_resolve(_graph(echo), tmp_path), prefix)
    assert code == 0, out
    want = "[echo_params-1] params {'greeting': 'from-file', 'count': 7, 'flag': True} node_name=echo"
    assert want in out, out


def test_required_node_death_stops_graph_with_its_code(prefix: dict[str, str], tmp_path: Path) -> None:
    graph = _graph(_node("talker"), _node("crasher", required=True))
    code, out = _run(_resolve(graph, tmp_path), prefix)
    assert code == 3, out
    assert any(line.startswith("[r2s2r] process has died with exit code 3: crasher-2") for line in out), out
    assert "[talker-1] talker stopped by SIGINT" in out


def test_missing_executable_starts_nothing(prefix: dict[str, str], tmp_path: Path) -> None:
    graph = _graph(_node("talker"), _node("no_such_exe"))
    code, out = _run(_resolve(graph, tmp_path), prefix)
    assert code == EXIT_NOT_STARTED
    want = "executable 'no_such_exe' of package 'r2s2r_launch_test' not found"
    assert any(want in line for line in out), out
    assert not any("process started" in line for line in out)


def _graph_script(tmp_path: Path, roles: tuple[str, ...]) -> Path:
    """A script that runs the launcher on ``roles`` as its own process, as a user would start it."""
    script = tmp_path / "run_graph.py"
    script.write_text(
        "import sys\n"
        "from pathlib import Path\n"
        "from r2s2r_sim.graph.node_graph import Graph, NodeSpec, resolve\n"
        "from r2s2r_sim.graph.launcher import Launcher\n"
        f"nodes = [NodeSpec(package={PKG!r}, executable=r, name=r, modes=frozenset({{None}})) "
        f"for r in {roles!r}]\n"
        f"g = Graph(name='t', description='', arguments=(), nodes=tuple(nodes))\n"
        f"sys.exit(Launcher(resolve(g, {{}}, config=Path({str(tmp_path / 'config')!r}))).run())\n"
    )
    return script


def test_ctrl_c_stops_children_in_reverse_order(prefix: dict[str, str], tmp_path: Path) -> None:
    # The launcher gets SIGINT like Ctrl-C.
    script = _graph_script(tmp_path, ("talker", "echo_params"))
    proc = subprocess.Popen(
        [sys.executable, str(script)], env=prefix, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    up = {"[talker-1] talker up", "[echo_params-2] echo_params up"}
    while time.monotonic() < deadline and not up <= set(lines):
        lines.append(proc.stdout.readline().rstrip("\n"))
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=60)
    lines += rest.splitlines()
    assert proc.returncode == EXIT_INTERRUPTED, lines
    order = [line for line in lines if "sending SIGINT" in line]
    assert order == ["[r2s2r] sending SIGINT to echo_params-2", "[r2s2r] sending SIGINT to talker-1"], lines
    assert "[talker-1] talker stopped by SIGINT" in lines, lines
    assert "[echo_params-2] echo_params stopped by SIGINT" in lines, lines


def test_a_closed_output_stops_every_child_before_the_launcher_exits(
    prefix: dict[str, str], tmp_path: Path
) -> None:
    # `r2s2r launch ... | head`: the reader goes away while nodes are still printing.
    proc = subprocess.Popen(
        [sys.executable, str(_graph_script(tmp_path, ("talker", "counter")))],
        env=prefix,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    while not any(line.startswith("[counter-2] count 3") for line in lines):
        assert time.monotonic() < deadline, f"no output from the counter within 60 s: {lines}"
        lines.append(proc.stdout.readline().rstrip("\n"))
    pids = [int(line.split("[")[2].split("]")[0]) for line in lines if "process started with pid" in line]
    assert len(pids) == 2, lines
    proc.stdout.close()
    try:
        code = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        for pid in pids:  # the launcher would have left them running
            os.kill(pid, signal.SIGKILL)
        pytest.fail("the launcher did not exit within 120 s of losing its output")
    assert code == EXIT_OUTPUT_CLOSED, proc.stderr.read()
    assert "[r2s2r] output closed: stopping the graph" in proc.stderr.read()
    # The launcher waited for its children: none is left running (or unreaped) after it.
    left = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    assert not left, f"children still there after the launcher exited: {left}"


def test_cli_refuses_bad_arguments(ros_env: dict[str, str]) -> None:
    for args, message in (
        (["nope:=1"], "graph 'world' has no argument 'nope'"),
        (["mode:=banana"], "argument mode:=banana is not one of sim, real"),
        (["mode"], "argument 'mode' is not of the form name:=value"),
    ):
        proc = subprocess.run(
            ["r2s2r", "launch", "world", *args], env=ros_env, text=True, capture_output=True, timeout=60
        )
        assert proc.returncode == EXIT_NOT_STARTED, proc
        assert message in proc.stderr, proc.stderr
    proc = subprocess.run(
        ["r2s2r", "launch", "nograph"], env=ros_env, text=True, capture_output=True, timeout=60
    )
    assert proc.returncode == EXIT_NOT_STARTED and "unknown graph 'nograph' (graphs: world)" in proc.stderr


def test_a_respawn_node_is_restarted_each_time_it_exits(prefix: dict[str, str], tmp_path: Path) -> None:
    import threading

    from r2s2r_sim.graph.node_graph import Argument

    graph = Graph(
        name="t",
        description="respawn",
        arguments=(Argument(name="again", default="true", description="respawn"),),
        nodes=(_node("talker"), _node("crasher", respawn="again")),
    )
    out = _Out()
    launcher = Launcher(_resolve(graph, tmp_path), env=prefix, out=out, sigint_timeout=SIGINT_TIMEOUT_S)  # type: ignore[arg-type]

    def stop_after_three_restarts() -> None:
        deadline = time.monotonic() + 240
        while not any("respawned crasher-2 (restart 3)" in line for line in list(out)):
            assert time.monotonic() < deadline, "no third respawn within 240 s"
            time.sleep(0.05)
        launcher._on_signal(signal.SIGINT, None)  # what Ctrl-C does

    threading.Thread(target=stop_after_three_restarts, daemon=True).start()
    code = launcher.run()
    assert code == EXIT_INTERRUPTED, out
    assert sum("process has died with exit code 3: crasher-2" in line for line in out) >= 3, out
    # The crashes of a respawned node are not the graph's failure, and the talker kept running throughout.
    assert "[r2s2r] sending SIGINT to talker-1" in out
