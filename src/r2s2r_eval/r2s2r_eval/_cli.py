"""Argument types, options and subcommand wiring shared by the ``r2s2r`` subcommands of this package."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

MMRV_HELP = "MMRV order test: 'less' = SIMPLER paper equation (default), 'greater' = SimplerEnv code"


def positive_int(text: str) -> int:
    """Argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: got {value}")
    return value


def open_unit(text: str) -> float:
    """Argparse type: a number in the open interval (0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1): got {text}")
    return value


def add_bootstrap_options(parser: argparse.ArgumentParser, *, confidence_help: str) -> None:
    """Add ``--seed``, ``--resamples`` and ``--confidence`` (bootstrap settings)."""
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument(
        "--resamples", type=positive_int, default=2000, help="bootstrap resamples (default 2000)"
    )
    parser.add_argument("--confidence", type=open_unit, default=0.95, help=confidence_help)


def add_mmrv_option(parser: argparse.ArgumentParser, *, help_suffix: str = "") -> None:
    """Add ``--mmrv-comparison`` (less | greater, default less)."""
    parser.add_argument(
        "--mmrv-comparison",
        choices=("less", "greater"),
        default="less",
        help=MMRV_HELP + help_suffix,
    )


def add_subcommand(
    subparsers: Any,
    name: str,
    *,
    help: str,  # argparse's own keyword
    description: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    func: Callable[[argparse.Namespace], int],
    formatter_class: type[argparse.HelpFormatter] = argparse.RawDescriptionHelpFormatter,
) -> None:
    """Add ``r2s2r NAME`` with the arguments ``add_arguments`` declares; ``func`` runs it.

    The description keeps its line breaks by default; a one-line description may pass
    ``argparse.HelpFormatter`` to have it wrapped instead.
    """
    parser = subparsers.add_parser(name, help=help, description=description, formatter_class=formatter_class)
    add_arguments(parser)
    parser.set_defaults(func=func)


def standalone_parser(
    prog: str, description: str | None, add_arguments: Callable[[argparse.ArgumentParser], None]
) -> argparse.ArgumentParser:
    """The parser of ``python -m <module>``: a subcommand's arguments without the ``r2s2r`` command."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_arguments(parser)
    return parser
