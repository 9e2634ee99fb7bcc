"""Tests of `r2s2r metrics TABLE.csv`: the real console script, plus in-process bad-input cases."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "sim_real_example.csv"
HEADER = "policy,sim_success,real_success,sim_trials,real_trials\n"


@pytest.fixture
def run_metrics(r2s2r_exe: str) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``r2s2r metrics ARGS`` through the console script."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([r2s2r_exe, "metrics", *args], capture_output=True, text=True, timeout=60)

    return run


def _write(tmp_path: Path, text: str, name: str = "table.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_worked_example_via_console_script(run_metrics):
    # tests/data/sim_real_example.csv holds invented numbers (policies example-a..d, 50 trials each):
    #   sim  = [.80, .60, .30, .10], real = [.70, .74, .40, .16]
    # By hand: only (a, b) is swapped, real gap .04 charged to a and b -> MMRV = .08 / 4 = 0.02;
    # Pearson = Σds·dr / sqrt(Σds²·Σdr²) = .24 / sqrt(.29 · .2232) = 0.94333;
    # Spearman = 1 − 6·2/(4·15) = 0.8; Kendall = (5 − 1)/6 = 0.6667.
    proc = run_metrics(str(EXAMPLE), "--resamples", "400", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    m = out["metrics"]
    assert m["mmrv"]["value"] == pytest.approx(0.02, abs=1e-12)
    assert m["pearson"]["value"] == pytest.approx(0.94333, abs=1e-5)
    assert m["spearman"]["value"] == pytest.approx(0.8)
    assert m["kendall"]["value"] == pytest.approx(4 / 6)
    for item in m.values():
        assert item["bootstrap_low"] <= item["bootstrap_high"]
        assert item["bootstrap_undefined_fraction"] == 0.0
    assert out["n_policies"] == 4 and out["seed"] == 3 and out["bootstrap"]["resamples"] == 400
    a = out["policies"][0]
    assert a["policy"] == "example-a"
    assert a["sim"]["successes"] == 40 and a["sim"]["trials"] == 50
    assert a["sim"]["wilson_low"] < 0.8 < a["sim"]["wilson_high"]
    # Same seed, same output.
    again = run_metrics(str(EXAMPLE), "--resamples", "400", "--seed", "3")
    assert again.stdout == proc.stdout


def test_bad_input_via_console_script(run_metrics, tmp_path):
    path = _write(tmp_path, "policy,sim_success\na,0.5\n")
    proc = run_metrics(str(path))
    assert proc.returncode == 2
    assert str(path) in proc.stderr and "missing column 'real_success'" in proc.stderr
    assert proc.stdout == ""


def test_rates_only_table(tmp_path, r2s2r_cli):
    path = _write(tmp_path, "policy,sim_success,real_success\nx,0.9,0.8\ny,0.2,0.3\nz,0.5,0.6\n")
    rc, out, _ = r2s2r_cli("metrics", str(path))
    assert rc == 0
    data = json.loads(out)
    assert data["bootstrap"] is None
    assert data["metrics"]["mmrv"] == {"value": 0.0}
    assert "wilson_low" not in data["policies"][0]["sim"]


def test_constant_column_gives_null(tmp_path, r2s2r_cli):
    path = _write(tmp_path, HEADER + "x,1,0.8,10,10\ny,1,0.3,10,10\nz,1,0.6,10,10\n")
    rc, out, _ = r2s2r_cli("metrics", str(path), "--resamples", "50")
    assert rc == 0
    data = json.loads(out)
    # Sim all successes stays constant in every resample: Pearson is undefined throughout.
    assert data["metrics"]["pearson"]["value"] is None
    assert data["metrics"]["pearson"]["bootstrap_undefined_fraction"] == 1.0
    assert data["metrics"]["pearson"]["bootstrap_low"] is None
    # Sim all tied: "less" charges each policy its real gap to the best: (0 + .5 + .2)/3.
    assert data["metrics"]["mmrv"]["value"] == pytest.approx(0.7 / 3)


def test_mmrv_comparison_option(tmp_path, r2s2r_cli):
    path = _write(tmp_path, "policy,sim_success,real_success\na,0.5,0.1\nb,0.5,0.2\nc,0.5,0.9\n")
    rc, out, _ = r2s2r_cli("metrics", str(path), "--mmrv-comparison", "greater")
    assert rc == 0
    data = json.loads(out)
    assert data["mmrv_comparison"] == "greater"
    assert data["metrics"]["mmrv"]["value"] == pytest.approx(0.3)


def test_rate_written_with_limited_precision(tmp_path, r2s2r_cli):
    # 0.333 × 3 and 0.67 × 3 are 1 and 2 successes at the precision written.
    path = _write(tmp_path, HEADER + "a,0.333,0.67,3,3\nb,1,0,3,3\n")
    rc, out, err = r2s2r_cli("metrics", str(path), "--resamples", "20")
    assert rc == 0, err
    a = json.loads(out)["policies"][0]
    assert a["sim"]["successes"] == 1 and a["real"]["successes"] == 2
    assert a["sim"]["success_rate"] == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "empty file"),
        ("policy,real_success\na,0.5\nb,0.4\n", r"line 1: missing column 'sim_success'"),
        ("policy,sim_success,real_success,sim_trials\na,.5,.5,4\nb,.5,.5,4\n", "'sim_trials' given without"),
        ("policy,sim_success,sim_success,real_success\n", "duplicate column"),
        (
            HEADER + "a,0.5,0.5,10,10\nb,1.5,0.5,10,10\n",
            r"line 3, column 'sim_success': success rate must be in",
        ),
        (HEADER + "a,0.5,-0.1,10,10\nb,0.5,0.5,10,10\n", r"line 2, column 'real_success': success rate"),
        (HEADER + "a,0.5,high,10,10\nb,0.5,0.5,10,10\n", r"line 2, column 'real_success': not a number"),
        (HEADER + "a,nan,0.5,10,10\nb,0.5,0.5,10,10\n", r"line 2, column 'sim_success': success rate"),
        (HEADER + "a,0.5,0.5,10,10\n", "at least 2 policies"),
        (
            HEADER + "a,0.5,0.5,10,10\nb,0.1,0.2,10,10\na,0.3,0.3,10,10\n",
            r"line 4, column 'policy': duplicate",
        ),
        (
            HEADER + "a,0.5,0.5,0,10\nb,0.5,0.5,10,10\n",
            r"line 2, column 'sim_trials': trials must be a positive",
        ),
        (HEADER + "a,0.5,0.5,10,2.5\nb,0.5,0.5,10,10\n", r"line 2, column 'real_trials': trials must be"),
        (HEADER + "a,0.55,0.5,10,10\nb,0.5,0.5,10,10\n", r"line 2, column 'sim_success': 0.55 × 10 trials"),
        (HEADER + "a,0.5,0.5,10,10\nb,,0.5,10,10\n", r"line 3, column 'sim_success': empty value"),
        (HEADER + "a,0.5,0.5,10,10,extra\nb,0.5,0.5,10,10\n", "line 2: more fields"),
        ('policy,sim_success,real_success\n"a,0.5,0.5\n', "malformed CSV"),
    ],
)
def test_bad_tables(tmp_path, r2s2r_cli, text, match):
    path = _write(tmp_path, text)
    rc, out, err = r2s2r_cli("metrics", str(path))
    assert rc == 2
    assert out == ""
    assert str(path) in err
    assert re.search(match, err), err


def test_missing_file(tmp_path, r2s2r_cli):
    rc, _, err = r2s2r_cli("metrics", str(tmp_path / "nope.csv"))
    assert rc == 2 and "nope.csv" in err and "cannot read" in err


@pytest.mark.parametrize(
    "args", [["--resamples", "0"], ["--confidence", "1"], ["--confidence", "x"], ["--mmrv-comparison", "le"]]
)
def test_bad_options_exit_2(r2s2r_cli, args):
    rc, _, err = r2s2r_cli("metrics", str(EXAMPLE), *args)
    assert rc == 2 and "usage:" in err
