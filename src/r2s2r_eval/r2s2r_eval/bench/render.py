"""Render budget benchmark: ``python -m r2s2r_eval.bench.render --out out/bench_render.json``.

Every figure is a ratio against today's path (the camera's 640x480 frames with the ``full`` profile)
measured in the same run:

(a) renders per second available to a sweep: ``--workers`` processes each drawing one camera of the
    bundled world as fast as they can, per render setting (profile, size, tiles), colour + depth read back.
(b) sweep episodes per minute (:func:`r2s2r_eval.episodes.sweep.run_sweep`, local pool, pool start-up
    included) of the BC policy as today (640x480 at the camera's 15 Hz, ``full``), at its own request (96x72
    drawn at 192x144, one frame per 10 Hz control step) with ``full`` and with ``fast``; and of the reference
    policy with ``full`` and ``fast``.  Episodes are cut at ``--max-steps`` so every arm runs the same
    number of control steps.
(c) the render-bound limit of each sweep arm: renders per second available at its setting (a) divided
    by its renders per episode, in episodes per minute, and the arm's fraction of it.
(e) steady-state episodes per minute of one process, the BC arms of (b) alternating episode by episode
    in the same process (no pool start-up, policy loading or first-frame context set-up; load that drifts
    during the run hits every arm alike): the sweep worker's rate once running.
(d) the sim node's camera rate at 640x480 (camera at 120 Hz sim, as fast as possible, counted by a
    subscriber) with ``render_profile:=fast`` against ``full`` (full runs before and after, the faster
    one counts, so load during one of them cannot flatter the ratio).

The machine is shared, so only same-run ratios mean anything.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from r2s2r_sim.bench.report import Ratio, add_out_option, add_world_options, print_ratios, write_results
from r2s2r_sim.bench.sim import run_node
from r2s2r_sim.paths import config_dir
from r2s2r_sim.render.renderer import RgbdRenderer, TiledRenderer
from r2s2r_sim.variations import load_variation_config, sweep_variation
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

from r2s2r_eval.episodes.results import ResultsStore
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.episodes.sweep import run_sweep
from r2s2r_eval.episodes.sweep_plan import PolicySpec, SweepConfig
from r2s2r_eval.policy import load_policy

__all__ = ["RenderSetting", "main", "render_rate", "sweep_arm"]


@dataclass(frozen=True)
class RenderSetting:
    """What one render draws: profile, size (px) and how many tiles share the pass (0: a single view)."""

    label: str
    profile: str
    width: int
    height: int
    tiles: int = 0


def _render_worker(world: str, setting: RenderSetting, seconds: float) -> tuple[int, float]:
    """Views drawn in about ``seconds`` (after a warm-up) and the time taken, in this process."""
    w = SimWorld(world_path(world))
    w.reset(0)
    cam = w.config.cameras[0]
    mjcf = w.model.camera(w.camera_id(cam.name)).name
    profile = w.config.render_profile(cam, setting.profile)
    if setting.tiles:
        tiled = TiledRenderer(w.model, setting.width, setting.height, tiles=setting.tiles, profile=profile)
        views = [(w.model, w.data, mjcf)] * setting.tiles
        with tiled:

            def draw() -> int:
                tiled.render(views, depth_range=cam.depth_range)
                return setting.tiles

            return _timed(draw, seconds)
    with RgbdRenderer(w.model, setting.width, setting.height, profile=profile) as single:

        def draw_one() -> int:
            single.render(w.data, mjcf, depth_range=cam.depth_range)
            return 1

        return _timed(draw_one, seconds)


def _timed(draw: Any, seconds: float) -> tuple[int, float]:
    for _ in range(2):
        draw()
    views, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        views += draw()
    return views, time.perf_counter() - start


def render_rate(world: str, setting: RenderSetting, *, workers: int, seconds: float) -> dict[str, float]:
    """Views per second drawn by ``workers`` processes together (each process's rate, summed)."""
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        parts = list(pool.map(_render_worker, [world] * workers, [setting] * workers, [seconds] * workers))
    return {"views_per_s": sum(v / t for v, t in parts), "workers": workers}


def sweep_arm(cfg: SweepConfig, workers: int, results: Path, *, quiet: bool = True) -> dict[str, float]:
    """Episodes per minute of one sweep, and its mean control steps per episode."""
    summary = run_sweep(cfg, results, workers=workers, progress=not quiet)
    with ResultsStore(results) as store:
        rows = [r for r in store.rows() if r.episode_key in set(summary.keys)]
    errors = [r.reason for r in rows if r.reason.startswith(("episode_error", "variation_error", "worker"))]
    if errors:
        raise RuntimeError(f"sweep arm failed: {errors[0]}")
    steps = [round(r.duration_s * 10.0) for r in rows]  # every arm's policy runs at 10 Hz
    return {
        "episodes": summary.ran,
        "wall_s": summary.wall_s,
        "episodes_per_min": summary.episodes_per_minute,
        "steps_per_episode": sum(steps) / len(steps),
    }


def steady_state(
    world: str, variations: Any, checkpoint: Path, *, episodes: int, max_steps: int
) -> dict[str, Any]:
    """(e) Median wall time per episode of each BC arm, the arms alternating in one process."""
    import statistics

    policy = load_policy("bc", {"checkpoint": str(checkpoint.resolve()), "num_threads": 1})
    variation = sweep_variation(variations, seed=0, index=0)
    arms = {
        "bc, 640x480 15 Hz, full (today)": ("full", False),
        "bc, own 96x72, full": ("full", True),
        "bc, own 96x72, fast": ("fast", True),
    }
    runners = {
        label: EpisodeRunner(world, variation=variation, render_profile=p, policy_images=i).__enter__()
        for label, (p, i) in arms.items()
    }
    walls: dict[str, list[float]] = {label: [] for label in arms}
    try:
        for seed in range(episodes + 1):  # the first round warms up (GL contexts, caches); not counted
            for label, runner in runners.items():
                result = runner.run(policy, seed, max_steps=max_steps)
                if seed:
                    walls[label].append(result.wall_s)
    finally:
        for runner in runners.values():
            runner.__exit__(None, None, None)
    today = statistics.median(walls["bc, 640x480 15 Hz, full (today)"])
    return {
        label: {
            "median_wall_s": statistics.median(w),
            "episodes_per_min": 60.0 / statistics.median(w),
            "ratio_to_bc_today": today / statistics.median(w),
            "episodes": len(w),
        }
        for label, w in walls.items()
    }


def _run_node_cameras(world: str, seconds: float) -> dict[str, Any]:
    domain = 40 + os.getpid() % 50
    runs: dict[str, Any] = {}
    order = (("full_before", "full"), ("fast", "fast"), ("full_after", "full"))
    for i, (label, profile) in enumerate(order):
        params = [f"world:={world}", "real_time:=false", "camera_rate_hz:=120.0"]
        params.append(f"render_profile:={profile}")
        runs[label] = run_node(params, warmup=2.0, seconds=seconds, domain_id=domain + i)
    full = max(runs["full_before"].get("camera_hz", 0.0), runs["full_after"].get("camera_hz", 0.0))
    fast = runs["fast"].get("camera_hz", 0.0)
    return {
        "full_fps": full,
        "fast_fps": fast,
        "ratio": fast / full if full else math.nan,
        "target": 2.0,
        "runs": runs,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks, print a table and write JSON to ``--out``."""
    parser = argparse.ArgumentParser(prog="python -m r2s2r_eval.bench.render", description=__doc__)
    add_out_option(parser)
    add_world_options(parser)
    parser.add_argument("--bc-checkpoint", type=Path, required=True, help="BC checkpoint (r2s2r train)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="sweep/render processes")
    parser.add_argument("--episodes", type=int, default=None, help="episodes per arm (default 12 x workers)")
    parser.add_argument("--max-steps", type=int, default=60, help="control steps per episode")
    parser.add_argument("--seconds", type=float, default=4.0, help="render measurement per setting (s)")
    parser.add_argument("--node-seconds", type=float, default=6.0, help="sim node measurement per run (s)")
    parser.add_argument("--no-node", action="store_true", help="skip the sim node camera runs")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--steady-episodes", type=int, default=4, help="(e) episodes per BC arm")
    parser.add_argument("--steady-only", action="store_true", help="run (e) only")
    ns = parser.parse_args(argv)
    workers = ns.workers
    # Twelve episodes per worker: a sweep's fixed start-up (spawning workers, importing torch, the first
    # GL context) is paid once per run, and a handful of episodes would measure mostly that.
    episodes = ns.episodes if ns.episodes is not None else 12 * workers

    settings = [
        RenderSetting("640x480 full (today)", "full", 640, 480),
        RenderSetting("640x480 fast", "fast", 640, 480),
        RenderSetting("192x144 full (BC 96x72, 2x)", "full", 192, 144),
        RenderSetting("192x144 fast (BC 96x72, 2x)", "fast", 192, 144),
        RenderSetting("96x72 full", "full", 96, 72),
        RenderSetting("96x72 fast", "fast", 96, 72),
        RenderSetting("16 tiles 96x72 full", "full", 96, 72, tiles=16),
        RenderSetting("16 tiles 96x72 fast", "fast", 96, 72, tiles=16),
    ]
    results: dict[str, Any] = {"world": ns.world, "workers": workers, "cpu_count": os.cpu_count()}
    variations = load_variation_config(ns.variations or config_dir() / "variations.yaml")
    print("steady state: BC arms alternating in one process ...", file=sys.stderr)
    steady = steady_state(
        ns.world, variations, ns.bc_checkpoint, episodes=ns.steady_episodes, max_steps=ns.max_steps
    )
    results["e_steady_state"] = steady
    for label, arm in steady.items():
        print(f"(e) {label:34} {arm['episodes_per_min']:7.2f} ep/min {arm['ratio_to_bc_today']:6.2f} x today")
    if ns.steady_only:
        write_results(results, ns.out)
        return 0
    rates: dict[str, float] = {}
    for s in settings:
        print(f"rendering: {s.label} ...", file=sys.stderr)
        rates[s.label] = render_rate(ns.world, s, workers=workers, seconds=ns.seconds)["views_per_s"]
    results["a_views_per_s"] = rates

    bc = PolicySpec(name="bc", params={"checkpoint": str(ns.bc_checkpoint.resolve()), "num_threads": 1})
    reference = PolicySpec(name="reference")
    arms = [
        ("bc, 640x480 15 Hz, full (today)", bc, "full", False, "640x480 full (today)"),
        ("bc, own 96x72, full", bc, "full", True, "192x144 full (BC 96x72, 2x)"),
        ("bc, own 96x72, fast", bc, "fast", True, "192x144 fast (BC 96x72, 2x)"),
        ("reference, 640x480, full", reference, "full", True, "640x480 full (today)"),
        ("reference, 640x480, fast", reference, "fast", True, "640x480 fast"),
    ]
    sweeps: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, policy, profile, policy_images, setting) in enumerate(arms):
            print(f"sweep: {label} ...", file=sys.stderr)
            cfg = SweepConfig(
                world=ns.world,
                policies=(policy,),
                variations=variations,
                n=episodes,
                seed=0,
                max_steps=ns.max_steps,
                render_profile=profile,
                policy_images=policy_images,
            )
            arm = sweep_arm(cfg, workers, Path(tmp) / f"arm{i}.sqlite", quiet=ns.quiet)
            # One frame per 10 Hz control step in every arm (the 15 Hz camera has a frame due at each).
            renders = arm["steps_per_episode"]
            limit = 60.0 * rates[setting] / renders
            arm.update(
                render_setting=setting,
                renders_per_episode=renders,
                render_bound_limit=limit,
                fraction_of_limit=arm["episodes_per_min"] / limit,
            )
            sweeps[label] = arm
    today = sweeps["bc, 640x480 15 Hz, full (today)"]["episodes_per_min"]
    for arm in sweeps.values():
        arm["ratio_to_bc_today"] = arm["episodes_per_min"] / today
    results["b_sweeps"] = sweeps
    if not ns.no_node:
        print("sim node cameras: full, fast, full ...", file=sys.stderr)
        results["d_sim_node_camera"] = _run_node_cameras(ns.world, ns.node_seconds)

    base = rates["640x480 full (today)"]
    print(f"{'(a) render setting':34} {'views/s':>9} {'x today':>8}   ({workers} processes)")
    for label, rate in rates.items():
        print(f"{label:34} {rate:9.1f} {rate / base:8.2f}")
    print(f"{'(b, c) sweep arm':34} {'ep/min':>9} {'x today':>8} {'limit':>8} {'of limit':>8}")
    for label, arm in sweeps.items():
        print(
            f"{label:34} {arm['episodes_per_min']:9.1f} {arm['ratio_to_bc_today']:8.2f} "
            f"{arm['render_bound_limit']:8.1f} {arm['fraction_of_limit']:8.2f}"
        )
    node = results.get("d_sim_node_camera")
    if node:
        d = Ratio(
            "(d) sim node 640x480 camera, fast / full",
            node["ratio"],
            node["target"],
            figures=f"{node['fast_fps']:.1f} / {node['full_fps']:.1f} frames/s",
        )
        print_ratios([d])
        results["ratios"] = [d.as_dict()]
    write_results(results, ns.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
