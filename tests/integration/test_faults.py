"""Faults survived by the real graph (real processes over DDS): lost policy, sim and evaluator.

Each test runs the shipped world graph (cameras off, a joint-state-only policy that holds the arm, so the
task's timeout ends every episode) and waits on output lines, never on time.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from fault_graph import FAST, POLICY, Graph
from r2s2r_eval.episodes.results import ResultsStore

pytestmark = pytest.mark.integration

EVAL = "evaluator_node-3"
# The evaluator's policy watchdog: seconds of silence; short so the tests do not idle (not a speed bound).
FAULTS = {**FAST, "evaluator_node": {"policy_timeout_s": 5.0}}


def _rows(db: Path) -> list[tuple[int, bool, str]]:
    with ResultsStore(db) as store:
        return [(r.seed, r.success, r.reason) for r in store.rows()]


def _args(db: Path, episodes: int, *extra: str) -> list[str]:
    return ["mode:=sim", f"episodes:={episodes}", f"policy:={POLICY}", f"results:={db}", *extra]


@pytest.fixture
def graphs(ros_env: dict[str, str]):  # type: ignore[no-untyped-def]
    started: list[Graph] = []

    def start(args: list[str], extra: dict[str, dict[str, object]] = FAULTS) -> Graph:
        g = Graph(ros_env, args, extra)
        started.append(g)
        return g

    yield start
    for g in started:
        g.stop()


def _kill_policy_mid_episode(g: Graph, episode: int) -> None:
    g.wait_for(
        f"the policy acting in episode {episode}",  # numbered as the evaluator numbers them
        rf"\[policy_node-2\] hold policy: acting in episode {episode} ",
    )
    os.kill(g.pid("policy_node-2"), signal.SIGKILL)


def test_policy_killed_mid_episode_ends_it_as_policy_lost_and_stops_the_run(graphs, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "results.sqlite"
    g = graphs(_args(db, 3))
    _kill_policy_mid_episode(g, 1)
    line = g.wait_for("the evaluator's policy-lost message", rf"\[{EVAL}\].*policy lost")
    assert "respawn_policy:=true" in line, line
    assert g.finish() != 0, "\n".join(g.lines[-30:])
    assert _rows(db) == [(0, False, "timeout"), (1, False, "policy_lost")]


def test_policy_killed_mid_episode_is_respawned_and_the_run_goes_on(graphs, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "results.sqlite"
    g = graphs(_args(db, 3, "respawn_policy:=true"))
    _kill_policy_mid_episode(g, 1)
    g.wait_for("the launcher's respawn", r"\[r2s2r\] respawned policy_node-2")
    assert g.finish() == 0, "\n".join(g.lines[-40:])
    rows = _rows(db)
    assert rows == [(0, False, "timeout"), (1, False, "policy_lost"), (2, False, "timeout")], "\n".join(
        g.lines[-60:]
    )
    assert any(f"[{EVAL}]" in line and "restarted policy answered" in line for line in g.lines)


def test_sim_killed_ends_the_run_nonzero_with_the_store_intact(graphs, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "results.sqlite"
    g = graphs(_args(db, 3))
    g.wait_for("the policy acting in episode 1", r"\[policy_node-2\] hold policy: acting in episode 1 ")
    os.kill(g.pid("sim_node-1"), signal.SIGKILL)
    assert g.finish() != 0, "\n".join(g.lines[-30:])
    assert _rows(db) == [(0, False, "timeout")]


def test_evaluator_killed_then_the_same_command_resumes_at_the_next_unfinished_seed(  # type: ignore[no-untyped-def]
    graphs, tmp_path: Path
) -> None:
    db = tmp_path / "results.sqlite"
    g = graphs(_args(db, 3))
    g.wait_for("the policy acting in episode 1", r"\[policy_node-2\] hold policy: acting in episode 1 ")
    os.kill(g.pid(EVAL), signal.SIGKILL)
    assert g.finish() != 0
    assert _rows(db) == [(0, False, "timeout")]
    again = graphs(_args(db, 3))
    again.wait_for("the resume message", rf"\[{EVAL}\].*resuming: 1 of 3 episodes already in .* at seed 1")
    assert again.finish() == 0, "\n".join(again.lines[-30:])
    assert _rows(db) == [(0, False, "timeout"), (1, False, "timeout"), (2, False, "timeout")]


# When Ctrl-C comes, as the line of output to wait for: start-up (the graph's second line), mid-episode
# (the policy acting in the second episode), and between episodes (the first one just judged).
_MOMENTS = {
    "start-up": lambda _line: True,
    "mid-episode": r"\[policy_node-2\] hold policy: acting in episode 1 ",
    "between-episodes": rf"\[{EVAL}\].*episode 0 \(seed 0\): timeout",
}


@pytest.mark.parametrize("moment", sorted(_MOMENTS))
def test_ctrl_c_at_any_stage_leaves_the_store_and_the_bag_valid(  # type: ignore[no-untyped-def]
    graphs, processes, tmp_path: Path, moment: str
) -> None:
    """SIGINT to the launcher and the recorder at start-up, mid-episode or between episodes."""
    from r2s2r_capture.bags.reader import BagReader

    db, bag = tmp_path / "results.sqlite", tmp_path / "bag"
    rec = processes.start(
        [
            "recorder_node",
            "--ros-args",
            "-p",
            f"output:={bag}",
            "-p",
            "topics:=['/joint_states', '/r2s2r/episode_outcome']",
        ]
    )
    # Recording before the graph starts, as a user's `ros2 bag record` would be: a Ctrl-C while the
    # recorder is still importing its modules ends it with Python's KeyboardInterrupt, before it has a bag.
    ready = processes.wait_for_line(rec, "[INFO]", timeout_s=120)
    assert "recording to" in ready, ready
    g = graphs(_args(db, 5))
    for _ in range(2 if moment == "start-up" else 1):
        g.wait_for(f"the {moment} line", _MOMENTS[moment])
    g.proc.send_signal(signal.SIGINT)
    rec.send_signal(signal.SIGINT)
    g.finish(timeout=600)  # three nodes, each up to the launcher's 60 s SIGINT bound and more
    assert rec.wait(timeout=120) == 0, "recorder_node did not close its bag cleanly on SIGINT"
    escalated = [line for line in g.lines if "SIGKILL" in line or "ignored SIGINT" in line]
    assert not escalated, "\n".join(g.lines[-60:])  # the whole tail: which node, after what
    assert not any("evaluator: 5 episodes" in line for line in g.lines), "the run ended before Ctrl-C"
    if moment != "start-up":
        assert _rows(db)[:1] == [(0, False, "timeout")]  # the judged episode is kept
    if db.exists():
        rows = _rows(db)  # opens and checks the store
        assert [r[0] for r in rows] == list(range(len(rows)))
        assert all(reason in ("timeout", "success", "object_dropped") for _, _, reason in rows), rows
    with BagReader(bag) as reader:
        msgs = list(reader.messages())
        for msg in msgs:
            reader.deserialize(msg)  # every recorded message is whole
    assert (bag / "metadata.yaml").is_file()
