"""Exit status, error report and option plumbing shared by the ``r2s2r`` subcommands of every package.

The subcommand modules import these, and :mod:`r2s2r_sim.cli.main` imports the subcommand modules, so
they live here rather than in ``main``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any, TypeVar

__all__ = ["EXIT_BAD_INPUT", "add_command_group", "bad_input", "config_from_args"]

T = TypeVar("T")

EXIT_BAD_INPUT = 2  # the exit status of a command refused for its input


def bad_input(command: str, err: object) -> int:
    """Say on stderr what was wrong with the input of ``r2s2r COMMAND``; returns ``EXIT_BAD_INPUT``."""
    print(f"r2s2r {command}: {err}", file=sys.stderr)
    return EXIT_BAD_INPUT


def config_from_args(cls: type[T], ns: argparse.Namespace, same: Iterable[str], **fields: Any) -> T:
    """Build the config dataclass ``cls`` from the parsed options of a command.

    Args:
        cls: the config dataclass.
        ns: the parsed options.
        same: fields given by the option of the same ``dest`` (``"max_attempts"`` for ``--max-attempts``).
        fields: the other fields given (``image_width=ns.width``, ``mcap=not ns.no_mcap``); the rest keep
            their defaults.

    Raises:
        Whatever ``cls`` raises for a bad value (the command reports it as bad input).
    """
    return cls(**{name: getattr(ns, name) for name in same}, **fields)


def add_command_group(subparsers: Any, name: str, help: str, description: str | None) -> Any:
    """Add ``r2s2r NAME``; returns the subparsers of its own subcommands (``r2s2r NAME new`` ...).

    One of those is required (parsed into ``NAME_command``), and the group's ``--help`` keeps the line
    breaks of ``description``.
    """
    group = subparsers.add_parser(
        name, help=help, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    return group.add_subparsers(dest=f"{name}_command", required=True)
