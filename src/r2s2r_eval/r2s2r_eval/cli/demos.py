"""``r2s2r demos``: expert demonstrations across variations -> LeRobot v3.0 dataset (+ MCAP); resumable.

Example:
    r2s2r demos --out out/demos/varied --variations config/variations.yaml -n 100 --seed 0

Rerunning the same command continues where it stopped (attempts already made are skipped).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from r2s2r_sim.progress import Progress

from r2s2r_eval.cli.common import Subcommand, bad_input, config_from_args
from r2s2r_eval.learning.demos import EXPERT_KINDS, DemoConfig, DemoError, collect_demos
from r2s2r_eval.learning.lerobot_format import DatasetError
from r2s2r_eval.learning.lerobot_v3 import validate_v3_dataset

__all__ = ["COMMAND", "cmd_demos", "main", "register"]


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, type=Path, help="dataset folder (resumed if it exists)")
    p.add_argument("--world", default="tabletop-pick-v1", help="bundled world id or world folder")
    p.add_argument(
        "--variations",
        type=Path,
        default=None,
        help="variation config YAML (e.g. config/variations.yaml); omit for no variations",
    )
    p.add_argument("-n", "--episodes", type=int, default=20, help="successful episodes to keep")
    p.add_argument("--max-attempts", type=int, default=None, help="attempt budget (default 3n + 5)")
    p.add_argument("--seed", type=int, default=0, help="base seed (attempt i uses SeedSequence([seed, i]))")
    p.add_argument("--width", type=int, default=96, help="recorded RGB width (px, even)")
    p.add_argument("--height", type=int, default=72, help="recorded RGB height (px, even)")
    p.add_argument("--no-mcap", action="store_true", help="skip the per-episode MCAP bags")
    p.add_argument(
        "--action-noise", type=float, default=0.0, help="DART noise on the executed arm targets (rad std)"
    )
    p.add_argument(
        "--expert",
        choices=EXPERT_KINDS,
        default="privileged",
        help="privileged: state feedback from the simulator's object pose, pick-and-place or push by the "
        "world's task (default); reference: the reference policy, perceiving once",
    )
    p.add_argument("--no-validate", action="store_true", help="skip validating the dataset at the end")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def cmd_demos(ns: argparse.Namespace) -> int:
    """Run the command; 0 on success, 2 on bad input, 1 if the written dataset fails validation."""
    try:
        cfg = config_from_args(
            DemoConfig,
            ns,
            ("world", "variations", "episodes", "max_attempts", "seed", "action_noise"),
            image_width=ns.width,
            image_height=ns.height,
            mcap=not ns.no_mcap,
            expert_kind=ns.expert,
        )
    except DemoError as err:
        return bad_input("demos", err)
    try:
        with Progress(cfg.episodes, "demos", "ep", quiet=ns.quiet) as bar:
            summary = collect_demos(ns.out, cfg, progress=lambda kept, tries: bar.set(kept, attempts=tries))
    except (DemoError, DatasetError, ValueError) as err:
        return bad_input("demos", err)
    print(
        f"{summary.root}: {summary.episodes} episodes, {summary.frames} frames "
        f"({summary.new_episodes} new; {summary.attempts} attempts: {summary.reasons})"
    )
    if not ns.no_validate:
        problems = validate_v3_dataset(summary.root)
        for p in problems:
            print(f"invalid: {p}", file=sys.stderr)
        if problems:
            return 1
        print("dataset valid (LeRobot v3.0, loaded by lerobot's LeRobotDataset)")
    return 0


_HELP = "record expert demonstrations (LeRobot dataset + MCAP)"
COMMAND = Subcommand("demos", _HELP, __doc__.split("\n")[0], _add_arguments, cmd_demos, wrap=True)
register = COMMAND.register
main = COMMAND.main


if __name__ == "__main__":
    sys.exit(main())
