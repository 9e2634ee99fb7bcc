"""sim_node + policy_node + evaluator_node as separate processes: episodes run over DDS and land in SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest
from r2s2r_eval.episodes.results import ResultsStore

pytestmark = pytest.mark.integration


def test_evaluator_runs_reference_policy_through_ros(processes, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "results.sqlite"
    sim = processes.start(["sim_node", "--ros-args", "-p", "lockstep:=true", "-p", "control_rate_hz:=10.0"])
    policy = processes.start(
        ["policy_node", "--ros-args", "-p", "use_sim_time:=true", "-p", "autostart:=false"]
    )
    evaluator = processes.start(
        [
            "evaluator_node",
            "--ros-args",
            "-p",
            "episodes:=1",
            "-p",
            "seed0:=1",
            "-p",
            f"results:={db}",
            "-p",
            "episode_timeout_s:=1800.0",  # a guard: a lost policy or world ends it within seconds
            "-p",
            "service_timeout_s:=60.0",
        ]
    )
    try:
        out, _ = evaluator.communicate(timeout=3600)
    except Exception:
        evaluator.kill()
        raise
    assert evaluator.returncode == 0, out
    assert f"evaluator: 1 episodes, 1 succeeded -> {db}" in out, out
    assert sim.poll() is None and policy.poll() is None
    with ResultsStore(db) as store:
        rows = list(store.rows())
    assert [(r.seed, r.success, r.reason, r.world_id, r.policy) for r in rows] == [
        (1, True, "success", "tabletop-pick-v1", "reference")
    ]
    assert len(rows[0].world_hash) == 64 and 1.0 < rows[0].duration_s < 30.0
