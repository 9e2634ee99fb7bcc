"""Pip-mode launcher: run a resolved node graph as separate OS processes, with launch semantics.

``launch``/``launch_ros`` and the ``ros2`` CLI cannot be installed from PyPI, so this is the smallest
process supervisor that gives a pip install what ``ros2 launch`` gives a ROS distro for our one graph:
every node is its own process started with the same ``--ros-args`` launch_ros would pass, output
lines are prefixed ``[name-N]``, Ctrl-C (SIGINT) or SIGTERM stops the children in reverse start order
(SIGINT, then SIGTERM, then SIGKILL after timeouts, as launch escalates), the graph stops when a
required node exits, a node marked ``respawn`` is restarted after ``RESPAWN_DELAY_S`` when it exits (as
launch_ros ``Node(respawn=True, respawn_delay=...)``), and the exit status is non-zero when a node could
not start or failed. A closed output (``r2s2r launch ... | head``) stops the graph as SIGPIPE stops a
pipeline's writer, but with the children stopped first.
It is not a launch-system clone: no substitutions, events or includes beyond what graph.py defines.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from r2s2r_sim.graph.node_graph import ResolvedNode
from r2s2r_sim.world.mesh_package import mesh_environment

EXIT_INTERRUPTED = 130  # the shell convention for "stopped by Ctrl-C"
EXIT_NOT_STARTED = 2
EXIT_OUTPUT_CLOSED = 128 + signal.SIGPIPE  # what a shell reports for a writer whose reader went away
RESPAWN_DELAY_S = 1.0  # as world.launch.py's respawn_delay


class LaunchError(RuntimeError):
    """A node of the graph could not be started; the message names the node and executable."""


def find_executable(node: ResolvedNode, env: Mapping[str, str]) -> Path:
    """Locate a node's executable as ``ros2 run`` would: ``<prefix>/lib/<package>/``, then PATH.

    Raises:
        LaunchError: not found anywhere, naming the places looked at.
    """
    looked = []
    for prefix in filter(None, env.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        candidate = Path(prefix) / "lib" / node.package / node.executable
        looked.append(str(candidate.parent))
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(node.executable, path=env.get("PATH"))
    if found:
        return Path(found)
    raise LaunchError(
        f"node '{node.name}': executable '{node.executable}' of package '{node.package}' not found "
        f"(looked in PATH and {', '.join(looked) or 'no AMENT_PREFIX_PATH'}); run `make setup` and "
        "`source env.sh`"
    )


@dataclass
class _Child:
    node: ResolvedNode
    label: str
    proc: subprocess.Popen[bytes]
    pump: threading.Thread
    exe: Path
    index: int
    stopping: bool = False
    respawns: int = 0


class Launcher:
    """Runs resolved nodes as child processes until a required one exits or we are interrupted."""

    def __init__(
        self,
        nodes: list[ResolvedNode],
        *,
        env: Mapping[str, str] | None = None,
        out: TextIO | None = None,
        sigint_timeout: float = 10.0,
        sigterm_timeout: float = 5.0,
    ) -> None:
        self._nodes = nodes
        self._env = dict(os.environ if env is None else env)
        self._env.update(mesh_environment(self._env))
        self._out = out if out is not None else sys.stdout
        self._sigint_timeout = sigint_timeout
        self._sigterm_timeout = sigterm_timeout
        self._children: list[_Child] = []
        self._lock = threading.Lock()
        self._interrupted = threading.Event()
        self._output_closed = threading.Event()

    def log(self, text: str) -> None:
        """Write one line of the launcher's own output (``[r2s2r]`` prefix, like launch's ``[INFO]``)."""
        self._write(f"[r2s2r] {text}\n")

    def _write(self, text: str) -> None:
        """Write to our output; once its reader has gone, stop the graph and drop what follows.

        Children keep writing into their pipes while they stop, so the pumps go on draining them:
        a child blocked on a full pipe would never see its SIGINT through.
        """
        with self._lock:
            if self._output_closed.is_set():
                return
            try:
                self._out.write(text)
                self._out.flush()
            except BrokenPipeError:
                self._output_closed.set()
                self._interrupted.set()
                self._silence_output()

    def _silence_output(self) -> None:
        # As the signal module's SIGPIPE note advises: point the dead descriptor at devnull so the
        # interpreter's final flush does not raise again, then say once, on stderr, why we stop.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._out.fileno())
            os.close(devnull)
        except (AttributeError, OSError, ValueError):
            pass  # not a file descriptor (a test's list): nothing will flush it at exit
        try:
            print("[r2s2r] output closed: stopping the graph", file=sys.stderr, flush=True)
        except (BrokenPipeError, ValueError):
            pass

    def _pump(self, label: str, stream: TextIO | object) -> None:
        for raw in iter(stream.readline, b""):  # type: ignore[attr-defined]
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._write(f"[{label}] {line}\n")

    def _start(self, node: ResolvedNode, exe: Path, index: int) -> _Child:
        # Own process group: the terminal's Ctrl-C reaches only us, and we stop children in order.
        proc = subprocess.Popen(  # list arguments, no shell
            [str(exe), *node.arguments, *node.ros_args()],
            env=self._env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        label = f"{node.executable}-{index}"
        pump = threading.Thread(target=self._pump, args=(label, proc.stdout), daemon=True)
        pump.start()
        self.log(f"process started with pid [{proc.pid}]: {label} ({node.package}/{node.executable})")
        return _Child(node=node, label=label, proc=proc, pump=pump, exe=exe, index=index)

    def _on_signal(self, signum: int, _frame: object) -> None:
        self._interrupted.set()

    def run(self) -> int:
        """Start every node, supervise, stop everything; return the graph's exit status.

        0: every node that ended on its own ended cleanly. 2: a node could not be started (nothing
        is left running). 130: interrupted by SIGINT/SIGTERM. 141: our output's reader went away.
        Otherwise the first non-zero exit code of a node that died on its own.
        """
        try:
            self._nodes, executables = self._installed()
        except LaunchError as err:
            self.log(f"error: {err}")
            return EXIT_NOT_STARTED
        if not self._nodes:
            self.log("error: no node runs with these arguments")
            return EXIT_NOT_STARTED
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        status = 0
        try:
            for index, (node, exe) in enumerate(zip(self._nodes, executables, strict=True), start=1):
                try:
                    self._children.append(self._start(node, exe, index))
                except OSError as err:
                    self.log(f"error: node '{node.name}' failed to start: {err}")
                    status = EXIT_NOT_STARTED
                    break
            else:
                status = self._supervise()
        finally:
            self._shutdown()
            for s, handler in previous.items():
                signal.signal(s, handler)
        if self._output_closed.is_set() and status in (0, EXIT_INTERRUPTED):
            return EXIT_OUTPUT_CLOSED
        if self._interrupted.is_set() and status == 0:
            return EXIT_INTERRUPTED
        return status

    def _installed(self) -> tuple[list[ResolvedNode], list[Path]]:
        """The nodes to start and their executables; an optional node (a viewer) not installed is left out.

        Raises:
            LaunchError: a node that is not optional cannot be found.
        """
        nodes, executables = [], []
        for node in self._nodes:
            try:
                executables.append(find_executable(node, self._env))
            except LaunchError:
                if not node.optional:
                    raise
                self.log(
                    f"{node.executable} is not installed (not in PATH, nor in lib/{node.package} under "
                    f"AMENT_PREFIX_PATH): running without {node.name}"
                )
                continue
            nodes.append(node)
        return nodes, executables

    def _respawn(self, child: _Child) -> None:
        """Start ``child``'s node again in its place (same label and index)."""
        new = self._start(child.node, child.exe, child.index)
        new.respawns = child.respawns + 1
        self._children[self._children.index(child)] = new
        self.log(f"respawned {new.label} (restart {new.respawns})")

    def _supervise(self) -> int:
        first_failure = 0
        reported: set[int] = set()
        respawn_at: dict[int, float] = {}  # id(child) -> monotonic time of its restart
        while not self._interrupted.is_set():
            for child in list(self._children):
                if id(child) in respawn_at and time.monotonic() >= respawn_at[id(child)]:
                    del respawn_at[id(child)]
                    reported.discard(id(child))
                    self._respawn(child)
                    continue
                code = child.proc.poll()
                if code is None or id(child) in reported:
                    continue
                reported.add(id(child))
                child.pump.join(timeout=1.0)
                how = "finished cleanly" if code == 0 else f"died with exit code {code}"
                self.log(f"process has {how}: {child.label} (pid {child.proc.pid})")
                if child.node.respawn and not child.node.required:
                    self.log(f"respawning {child.label} in {RESPAWN_DELAY_S:g} s")
                    respawn_at[id(child)] = time.monotonic() + RESPAWN_DELAY_S
                    continue
                if code != 0 and not first_failure:
                    first_failure = code if code > 0 else 128 - code
                if child.node.required:
                    self.log(f"required node '{child.node.name}' exited: stopping the graph")
                    return first_failure
            if len(reported) == len(self._children):
                return first_failure
            time.sleep(0.05)
        self.log("interrupted: stopping the graph")
        return EXIT_INTERRUPTED

    def _shutdown(self) -> None:
        for child in reversed(self._children):
            if child.proc.poll() is not None:
                continue
            child.stopping = True
            self.log(f"sending SIGINT to {child.label}")
            asked = time.monotonic()
            self._signal(child, signal.SIGINT)
            if not self._wait(child, self._sigint_timeout):
                self.log(f"{child.label} ignored SIGINT for {self._sigint_timeout:g} s: sending SIGTERM")
                self._signal(child, signal.SIGTERM)
                if not self._wait(child, self._sigterm_timeout):
                    self.log(f"{child.label} ignored SIGTERM: sending SIGKILL")
                    self._signal(child, signal.SIGKILL)
                    child.proc.wait()
            child.pump.join(timeout=1.0)
            self.log(
                f"{child.label} stopped (exit code {child.proc.returncode}) "
                f"{time.monotonic() - asked:.1f} s after SIGINT"
            )

    @staticmethod
    def _signal(child: _Child, signum: int) -> None:
        try:
            child.proc.send_signal(signum)
        except ProcessLookupError:
            pass

    @staticmethod
    def _wait(child: _Child, timeout: float) -> bool:
        try:
            child.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
