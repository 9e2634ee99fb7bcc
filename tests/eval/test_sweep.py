"""Sweep runner (r2s2r_eval.episodes.sweep, r2s2r sweep): plan, keys, local pool, resume, export, bad input.

Episodes are cut to a few control steps (``max_steps``) so the whole file runs in well under a minute.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from r2s2r_eval.cli.sweep import main
from r2s2r_eval.episodes.results import ResultsStore
from r2s2r_eval.episodes.sweep import run_sweep, run_task
from r2s2r_eval.episodes.sweep_export import export_rows
from r2s2r_eval.episodes.sweep_plan import (
    PolicySpec,
    SweepConfig,
    SweepError,
    episode_key,
    episode_seed,
    parse_policy_spec,
    plan_sweep,
)
from r2s2r_sim.variations import load_variation_config
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

ROOT = Path(__file__).resolve().parents[2]
VARIATIONS = ROOT / "config" / "variations.yaml"
WORLD = "tabletop-pick-v1"
STEPS = 3


@pytest.fixture(scope="module")
def variations():
    return load_variation_config(VARIATIONS)


def _cfg(variations, **kw) -> SweepConfig:
    base = dict(
        world=WORLD,
        policies=(PolicySpec(name="reference"),),
        variations=variations,
        n=2,
        method="sobol",
        seed=3,
        repeats=1,
        camera_rate_hz=15.0,
        max_steps=STEPS,
    )
    return SweepConfig(**{**base, **kw})


def _comparable(rows):
    return sorted(
        (r.episode_key, r.policy, r.seed, r.world_hash, r.success, r.reason, dict(r.metrics), r.variation)
        for r in rows
    )


# ---------------------------------------------------------------------------------------------- inputs


def test_parse_policy_spec() -> None:
    assert parse_policy_spec("reference") == PolicySpec(name="reference", params={})
    spec = parse_policy_spec("reference:perception_noise_m=0.01,speed=1")
    assert spec.params == {"perception_noise_m": 0.01, "speed": 1}
    assert parse_policy_spec("pkg.mod:Class") == PolicySpec(name="pkg.mod:Class", params={})
    assert parse_policy_spec("pkg.mod:Class:a=true").params == {"a": True}
    with pytest.raises(SweepError, match="empty policy name"):
        parse_policy_spec(":a=1")
    with pytest.raises(SweepError, match="given twice"):
        parse_policy_spec("reference:a=1,a=2")
    with pytest.raises(SweepError, match="must be a finite scalar"):
        parse_policy_spec("reference:a=[1]")


def test_config_validation(variations) -> None:
    with pytest.raises(SweepError, match="n: number of variations must be >= 1, got 0"):
        _cfg(variations, n=0)
    with pytest.raises(SweepError, match="repeats: must be >= 1"):
        _cfg(variations, repeats=0)
    with pytest.raises(SweepError, match="seed: must be >= 0"):
        _cfg(variations, seed=-1)
    with pytest.raises(SweepError, match="camera_rate_hz: must be > 0"):
        _cfg(variations, camera_rate_hz=0.0)
    with pytest.raises(SweepError, match="given twice"):
        _cfg(variations, policies=(PolicySpec(name="reference"),) * 2)


def test_plan_keys_are_deterministic_and_distinct(variations) -> None:
    cfg = _cfg(
        variations,
        n=3,
        repeats=2,
        policies=(PolicySpec(name="reference"), parse_policy_spec("reference:speed=0.5")),
    )
    plan = plan_sweep(cfg, world_dir=world_path(WORLD), world_id=WORLD, world_hash="h")
    again = plan_sweep(cfg, world_dir=world_path(WORLD), world_id=WORLD, world_hash="h")
    assert len(plan) == 3 * 2 * 2
    assert [t.key for t in plan] == [t.key for t in again]
    assert len({t.key for t in plan}) == len(plan)
    other_world = plan_sweep(cfg, world_dir=world_path(WORLD), world_id=WORLD, world_hash="h2")
    assert not {t.key for t in plan} & {t.key for t in other_world}
    assert episode_seed(3, 1, 0) == episode_seed(3, 1, 0) != episode_seed(3, 1, 1)
    assert 0 <= episode_seed(3, 1, 0) < 2**32
    key = dict(
        policy=PolicySpec(name="reference"),
        world_hash="h",
        variations="v",
        method="sobol",
        seed=0,
        index=0,
        repeat=0,
        camera_rate_hz=None,
        max_steps=None,
    )
    assert episode_key(**key) != episode_key(**{**key, "max_steps": 5})
    # How images are drawn is part of an episode's identity, except the default (stores keep their keys).
    assert episode_key(**key) == episode_key(**{**key, "render_profile": None, "policy_images": True})
    assert episode_key(**key) != episode_key(**{**key, "render_profile": "fast"})
    assert episode_key(**key) != episode_key(**{**key, "policy_images": False})
    fast = plan_sweep(
        dataclasses.replace(cfg, render_profile="fast"),
        world_dir=world_path(WORLD),
        world_id=WORLD,
        world_hash="h",
    )
    assert fast[0].render_profile == "fast" and not {t.key for t in plan} & {t.key for t in fast}


# ------------------------------------------------------------------------------------ running, resuming


def test_local_sweep_stores_resumes_and_reproduces(tmp_path: Path, variations) -> None:
    cfg = _cfg(variations, n=2, repeats=2)
    store = tmp_path / "a.sqlite"
    summary = run_sweep(cfg, store, workers=2, progress=False)
    assert (summary.total, summary.ran, summary.skipped, summary.errors) == (4, 4, 0, 0)
    again = run_sweep(cfg, store, workers=2, progress=False)
    assert (again.ran, again.skipped) == (0, 4)
    with ResultsStore(store) as s:
        rows = list(s.rows())
    assert len(rows) == 4 and {r.episode_key for r in rows} == set(summary.keys)
    for r in rows:
        assert r.reason == "not_achieved (max_steps)" and r.variation["method"] == "sobol"
        assert len(r.variation["params"]) > 0 and r.world_hash  # realised vector, varied world's hash
    assert len({r.world_hash for r in rows}) == 2  # two variations, two compiled models
    # In process (no pool) gives the same row: the worker is a plain function.
    base_hash = SimWorld(world_path(WORLD)).world_hash
    first = plan_sweep(cfg, world_dir=world_path(WORLD), world_id=WORLD, world_hash=base_hash)[0]
    assert first.key == summary.keys[0]
    direct, stored = run_task(first), rows_by_key(rows)[first.key]
    assert (direct.success, direct.reason, dict(direct.metrics), direct.variation, direct.world_hash) == (
        stored.success,
        stored.reason,
        dict(stored.metrics),
        stored.variation,
        stored.world_hash,
    )
    # A fresh store reproduces every row exactly.
    other = tmp_path / "b.sqlite"
    run_sweep(cfg, other, workers=1, progress=False)
    with ResultsStore(other) as s:
        assert _comparable(s.rows()) == _comparable(rows)

    # Export: one row per episode, variation vector flattened into columns.
    n_pq = export_rows(store, tmp_path / "out.parquet", keys=summary.keys)
    n_csv = export_rows(store, tmp_path / "out.csv")
    assert n_pq == n_csv == 4
    table = pq.read_table(tmp_path / "out.parquet")
    assert table.column("episode_key").to_pylist() == list(summary.keys)
    var_cols = [c for c in table.column_names if c.startswith("var.")]
    assert "var.objects.x" in var_cols and "var.physics.mass_scale" in var_cols
    assert (
        table.column("var.objects.x").to_pylist()[0]
        == rows_by_key(rows)[summary.keys[0]].variation["params"]["objects.x"]
    )
    assert "metric.object_to_target_m" in table.column_names
    assert pcsv.read_csv(tmp_path / "out.csv").num_rows == 4
    with pytest.raises(SweepError, match="already exists; refusing to overwrite"):
        export_rows(store, tmp_path / "out.csv")


def rows_by_key(rows):
    return {r.episode_key: r for r in rows}


def test_uncompilable_variation_is_recorded_not_retried(tmp_path: Path, variations) -> None:
    bad = dataclasses.replace(
        variations, objects=dataclasses.replace(variations.objects, body="no_such_body")
    )
    cfg = _cfg(bad, n=1)
    summary = run_sweep(cfg, tmp_path / "r.sqlite", workers=1, progress=False)
    assert (summary.ran, summary.errors, summary.succeeded) == (1, 1, 0)
    with ResultsStore(tmp_path / "r.sqlite") as s:
        (row,) = list(s.rows())
    assert row.reason.startswith("variation_error: VariationError: objects.body") and not row.success
    assert run_sweep(cfg, tmp_path / "r.sqlite", workers=1, progress=False).ran == 0


def test_resume_after_sigkill(tmp_path: Path) -> None:
    store = tmp_path / "k.sqlite"
    args = [
        sys.executable,
        "-m",
        "r2s2r_eval.cli.sweep",
        "--world",
        WORLD,
        "--policy",
        "reference",
        "--variations",
        str(VARIATIONS),
        "-n",
        "5",
        "--seed",
        "1",
        "--results",
        str(store),
        "--workers",
        "1",
        "--max-steps",
        "8",
        "--quiet",
    ]
    proc = subprocess.Popen(
        args, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    count = 0
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if store.exists():
                with sqlite3.connect(store) as conn:
                    try:
                        count = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
                    except sqlite3.OperationalError:
                        count = 0
                if count >= 2:
                    break
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its pool workers, mid-way
        proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL, "the sweep finished before it could be killed"
    with ResultsStore(store) as s:
        killed_at = len(s)
    assert 2 <= killed_at < 5
    rerun = subprocess.run(args, capture_output=True, text=True, timeout=90)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{killed_at} already stored, {5 - killed_at} run" in rerun.stderr
    with ResultsStore(store) as s:
        keys = [r.episode_key for r in s.rows()]
    assert len(keys) == 5 and len(set(keys)) == 5


# ---------------------------------------------------------------------------------------------- bad input


def _argv(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "--world",
        WORLD,
        "--variations",
        str(VARIATIONS),
        "-n",
        "1",
        "--max-steps",
        "1",
        "--results",
        str(tmp_path / "r.sqlite"),
        "--quiet",
        *extra,
    ]


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--policy", "nope"], "unknown policy 'nope': registered policies are \\[.*'reference'"),
        (["--policy", "reference:no_such=1"], "unknown parameter\\(s\\) \\['no_such'\\]"),
        (
            ["--policy", "reference", "--executor", "slurm"],
            "--executor 'slurm': unknown executor .*local, ray",
        ),
        (
            ["--policy", "reference", "--executor", "ray", "--address", "127.0.0.1:1"],
            "--address '127.0.0.1:1': cannot reach a Ray cluster",
        ),
        (["--policy", "reference", "--address", "127.0.0.1:1"], "only meaningful with --executor ray"),
        (["--policy", "reference", "--export", "x.xlsx"], "unknown format '.xlsx'"),
        (["--policy", "reference", "--world", "no-such-world"], "--world: unknown world 'no-such-world'"),
        (["--policy", "reference", "-n", "0"], "n: number of variations must be >= 1"),
        (
            ["--policy", "reference", "--render-profile", "ultra"],
            "--render-profile 'ultra': world 'tabletop-pick-v1' has no such profile "
            "\\(profiles: \\['fast', 'full'\\]",
        ),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path, capsys, extra, match) -> None:
    assert main(_argv(tmp_path, *extra)) == 2
    err = capsys.readouterr().err
    assert err.startswith("r2s2r sweep: error: ")
    import re

    assert re.search(match, err), err
    assert not (tmp_path / "r.sqlite").exists()


def test_malformed_variations_yaml_names_file_and_field(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("physics:\n  mass_scale: [1.3, 0.7]\n")
    argv = _argv(tmp_path, "--policy", "reference")
    argv[argv.index(str(VARIATIONS))] = str(bad)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--variations: " in err and "bad.yaml" in err and "mass_scale" in err, err
    assert not (tmp_path / "r.sqlite").exists()


def test_existing_export_and_foreign_results_refused(tmp_path: Path, capsys) -> None:
    (tmp_path / "out.csv").write_text("keep me")
    assert main(_argv(tmp_path, "--policy", "reference", "--export", str(tmp_path / "out.csv"))) == 2
    assert "already exists; refusing to overwrite" in capsys.readouterr().err
    assert (tmp_path / "out.csv").read_text() == "keep me" and not (tmp_path / "r.sqlite").exists()
    with sqlite3.connect(tmp_path / "r.sqlite") as conn:
        conn.execute("CREATE TABLE t (x)")
    assert main(_argv(tmp_path, "--policy", "reference")) == 2
    assert "--results: " in capsys.readouterr().err


def test_sweep_whose_episodes_all_error_exits_1(tmp_path: Path, capsys) -> None:
    # The crashing policy passes every check before the episodes; each worker running it dies.
    argv = _argv(tmp_path, "--policy", "sweep_policies:CrashingPolicy", "--workers", "1")
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "1 run: 0 succeeded, 1 errors" in err and "all 1 episodes run failed with errors" in err, err
    with ResultsStore(tmp_path / "r.sqlite") as s:
        (row,) = list(s.rows())
    assert row.reason.startswith("worker_crashed: ") and not row.success, row.reason
    # A rerun runs nothing (failures are stored, not retried): not an all-error run.
    assert main(argv) == 0
    assert "0 run" in capsys.readouterr().err
    # A policy that raises is a failed episode, a result, not a sweep error.
    other = tmp_path / "raising"
    other.mkdir()
    assert main(_argv(other, "--policy", "sweep_policies:RaisingPolicy", "--workers", "1")) == 0
    with ResultsStore(other / "r.sqlite") as s:
        (row,) = list(s.rows())
    assert row.reason.startswith("policy_error: RuntimeError: raising policy"), row.reason


# ------------------------------------------------------------------------------------ the emulated side


def test_sweep_on_the_emulated_hardware(variations, tmp_path: Path) -> None:
    from r2s2r_eval.studies.study_variations import operator_variations
    from r2s2r_sim.hardware.profile import load_hardware_profile

    profile = ROOT / "config/emulated_hardware/ideal_profile.yaml"
    with pytest.raises(SweepError, match="--profile: .*cannot be varied by an operator"):
        run_sweep(_cfg(variations, hardware_profile=str(profile)), tmp_path / "bad.sqlite", workers=1)
    assert not (tmp_path / "bad.sqlite").exists()
    operator = operator_variations(VARIATIONS)
    cfg = _cfg(operator, n=1, method="random", hardware_profile=str(profile))
    summary = run_sweep(cfg, tmp_path / "real.sqlite", workers=1, progress=False)
    sim = run_sweep(_cfg(operator, n=1, method="random"), tmp_path / "sim.sqlite", workers=1, progress=False)
    assert summary.ran == 1 and summary.keys != sim.keys  # the side is part of the episode's identity
    with ResultsStore(tmp_path / "real.sqlite") as store:
        (row,) = list(store.rows())
    assert row.world_hash == SimWorld(world_path(WORLD)).world_hash  # the base world's, as in sim
    assert row.variation["profile_sha256"] == load_hardware_profile(profile).sha256
    assert row.reason == "not_achieved (max_steps)", row.reason  # the judge, not the sim task, decided


def test_an_axis_left_off_at_its_defaults_does_not_change_episode_keys() -> None:
    from r2s2r_eval.episodes.sweep_plan import variations_digest
    from r2s2r_sim.variations.config import DynamicsVariationConfig, ParameterRange, VariationConfig

    base = VariationConfig()
    payload = dataclasses.asdict(base)
    del payload["dynamics"], payload["sensor"], payload["contact"]  # as it reads without those axes
    without = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
    assert variations_digest(base) == without
    used = DynamicsVariationConfig(enabled=True, parameters=(ParameterRange(name="elbow/kp", range=(1, 2)),))
    assert variations_digest(dataclasses.replace(base, dynamics=used)) != without
    off_but_set = dataclasses.replace(used, enabled=False)
    assert variations_digest(dataclasses.replace(base, dynamics=off_but_set)) != without


def test_variations_digest_depends_on_content_not_on_the_files_folder(tmp_path: Path) -> None:
    from r2s2r_eval.episodes.sweep_plan import path_variations_digest, variations_digest

    copies = []
    for folder in ("a", "b/c"):
        (tmp_path / folder).mkdir(parents=True)
        copy = tmp_path / folder / "variations.yaml"
        copy.write_bytes(VARIATIONS.read_bytes())
        copies.append(load_variation_config(copy))
    assert copies[0].source != copies[1].source
    assert variations_digest(copies[0]) == variations_digest(copies[1])
    # The same content built without a file has the same digest too.
    assert variations_digest(dataclasses.replace(copies[0], source=None)) == variations_digest(copies[0])
    # The path-including digest differs by folder, and exists only for a config read from a file.
    assert path_variations_digest(copies[0]) != path_variations_digest(copies[1])
    assert path_variations_digest(dataclasses.replace(copies[0], source=None)) is None


def test_a_store_keyed_with_the_path_including_digest_still_resumes(tmp_path: Path, variations) -> None:
    from r2s2r_eval.episodes.sweep_plan import path_variations_digest

    cfg = _cfg(variations, n=2)
    base_hash = SimWorld(world_path(WORLD)).world_hash
    plan = plan_sweep(cfg, world_dir=world_path(WORLD), world_id=WORLD, world_hash=base_hash)
    old_key = episode_key(
        policy=plan[0].policy,
        world_hash=base_hash,
        variations=path_variations_digest(variations),
        method="sobol",
        seed=3,
        index=0,
        repeat=0,
        camera_rate_hz=15.0,
        max_steps=STEPS,
    )
    assert plan[0].key_aliases == (old_key,) and old_key != plan[0].key
    # A store whose first episode was written under the old key, as such stores were.
    store = tmp_path / "old.sqlite"
    with ResultsStore(store) as s:
        s.add(dataclasses.replace(run_task(plan[0]), episode_key=old_key))
    summary = run_sweep(cfg, store, workers=1, progress=False)
    assert (summary.total, summary.skipped, summary.ran) == (2, 1, 1)
    assert summary.keys == (old_key, plan[1].key)  # each episode under the key its row has
    with ResultsStore(store) as s:
        assert {r.episode_key for r in s.rows()} == set(summary.keys)
