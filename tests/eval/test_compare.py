"""``r2s2r compare``: report, summary, and the bad-input paths (stores built with ResultsStore directly)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from r2s2r_eval.analysis.compare import CompareSettings, compare
from r2s2r_eval.analysis.compare_data import CompareError, load_episodes
from r2s2r_eval.analysis.compare_page import write_report
from r2s2r_eval.analysis.targets import load_targets
from r2s2r_eval.episodes.results import EpisodeRow, ResultsStore, utc_now
from r2s2r_eval.episodes.sweep_export import export_rows
from r2s2r_sim.cli import main as cli

TARGETS = Path(__file__).resolve().parents[2] / "config" / "compare_targets.yaml"
# Verdict words a report must not hold unless targets were given.
VERDICTS = re.compile(r"\bmet\b|\bnot met\b|\btargets?\b", re.IGNORECASE)

# Policy "strong" fails when friction < 0.5, "weak" when friction < 0.8; both sides alike but for noise.
POLICIES = {"strong": ({}, 0.5), "weak": ({"perception_noise_m": 0.03}, 0.8)}


def _store(
    path: Path, *, seed: int, world: str = "tabletop-pick-v1", n: int = 24, policies: dict | None = None
) -> Path:
    rng = np.random.default_rng(seed)
    with ResultsStore(path) as store:
        for name, (params, thr) in (policies or POLICIES).items():
            for i in range(n):
                friction, dx = rng.uniform(0.2, 1.2), rng.uniform(-0.02, 0.02)
                ok = bool(friction >= thr)
                store.add(
                    EpisodeRow(
                        policy="reference",
                        parameters=params,
                        world_id=world,
                        world_hash="h" + world,
                        seed=i,
                        success=ok,
                        reason="success" if ok else "timeout",
                        duration_s=1.0,
                        metrics={},
                        started_at=utc_now(),
                        episode_key=f"{seed}-{name}-{i}",
                        variation={
                            "method": "random",
                            "index": i,
                            "params": {"physics.friction_scale": friction, "camera.dx": dx},
                        },
                    )
                )
    return path


@pytest.fixture
def stores(tmp_path: Path) -> tuple[Path, Path]:
    return _store(tmp_path / "sim.sqlite", seed=1), _store(tmp_path / "real.sqlite", seed=2)


def test_report_and_summary(stores, tmp_path, r2s2r_cli):
    sim, real = stores
    out = tmp_path / "report"
    rc, stdout, err = r2s2r_cli(
        "compare", "--sim", str(sim), "--real", str(real), "-o", str(out), "--resamples", "200"
    )
    assert rc == 0, err
    html = (out / "report.html").read_text()
    # One self-contained page: every image is a data URI, nothing is fetched.
    srcs = re.findall(r'(?:src|href)\s*=\s*["\']([^"\']*)', html)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert "<link" not in html and "<script" not in html
    for png in ("scatter.png", "ranking.png", "axes.png", "failure_map_0.png", "failure_map_1.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    s = json.loads((out / "summary.json").read_text())
    assert {
        "policies",
        "metrics",
        "targets",
        "failure_regions",
        "warnings",
        "worlds",
        "failure_prediction",
        "policies_excluded",
        "settings",
    } <= set(s)
    assert s["warnings"] == [] and s["policies_compared"] == [
        "reference",
        "reference:perception_noise_m=0.03",
    ]
    assert s["metrics"]["mmrv"]["value"] == 0.0 and s["metrics"]["pearson"]["value"] == pytest.approx(1.0)
    assert s["metrics"]["pearson"]["bootstrap_low"] <= 1.0
    weak = s["failure_regions"]["reference:perception_noise_m=0.03"]
    rule = weak["sim_failure_rules"][0]
    assert rule["conditions"][0]["parameter"] == "physics.friction_scale"
    assert rule["conditions"][0]["op"] == "<" and abs(rule["conditions"][0]["threshold"] - 0.8) < 0.1
    assert weak["agreement"]["accuracy"] >= 0.85 and weak["map_axes"][0] == "physics.friction_scale"
    assert s["failure_prediction"]["real_episodes"] == 48
    assert s["axes_shown"][0] == "physics.friction_scale"
    # Terminal summary is readable without a browser.
    assert (
        "fails when physics.friction_scale < 0.7" in stdout
        or "fails when physics.friction_scale < 0.8" in stdout
    )
    assert "report:" in stdout
    # No targets given: the figures and their intervals, no verdict.
    assert s["targets"] == {}
    assert not VERDICTS.search(stdout) and not VERDICTS.search(html), VERDICTS.findall(stdout + html)
    assert re.search(r"pearson\s+1\.000\s+\[[-0-9.]+, 1\.000\]", stdout)
    assert re.search(r"mmrv\s+0\.000\s+\[0\.000, [0-9.]+\]", stdout)
    assert "bootstrap 95% low" in html and "Wilson" in html


def test_targets_file_adds_verdicts(stores, tmp_path, r2s2r_cli):
    sim, real = stores
    targets = tmp_path / "targets.yaml"
    # Measured on these stores: pearson 1, mmrv 0 (see test_report_and_summary).
    targets.write_text("pearson: {min: 0.95}\nmmrv: {min: 0.01, max: 0.05}\nkendall: {max: 0.5}\n")
    out = tmp_path / "report"
    rc, stdout, err = r2s2r_cli(
        "compare",
        "--sim",
        str(sim),
        "--real",
        str(real),
        "-o",
        str(out),
        "--resamples",
        "50",
        "--targets",
        str(targets),
    )
    assert rc == 0, err
    t = json.loads((out / "summary.json").read_text())["targets"]
    assert list(t) == ["pearson", "mmrv", "kendall"]
    assert t["pearson"] == {
        "target": ">= 0.95",
        "min": 0.95,
        "max": None,
        "measured": pytest.approx(1.0),
        "met": True,
    }
    assert t["mmrv"]["target"] == "in [0.01, 0.05]" and t["mmrv"]["met"] is False
    assert t["kendall"]["measured"] == pytest.approx(1.0) and t["kendall"]["met"] is False
    assert re.search(r"pearson\s+1\.000\s+target >= 0\.95\s+met", stdout)
    assert re.search(r"mmrv\s+0\.000\s+target in \[0\.01, 0\.05\]\s+NOT met", stdout)
    html = (out / "report.html").read_text()
    assert "<h2>Targets</h2>" in html and "<span class='fail'>not met</span>" in html


def test_shipped_targets_grade_like_the_project(stores, tmp_path):
    """The project's own bar, config/compare_targets.yaml: an undefined figure is n/a, never a verdict."""
    one = {"strong": POLICIES["strong"]}
    comp = compare(
        load_episodes(_store(tmp_path / "a.sqlite", seed=1, policies=one)),
        load_episodes(_store(tmp_path / "b.sqlite", seed=2, policies=one)),
        CompareSettings(targets=load_targets(TARGETS)),
    )
    t = comp.summary["targets"]
    assert {k: v["target"] for k, v in t.items()} == {
        "pearson": ">= 0.95",
        "mmrv": "<= 0.03",
        "failure_prediction_accuracy": ">= 0.85",
        "failure_prediction_balanced_accuracy": ">= 0.75",
    }
    assert t["pearson"]["met"] is None and t["mmrv"]["met"] is None  # one policy: no cross-policy metric
    # The balanced accuracy is the closed loop's paired prediction: this command does not compute it.
    assert t["failure_prediction_balanced_accuracy"]["met"] is None
    acc = comp.summary["failure_prediction"]["accuracy"]
    assert t["failure_prediction_accuracy"]["measured"] == acc and t["failure_prediction_accuracy"][
        "met"
    ] == (acc >= 0.85)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("pearsn: {min: 0.9}\n", r"targets.yaml: pearsn: unknown metric; expected one of pearson, mmrv"),
        ("mmrv: {maximum: 0.05}\n", r"targets.yaml: mmrv.maximum: unknown bound; expected min and/or max"),
        ("pearson: {min: high}\n", r"targets.yaml: pearson.min: must be a number: got 'high'"),
        ("pearson: {min: 95}\n", r"targets.yaml: pearson.min: must be in \[-1, 1\] .*got 95"),
    ],
)
def test_bad_targets_file_exits_2(stores, tmp_path, r2s2r_cli, text, match):
    sim, real = stores
    targets = tmp_path / "targets.yaml"
    targets.write_text(text)
    out = tmp_path / "o"
    rc, stdout, err = r2s2r_cli(
        "compare", "--sim", str(sim), "--real", str(real), "-o", str(out), "--targets", str(targets)
    )
    assert rc == 2 and re.search(match, err), err
    assert stdout == "" and not out.exists()


