"""Run the world graph for the fault tests: the shipped graph, with cameras off and a cheap policy.

The graph is resolved from ``r2s2r_sim.graph.node_graph`` (what `r2s2r launch world` runs) and started as the
`r2s2r launch` command would, through a small driver script, so a test can read its output line by line,
find the nodes' pids and signal or kill them.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
POLICY = "fault_policies:HoldPolicy"
_DRIVER = """
import dataclasses, json, sys
from r2s2r_sim.graph.node_graph import load_graph, resolve
from r2s2r_sim.graph.launcher import Launcher
args, extra = sys.argv[1:-1], json.loads(sys.argv[-1])
nodes = [dataclasses.replace(n, parameters={**n.parameters, **extra.get(n.name, {})})
         for n in resolve(load_graph("world"), dict(a.split(":=", 1) for a in args))]
sys.exit(Launcher(nodes, sigint_timeout=60.0).run())
"""
# The launcher escalates past SIGINT after 60 s: a node that hangs at exit hangs for good, while tearing
# DDS down on a loaded machine can take seconds, so the bound is not a speed bound.
# Cheap, short episodes: no cameras; the task's 30 s (sim) timeout ends each one.
FAST = {"sim_node": {"cameras_enabled": False}}


class Graph:
    """A running graph: its process, its output lines (also kept in ``lines``) and the nodes' pids."""

    def __init__(self, env: dict[str, str], args: list[str], extra: dict[str, dict[str, object]]) -> None:
        env = dict(env)
        env["PYTHONPATH"] = f"{HERE}{os.pathsep}{env.get('PYTHONPATH', '')}"
        self.proc = subprocess.Popen(  # list arguments
            [sys.executable, "-c", _DRIVER, *args, json.dumps(extra)],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, what: str, match: Callable[[str], bool] | str, timeout: float = 300.0) -> str:
        """The first new output line that matches; fails naming ``what`` after ``timeout`` s or at exit."""
        test = (lambda line: re.search(match, line) is not None) if isinstance(match, str) else match
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                tail = "\n".join(self.lines[-60:])
                raise AssertionError(f"no {what} within {timeout:g} s:\n{tail}") from None
            if line is None:
                self._queue.put(None)
                raise AssertionError(f"graph exited before {what}:\n" + "\n".join(self.lines[-60:]))
            self.lines.append(line)
            if test(line):
                return line

    def pid(self, label: str) -> int:
        """Pid of the newest process the launcher started as ``label`` (e.g. ``policy_node-2``)."""
        pids = [
            int(m.group(1))
            for line in self.lines
            if (m := re.search(rf"process started with pid \[(\d+)\]: {label} ", line))
        ]
        assert pids, f"no process {label} started:\n" + "\n".join(self.lines[-40:])
        return pids[-1]

    def finish(self, timeout: float = 300.0) -> int:
        """Wait for the graph to exit (reading the rest of its output); returns its exit status."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.proc.kill()
                tail = "\n".join(self.lines[-60:])
                raise AssertionError(f"graph still running after {timeout:g} s:\n{tail}") from None
            if line is None:
                self._queue.put(None)
                return self.proc.wait(timeout=30)
            self.lines.append(line)

    def stop(self) -> None:
        """Kill what is left, the launcher's children included (teardown)."""
        import psutil

        try:
            procs = [psutil.Process(self.proc.pid), *psutil.Process(self.proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            procs = []
        for p in procs:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        self.proc.wait()
