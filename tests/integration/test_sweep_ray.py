"""The sweep on a local Ray instance gives the same rows as the local process pool (episodes.sweep)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from r2s2r_eval.episodes.results import ResultsStore
from r2s2r_eval.episodes.sweep import run_sweep
from r2s2r_eval.episodes.sweep_plan import PolicySpec, SweepConfig
from r2s2r_sim.variations import load_variation_config

ray = pytest.importorskip("ray", reason="the Ray executor needs ray")

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        yield
    finally:
        ray.shutdown()


def _rows(path: Path) -> list[tuple]:
    with ResultsStore(path) as store:
        return sorted(
            (r.episode_key, r.policy, r.seed, r.world_hash, r.success, r.reason, dict(r.metrics), r.variation)
            for r in store.rows()
        )


def test_ray_and_local_give_identical_rows(tmp_path: Path, local_ray: None) -> None:
    cfg = SweepConfig(
        world="tabletop-pick-v1",
        policies=(
            PolicySpec(name="reference"),
            PolicySpec(name="reference", params={"grasp_offset_m": 0.01}),
        ),
        variations=load_variation_config(ROOT / "config" / "variations.yaml"),
        n=2,
        method="random",
        seed=11,
        repeats=1,
        camera_rate_hz=15.0,
        max_steps=4,
    )
    on_ray = run_sweep(cfg, tmp_path / "ray.sqlite", executor="ray", progress=False)
    on_pool = run_sweep(cfg, tmp_path / "local.sqlite", executor="local", workers=2, progress=False)
    assert on_ray.ran == on_pool.ran == 4 and on_ray.errors == on_pool.errors == 0
    assert on_ray.keys == on_pool.keys
    ray_rows, pool_rows = _rows(tmp_path / "ray.sqlite"), _rows(tmp_path / "local.sqlite")
    assert len(ray_rows) == 4
    assert ray_rows == pool_rows
    # Resuming on Ray skips what is stored, whichever executor stored it.
    assert run_sweep(cfg, tmp_path / "local.sqlite", executor="ray", progress=False).ran == 0
