"""mode:=real end to end against the emulated hardware (a stand-in for the drivers, not a robot).

``r2s2r launch world mode:=real emulate_hardware:=true`` runs the emulator, the policy node and the evaluator;
the evaluator resets through ``/emulated_hardware/reset_episode``, ends the episode at the policy's done
signal (or its timeout) and asks ``/emulated_hardware/judge`` (a stand-in for a human judge).

The policy is the reference policy; its ``done`` property is what the policy node turns into its
``~/episode_done`` signal.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from r2s2r_eval.episodes.results import ResultsStore

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parent
POLICY = "reference"


def launch_real(ros_env: dict[str, str], results: Path, *args: str, timeout: float = 420.0) -> str:
    """Run the real-mode graph to completion; returns its output (asserts exit 0)."""
    env = dict(ros_env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")]))
    cmd = ["r2s2r", "launch", "world", "mode:=real", "emulate_hardware:=true", f"results:={results}", *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    return out


def test_real_mode_runs_an_episode_on_the_emulated_hardware(ros_env: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    out = launch_real(ros_env, db, "episodes:=1", "seed:=0", f"policy:={POLICY}")
    with ResultsStore(db) as store:
        rows = list(store.rows())
    assert len(rows) == 1, out[-4000:]
    row = rows[0]
    assert row.variation is not None and row.variation["mode"] == "real"
    assert row.variation["judge_hook"] == "service:/emulated_hardware/judge"
    assert row.variation["reset_hook"] == "service:/emulated_hardware/reset_episode"
    assert row.variation["end"] in ("policy_done", "timeout", "policy_error")
    # The verdict is the judge's: its reason vocabulary and its task metrics.
    assert row.reason in ("success", "not_achieved", "object_dropped") or row.reason.startswith(
        "policy_error"
    )
    assert "object_to_target_m" in row.metrics or row.reason.startswith("policy_error"), row.metrics
    assert row.world_id == "tabletop-pick-v1" and len(row.world_hash) == 64
    assert row.policy == POLICY and row.seed == 0
    assert "ended by" in out and "judged by service:/emulated_hardware/judge" in out