def test_refuses_existing_dir(stores, tmp_path, r2s2r_cli):
    sim, real = stores
    out = tmp_path / "exists"
    out.mkdir()
    rc, _, err = r2s2r_cli("compare", "--sim", str(sim), "--real", str(real), "-o", str(out))
    assert rc == 2 and "already exists" in err and list(out.iterdir()) == []
    comp = compare(load_episodes(sim), load_episodes(real), CompareSettings(resamples=50))
    with pytest.raises(CompareError, match="refusing to overwrite"):
        write_report(comp, out)


def test_different_worlds(tmp_path, r2s2r_cli):
    sim = _store(tmp_path / "sim.sqlite", seed=1)
    real = _store(tmp_path / "real.sqlite", seed=2, world="kitchen-v1")
    rc, _, err = r2s2r_cli("compare", "--sim", str(sim), "--real", str(real), "-o", str(tmp_path / "o"))
    assert rc == 2 and "different worlds" in err and "kitchen-v1" in err
    assert not (tmp_path / "o").exists()
    rc, stdout, err = r2s2r_cli(
        "compare",
        "--sim",
        str(sim),
        "--real",
        str(real),
        "-o",
        str(tmp_path / "o"),
        "--allow-different-worlds",
        "--resamples",
        "50",
    )
    assert rc == 0, err
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert any("Different worlds" in w for w in s["warnings"])
    assert "Different worlds" in (tmp_path / "o" / "report.html").read_text()
    assert "WARNING: Different worlds" in stdout


