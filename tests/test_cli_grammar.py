"""One grammar for every ``r2s2r`` subcommand: one spelling per option kind, plain help, exit 2 on bad input.

The parsers are walked as ``tools/gen_reference.py`` builds them (``r2s2r_sim.cli.main.build_parser``), so a
plug-in's subcommand is held to the same grammar as the built-in ones.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest
from r2s2r_sim.cli.main import PACKAGES, build_parser

# An option is output-like when its dest is one of these: it must be spelled -o/--out.
OUTPUT_DESTS = {"out", "output", "output_dir", "out_dir", "outdir", "output_path", "out_path", "output_file"}
# An option is a hardware profile when its dest is one of these: it must be spelled --profile.
PROFILE_DESTS = {"profile", "hardware_profile"}
SECOND_SPELLINGS = {"--output", "--output-dir", "--out-dir", "--outdir", "--hardware-profile"}
MARKUP = {
    "Sphinx role": re.compile(r":\w+:`"),
    "inline literal": re.compile(r"``"),
    "Markdown code": re.compile(r"`[^`\s][^`]*`"),
    "bold": re.compile(r"\*\*\S"),
}
PYTHON_LIST = re.compile(r"[\[(]\s*'[^']*'\s*,")  # ['a', 'b'] or ('a', 'b'): argparse shows {a,b}


def _commands(
    parser: argparse.ArgumentParser, name: str = "r2s2r"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child, sub in sorted(action.choices.items()):
                yield from _commands(sub, f"{name} {child}")


COMMANDS = dict(_commands(build_parser()))


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


def test_every_subcommand_is_walked() -> None:
    assert {"r2s2r sweep", "r2s2r signature", "r2s2r world new", "r2s2r closed-loop"} <= set(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_one_spelling_per_option_kind(command: str) -> None:
    for action in _options(COMMANDS[command]):
        spelled = set(action.option_strings)
        where = f"{command} {'/'.join(action.option_strings)}"
        assert not spelled & SECOND_SPELLINGS, f"{where}: a second spelling of --out or --profile"
        if action.dest in OUTPUT_DESTS:
            assert "--out" in spelled and spelled <= {"-o", "--out"}, f"{where}: an output path is --out"
        if "-o" in spelled:
            assert "--out" in spelled, f"{where}: -o is short for --out only"
        if action.dest in PROFILE_DESTS:
            assert spelled == {"--profile"}, f"{where}: a hardware profile is --profile"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_vectors_are_comma_separated(command: str) -> None:
    for action in _options(COMMANDS[command]):
        where = f"{command} {'/'.join(action.option_strings)}"
        assert not (isinstance(action.nargs, int) and action.nargs > 1), f"{where}: give X,Y,Z, not X Y Z"
        assert not isinstance(action.metavar, tuple), f"{where}: give X,Y,Z, not X Y Z"
        numbers = action.type in (int, float) and action.nargs in ("+", "*")
        assert not numbers, f"{where}: numbers are a comma-separated vector"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_is_plain_text(command: str) -> None:
    parser = COMMANDS[command]
    texts = {"description": parser.description or "", "epilog": parser.epilog or ""}
    texts.update({"/".join(a.option_strings) or a.dest: a.help or "" for a in parser._actions})
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            texts.update({f"subcommand {c.dest}": c.help or "" for c in action._choices_actions})
    texts["--help"] = parser.format_help()
    for where, text in texts.items():
        for kind, pattern in MARKUP.items():
            found = pattern.search(text)
            assert found is None, f"{command}: {where}: {kind} {found and found.group(0)!r} in the help"
        found = PYTHON_LIST.search(text)
        assert found is None, f"{command}: {where}: choices as a Python list ({found and found.group(0)!r})"


def test_closed_loop_task_shows_its_choices() -> None:
    assert "--task {drawer,pick,push,stack}" in COMMANDS["r2s2r closed-loop"].format_help()


def test_a_bad_vector_is_a_usage_error_naming_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    from r2s2r_sim.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(["reconstruct", "f.npz", "--template", "w", "-o", "o", "--keepout", "0.1,0.2"])
    assert exit_.value.code == 2
    assert "argument --keepout: expected 3 comma-separated numbers, got '0.1,0.2'" in capsys.readouterr().err


def test_a_vector_starting_with_a_minus_is_given_with_an_equals_sign() -> None:
    argv = ["f.npz", "--template", "w", "-o", "o", "--keepout=-0.1,0,2"]
    ns = COMMANDS["r2s2r reconstruct"].parse_args(argv)
    assert ns.keepout == (-0.1, 0.0, 2.0)


# ------------------------------------------------------------------------------------------ the command


def test_version_names_every_package(r2s2r_exe: str) -> None:
    proc = subprocess.run([r2s2r_exe, "--version"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for package in PACKAGES:
        assert f"{package} {version(package)}" in proc.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["signature", "{missing}"],
        ["play", "{missing}"],
        ["metrics", "{missing}"],
        ["resim", "{missing}", "tabletop-pick-v1"],
    ],
    ids=lambda args: args[0],
)
def test_a_missing_input_file_exits_2_naming_it(r2s2r_exe: str, args: list[str], tmp_path: Path) -> None:
    missing = str(tmp_path / "no_such_input")
    argv = [a.format(missing=missing) for a in args]
    proc = subprocess.run([r2s2r_exe, *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert missing in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_closed_pipe_ends_quietly(r2s2r_exe: str, tmp_path: Path) -> None:
    """``r2s2r metrics t.csv | head -1``: the reader is gone before the output comes; no traceback."""
    table = tmp_path / "t.csv"
    table.write_text("policy,sim_success,real_success\na,0.1,0.2\nb,0.5,0.4\nc,0.9,0.8\n", encoding="utf-8")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader closed early: every write gets EPIPE
    try:
        cmd = [r2s2r_exe, "metrics", str(table)]
        proc = subprocess.run(cmd, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode == 1  # Python's status on EPIPE (the signal module docs' note on SIGPIPE)


def test_extrinsics_is_spelled_with_hyphens_and_read_as_the_capture_configs_name() -> None:
    capture = COMMANDS["r2s2r capture"]
    assert capture.parse_args([]).extrinsics == "hand_eye"
    assert capture.parse_args(["--extrinsics", "known-pose"]).extrinsics == "known_pose"
    with pytest.raises(SystemExit) as exc:
        capture.parse_args(["--extrinsics", "known_pose"])
    assert exc.value.code == 2
