"""Shared fixtures: an isolated ROS 2 environment for tests that start real processes."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from r2s2r_sim.ros.dds import claim_domain

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def _isolated_env(domain: int) -> dict[str, str]:
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str(domain)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env.pop("ROS_LOCALHOST_ONLY", None)
    env["PYTHONUNBUFFERED"] = "1"
    env["RCUTILS_COLORIZED_OUTPUT"] = "0"
    env.setdefault("MUJOCO_GL", "egl")
    return env


@pytest.fixture
def ros_env() -> Iterator[dict[str, str]]:
    """Environment for child processes: its own ROS_DOMAIN_ID, localhost-only discovery, no colour."""
    # Each test gets its own DDS domain, held by the lock every r2s2r run on this host respects, so
    # parallel runs (other checkouts, CI, a soak, xdist workers) cannot see each other's nodes.
    lock = claim_domain()
    yield _isolated_env(lock.domain)
    lock.release()


@pytest.fixture
def r2s2r_exe() -> str:
    """The installed ``r2s2r`` console script, run as a user runs it. Tests that need it skip without it."""
    exe = Path(sys.executable).parent / "r2s2r"
    found = str(exe) if exe.exists() else shutil.which("r2s2r")
    if found is None:
        pytest.skip("the r2s2r console script is not installed (pip install -e src/r2s2r_sim)")
    return found


@pytest.fixture
def r2s2r_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """``r2s2r ARGS`` in this process: its exit code (argparse's exits included), stdout and stderr."""

    # reason: r2s2r_sim.cli.main loads mujoco, which no conftest import may do before a test sets MUJOCO_GL
    from r2s2r_sim.cli.main import main as r2s2r_main

    def run(*args: str) -> tuple[int, str, str]:
        try:
            rc = r2s2r_main(list(args))
        except SystemExit as exc:  # argparse errors
            rc = int(exc.code or 0)
        captured = capsys.readouterr()
        return rc, captured.out, captured.err

    return run


@pytest.fixture
def shared_dir() -> Path:
    """../shared beside the checkout: the conformance corpora. Tests that need it skip without it."""
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} (the shared conformance corpora) is not present beside this checkout")
    return SHARED


class Processes:
    """Starts executables as separate OS processes and makes sure they are gone after the test."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, args: list[str], **kwargs: object) -> subprocess.Popen[str]:
        exe = shutil.which(args[0], path=self.env.get("PATH"))
        if exe is None:
            raise FileNotFoundError(f"{args[0]} is not on PATH; run `make setup` and `source env.sh`")
        then = kwargs.pop("preexec_fn", None)

        def preexec() -> None:
            # A test run started in the background ignores SIGINT; its nodes must not inherit that (a node
            # restores SIGINT at its first import, but not in the interpreter's start-up before it).
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            if callable(then):
                then()

        proc = subprocess.Popen(  # list arguments, no shell
            [exe, *args[1:]],
            env=self.env,
            text=True,
            preexec_fn=preexec,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            **kwargs,  # type: ignore[arg-type]
        )
        self.procs.append(proc)
        return proc

    def wait_for_line(self, proc: subprocess.Popen[str], prefix: str, timeout_s: float) -> str:
        """The first line ``proc`` prints that starts with ``prefix``, waiting at most ``timeout_s`` for it.

        Why: a test checks what a helper process printed, not how it exits. A test listener's DDS teardown
        after its last line can hang on a loaded machine; the fixture stops the process afterwards.
        """
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, name="line-pump", daemon=True).start()
        deadline = time.monotonic() + timeout_s
        seen: list[str] = []
        while True:
            try:
                line = lines.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                raise AssertionError(
                    f"waited {timeout_s} s for a line starting {prefix!r} from {proc.args}; "
                    f"it printed: {''.join(seen)[-2000:]!r}"
                ) from None
            if line is None:
                raise AssertionError(
                    f"{proc.args} exited (code {proc.wait()}) without a line starting {prefix!r}; "
                    f"it printed: {''.join(seen)[-2000:]!r}"
                )
            if line.startswith(prefix):
                return line
            seen.append(line)

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(2)
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(autouse=True)
def _scheduling_restored() -> Iterator[None]:
    """Put a worker that a test left real-time back to its own scheduling policy.

    SVT-AV1 (LeRobot's video codec) moves the thread that opens an encoder to ``SCHED_FIFO`` when run as
    root; the product's writer undoes it, but a test calling lerobot directly does not, and every process
    the worker started after it (nodes, CPU burners) would run real-time and starve the other worker.
    """
    policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    yield
    if os.sched_getscheduler(0) != policy or os.sched_getparam(0) != param:
        os.sched_setscheduler(0, policy, param)


@pytest.fixture
def processes(ros_env: dict[str, str]) -> Iterator[Processes]:
    """Start real executables in the isolated environment; all are stopped at teardown."""
    procs = Processes(ros_env)
    yield procs
    procs.stop_all()


# ------------------------------------------------------------------------------------ scheduling on xdist

# Rough cost of a test by its marker (s): whole studies, DDS process graphs, the rest.
_COST = {"study": 120.0, "integration": 30.0}


def _cost(item: pytest.Item) -> float:
    return max((c for m, c in _COST.items() if item.get_closest_marker(m) is not None), default=1.0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On xdist workers, order the suite so that each worker's share starts with its slow modules.

    ``--dist worksteal`` hands worker k the k-th contiguous slice of the collection and lets an idle worker
    steal from the end of another's; a slow test near the end of a slice is then a tail nobody can share.
    So the slow modules (kept whole, for their module-scoped fixtures) are spread over the slices by cost,
    each slice starting with them, and the quick tests fill the slices up to xdist's split.
    """
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers < 2 or len(items) < 2 * workers:
        return
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    slow = sorted(
        (group for group in modules.values() if max(map(_cost, group)) > 1.0),
        key=lambda g: -sum(map(_cost, g)),
    )
    quick = [i for group in modules.values() if max(map(_cost, group)) <= 1.0 for i in group]
    bins: list[list[pytest.Item]] = [[] for _ in range(workers)]
    load = [0.0] * workers
    for group in slow:
        k = load.index(min(load))
        bins[k].extend(group)
        load[k] += sum(map(_cost, group))
    # xdist's split: the first len % workers slices hold one test more.
    share = [len(items) // workers + (1 if k < len(items) % workers else 0) for k in range(workers)]
    for k in range(workers):
        need = max(0, share[k] - len(bins[k]))
        bins[k].extend(quick[:need])
        quick = quick[need:]
    bins[-1].extend(quick)
    items[:] = [item for b in bins for item in b]