def test_one_sided_policy_is_excluded_and_listed(tmp_path):
    sim = _store(
        tmp_path / "sim.sqlite", seed=1, policies={**POLICIES, "extra": ({"grasp_offset_m": 0.01}, 0.3)}
    )
    real = _store(tmp_path / "real.sqlite", seed=2)
    comp = compare(load_episodes(sim), load_episodes(real), CompareSettings(resamples=50))
    s = comp.summary
    assert s["policies_excluded"] == {"sim_only": ["reference:grasp_offset_m=0.01"], "real_only": []}
    assert any("one side only" in w and "grasp_offset_m" in w for w in s["warnings"])
    assert len(s["policies"]) == 2 and "reference:grasp_offset_m=0.01" not in s["failure_regions"]
    out = write_report(comp, tmp_path / "r")
    assert "one side only" in (out / "report.html").read_text()


def test_single_shared_policy_warns_instead_of_metrics(tmp_path):
    one = {"strong": POLICIES["strong"]}
    comp = compare(
        load_episodes(_store(tmp_path / "a.sqlite", seed=1, policies=one)),
        load_episodes(_store(tmp_path / "b.sqlite", seed=2, policies=one)),
        CompareSettings(),
    )
    assert comp.summary["metrics"] == {} and comp.summary["targets"] == {}
    assert any("need at least 2" in w for w in comp.summary["warnings"])
    write_report(comp, tmp_path / "r")  # no ranking plot, still a report


