r"""``r2s2r sweep``: policies x variations x repeats, headless, resumable (:mod:`r2s2r_eval.episodes.sweep`).

Example:
    r2s2r sweep --world tabletop-pick-v1 --policy reference --policy reference:grasp_offset_m=0.01 \
        --variations config/variations.yaml -n 64 --repeats 2 --results out/sweep.sqlite \
        --export out/sweep.parquet

``--profile config/emulated_hardware/ideal_profile.yaml`` runs the same sweep on the emulated
hardware of that profile instead (variations limited to what an operator changes: object pose, lighting,
clutter).

``--policy auto`` runs the scripted reference policy of the world's task.  Bad input (unknown policy or
parameter, a policy for another task than the world's, malformed variations YAML, unknown executor,
unreachable Ray address, an export file that exists) exits with status 2 and a message naming the
argument at fault, before the results store is created or changed.  Rerunning the same command skips
finished episodes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from r2s2r_sim.errors import WorldError
from r2s2r_sim.hardware.shipped_profiles import profile_path
from r2s2r_sim.tasks.config import AUTO_POLICY
from r2s2r_sim.variations import VariationError, for_world, load_variation_config
from r2s2r_sim.worlds import default_variations_file, world_path

from r2s2r_eval.cli.common import Subcommand, bad_input, config_from_args
from r2s2r_eval.episodes.results import ResultsError
from r2s2r_eval.episodes.sweep import run_sweep
from r2s2r_eval.episodes.sweep_export import EXPORT_FORMATS, check_export_path, export_rows
from r2s2r_eval.episodes.sweep_plan import Executor, SweepConfig, SweepError, parse_policy_spec

__all__ = ["COMMAND", "cmd_sweep", "default_variations", "main", "register", "sweep_config"]

EXIT_ALL_FAILED = 1


def sweep_config(ns: argparse.Namespace) -> SweepConfig:
    """The sweep the parsed options of ``r2s2r sweep`` ask for (variations fitted to the world).

    Raises:
        SweepError: a bad option, named in the message.
    """
    try:
        variations = load_variation_config(ns.variations or default_variations(ns.world))
    except (VariationError, OSError) as err:
        raise SweepError(f"--variations: {err}") from None
    try:
        folder = world_path(ns.world)
    except ValueError as err:
        raise SweepError(f"--world: {err}") from None
    try:
        # Robot-state joints default to the world's arm joints; every name is checked before any episode.
        variations = for_world(variations, folder)
    except VariationError as err:
        raise SweepError(f"--variations: {err} (world {ns.world})") from None
    except WorldError as err:
        raise SweepError(f"--world: {err}") from None
    return config_from_args(
        SweepConfig,
        ns,
        ("world", "n", "method", "seed", "repeats", "camera_rate_hz", "max_steps", "render_profile"),
        policies=tuple(parse_policy_spec(p) for p in ns.policy),
        variations=variations,
        hardware_profile=None if ns.profile is None else str(profile_path(ns.profile)),
        policy_images=ns.images == "policy",
    )


def default_variations(world: str) -> Path:
    """The variation defaults of ``world`` (bundled id or folder), as ``--variations`` takes them.

    Raises:
        SweepError: ``world`` is neither a bundled id nor a folder.
    """
    try:
        folder = world_path(world)
    except ValueError as err:
        raise SweepError(f"--world: {err}") from None
    return default_variations_file(folder)


def cmd_sweep(ns: argparse.Namespace) -> int:
    """Run the sweep of ``ns``; 0 when it finished, 1 when every episode it ran errored, 2 on bad input."""
    try:
        if ns.executor not in [e.value for e in Executor]:
            executors = ", ".join(e.value for e in Executor)
            raise SweepError(f"--executor {ns.executor!r}: unknown executor (executors: {executors})")
        cfg = sweep_config(ns)
        if ns.export is not None:
            check_export_path(ns.export)
        summary = run_sweep(
            cfg,
            ns.results,
            executor=ns.executor,
            workers=ns.workers,
            address=ns.address,
            progress=not ns.quiet,
        )
    except SweepError as err:
        return bad_input("sweep", f"error: {err}")
    if any(parse_policy_spec(p).name == AUTO_POLICY for p in ns.policy):
        names = ", ".join(str(p) for p in summary.policies)
        print(f"r2s2r sweep: policies {names} (auto: the world's reference policy)", file=sys.stderr)
    print(
        f"r2s2r sweep: {summary.total} episodes ({summary.skipped} already stored, {summary.ran} run: "
        f"{summary.succeeded} succeeded, {summary.errors} errors) in {summary.wall_s:.1f} s "
        f"-> {ns.results}",
        file=sys.stderr,
    )
    if ns.export is not None:
        try:
            count = export_rows(ns.results, ns.export, keys=summary.keys)
        except (SweepError, ResultsError) as err:
            return bad_input("sweep", f"error: {err}")
        print(f"r2s2r sweep: exported {count} rows -> {ns.export}", file=sys.stderr)
    if summary.ran > 0 and summary.errors == summary.ran:
        print(f"r2s2r sweep: error: all {summary.ran} episodes run failed with errors", file=sys.stderr)
        return EXIT_ALL_FAILED
    return 0


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--world",
        default="tabletop-pick-v1",
        help="bundled world id or world folder; the world's task is swept (tabletop-pick-v1, "
        "tabletop-push-v1, tabletop-stack-v1, tabletop-drawer-v1)",
    )
    parser.add_argument(
        "--policy",
        action="append",
        required=True,
        metavar="NAME[:k=v,...]",
        help="policy and its parameters (repeatable), e.g. reference:perception_noise_m=0.005; auto: the "
        "scripted reference policy of the world's task",
    )
    parser.add_argument(
        "--variations",
        default=None,
        help="variation axes YAML (r2s2r_sim.variations; default: the world folder's variations.yaml, "
        "else the package's config/variations.yaml)",
    )
    parser.add_argument("-n", type=int, default=16, help="number of variations")
    parser.add_argument("--method", choices=["sobol", "random"], default="sobol", help="variation sampling")
    parser.add_argument("--seed", type=int, default=0, help="sweep seed (>= 0)")
    parser.add_argument("--repeats", type=int, default=1, help="episodes per policy and variation")
    parser.add_argument("--results", default="out/sweep.sqlite", help="SQLite results store (appended)")
    # Not argparse choices: an unknown executor is reported like every other bad input (exit 2).
    parser.add_argument("--executor", default="local", help="local (process pool) or ray")
    parser.add_argument("--workers", type=int, default=None, help="parallel episodes (default: cores)")
    parser.add_argument("--address", default=None, help="Ray cluster address host:port (with --executor ray)")
    parser.add_argument(
        "--export", default=None, help=f"write the sweep's rows to this file ({', '.join(EXPORT_FORMATS)})"
    )
    parser.add_argument("--camera-rate-hz", type=float, default=None, help="camera rate (default: world's)")
    parser.add_argument("--max-steps", type=int, default=None, help="control steps per episode at most")
    parser.add_argument(
        "--profile",
        default=None,
        help="run on the emulated hardware of this profile instead of in sim (operator axes only): a shipped "
        "one by name (realistic, ideal) or a YAML path",
    )
    parser.add_argument(
        "--render-profile",
        default=None,
        help="world render profile to draw cameras with, e.g. full or fast (default: each camera's own)",
    )
    parser.add_argument(
        "--images",
        choices=["policy", "camera"],
        default="policy",
        help="draw images at the size and rate each policy reads (policy) or as the camera publishes them",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


_HELP = "evaluate policies over many world variations, headless (process pool or Ray)"
COMMAND = Subcommand("sweep", _HELP, __doc__, _add_arguments, cmd_sweep)
register = COMMAND.register
main = COMMAND.main


if __name__ == "__main__":
    sys.exit(main())
