"""The Bullet stand-in unit behind the driver topics: a reference-policy episode over DDS in mode:=real.

``r2s2r launch world mode:=real emulate_hardware:=true hardware_profile:=<bullet unit>`` serves the unit that
Bullet simulates and renders (``engine: pybullet``) on the same topics, controllers and judge as the MuJoCo
unit; the policy node and the evaluator cannot tell which engine is behind them.  The unit is the shipped
``bullet`` one with ideal sensors and no motion blur at 3 Hz: the policy holds on frames older than 1 s, and
Bullet's software renderer, with the sensor model and three renders a blurred frame, takes longer than that
on a loaded two-core machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from r2s2r_eval.episodes.results import ResultsStore
from r2s2r_sim.hardware.shipped_profiles import profile_path
from test_real_mode import launch_real

pytestmark = pytest.mark.integration


def test_reference_policy_succeeds_over_dds_on_the_bullet_unit(
    ros_env: dict[str, str], tmp_path: Path
) -> None:
    data = yaml.safe_load(profile_path("bullet").read_text())
    data["camera"]["rate_hz"] = 3.0
    for section in ("depth_sensor", "color_sensor", "frame_timing"):
        data.pop(section)
    profile = tmp_path / "bullet_quick.yaml"
    profile.write_text(yaml.safe_dump(data, sort_keys=False))
    db = tmp_path / "results.sqlite"
    # The policy holds while frames are late, so on a loaded machine an episode takes minutes of wall time.
    args = (
        f"hardware_profile:={profile}",
        "episodes:=1",
        "seed:=0",
        "policy:=reference",
        "episode_timeout_s:=400.0",
    )
    out = launch_real(ros_env, db, *args, timeout=900.0)
    assert "arm6-bench-unit-bullet" in out, out[-4000:]  # the node's banner names the unit it serves
    with ResultsStore(db) as store:
        rows = list(store.rows())
    assert len(rows) == 1, out[-4000:]
    row = rows[0]
    assert row.variation is not None and row.variation["mode"] == "real"
    assert row.variation["judge_hook"] == "service:/emulated_hardware/judge"
    assert row.success and row.reason == "success", f"{row.reason} {dict(row.metrics)}\n{out[-4000:]}"
    assert row.metrics["object_to_target_m"] < 0.06
