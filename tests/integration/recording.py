"""Waiting on a running recorder_node by what it has written (shared by the recording tests).

Imported as ``from recording import ...`` (pytest puts this folder on ``sys.path``). A recorder subscribes to
a topic only once it sees a publisher, and writes MCAP chunks every ``flush_interval_s``; these waits are
bounded by those events, not by a guess of how long a loaded machine needs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from subprocess import Popen

from r2s2r_capture.bags.reader import BagReader


def wait_recorded(
    rec: Popen[str],
    out: Path,
    topics: Sequence[str],
    *,
    min_count: int = 1,
    latched: Sequence[str] = (),
    timeout: float = 300.0,
) -> None:
    """Wait until ``rec`` subscribed to every topic and flushed ``min_count`` messages of each to ``out``.

    ``latched`` topics (published once) need one message. Reads the recorder's stdout up to its last
    "recording <topic>" line. AssertionError after ``timeout``.
    """
    need = {t: 1 if t in latched else min_count for t in topics}
    seen: set[str] = set()
    deadline = time.monotonic() + timeout
    while seen != set(topics):
        assert time.monotonic() < deadline, f"recorder did not subscribe to {set(topics) - seen}"
        assert rec.stdout is not None
        line = rec.stdout.readline()
        assert line, "recorder exited before subscribing"
        seen |= {t for t in topics if line.split("recording ")[-1].startswith(t + " ")}
    while True:
        files = list(out.glob("*.mcap"))
        if files and files[0].stat().st_size > 0:
            try:
                with BagReader(out) as bag:
                    if all(t in bag.topics and bag.topics[t].message_count >= n for t, n in need.items()):
                        return
            except Exception:  # a chunk being written; look again
                pass
        assert time.monotonic() < deadline, f"no flushed chunks with {need} messages in {out}"
        time.sleep(0.2)
