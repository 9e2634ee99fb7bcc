"""Recording onto a full disk (a file size limit): a clear error, exit 1, and a bag readable up to there."""

from __future__ import annotations

import re
import resource
from pathlib import Path

import pytest
from r2s2r_capture.bags.reader import BagReader

pytestmark = pytest.mark.integration
LIMIT = 512 * 1024  # bytes any one file of the recorder may reach (RLIMIT_FSIZE)


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def test_recorder_stops_with_a_clear_error_when_the_disk_is_full(processes, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    sim = processes.start(["sim_node", "--ros-args", "-p", "cameras_enabled:=false", "-p", "real_time:=true"])
    out = tmp_path / "bag"
    rec = processes.start(
        [
            "recorder_node",
            "--ros-args",
            "-p",
            f"output:={out}",
            "-p",
            "topics:=['/joint_states']",
            "-p",
            "flush_interval_s:=0.2",
        ],
        preexec_fn=_limit_file_size,
    )
    try:
        log, _ = rec.communicate(timeout=300)
    except Exception:
        rec.kill()
        raise
    assert sim.poll() is None
    assert rec.returncode == 1, log
    assert re.search(r"writing failed \(.*File too large.*\); recording stopped", log), log
    files = sorted(out.glob("*.mcap"))
    assert files and max(f.stat().st_size for f in files) <= LIMIT
    with BagReader(out) as bag:
        msgs = list(bag.messages(["/joint_states"]))
        # Readable up to the failure: hundreds of joint states, the last one intact and in sim-time order.
        assert len(msgs) > 100
        stamps = [(s.header.stamp.sec, s.header.stamp.nanosec) for s in map(bag.deserialize, msgs)]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
