"""``r2s2r compare --sim RESULTS --real RESULTS -o DIR``: does sim predict real? A report and a summary.

RESULTS is an r2s2r results store (SQLite, as written by ``r2s2r sweep --results``) or its
Parquet/CSV export (``r2s2r sweep --export``). DIR must not exist; it receives ``report.html`` (one
self-contained page), ``summary.json`` and the PNG plots. The summary is also printed here.

The report shows the figures with their intervals and grades none of them. ``--targets FILE`` (YAML:
``pearson: {min: 0.95}``, ``mmrv: {max: 0.03}``; the project's own bar is ``config/compare_targets.yaml``)
adds a met / not met verdict per target.

Bad input (unreadable file, missing column, no episodes, different worlds on the two sides without
``--allow-different-worlds``, an existing DIR, a bad targets file) exits with status 2 and a message
naming the file (and the field). A policy on one side only is excluded and listed as a warning in the
report and the summary.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from r2s2r_eval.analysis.compare import CompareSettings, compare
from r2s2r_eval.analysis.compare_data import CompareError, load_episodes
from r2s2r_eval.analysis.compare_page import format_summary, write_report
from r2s2r_eval.analysis.targets import TargetsError, load_targets
from r2s2r_eval.cli.common import (
    Subcommand,
    add_bootstrap_options,
    add_mmrv_option,
    add_targets_option,
    bad_input,
    config_from_args,
    positive_int,
)

__all__ = ["COMMAND", "cmd_compare", "register"]


def cmd_compare(ns: argparse.Namespace) -> int:
    """Run ``r2s2r compare``; 0 on success, 2 on bad input."""
    try:
        same = ("confidence", "resamples", "seed", "max_depth", "mmrv_comparison", "allow_different_worlds")
        targets = load_targets(ns.targets) if ns.targets else ()
        settings = config_from_args(CompareSettings, ns, same, n_bins=ns.bins, targets=targets)
        if Path(ns.out).exists():  # fail before the work, not after
            raise CompareError(
                f"{ns.out}: already exists; refusing to overwrite (choose a new output folder)"
            )
        comparison = compare(load_episodes(ns.sim), load_episodes(ns.real), settings)
        out = write_report(comparison, ns.out)
    except (CompareError, TargetsError) as err:
        return bad_input("compare", err)
    print(format_summary(comparison.summary))
    print(f"\nreport: {out / 'report.html'}\nsummary: {out / 'summary.json'}")
    return 0


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sim", required=True, help="sim results: SQLite store, .parquet or .csv export")
    parser.add_argument("--real", required=True, help="real results: SQLite store, .parquet or .csv export")
    parser.add_argument("-o", "--out", required=True, help="output folder (must not exist)")
    parser.add_argument(
        "--allow-different-worlds",
        action="store_true",
        help="compare results whose world ids differ (a warning in the report instead of an error)",
    )
    add_bootstrap_options(parser, confidence_help="interval level (default 0.95)")
    parser.add_argument("--bins", type=positive_int, default=5, help="quantile bins per axis (default 5)")
    parser.add_argument(
        "--max-depth", type=int, choices=(1, 2, 3), default=2, help="failure tree depth (default 2)"
    )
    add_mmrv_option(parser)
    add_targets_option(parser)


_HELP = "sim-vs-real report (HTML + summary.json) from two results files"
COMMAND = Subcommand("compare", _HELP, __doc__, _add_arguments, cmd_compare)
register = COMMAND.register
