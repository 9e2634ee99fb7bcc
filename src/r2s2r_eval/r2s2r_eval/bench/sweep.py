"""Sweep benchmark: ``python -m r2s2r_eval.bench.sweep --out out/bench_sweep.json``.

Measures, on this machine and in one run:

* variations compiled per second: ``make_world(world, sweep_variation(config, seed, index))`` in a loop
  (sample, apply to the composed spec, compile, resolve names), one process;
* sweep throughput in episodes per minute of the reference policy with the camera on (15 Hz), full
  episodes, through :func:`r2s2r_eval.episodes.sweep.run_sweep` on the local process pool (pool start-up
  included) and, when Ray imports, on a local Ray instance (``ray.init`` excluded, worker start-up included);
* the physics-only limit: ``mujoco.rollout.rollout`` on the model of the first variation, from its reset
  state, with the controls held at their reset values, for as many physics steps as the sweep's episodes
  took on average, one rollout per worker thread (the same parallelism as the pool).

Prints a table and writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
from mujoco import rollout
from r2s2r_sim.bench.report import add_out_option, add_world_options, write_results
from r2s2r_sim.paths import config_dir
from r2s2r_sim.variations import VariationConfig, load_variation_config, make_world, sweep_variation
from r2s2r_sim.worlds import world_path

from r2s2r_eval.episodes.results import ResultsStore
from r2s2r_eval.episodes.sweep import run_sweep
from r2s2r_eval.episodes.sweep_plan import Executor, PolicySpec, SweepConfig

__all__ = ["compile_rate", "main", "physics_limit", "sweep_rate"]


def compile_rate(world: str, config: VariationConfig, n: int, *, seed: int = 0) -> dict[str, float]:
    """Variations sampled, applied and compiled per second over ``n`` Sobol variations."""
    world_dir = world_path(world)
    make_world(world_dir, sweep_variation(config, seed=seed, index=0))  # warm-up
    t0 = time.perf_counter()
    for i in range(n):
        make_world(world_dir, sweep_variation(config, seed=seed, index=i))
    wall = time.perf_counter() - t0
    return {"variations": n, "wall_s": wall, "variations_per_s": n / wall}


def sweep_rate(
    cfg: SweepConfig, executor: Executor, workers: int, results: Path, *, quiet: bool = True
) -> tuple[dict[str, float], list[Any]]:
    """Episodes per minute of ``cfg`` on ``executor``; also returns the stored rows."""
    summary = run_sweep(cfg, results, executor=executor, workers=workers, progress=not quiet)
    with ResultsStore(results) as store:
        rows = list(store.rows())
    return (
        {
            "episodes": summary.ran,
            "succeeded": summary.succeeded,
            "errors": summary.errors,
            "wall_s": summary.wall_s,
            "episodes_per_min": summary.episodes_per_minute,
        },
        rows,
    )


def physics_limit(
    world: str, config: VariationConfig, *, nstep: int, threads: int, seed: int = 0
) -> dict[str, float]:
    """Episodes per minute of bare physics: ``threads`` rollouts of ``nstep`` steps with held controls."""
    w = make_world(world_path(world), sweep_variation(config, seed=seed, index=0))
    w.reset(0)
    model = w.model
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    state = np.empty(mujoco.mj_stateSize(model, spec))
    mujoco.mj_getState(model, w.data, state, spec)
    nbatch = threads
    initial = np.tile(state, (nbatch, 1))
    control = np.tile(w.data.ctrl.copy(), (nbatch, nstep, 1))
    datas = [mujoco.MjData(model) for _ in range(threads)]
    rollout.rollout(model, datas, initial[:1], control[:1, :10])  # warm-up
    t0 = time.perf_counter()
    rollout.rollout(model, datas, initial, control)
    wall = time.perf_counter() - t0
    return {
        "rollouts": nbatch,
        "steps_per_rollout": nstep,
        "threads": threads,
        "wall_s": wall,
        "episodes_per_min": 60.0 * nbatch / wall,
        "steps_per_s": nbatch * nstep / wall,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks, print a table and write JSON to ``--out``."""
    parser = argparse.ArgumentParser(prog="python -m r2s2r_eval.bench.sweep", description=__doc__)
    add_out_option(parser)
    add_world_options(parser)
    parser.add_argument("--compile-n", type=int, default=100, help="variations compiled for the rate")
    parser.add_argument("--episodes", type=int, default=None, help="sweep episodes (default: 4 x workers)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="pool size (default: cores)")
    parser.add_argument("--camera-rate-hz", type=float, default=15.0, help="camera rate (Hz)")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray executor")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    ns = parser.parse_args(argv)
    config = load_variation_config(ns.variations or config_dir() / "variations.yaml")
    episodes = ns.episodes if ns.episodes is not None else 4 * ns.workers
    cfg = SweepConfig(
        world=ns.world,
        policies=(PolicySpec(name="reference"),),
        variations=config,
        n=episodes,
        method="sobol",
        seed=0,
        camera_rate_hz=ns.camera_rate_hz,
    )
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "workers": ns.workers, "mujoco": mujoco.__version__},
        "world": ns.world,
        "camera_rate_hz": ns.camera_rate_hz,
    }
    print(f"compiling {ns.compile_n} variations ...", file=sys.stderr)
    results["compile"] = compile_rate(ns.world, config, ns.compile_n)
    with tempfile.TemporaryDirectory() as tmp:
        print(f"sweep of {episodes} episodes on the local pool ({ns.workers} workers) ...", file=sys.stderr)
        results["sweep_local"], rows = sweep_rate(
            cfg, Executor.LOCAL, ns.workers, Path(tmp) / "local.sqlite", quiet=ns.quiet
        )
        if not ns.no_ray:
            try:
                import ray  # noqa: F401
            except ImportError:
                print("ray not installed: skipping the Ray executor", file=sys.stderr)
            else:
                print(f"sweep of {episodes} episodes on local Ray ...", file=sys.stderr)
                results["sweep_ray"], _ = sweep_rate(
                    cfg, Executor.RAY, ns.workers, Path(tmp) / "ray.sqlite", quiet=ns.quiet
                )
    timestep = float(make_world(world_path(ns.world), sweep_variation(config, seed=0, index=0)).timestep)
    nstep = round(float(np.mean([r.duration_s for r in rows])) / timestep)
    results["physics_only"] = physics_limit(ns.world, config, nstep=nstep, threads=ns.workers)
    limit = results["physics_only"]["episodes_per_min"]

    print(f"{'measure':40} {'figure':>14} {'of physics limit':>17}")
    print(f"{'variations compiled / s':40} {results['compile']['variations_per_s']:14.1f}")
    for key, label in (("sweep_local", "local pool"), ("sweep_ray", "Ray (local)")):
        if key in results:
            epm = results[key]["episodes_per_min"]
            results[key]["fraction_of_physics_limit"] = epm / limit
            print(f"{'episodes / min, ' + label:40} {epm:14.1f} {epm / limit:17.4f}")
    print(f"{'episodes / min, physics only (rollout)':40} {limit:14.1f} {1.0:17.4f}")
    print(f"({nstep} physics steps per episode, {ns.workers} workers/threads, camera {ns.camera_rate_hz} Hz)")
    write_results(results, ns.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
