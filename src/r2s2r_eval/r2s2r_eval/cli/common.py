"""Argument types, options and subcommand wiring shared by the ``r2s2r`` subcommands of this package."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from r2s2r_sim.cli.common import EXIT_BAD_INPUT, bad_input, config_from_args, plain_help

__all__ = [
    "EXIT_BAD_INPUT",
    "MMRV_HELP",
    "Subcommand",
    "add_bootstrap_options",
    "add_mmrv_option",
    "add_targets_option",
    "bad_input",
    "config_from_args",
    "open_unit",
    "positive_int",
]

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


def add_targets_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--targets FILE``: bounds to grade the figures against; without it nothing is graded."""
    parser.add_argument(
        "--targets",
        metavar="FILE",
        help="YAML of metric bounds, e.g. 'pearson: {min: 0.95}', to print met / not met "
        "(default: no targets; the project's own: config/compare_targets.yaml)",
    )


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


@dataclass(frozen=True)
class Subcommand:
    """An ``r2s2r`` subcommand declared once: it adds itself to the CLI and runs stand-alone.

    Attributes:
        name: the word after ``r2s2r``.
        help: its line in ``r2s2r --help``.
        description: its ``--help`` text (the module docstring), line breaks kept unless ``wrap``.
        add_arguments: declares its arguments on a parser.
        func: runs the parsed arguments and returns the exit status.
        wrap: let argparse wrap the description (for a one-line description).
    """

    name: str
    help: str
    description: str | None
    add_arguments: Callable[[argparse.ArgumentParser], None]
    func: Callable[[argparse.Namespace], int]
    wrap: bool = False

    def _fill(self, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        self.add_arguments(parser)
        parser.set_defaults(func=self.func)
        return parser

    def register(self, subparsers: Any) -> None:
        """Add ``r2s2r NAME`` to ``subparsers`` (the target of an ``r2s2r.commands`` entry point)."""
        formatter = argparse.HelpFormatter if self.wrap else argparse.RawDescriptionHelpFormatter
        self._fill(
            subparsers.add_parser(
                self.name, help=self.help, description=self.description, formatter_class=formatter
            )
        )

    def parser(self) -> argparse.ArgumentParser:
        """The parser of ``python -m <module>``: the subcommand's arguments without the ``r2s2r`` command."""
        formatter = argparse.HelpFormatter if self.wrap else argparse.RawDescriptionHelpFormatter
        return plain_help(
            self._fill(
                argparse.ArgumentParser(
                    prog=f"r2s2r {self.name}", description=self.description, formatter_class=formatter
                )
            )
        )

    def main(self, argv: Sequence[str] | None = None) -> int:
        """Run the subcommand stand-alone on ``argv`` (default: the process's arguments); the exit status."""
        return self.func(self.parser().parse_args(argv))
