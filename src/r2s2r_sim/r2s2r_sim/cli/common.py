"""Exit status, error report, option types and help text shared by the ``r2s2r`` subcommands of every package.

The subcommand modules import these, and :mod:`r2s2r_sim.cli.main` imports the subcommand modules, so
they live here rather than in ``main``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

__all__ = [
    "EXIT_BAD_INPUT",
    "add_command_group",
    "bad_input",
    "comma_vector",
    "config_from_args",
    "plain_help",
    "plain_text",
]

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


def comma_vector(
    n: int | None = None, *, kind: type[float] | type[int] = float
) -> Callable[[str], tuple[float, ...]]:
    """Argparse type of a vector option, given as ``X,Y,Z``: the one vector syntax of every subcommand.

    A vector that starts with a minus sign is given as ``--keepout=-0.1,0,0``: argparse would take
    ``-0.1,0,0`` for an option.

    Args:
        n: the number of components, or None for any number (at least one).
        kind: ``float`` or ``int``.

    Returns:
        The type function; it returns a tuple, and a bad value is a usage error (exit status 2) that
        argparse reports with the option's name.
    """
    what = "integers" if kind is int else "numbers"

    def parse(text: str) -> tuple[float, ...]:
        try:
            values = tuple(kind(v) for v in text.split(","))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got {text!r}") from None
        if n is not None and len(values) != n:
            raise argparse.ArgumentTypeError(f"expected {n} comma-separated {what}, got {text!r}")
        return values

    return parse


# Sphinx and Markdown markup of the docstrings that give the help texts: a terminal shows it verbatim.
_ROLE = re.compile(r":(?:\w+:)?\w+:`(~?)([^`]+)`")  # :func:`x`, :py:class:`~a.B`, :ref:`title <target>`
_LITERAL = re.compile(r"``([^`]+)``|`([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")


def _role_text(match: re.Match[str]) -> str:
    tilde, text = match.groups()
    if "<" in text:
        return text.split("<", 1)[0].strip()
    return text.rsplit(".", 1)[-1] if tilde else text


def plain_text(text: str) -> str:
    """``text`` without Sphinx roles, inline literals and bold: what ``--help`` prints."""
    text = _ROLE.sub(_role_text, text)
    text = _LITERAL.sub(lambda m: m.group(1) or m.group(2), text)
    return _BOLD.sub(r"\1", text)


def plain_help(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Make every help text of ``parser`` and its subcommands plain text (:func:`plain_text`); returns it.

    Descriptions are module docstrings, written for the API reference; one pass here keeps every
    subcommand's ``--help`` plain, those of plug-ins included.
    """
    for attr in ("description", "epilog"):
        if getattr(parser, attr):
            setattr(parser, attr, plain_text(getattr(parser, attr)))
    for action in parser._actions:
        if isinstance(action.help, str):
            action.help = plain_text(action.help)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if isinstance(choice.help, str):
                    choice.help = plain_text(choice.help)
            for sub in {id(p): p for p in action.choices.values()}.values():
                plain_help(sub)
    return parser
