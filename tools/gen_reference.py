"""Write the generated reference pages: ``docs/reference/cli.md`` and ``docs/reference/topics.md``.

``cli.md`` comes from the real argparse parsers of the ``r2s2r`` command (``r2s2r_sim.cli.main.build_parser``,
which gathers every package's subcommands from the ``r2s2r.commands`` entry points); ``topics.md`` from
``config/interface.yaml`` (profiles, topics with types and QoS, services, frames) and the node parameter
files ``config/*_node.yaml`` (names, defaults, descriptions).

    python tools/gen_reference.py           # rewrite both files
    python tools/gen_reference.py --check   # exit 1 naming each stale file; writes nothing

The output is deterministic: sorted, no timestamps, no absolute paths, a fixed help width whatever the
terminal.  ``tests/test_docs_reference.py`` fails when the committed files differ from what this writes.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config"
CLI_MD = ROOT / "docs" / "reference" / "cli.md"
TOPICS_MD = ROOT / "docs" / "reference" / "topics.md"
HELP_WIDTH = 100  # argparse wraps usage lines at this width, whatever the terminal says
BUILTIN_COMMANDS = ("launch", "demo", "world", "profile")  # registered by r2s2r_sim.cli.main itself

# Where each node declares its parameters' descriptions (``{name: ("description", range)}`` literals).
# A parameter found in none of them is described by the comment beside it in the YAML file.
NODE_SOURCES: Mapping[str, tuple[str, ...]] = {
    "emulated_hardware_node": ("src/r2s2r_sim/r2s2r_sim/ros/emulated_hardware_node.py",),
    "evaluator_node": ("src/r2s2r_eval/r2s2r_eval/nodes/evaluator_node.py",),
    "foxglove_node": ("src/r2s2r_sim/r2s2r_sim/ros/foxglove_node.py",),
    "player_node": ("src/r2s2r_capture/r2s2r_capture/ros/player_node.py",),
    "policy_node": ("src/r2s2r_eval/r2s2r_eval/nodes/policy_node.py",),
    "recorder_node": ("src/r2s2r_capture/r2s2r_capture/ros/recorder_node.py",),
    "sim_node": (
        "src/r2s2r_sim/r2s2r_sim/serving/sim_server_config.py",
        "src/r2s2r_sim/r2s2r_sim/ros/sim_node.py",
    ),
}


class ReferenceError(RuntimeError):
    """The reference cannot be generated from the code as it stands (e.g. a subcommand fails to import)."""


# ----------------------------------------------------------------------------------------------- helpers


def _scrub(text: str) -> str:
    """Drop machine-specific absolute paths (the checkout, the home folder)."""
    text = text.replace(str(ROOT) + os.sep, "").replace(str(ROOT), ".")
    home = str(Path.home())
    return text.replace(home, "~") if len(home) > 1 else text


def _cell(text: str) -> str:
    """One Markdown table cell: one line, pipes and angle brackets escaped."""
    text = " ".join(str(text).split())
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _code(text: str) -> str:
    """Inline code that survives a table cell (pipes escaped)."""
    return "`" + str(text).replace("|", "\\|") + "`"


@contextlib.contextmanager
def _fixed_width() -> Iterator[None]:
    """Pin the width argparse wraps at (it asks the terminal, ``COLUMNS`` first) while formatting."""
    saved = {k: os.environ.get(k) for k in ("COLUMNS", "LINES")}
    os.environ["COLUMNS"], os.environ["LINES"] = str(HELP_WIDTH), "50"
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# ----------------------------------------------------------------------------------------------- CLI


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _summaries(action: argparse._SubParsersAction) -> dict[str, str]:
    """Subcommand name -> its one-line help, as the parent's help lists it."""
    return {choice.dest: choice.help or "" for choice in action._choices_actions}


