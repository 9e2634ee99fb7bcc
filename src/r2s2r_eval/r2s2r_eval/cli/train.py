"""``r2s2r train``: behaviour cloning from ``r2s2r demos`` datasets with the CNN, ACT or Diffusion Policy.

Example:
    r2s2r train --dataset out/demos/varied --out out/policies/bc_varied --steps 3000
    r2s2r sweep --policy bc:checkpoint=out/policies/bc_varied ...
    r2s2r train --learner act --dataset out/demos/varied --out out/policies/act_varied --steps 5000
    r2s2r sweep --policy lerobot:checkpoint=out/policies/act_varied ...
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from r2s2r_sim.progress import Progress

from r2s2r_eval.cli.common import Subcommand, bad_input, config_from_args
from r2s2r_eval.learning.lerobot_format import DatasetError
from r2s2r_eval.learning.train import TrainConfig, TrainError, train
from r2s2r_eval.learning.train_data import LEARNER_DEFAULTS
from r2s2r_eval.policies.bc.config import LEARNERS

__all__ = ["COMMAND", "cmd_train", "main", "register"]


def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dataset",
        required=True,
        action="append",
        type=Path,
        help="LeRobot dataset folder (repeat to train on several)",
    )
    p.add_argument("--out", required=True, type=Path, help="checkpoint folder (policy.pt + config.json)")
    p.add_argument(
        "--learner",
        choices=LEARNERS,
        default="cnn",
        help="the network: the small CNN, or lerobot's ACT or Diffusion Policy (each sets its own defaults "
        "for --lr, --aux-weight and --chunk: " + _learner_defaults() + ")",
    )
    p.add_argument("--steps", type=int, default=3000, help="optimiser steps")
    p.add_argument("--batch-size", type=int, default=64, help="samples per step")
    p.add_argument("--lr", type=float, help="peak learning rate")
    p.add_argument("--seed", type=int, default=0, help="torch and sampling seed")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument(
        "--relative", action="store_true", help="predict arm targets relative to the measured positions"
    )
    p.add_argument("--no-time-input", action="store_true", help="do not feed the episode time to the network")
    p.add_argument(
        "--state-noise", type=float, default=TrainConfig.state_noise, help="joint-state input noise std (rad)"
    )
    p.add_argument(
        "--aux-weight",
        type=float,
        help="weight of the auxiliary object-state loss (0: none; needs observation.environment_state; "
        "cnn only)",
    )
    p.add_argument("--chunk", type=int, help="actions predicted per step (action chunking)")
    p.add_argument(
        "--channels",
        type=lambda v: tuple(int(c) for c in v.split(",")),
        default=TrainConfig.channels,
        help="conv widths, comma-separated (e.g. 32,32,64,64)",
    )
    p.add_argument(
        "--shift-px", type=int, default=TrainConfig.shift_px, help="random image shift augmentation (px)"
    )
    p.add_argument(
        "--no-head-features",
        action="store_true",
        help="the action head reads only the object state from the auxiliary head and the joint state",
    )
    p.add_argument(
        "--teacher-forcing-m",
        type=float,
        default=TrainConfig.teacher_forcing_m,
        help="with --no-head-features: train the action head on the true object state + this noise (m)",
    )
    p.add_argument(
        "--perception-frames",
        action="append",
        default=[],
        metavar="DIR",
        help="extra still frames for the object-state head "
        "(r2s2r_eval.learning.perception_frames; repeatable)",
    )
    p.add_argument(
        "--save-every",
        type=int,
        default=TrainConfig.save_every,
        help="steps between resume states kept in --out until the checkpoint is written; the same command "
        "run again goes on from the last one (0: none)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _learner_defaults() -> str:
    """``LEARNER_DEFAULTS`` as help text."""
    return "; ".join(
        f"{name} " + ", ".join(f"{k.replace('_', '-')} {v:g}" for k, v in d.items())
        for name, d in LEARNER_DEFAULTS.items()
    )


# TrainConfig fields given by the option of the same name.
_SAME_AS_OPTIONS = (
    "learner",
    "steps",
    "batch_size",
    "seed",
    "state_noise",
    "channels",
    "shift_px",
    "teacher_forcing_m",
    "save_every",
)


def cmd_train(ns: argparse.Namespace) -> int:
    """Run the command; 0 on success, 2 on bad input."""
    given = {k: getattr(ns, k) for k in LEARNER_DEFAULTS[ns.learner]}
    per_learner = {k: d if given[k] is None else given[k] for k, d in LEARNER_DEFAULTS[ns.learner].items()}
    try:
        cfg = config_from_args(
            TrainConfig,
            ns,
            _SAME_AS_OPTIONS,
            num_threads=ns.threads,
            absolute=not ns.relative,
            time_input=not ns.no_time_input,
            head_features=not ns.no_head_features,
            perception_frames=tuple(str(d) for d in ns.perception_frames),
            **per_learner,
        )
    except TrainError as err:
        return bad_input("train", err)
    try:
        with Progress(cfg.steps, "train", "step", quiet=ns.quiet) as bar:
            s = train(ns.dataset, ns.out, cfg, progress=lambda step, loss: bar.set(step, loss=f"{loss:.4f}"))
    except (TrainError, DatasetError, ImportError) as err:  # ImportError: lerobot's learners, not installed
        return bad_input("train", err)
    val = "n/a" if s.val_loss is None else f"{s.val_loss:.4f}"
    print(
        f"{s.out}: {s.episodes} episodes, {s.frames} frames, {s.wall_s:.0f} s, "
        f"train loss {s.train_loss:.4f}, val loss {val}"
    )
    print(f"run it with: --policy {'bc' if cfg.learner == 'cnn' else 'lerobot'}:checkpoint={s.out}")
    return 0


_HELP = "train a policy (CNN, ACT or Diffusion Policy) from demonstrations"
COMMAND = Subcommand("train", _HELP, __doc__.split("\n")[0], _add_arguments, cmd_train, wrap=True)
register = COMMAND.register
main = COMMAND.main


if __name__ == "__main__":
    sys.exit(main())
