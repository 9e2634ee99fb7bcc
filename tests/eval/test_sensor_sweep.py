"""The ``sensor`` variation axis in the runner and in a sweep: the policy sees the effects, seeded."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
from r2s2r_eval.episodes.results import ResultsStore
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.episodes.sweep import run_sweep, run_task
from r2s2r_eval.episodes.sweep_plan import PolicySpec, SweepConfig, plan_sweep
from r2s2r_eval.policy import ImageRequest, Observation
from r2s2r_sim.variations import VariationConfig, sample_variation
from r2s2r_sim.variations.config import SensorVariationConfig
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path
from test_runner_images import _Watcher

WORLD = "tabletop-pick-v1"
SENSOR = dataclasses.replace(VariationConfig().only(), sensor=SensorVariationConfig(enabled=True))


def _watch(variation_seed: int | None, seed: int) -> list[Observation]:
    policy = _Watcher()
    policy.request = ImageRequest(width=160, height=120, rate_hz=10.0)  # small, so the test stays cheap
    variation = None if variation_seed is None else sample_variation(SENSOR, variation_seed)
    with EpisodeRunner(WORLD, variation=variation) as runner:
        runner.run(policy, seed=seed, max_steps=3)
    return policy.seen


def test_runner_policy_sees_the_effects_reproducibly() -> None:
    ideal, noisy, again, other = _watch(None, 4), _watch(1, 4), _watch(1, 4), _watch(1, 5)
    assert len(noisy) == len(ideal) == 3
    for a, b in zip(noisy, again, strict=True):
        assert np.array_equal(a.rgb, b.rgb) and np.array_equal(a.depth, b.depth, equal_nan=True)
    for a, b in zip(noisy, ideal, strict=True):  # depth in metres, NaN where there is no data
        assert not np.array_equal(a.rgb, b.rgb) and not np.array_equal(a.depth, b.depth, equal_nan=True)
        assert np.count_nonzero(np.isnan(a.depth)) > np.count_nonzero(np.isnan(b.depth))  # holes
        err = np.abs(a.depth - b.depth)[np.isfinite(a.depth) & np.isfinite(b.depth)]
        # At 160 px wide (f ~ 150 px) the model's RMS error at 0.7-1.3 m is ~4-30 mm.
        assert 0.001 < float(np.median(err)) < 0.03
    assert not np.array_equal(noisy[1].depth, noisy[2].depth, equal_nan=True)  # arm still: temporal noise
    assert not np.array_equal(noisy[0].rgb, other[0].rgb)  # another episode, another draw


def test_sweep_with_the_axis_on_runs_the_reference_policy_end_to_end(tmp_path: Path) -> None:
    # Two seconds of the episode (the policy perceives the cube on camera-size frames and starts to
    # reach): a whole episode takes minutes of CPU; its success with the axis on is measured, not tested.
    cfg = SweepConfig(
        world=WORLD,
        policies=(PolicySpec(name="reference"),),
        variations=SENSOR,
        n=1,
        method="random",
        seed=2,
        camera_rate_hz=5.0,
        max_steps=20,
    )
    summary = run_sweep(cfg, tmp_path / "s.sqlite", workers=1, progress=False)
    assert (summary.ran, summary.errors) == (1, 0)
    with ResultsStore(tmp_path / "s.sqlite") as store:
        (row,) = list(store.rows())
    params = row.variation["params"]
    ranges = SensorVariationConfig()
    for name in ranges.ranges():
        lo, hi = getattr(ranges, name)
        assert lo <= params[f"sensor.{name}"] <= hi, name
    assert params["sensor.projector_side"] in (-1.0, 1.0)
    assert row.world_hash == SimWorld(world_path(WORLD)).world_hash  # the model is the base one
    # The policy ran on the noisy frames without an error, to the step limit.
    assert row.reason.endswith("(max_steps)"), row.reason
    assert all(math.isfinite(v) for v in row.metrics.values())
    # The same task in process gives the same row: frames and noise follow the seeds only.
    (task,) = plan_sweep(
        cfg, world_dir=world_path(WORLD), world_id=WORLD, world_hash=SimWorld(world_path(WORLD)).world_hash
    )
    direct = run_task(task)
    assert (direct.success, direct.reason, dict(direct.metrics)) == (
        row.success,
        row.reason,
        dict(row.metrics),
    )