def _option_tables(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser._get_formatter()
    lines: list[str] = []
    for group in parser._action_groups:
        actions = [
            a
            for a in group._group_actions
            if a.help != argparse.SUPPRESS
            and not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
        ]
        if not actions:
            continue
        lines += [f"*{_cell(group.title or 'options')}*", "", "| argument | help |", "| --- | --- |"]
        for action in actions:
            invocation = formatter._format_action_invocation(action)
            help_text = formatter._expand_help(action) if action.help else ""
            lines.append(f"| {_code(invocation)} | {_cell(help_text)} |")
        lines.append("")
    return lines


def _command_section(name: str, summary: str, parser: argparse.ArgumentParser) -> list[str]:
    lines = [f"## `{name}`", ""]
    if summary:
        text = _cell(summary)
        lines += [text[0].upper() + text[1:] + ("" if text.endswith((".", "?", "!")) else "."), ""]
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    if parser.description:
        lines += ["```text", parser.description.strip("\n").rstrip(), "```", ""]
    sub = _subparsers(parser)
    if sub is not None:
        lines += ["| subcommand | what it does |", "| --- | --- |"]
        for child, child_help in sorted(_summaries(sub).items()):
            anchor = f"{name} {child}".replace(" ", "-")
            lines.append(f"| [`{child}`](#{anchor}) | {_cell(child_help)} |")
        lines.append("")
    lines += _option_tables(parser)
    if parser.epilog:
        lines += ["```text", parser.epilog.strip("\n").rstrip(), "```", ""]
    if sub is not None:
        for child, child_help in sorted(_summaries(sub).items()):
            lines += _command_section(f"{name} {child}", child_help, sub.choices[child])
    return lines


def _build_parser() -> argparse.ArgumentParser:
    from importlib.metadata import entry_points

    from r2s2r_sim.cli.main import build_parser

    parser = build_parser()
    sub = _subparsers(parser)
    assert sub is not None, "the r2s2r parser has no subcommands"
    expected = set(BUILTIN_COMMANDS) | {e.name for e in entry_points(group="r2s2r.commands")}
    missing = sorted(expected - set(sub.choices))
    if missing:
        raise ReferenceError(
            f"subcommand(s) {', '.join(missing)} could not be loaded (see the warning above); "
            "fix the import before generating the CLI reference"
        )
    return parser


def render_cli() -> str:
    """The text of ``docs/reference/cli.md``, from the ``r2s2r`` command's argparse parsers."""
    with _fixed_width():
        parser = _build_parser()
        sub = _subparsers(parser)
        assert sub is not None
        summaries = _summaries(sub)
        lines = [
            "# `r2s2r` command reference",
            "",
            "<!-- Generated by `python tools/gen_reference.py` from the argparse parsers; do not edit. -->",
            "",
            "Every subcommand of `r2s2r` (`source env.sh` first), from the parsers themselves: usage,",
            "options and help text. `r2s2r <command> --help` prints the same. Other packages add",
            "subcommands through the `r2s2r.commands` entry points; launch arguments (`name:=value`) are",
            "listed by `r2s2r launch world --show-args`. Output paths are `-o/--out`, hardware profiles",
            "`--profile`, vectors comma-separated (`--keepout 0.1,0,0`; `--keepout=-0.1,0,0` when the first",
            "component is negative), and every bad input exits with status 2.",
            "",
            "| command | what it does |",
            "| --- | --- |",
        ]
        for name, summary in sorted(summaries.items()):
            lines.append(f"| [`r2s2r {name}`](#r2s2r-{name}) | {_cell(summary)} |")
        lines.append("")
        for name, summary in sorted(summaries.items()):
            lines += _command_section(f"r2s2r {name}", summary, sub.choices[name])
    return _scrub("\n".join(lines).rstrip() + "\n")


# ----------------------------------------------------------------------------------------------- topics


def _qos(spec: Any) -> str:
    fields = f"{spec.reliability.value}, {spec.durability.value}, depth {spec.depth}"
    if spec.preset == "system_default":
        return "`system_default` preset (the middleware's own)"
    if spec.preset:
        return f"`{spec.preset}` preset ({fields})"
    return fields


def _interface_section(name: str, is_default: bool, raw: Mapping[str, Any]) -> list[str]:
    from r2s2r_sim.interface import load_interface

    iface = load_interface(name)
    title = f"### `{name}`" + (" (default)" if is_default else "")
    lines = [title, ""]
    if iface.description:
        lines += [_cell(iface.description), ""]
    lines += [
        f"Command path: `{iface.command.value}` (what policy_node sends its arm and gripper targets on).",
        "",
    ]
    if raw.get("extends"):
        overridden = sorted(
            f"{section}.{key}"
            for section in ("topics", "services", "actions", "frames")
            for key in (raw.get(section) or {})
        )
        lines += [
            f"Extends `{raw['extends']}`; overrides "
            + ", ".join(f"`{k}`" for k in overridden)
            + ". The tables show the resolved profile.",
            "",
        ]
    lines += [
        "| key | topic | type | QoS (publisher) | QoS (r2s2r's subscribers) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for key, topic in sorted(iface.topics.items()):
        sub = "same" if topic.subscription_qos == topic.qos else _qos(topic.subscription_qos)
        lines.append(f"| `{key}` | `{topic.name}` | `{topic.type}` | {_qos(topic.qos)} | {sub} |")
    lines += ["", "| key | service | type |", "| --- | --- | --- |"]
    for key, service in sorted(iface.services.items()):
        lines.append(f"| `{key}` | `{service.name}` | `{service.type}` |")
    if iface.actions:
        lines += ["", "| key | action | type |", "| --- | --- | --- |"]
        for key, action in sorted(iface.actions.items()):
            lines.append(f"| `{key}` | `{action.name}` | `{action.type}` |")
    lines += ["", "| frame key | frame id |", "| --- | --- |"]
    for key, frame in sorted(iface.frames.items()):
        lines.append(f"| `{key}` | `{frame}` |")
    lines.append("")
    return lines


def _declared_descriptions(sources: tuple[str, ...]) -> dict[str, str]:
    """Parameter descriptions declared as ``{"name": ("description", ...)}`` literals in a node's source.

    Read with ``ast`` (nothing is imported, so no ROS is needed); descriptions that are not plain string
    literals (f-strings) are left out.
    """
    found: dict[str, str] = {}
    for rel in sources:
        path = ROOT / rel
        if not path.is_file():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Dict):
                continue
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and isinstance(key.value, str)
                    and isinstance(value, ast.Tuple)
                    and value.elts
                    and isinstance(value.elts[0], ast.Constant)
                    and isinstance(value.elts[0].value, str)
                ):
                    found.setdefault(key.value, value.elts[0].value)
    return found