def test_zero_trials_and_bad_files(tmp_path, stores):
    sim, _ = stores
    empty = tmp_path / "empty.sqlite"
    with ResultsStore(empty):
        pass
    with pytest.raises(CompareError, match="no episodes on the real side"):
        compare(load_episodes(sim), load_episodes(empty))
    bad = tmp_path / "bad.csv"
    bad.write_text("policy,world_id\nreference,w\n")
    with pytest.raises(CompareError, match=r"bad.csv: missing column\(s\) success"):
        load_episodes(bad)
    with pytest.raises(CompareError, match="cannot read"):
        load_episodes(tmp_path / "nope.parquet")
    other = tmp_path / "x.txt"
    other.write_text("hello")
    with pytest.raises(CompareError, match="not an SQLite results store"):
        load_episodes(other)
    notbool = tmp_path / "nb.csv"
    notbool.write_text("policy,success,world_id\nreference,maybe,w\n")
    with pytest.raises(CompareError, match="not a boolean"):
        load_episodes(notbool)


def test_export_files_load_like_the_store(stores, tmp_path):
    sim, real = stores
    export_rows(real, tmp_path / "real.parquet")
    export_rows(real, tmp_path / "real.csv")
    a = load_episodes(real)
    for name in ("real.parquet", "real.csv"):
        b = load_episodes(tmp_path / name)
        assert list(b.policy) == list(a.policy) and np.array_equal(b.success, a.success)
        order = [b.names.index(n) for n in a.names]
        assert np.allclose(b.params[:, order], a.params)
    # Rates only: no variation parameters -> failure analysis skipped with a warning.
    (tmp_path / "plain.csv").write_text(
        "policy,success,world_id\n" + "".join(f"p{i % 2},{i % 3 == 0},tabletop-pick-v1\n" for i in range(12))
    )
    p = load_episodes(tmp_path / "plain.csv")
    comp = compare(p, p, CompareSettings(resamples=20))
    assert comp.summary["failure_regions"] == {} and any(
        "No variation parameters" in w for w in comp.summary["warnings"]
    )


SIMPLER = Path(__file__).resolve().parents[1] / "data" / "simpler_published.csv"


@pytest.mark.parametrize("comparison", ["less", "greater"])
def test_metrics_reproduce_simpler_published_values(capsys, comparison):
    """`r2s2r metrics` on SIMPLER's published pick-coke-can rates (tests/data/README.md for provenance)."""
    from scipy import stats

    rc = cli.main(["metrics", str(SIMPLER), "--mmrv-comparison", comparison])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    m = out["metrics"]
    # Independent oracle: scipy's Pearson, and MMRV written out from the paper's equation.
    rows = [line.split(",") for line in SIMPLER.read_text().splitlines()[1:]]
    s, r = [float(x[1]) for x in rows], [float(x[2]) for x in rows]
    n = len(rows)
    oracle_mmrv = (
        sum(max(abs(r[i] - r[j]) * ((s[i] < s[j]) != (r[i] < r[j])) for j in range(n)) for i in range(n)) / n
    )
    assert m["pearson"]["value"] == pytest.approx(stats.pearsonr(s, r)[0], abs=1e-12)
    assert m["mmrv"]["value"] == pytest.approx(oracle_mmrv, abs=1e-12)
    # The published values, to the three decimals SIMPLER prints.
    assert round(m["pearson"]["value"], 3) == 0.975
    assert round(m["mmrv"]["value"], 3) == 0.031


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"confidence": 1.0}, r"confidence: must be in \(0, 1\), got 1\.0"),
        ({"resamples": 0}, r"resamples: must be >= 1, got 0"),
        ({"max_depth": 4}, r"max_depth: must be in \[0, 3\], got 4"),
        ({"mmrv_comparison": "more"}, r"mmrv_comparison must be 'less' or 'greater': got 'more'"),
    ],
)
def test_settings_refuse_values_out_of_range(change: dict, match: str) -> None:
    with pytest.raises(CompareError, match=match):
        CompareSettings(**change)
