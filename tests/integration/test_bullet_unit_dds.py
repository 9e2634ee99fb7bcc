"""The Bullet stand-in unit behind the driver topics: a reference-policy episode over DDS in mode:=real.

``r2s2r launch world mode:=real emulate_hardware:=true hardware_profile:=bullet`` serves the unit that
Bullet simulates and renders (``engine: pybullet``) on the same topics, controllers and judge as the MuJoCo
unit; the policy node and the evaluator cannot tell which engine is behind them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from r2s2r_eval.episodes.results import ResultsStore
from test_real_mode import launch_real

pytestmark = pytest.mark.integration


def test_reference_policy_succeeds_over_dds_on_the_bullet_unit(
    ros_env: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "results.sqlite"
    out = launch_real(
        ros_env, db, "hardware_profile:=bullet", "episodes:=1", "seed:=0", "policy:=reference", timeout=900.0
    )
    assert "arm6-bench-unit-bullet" in out, out[-4000:]  # the node's banner names the unit it serves
    with ResultsStore(db) as store:
        rows = list(store.rows())
    assert len(rows) == 1, out[-4000:]
    row = rows[0]
    assert row.variation is not None and row.variation["mode"] == "real"
    assert row.variation["judge_hook"] == "service:/emulated_hardware/judge"
    assert row.success and row.reason == "success", (row.reason, row.metrics, out[-4000:])
    assert row.metrics["object_to_target_m"] < 0.06