_KEY_LINE = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z_][A-Za-z0-9_]*):(?P<rest>.*)$")


def _yaml_comments(text: str) -> dict[str, str]:
    """Parameter -> the comment beside its value in a ``*_node.yaml`` (lines of comment alone are skipped)."""
    comments: dict[str, str] = {}
    in_params, indent = False, None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("ros__parameters:"):
            in_params, indent = True, None
            continue
        match = _KEY_LINE.match(line)
        if not in_params or stripped.startswith("#") or not match:
            continue
        if indent is None:
            indent = len(match["indent"])
        if len(match["indent"]) < indent:
            in_params = False
        elif len(match["indent"]) == indent and " #" in match["rest"]:  # values here hold no " #"
            comments[match["key"]] = match["rest"].split(" #", 1)[1].strip()
    return comments


def _parameter_section(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text) or {}
    declared = _declared_descriptions(NODE_SOURCES.get(path.stem, ()))
    commented = _yaml_comments(text)
    lines = [f"### `config/{path.name}`", ""]
    for node_name, section in sorted(data.items()):
        params = (section or {}).get("ros__parameters") or {}
        lines += [
            f"Node `{node_name}`:",
            "",
            "| parameter | default | description |",
            "| --- | --- | --- |",
        ]
        for name, default in sorted(params.items()):
            description = declared.get(name) or commented.get(name, "")
            lines.append(f"| `{name}` | {_code(json.dumps(default))} | {_cell(description)} |")
        lines.append("")
    return lines


def render_topics() -> str:
    """The text of ``docs/reference/topics.md``, from ``config/interface.yaml`` and ``config/*_node.yaml``."""
    from r2s2r_sim.paths import config_dir

    if config_dir().resolve() != CONFIG.resolve():
        raise ReferenceError(
            f"r2s2r_sim reads its configuration from {config_dir()}, not this checkout's config/"
        )
    catalogue = yaml.safe_load((CONFIG / "interface.yaml").read_text(encoding="utf-8"))
    default = catalogue["default"]
    profiles = catalogue["profiles"]
    lines = [
        "# Topics, services, frames and node parameters",
        "",
        "<!-- Generated by `python tools/gen_reference.py` from config/; do not edit. -->",
        "",
        "## Interface profiles (`config/interface.yaml`)",
        "",
        "Every node of the graph takes one profile (`interface:=NAME` or the path of your own file on the",
        "launch line). `{camera}` stands for a camera's ROS name from `world.yaml` (`camera` in the bundled",
        "worlds). QoS presets are rclcpp's: `system_default` leaves reliability, durability and depth to",
        "the middleware (Fast DDS: reliable, transient local, depth 1).",
        "",
    ]
    for name in [default, *sorted(n for n in profiles if n != default)]:
        lines += _interface_section(name, name == default, profiles[name] or {})
    lines += [
        "## Node parameters (`config/*_node.yaml`)",
        "",
        "The defaults each node is started with (`--params-file`); the launcher overrides some of them from",
        "its arguments. A description is the one the node declares where its source states it as a literal,",
        "else the comment beside the value in the YAML file.",
        "",
    ]
    for path in sorted(CONFIG.glob("*_node.yaml")):
        lines += _parameter_section(path)
    return _scrub("\n".join(lines).rstrip() + "\n")


# ----------------------------------------------------------------------------------------------- main


def outputs() -> dict[Path, str]:
    """Each generated file and the text it should hold."""
    return {CLI_MD: render_cli(), TOPICS_MD: render_topics()}


def stale_files(expected: Mapping[Path, str] | None = None) -> list[Path]:
    """The generated files whose text on disk differs from what the code gives now (or that are missing)."""
    expected = outputs() if expected is None else expected
    return [
        path
        for path, text in expected.items()
        if not path.is_file() or path.read_text(encoding="utf-8") != text
    ]


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv: list[str] | None = None) -> int:
    """Rewrite the reference pages, or with ``--check`` report the stale ones (exit 1)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 naming each stale file; write nothing")
    ns = parser.parse_args(argv)
    try:
        expected = outputs()
    except ReferenceError as err:
        print(f"gen_reference: error: {err}", file=sys.stderr)
        return 2
    if ns.check:
        stale = stale_files(expected)
        for path in stale:
            print(f"gen_reference: stale: {_shown(path)} (run python tools/gen_reference.py)")
        return 1 if stale else 0
    for path, text in expected.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"gen_reference: wrote {_shown(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
