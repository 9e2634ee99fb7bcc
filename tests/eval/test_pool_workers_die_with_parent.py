"""A study killed by a signal it cannot handle takes its pool workers with it (Linux)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")

# The parent runs one job on the shared pool; the job writes its pid, then waits on a pipe nobody writes (a
# long job, like a shard of demonstrations).
_PARENT = textwrap.dedent(
    """
    import os, sys
    from r2s2r_eval.episodes.executors import run_local

    def job(path):
        with open(path + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.replace(path + ".tmp", path)
        r, _ = os.pipe()
        os.read(r, 1)  # blocks until the process ends
        return []

    if __name__ == "__main__":
        run_local(job, [sys.argv[1]], 1, lambda j, rows: None, lambda j, reason: None)
    """
)


def _wait(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (dead, not yet reaped by its new parent) counts as gone.
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_workers_end_with_their_parent(tmp_path: Path, sig: signal.Signals) -> None:
    script = tmp_path / "parent.py"
    script.write_text(_PARENT, encoding="utf-8")
    pid_file = tmp_path / "worker.pid"
    parent = subprocess.Popen([sys.executable, str(script), str(pid_file)], cwd=tmp_path)
    try:
        _wait(pid_file.exists, 120.0, "the pool worker to start its job")
        worker = int(pid_file.read_text(encoding="utf-8"))
        assert _alive(worker)
        parent.send_signal(sig)
        parent.wait(timeout=60)
        _wait(lambda: not _alive(worker), 60.0, f"worker {worker} to end after its parent got {sig.name}")
    finally:
        parent.kill()
        parent.wait(timeout=60)
        if pid_file.exists() and _alive(int(pid_file.read_text(encoding="utf-8"))):
            os.kill(int(pid_file.read_text(encoding="utf-8")), signal.SIGKILL)  # leave no orphan behind
