"""Progress with an ETA on the long commands: tqdm on a terminal, separate bounded-rate lines elsewhere.

The shared helper (:class:`r2s2r_sim.progress.Progress`) is checked with a fake clock; then the commands
that use it are run at tiny sizes with stderr captured (not a terminal): ``r2s2r sweep``, a transfer
evaluation over two worker processes (reports cross the process boundary) and the identification's
iterations.  ``--quiet`` (or its library form) must write nothing.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import mujoco
import numpy as np
import pytest
from r2s2r_sim.paths import config_dir
from r2s2r_sim.progress import Progress, format_seconds

# "label: 3/10 ep (30%), elapsed 00:03, eta 00:07, 1 ep/s"
LINE = re.compile(
    r"^(?P<desc>.+): (?P<n>\d+)/(?P<total>\d+) (?P<unit>\S+) \(\d+%\), elapsed [\d:]+, eta (?P<eta>[\d:]+|\?)"
)


class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _lines(text: str, desc: str | None = None) -> list[re.Match[str]]:
    found = [LINE.match(line) for line in text.splitlines()]
    return [m for m in found if m and (desc is None or m["desc"] == desc)]


def test_off_a_terminal_each_update_is_a_line_with_count_and_eta_at_a_bounded_rate() -> None:
    out, clock = io.StringIO(), _Clock()
    with Progress(10, "demos", "ep", file=out, min_interval_s=5.0, clock=clock) as bar:
        for _ in range(10):
            clock.t += 1.0
            bar.update(1, attempts=3)
    text = out.getvalue()
    assert "\r" not in text
    lines = _lines(text)
    # the first update, then one per 5 s, then the last: not one per update
    assert [int(m["n"]) for m in lines] == [1, 6, 10], text
    assert all(m["desc"] == "demos" and m["total"] == "10" and m["unit"] == "ep" for m in lines)
    # 1 ep/s: after the first episode nine are left, nine seconds; after the sixth, four
    assert [m["eta"] for m in lines] == ["00:09", "00:04", "00:00"], text
    assert text.splitlines()[0].endswith("attempts=3")


def test_resumed_work_counts_but_does_not_inflate_the_rate() -> None:
    out, clock = io.StringIO(), _Clock()
    bar = Progress(20, "sweep", "ep", initial=10, file=out, clock=clock)
    clock.t += 4.0
    bar.set(12)  # two new episodes in 4 s: 0.5 ep/s, eight left
    bar.close()
    (line,) = _lines(out.getvalue())
    assert (line["n"], line["eta"]) == ("12", "00:16"), out.getvalue()


def test_close_writes_the_last_count_once() -> None:
    out, clock = io.StringIO(), _Clock()
    bar = Progress(30, "identification", "iter", file=out, min_interval_s=60.0, clock=clock)
    for k in range(1, 8):  # the optimiser stopped early, at 7 of 30
        clock.t += 1.0
        bar.set(k)
    bar.close()
    bar.close()
    assert [int(m["n"]) for m in _lines(out.getvalue())] == [1, 7], out.getvalue()


def test_quiet_writes_nothing_anywhere() -> None:
    for stream in (io.StringIO(), _Terminal()):
        with Progress(5, "train", "step", quiet=True, file=stream) as bar:
            bar.update(3)
            bar.set(5, loss=0.1)
        assert stream.getvalue() == ""


def test_on_a_terminal_it_is_a_tqdm_bar() -> None:
    term = _Terminal()
    with Progress(4, "train", "step", file=term) as bar:
        for k in range(1, 5):
            bar.set(k, loss="0.5")
    text = term.getvalue()
    assert "\r" in text and "4/4" in text and "loss=0.5" in text
    assert not _lines(text)  # tqdm's own format, not the plain lines


def test_format_seconds() -> None:
    assert [format_seconds(s) for s in (0, 59.6, 61, 3600 + 62)] == ["00:00", "01:00", "01:01", "1:01:02"]


# ------------------------------------------------------------------------------------- the commands

WORLD = "tabletop-pick-v1"


def _sweep_argv(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "--world", WORLD, "--variations", str(config_dir() / "variations.yaml"), "-n", "2",
        "--max-steps", "3", "--policy", "reference", "--workers", "1",
        "--results", str(tmp_path / "r.sqlite"), *extra,
    ]  # fmt: skip


def test_sweep_command_reports_lines_and_nothing_when_quiet(tmp_path: Path, capsys) -> None:
    from r2s2r_eval.cli.sweep import main

    assert main(_sweep_argv(tmp_path)) == 0
    err = capsys.readouterr().err
    lines = _lines(err, "sweep")
    assert lines and lines[-1]["n"] == lines[-1]["total"] == "2", err
    assert "\r" not in err
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    assert main(_sweep_argv(quiet, "--quiet")) == 0
    assert not _lines(capsys.readouterr().err)


@pytest.mark.integration  # two worker processes
def test_evaluation_over_two_workers_reports_each_episode(tmp_path: Path, capsys) -> None:
    from r2s2r_eval.studies.transfer import DEFAULT_PROFILE
    from r2s2r_eval.studies.transfer_eval import evaluate_policy

    result = evaluate_policy(
        ("reference", {}),
        where="sim",
        world=WORLD,
        n=2,
        max_steps=3,
        variations=None,
        profile=DEFAULT_PROFILE,
        workers=2,
        log=lambda _line: None,
        progress_label="[x] sim",
    )
    assert result["n"] == 2 and len(result["episodes"]) == 2
    lines = _lines(capsys.readouterr().err, "[x] sim")
    # the first episode is a line of its own as it ends, the last one is the closing line
    assert [int(m["n"]) for m in lines][-1] == 2 and len(lines) >= 2, lines


ARM = Path(__file__).resolve().parents[1] / "src/r2s2r_sim/r2s2r_sim/worlds/tabletop_pick/robot/arm6.xml"
ALL = ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3")


def test_identification_reports_its_iterations() -> None:
    from r2s2r_capture.sysid import identify as S
    from r2s2r_capture.sysid.recording import ExcitationConfig, excitation_trajectory
    from r2s2r_capture.sysid.rollout import simulate_recording

    model = mujoco.MjModel.from_xml_path(str(ARM))
    home = np.array([model.key_qpos[0][model.jnt_qposadr[model.joint(n).id]] for n in ALL])
    cfg = ExcitationConfig(duration_s=3.0, base_freq_hz=0.5, max_velocity=1.5, ramp_s=0.3)
    t, q_cmd = excitation_trajectory(model, ALL, cfg, seed=1, center=home)
    model.dof_damping[:] *= 2.0  # something to fit
    rec = simulate_recording(model, t, q_cmd, ALL, delay_s=0.0)
    seen: list[int] = []
    S.identify(ARM, rec, S.SysidConfig(joints=ALL[:2], max_iters=3), on_iteration=seen.append)
    assert seen and seen == sorted(seen) and 1 <= seen[-1] <= 3, seen


def test_emulated_capture_counts_its_phases(tmp_path: Path, capsys) -> None:
    from dataclasses import replace

    from r2s2r_capture.procedures.session import CaptureConfig, capture_emulated
    from r2s2r_sim.hardware.shipped_profiles import DEFAULT_PROFILE, profile_path

    base = CaptureConfig()
    cfg = replace(
        base, n_intrinsics_views=1, n_scene_frames=1, excitation=replace(base.excitation, duration_s=2.0)
    )
    lines: list[str] = []
    capture_emulated(
        tmp_path / "bag",
        profile=profile_path(DEFAULT_PROFILE),
        config=cfg,
        progress=lines.append,
        progress_bars=True,
    )
    found = _lines(capsys.readouterr().err, "capture")
    assert len(lines) == 4  # board views, known poses, scene, excitation: a pick world has no fifth phase
    assert found and [m["total"] for m in found] == ["4"] * len(found), found
    assert found[-1]["n"] == "4" and found[0]["eta"] != "?"
