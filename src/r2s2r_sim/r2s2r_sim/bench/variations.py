"""Benchmark: variations compiled per second against plain base-world compiles per second.

Run ``python -m r2s2r_sim.bench.variations [--seconds S] [--config config/variations.yaml]``.  Two levels:

* world: ``SimWorld(world)`` (load the MJCF files, compose, compile, resolve names) against
  ``make_world(world, sample_variation(config, seed))`` (the same plus sampling and applying);
* spec: compiling a copy of the composed base spec against sampling, applying to a copy and compiling.
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from r2s2r_sim.paths import config_dir
from r2s2r_sim.variations.config import VariationConfig, load_variation_config
from r2s2r_sim.variations.engine import apply_variation, make_world, sample_variation
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

__all__ = ["main", "rate"]


def rate(fn: Callable[[int], object], seconds: float) -> float:
    """Calls of ``fn(i)`` per second over about ``seconds`` (at least 3 calls, after one warm-up call)."""
    fn(0)
    n, start = 0, time.perf_counter()
    while n < 3 or time.perf_counter() - start < seconds:
        n += 1
        fn(n)
    return n / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    """Print the figures; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", default="tabletop-pick-v1", help="bundled world id or world folder")
    parser.add_argument("--config", type=Path, default=None, help="variations YAML (default: built-in)")
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement (s)")
    args = parser.parse_args(argv)
    world = world_path(args.world)
    if args.config is not None:
        config = load_variation_config(args.config)
    elif (config_dir() / "variations.yaml").is_file():
        config = load_variation_config(config_dir() / "variations.yaml")
    else:
        config = VariationConfig()
    warnings.filterwarnings("ignore", message=".*empty prefix.*")
    base_spec = SimWorld(world)._spec  # # the composed, uncompiled-by-us spec

    def varied_spec(i: int) -> None:
        spec = base_spec.copy()
        apply_variation(spec, sample_variation(config, i))
        spec.compile()

    rows = [
        (
            "world (load+compose+compile)",
            rate(lambda i: SimWorld(world), args.seconds),
            rate(lambda i: make_world(world, sample_variation(config, i)), args.seconds),
        ),
        (
            "spec (copy+compile)",
            rate(lambda i: base_spec.copy().compile(), args.seconds),
            rate(varied_spec, args.seconds),
        ),
    ]
    print(f"world {args.world}, axes {list(config.enabled_axes())}")
    print(f"{'level':<30} {'base compiles/s':>16} {'variations/s':>14} {'ratio':>7}")
    for name, base, varied in rows:
        print(f"{name:<30} {base:>16.1f} {varied:>14.1f} {varied / base:>7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
