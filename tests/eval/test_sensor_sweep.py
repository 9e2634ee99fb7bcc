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
from r2s2r_sim.world import SimWorld
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
        assert np.array_equal(a.rgb, b.rgb) and np.array_equal(a.depth, b.depth)
    for a, b in zip(noisy, ideal, strict=True):
        assert not np.array_equal(a.rgb, b.rgb) and not np.array_equal(a.depth, b.depth)
        assert np.count_nonzero(a.depth == 0) > np.count_nonzero(b.depth == 0)  # holes
        both = (a.depth > 0) & (b.depth > 0)
        err = np.abs(a.depth - b.depth)[both]
        assert 0.0005 < float(np.median(err)) < 0.02  # millimetres of noise at about a metre
    assert not np.array_equal(noisy[1].depth, noisy[2].depth)  # the arm holds still: temporal noise
    assert not np.array_equal(noisy[0].rgb, other[0].rgb)  # another episode, another draw


def test_sweep_with_the_axis_on_runs_the_reference_policy_end_to_end(tmp_path: Path) -> None:
    cfg = SweepConfig(
        world=WORLD, policies=(PolicySpec(name="reference"),), variations=SENSOR, n=1, method="random", seed=2
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
    # The episode ran to the task's verdict, not to an error, and placed the cube despite the noise.
    assert not row.reason.startswith("policy_error"), row.reason
    assert row.success, (row.reason, dict(row.metrics))
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
