"""A sweep on a real two-node Ray cluster survives the loss of a node and resumes to the local run's rows.

Two ``ray start --block`` processes on this machine (a head and a worker node, one CPU and a 100 MB object
store each, token authentication with a token of their own) form the cluster, each in its own process
group so it is stopped by its id. ``r2s2r sweep --executor ray --address`` runs on it; once the results
store holds its first rows, the worker node and the sweep driver are killed (SIGKILL: a machine lost with
the sweep that ran on it), and the same command, run again, resumes on the surviving head node. The rows
must be those of a local run of the same sweep.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from r2s2r_eval.episodes.results import ResultsStore

pytest.importorskip("ray", reason="the Ray executor needs ray")

pytestmark = pytest.mark.integration

RAY = shutil.which("ray")
NODE_ARGS = ["--num-cpus=1", "--object-store-memory=100000000", "--disable-usage-stats", "--block"]
START_S = 180.0  # a node's processes start in tens of seconds on the loaded 2-core machine
DEAD_S = 120.0  # Ray marks a killed node dead after missing its heartbeats (about 15 s here)
SWEEP_S = 300.0
STOP_S = 30.0
POLL_S = 0.2
# Enough episodes that some are still to run when the first rows are stored, however fast the machine.
N_VARIATIONS = 12
SWEEP = [
    "sweep",
    "--world",
    "tabletop-pick-v1",
    "--policy",
    "reference",
    "-n",
    str(N_VARIATIONS),
    "--method",
    "random",
    "--seed",
    "11",
    "--max-steps",
    "4",
    "--camera-rate-hz",
    "15",
    "--quiet",
]
# Waits in a driver of its own until the cluster has the number of alive nodes asked for.
_NODES_SCRIPT = """
import sys, time, ray
address, want, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
ray.init(address=address, logging_level="ERROR", log_to_driver=False)
deadline = time.monotonic() + timeout
while (alive := sum(n["Alive"] for n in ray.nodes())) != want and time.monotonic() < deadline:
    time.sleep(0.5)
print(alive)
sys.exit(0 if alive == want else 1)
"""


@dataclass
class Cluster:
    """The head's address, the environment every process of the cluster shares, the node processes."""

    address: str
    env: dict[str, str]
    folder: Path
    nodes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start_node(self, name: str, args: list[str]) -> None:
        log = (self.folder / f"{name}.log").open("wb")
        self.nodes[name] = subprocess.Popen(
            [str(RAY), "start", *args, *NODE_ARGS],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: its raylet and agents are stopped with it
        )

    def wait_alive(self, count: int, timeout: float) -> None:
        """Wait until the cluster counts ``count`` alive nodes; fail with the nodes' logs if it does not."""
        proc = subprocess.run(
            [sys.executable, "-c", _NODES_SCRIPT, self.address, str(count), str(timeout)],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout + 60,
        )
        if proc.returncode != 0:
            logs = "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in self.folder.glob("*.log"))
            pytest.fail(
                f"waited {timeout:g} s for {count} alive Ray nodes: {proc.stdout}{proc.stderr}\n{logs}"
            )

    def kill(self, name: str) -> None:
        """SIGKILL a node's whole process group: the node is lost as a machine is."""
        _killpg(self.nodes[name], signal.SIGKILL)

    def stop(self) -> None:
        """Stop every node still running: SIGTERM to ``ray start`` (it stops its processes), then SIGKILL."""
        for proc in reversed(list(self.nodes.values())):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=STOP_S)
                except subprocess.TimeoutExpired:
                    pass
            _killpg(proc, signal.SIGKILL)  # whatever of its group is left
            proc.wait(timeout=STOP_S)


def _killpg(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    if RAY is None:
        pytest.skip("the ray command is not on PATH")
    # Short: Ray's unix sockets live under it, and a socket path is limited to 107 bytes.
    folder = Path(tempfile.mkdtemp(prefix="r2s2r-ray-", dir="/tmp"))
    token = folder / "auth_token"
    token.write_text(secrets.token_hex(32))
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))
    port = _free_port()
    found = Cluster(address=f"127.0.0.1:{port}", env=env, folder=folder)
    try:
        found.start_node(
            "head",
            [
                "--head",
                f"--port={port}",
                "--node-ip-address=127.0.0.1",
                f"--temp-dir={folder}",
                "--include-dashboard=false",
            ],
        )
        found.start_node("worker", [f"--address={found.address}", "--node-ip-address=127.0.0.1"])
        found.wait_alive(2, START_S)
        yield found
    finally:
        found.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _sweep(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "r2s2r_sim.cli.main", *SWEEP, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


@pytest.fixture
def local_run(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """The same sweep on the local process pool, started first: it runs while the cluster starts."""
    proc = _sweep(
        ["--executor", "local", "--workers", "1", "--results", str(tmp_path / "local.sqlite")],
        dict(os.environ),
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            _killpg(proc, signal.SIGKILL)  # type: ignore[arg-type]
            proc.wait(timeout=STOP_S)


def _stored(db: Path) -> int:
    """Rows in the results store so far (0 before the sweep created it)."""
    if not db.is_file():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0])
    except sqlite3.OperationalError:  # created but its tables not yet
        return 0


def _rows(db: Path) -> list[tuple]:
    with ResultsStore(db) as store:
        return sorted(
            (r.episode_key, r.policy, r.seed, r.world_hash, r.success, r.reason, dict(r.metrics), r.variation)
            for r in store.rows()
        )


@pytest.mark.timeout(START_S + 2 * SWEEP_S + DEAD_S + 120)
def test_sweep_survives_a_lost_node_and_resumes_to_the_local_rows(
    local_run: subprocess.Popen[str], cluster: Cluster, tmp_path: Path
) -> None:
    out, _ = local_run.communicate(timeout=SWEEP_S)
    assert local_run.returncode == 0, out
    on_ray = ["--executor", "ray", "--address", cluster.address, "--results", str(tmp_path / "ray.sqlite")]
    driver = _sweep(on_ray, cluster.env)
    deadline = time.monotonic() + SWEEP_S
    while _stored(tmp_path / "ray.sqlite") == 0:
        assert driver.poll() is None, f"the sweep ended before storing a row:\n{driver.communicate()[0]}"
        assert time.monotonic() < deadline, f"no row stored within {SWEEP_S:g} s"
        time.sleep(POLL_S)
    # The machine of the worker node and of the sweep is lost; its rows so far are committed.
    cluster.kill("worker")
    _killpg(driver, signal.SIGKILL)  # type: ignore[arg-type]
    driver.wait(timeout=STOP_S)
    stored = _stored(tmp_path / "ray.sqlite")
    assert 1 <= stored < N_VARIATIONS, f"{stored} rows when the node was lost: nothing left to resume"
    cluster.wait_alive(1, DEAD_S)
    # The same command, from the surviving node's side, runs only what is missing.
    resumed = _sweep(on_ray, cluster.env)
    out, _ = resumed.communicate(timeout=SWEEP_S)
    assert resumed.returncode == 0, out
    assert re.search(rf"\({stored} already stored, {N_VARIATIONS - stored} run: ", out), out
    ray_rows, local_rows = _rows(tmp_path / "ray.sqlite"), _rows(tmp_path / "local.sqlite")
    assert len(ray_rows) == N_VARIATIONS
    assert ray_rows == local_rows
