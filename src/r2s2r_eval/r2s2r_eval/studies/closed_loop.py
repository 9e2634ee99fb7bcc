"""The closed loop: does evaluation in the reconstructed world predict the (emulated) hardware?

    r2s2r closed-loop --out out/closed_loop [--task pick|push|stack|drawer] [--small] [--trials N]
                      [--max-steps N] [--quick-capture] [--policy SPEC ...]

1. **capture** the emulated hardware with a hardware profile and run **real2sim** on the bag
   (:func:`r2s2r_eval.studies.emulated_capture.reconstruct_emulated_world`; real2sim never reads the profile);
2. evaluate a family of policies of different strength (:data:`FAMILY`: reference variants and the
   depth-only ``topdown`` policy; or those given with ``--policy``, such as learned checkpoints, each
   reading images at its own rate), every side a sweep (:func:`r2s2r_eval.episodes.sweep.run_sweep`) into its
   own results store:

   a. **real**: on the emulated hardware (the sweep's emulated side: the profile's latency, joint noise,
      distorted camera, judge), each trial with an operator's random object pose, lighting and clutter
      (the variation engine's ``objects``, ``appearance`` and ``clutter`` axes, ``method="random"``);
   b. **sim**: sweeps in the reconstructed world over the same axes (Sobol points, another seed), each
      point also drawing the world over what real2sim could not pin down (its own ``variations.yaml``:
      identified dynamics within their errors, camera pose within its calibration error, friction and
      mass priors), so a seed gives the same world every time and the study resumes;
   c. **baseline sim**: the same sweep in the bundled world, without reconstruction;
   d. **paired sims**: each world once more at the real side's own trials (the operator's variations and
      the episode seeds, so the policy's own random stream is the same too), which gives every real
      episode a sim partner at the same parameters: the failure prediction accuracy is the share of
      real episodes whose outcome their partner predicts
      (:func:`r2s2r_eval.analysis.failure_regions.paired_agreement`);

3. **compare** real with each sim (:mod:`r2s2r_eval.analysis.compare`): ``real_vs_reconstructed/`` and
   ``real_vs_bundled/`` (``report.html``, ``summary.json``, PNGs), and write ``summary.json`` /
   ``summary.txt`` with the targets (the project's own, ``config/compare_targets.yaml``) beside the
   measured values and how much worse the bundled world does.

Both sides use a 1 Hz camera (both policies look once), so the run fits a laptop.  Work files live in
``OUT/work`` (bag, world, results stores); the stores are keyed per episode, so a killed run resumes, and
the capture and world are reused when present.  The two reports are rewritten on every run.  Policies
model the scene from the world folder each episode names, so the reconstructed world needs no id.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from r2s2r_sim.hardware.shipped_profiles import profile_path
from r2s2r_sim.paths import config_dir
from r2s2r_sim.ranges import check_fields, within
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.worlds import world_path

from r2s2r_eval.analysis import failure_regions as fr
from r2s2r_eval.analysis.compare import CompareSettings, compare
from r2s2r_eval.analysis.compare_data import load_episodes, policy_label
from r2s2r_eval.analysis.compare_page import write_report
from r2s2r_eval.analysis.targets import Target, grade, load_targets
from r2s2r_eval.cli.common import Subcommand, bad_input
from r2s2r_eval.episodes.results import ResultsStore
from r2s2r_eval.episodes.sweep import check_policies, run_sweep
from r2s2r_eval.episodes.sweep_plan import PolicySpec, SweepConfig, parse_policy_spec
from r2s2r_eval.studies.closed_loop_report import format_closed_loop
from r2s2r_eval.studies.emulated_capture import reconstruct_emulated_world
from r2s2r_eval.studies.study_variations import operator_variations, reconstructed_variations
from r2s2r_eval.studies.task_studies import TASK_STUDIES, TaskStudy, task_study

__all__ = [
    "COMMAND",
    "FAMILY",
    "SMALL_FAMILY",
    "ClosedLoopConfig",
    "cmd_closed_loop",
    "register",
    "run_closed_loop",
]

DEFAULT_PROFILE = profile_path()
DEFAULT_VARIATIONS = config_dir() / "variations.yaml"
DEFAULT_TARGETS = config_dir() / "compare_targets.yaml"
BUNDLED_WORLD = "tabletop-pick-v1"
RECONSTRUCTED_ID = "real2sim-closed-loop-v1"

FAMILY: tuple[PolicySpec, ...] = task_study("pick").family
"""The evaluated pick-and-place policies: reference variants and the depth-only ``topdown`` design.

The last one trusts the bundled world's nominal camera model instead of the observed calibration: the
kind of policy a nominal simulator passes and a real (here: emulated) camera, placed 2 cm and 1.6 deg
away from nominal, fails; it shows what evaluating in the reconstructed world adds.
"""

SMALL_FAMILY: tuple[PolicySpec, ...] = task_study("pick").small_family


@dataclass(frozen=True, kw_only=True)
class ClosedLoopConfig:
    """Settings of one closed-loop run.

    Attributes:
        out: output folder.
        profile: hardware profile of the emulated unit ("real").
        world: the world (bundled id or folder) the profile was written for; also the baseline sim world.
        variations: variation config; only its operator axes (objects, appearance, clutter) are used.
        policies: the policy family.
        trials: trials per policy on every side (one variation each).
        camera_rate_hz: image rate on every side (Hz).
        policy_rates: each policy reads images at its own rate (its ``image_request``) instead: what a
            learned policy that reads a frame per control step needs.
        max_steps: control steps (10 Hz) before a trial is given up on every side; both pick policies
            finish a success in about 12 s, so 200 (20 s) only shortens failures, which otherwise run to
            the task's 30 s timeout in sim; ``--task`` takes the task's own
            (:attr:`~r2s2r_eval.studies.task_studies.TaskStudy.max_steps`).
        workers: worker processes.
        real_seed: seed of the operator's random variations (and the real episode seeds).
        sim_seed: Sobol sweep seed of both sim sides.
        quick_capture: a shorter capture (fewer board views, 6 s excitation) and identification.
        randomise: the reconstructed world's sim sides also draw the axes of its own ``variations.yaml``
            (:func:`r2s2r_sim.variations.with_world_axes`); false: the identified values exactly.
        vary_contacts: the reconstructed world's sim sides also draw the gripper's contacts (the
            ``contact`` axis: pad softness, friction cone, ``impratio``), which no capture phase measures.
        targets: targets file the summary and the two reports grade against
            (:mod:`r2s2r_eval.analysis.targets`); the project's own by default.
        quiet: no progress bars (capture, identification, each side's episodes).
    """

    out: Path
    profile: Path = DEFAULT_PROFILE
    world: str = BUNDLED_WORLD
    variations: Path = DEFAULT_VARIATIONS
    policies: tuple[PolicySpec, ...] = FAMILY
    trials: int = within(50, ">= 1")
    camera_rate_hz: float = within(1.0, "> 0")
    policy_rates: bool = False
    max_steps: int = within(200, ">= 1")
    workers: int = within(2, ">= 1")
    real_seed: int = 1
    sim_seed: int = 0
    quick_capture: bool = False
    randomise: bool = True
    vary_contacts: bool = False
    targets: Path = DEFAULT_TARGETS
    quiet: bool = False

    def __post_init__(self) -> None:
        check_fields(self)
        if len(self.policies) < 2:
            raise ValueError(f"policies: the comparison needs at least 2, got {len(self.policies)}")


def _say(line: str) -> None:
    print(f"[closed-loop] {line}", flush=True)


# ---------------------------------------------------------------------------------------- the sides


def _sweep(cfg: ClosedLoopConfig, sweep: SweepConfig, results: Path, label: str) -> tuple[int, set[str]]:
    """Run one side's sweep into ``results``; the episodes run now and the keys of its plan."""
    summary = run_sweep(sweep, results, workers=cfg.workers, progress=not cfg.quiet, progress_label=label)
    rate = 60.0 * summary.ran / summary.wall_s if summary.wall_s > 0 else 0.0
    _say(f"{label}: {summary.ran} episodes run, {summary.skipped} reused ({rate:.0f}/min)")
    return summary.ran, set(summary.keys)


def run_real(cfg: ClosedLoopConfig, variations: Any, results: Path) -> tuple[int, set[str]]:
    """The real side: ``trials`` operator variations x every policy on the emulated hardware.

    Returns the episodes run now (those already in ``results`` are kept) and the keys of this plan.
    """
    sweep = SweepConfig(
        world=cfg.world,
        policies=cfg.policies,
        variations=variations,
        n=cfg.trials,
        method="random",
        seed=cfg.real_seed,
        camera_rate_hz=None if cfg.policy_rates else cfg.camera_rate_hz,
        max_steps=cfg.max_steps,
        hardware_profile=str(cfg.profile),
    )
    return _sweep(cfg, sweep, results, "real (emulated hardware)")


def run_sim(
    cfg: ClosedLoopConfig,
    variations: Any,
    world: str | Path,
    results: Path,
    *,
    label: str,
    paired: bool = False,
) -> tuple[int, set[str]]:
    """A sim side: the sweep of ``cfg.policies`` x ``trials`` Sobol variations in ``world``.

    ``paired``: instead, the real side's own trials: its random operator variations and episode seeds
    (``real_seed``), so every real episode has a sim partner at the same parameters.
    Returns the episodes run now (those already in ``results`` are kept) and the keys of this plan.
    """
    sweep = SweepConfig(
        world=str(world),
        policies=cfg.policies,
        variations=variations,
        n=cfg.trials,
        method="random" if paired else "sobol",
        seed=cfg.real_seed if paired else cfg.sim_seed,
        camera_rate_hz=None if cfg.policy_rates else cfg.camera_rate_hz,
        max_steps=cfg.max_steps,
    )
    return _sweep(cfg, sweep, results, label)


# ---------------------------------------------------------------------------------------- report


def _metric(summary: dict[str, Any], name: str) -> dict[str, Any]:
    m = summary["metrics"].get(name, {})
    return {"value": m.get("value"), "low": m.get("bootstrap_low"), "high": m.get("bootstrap_high")}


def _pairs(store: Path, keys: set[str]) -> list[tuple[str, int, bool]]:
    """``(policy label, episode seed, success)`` of the episodes of a results store with these keys."""
    with ResultsStore(store) as s:
        return [
            (policy_label(r.policy, r.parameters), int(r.seed), bool(r.success))
            for r in s.rows()
            if r.episode_key in keys
        ]


def _planned(table: Any, keys: set[str]) -> Any:
    """The episodes of ``table`` (a :class:`~r2s2r_eval.analysis.compare_data.EpisodeTable`) in ``keys``."""
    keep = np.array([k in keys for k in table.key], dtype=bool)
    per_episode = {
        f.name: getattr(table, f.name)[keep]
        for f in dataclasses.fields(table)
        if isinstance(getattr(table, f.name), np.ndarray) and len(getattr(table, f.name)) == len(keep)
    }
    return dataclasses.replace(table, **per_episode)


def build_summary(
    recon: dict[str, Any],
    bundled: dict[str, Any],
    *,
    wall: dict[str, float],
    cfg: ClosedLoopConfig,
    paired: dict[str, fr.PairedAgreement],
    targets: tuple[Target, ...],
) -> dict[str, Any]:
    """The closed loop's summary: per-policy rates of the three sides, targets, and the bundled deficit.

    Failure prediction accuracy is the paired one
    (:func:`~r2s2r_eval.analysis.failure_regions.paired_agreement`: each real episode against sim at its own
    variation and seed); the sim-trained tree's accuracy over the Sobol sweep is kept beside it as
    ``failure_prediction_tree_accuracy``.
    """
    by_b = {p["policy"]: p for p in bundled["policies"]}
    policies = []
    for p in recon["policies"]:
        b = by_b.get(p["policy"])
        policies.append(
            {
                "policy": p["policy"],
                "real": p["real"],
                "sim": p["sim"],
                "baseline": None if b is None else b["sim"],
            }
        )

    def side(s: dict[str, Any], pair: fr.PairedAgreement) -> dict[str, Any]:
        # The paired figures, not the report's sim-tree accuracy, are the graded failure prediction.
        paired = {
            "failure_prediction_accuracy": pair.accuracy,
            "failure_prediction_balanced_accuracy": _finite(pair.balanced_accuracy),
            "failure_prediction_kappa": _finite(pair.kappa),
        }
        graded = {**s["targets"], **grade([t for t in targets if t.metric in paired], paired)}
        return {
            "pearson": _metric(s, "pearson"),
            "mmrv": _metric(s, "mmrv"),
            "spearman": _metric(s, "spearman"),
            "kendall": _metric(s, "kendall"),
            "failure_prediction_accuracy": pair.accuracy,
            "failure_prediction_constant_guess": pair.constant_guess,
            "failure_prediction_balanced_accuracy": _finite(pair.balanced_accuracy),
            "failure_prediction_kappa": _finite(pair.kappa),
            "failure_prediction_paired": {
                "pairs": pair.n,
                "unmatched_real_episodes": pair.unmatched,
                "failure_recall": _finite(pair.failure_recall),
                "failure_precision": _finite(pair.failure_precision),
                "per_policy": {k: {"pairs": n, "accuracy": a} for k, (n, a) in pair.per_policy.items()},
            },
            "failure_prediction_tree_accuracy": s["failure_prediction"]["accuracy"],
            "failure_prediction_tree_constant_guess": _constant_guess(s),
            "mean_abs_success_gap": _mean_gap(s),
            "targets": graded,
            "warnings": s["warnings"],
        }

    r, b = side(recon, paired["real_vs_reconstructed"]), side(bundled, paired["real_vs_bundled"])

    def delta(name: str, better: str) -> dict[str, Any]:
        rv = r[name]["value"] if isinstance(r[name], dict) else r[name]
        bv = b[name]["value"] if isinstance(b[name], dict) else b[name]
        if rv is None or bv is None:
            return {"reconstructed": rv, "bundled": bv, "bundled_worse_by": None}
        worse = (rv - bv) if better == "higher" else (bv - rv)
        return {"reconstructed": rv, "bundled": bv, "bundled_worse_by": worse}

    return {
        "targets": {t.metric: t.text for t in targets},
        "policies": policies,
        "real_vs_reconstructed": r,
        "real_vs_bundled": b,
        "bundled_vs_reconstructed": {
            "pearson": delta("pearson", "higher"),
            "mmrv": delta("mmrv", "lower"),
            "failure_prediction_accuracy": delta("failure_prediction_accuracy", "higher"),
            "failure_prediction_kappa": delta("failure_prediction_kappa", "higher"),
            "mean_abs_success_gap": delta("mean_abs_success_gap", "lower"),
        },
        "settings": {
            "trials_per_policy_per_side": cfg.trials,
            "policies": [str(p) for p in cfg.policies],
            "camera_rate_hz": "each policy's own" if cfg.policy_rates else cfg.camera_rate_hz,
            "max_steps": cfg.max_steps,
            "workers": cfg.workers,
            "real_seed": cfg.real_seed,
            "sim_seed": cfg.sim_seed,
            "profile": str(cfg.profile),
            "real_variations": "random (operator), axes objects, appearance (lighting), clutter",
            "sim_variations": "Sobol sweep, same axes; paired sides: the real side's variations and seeds",
            "reconstructed_world_randomised": cfg.randomise,
            "reconstructed_world_contacts_varied": cfg.vary_contacts,
        },
        "wall_s": wall,
    }


def _finite(value: float) -> float | None:
    """``value``, or None where it is undefined (JSON has no NaN)."""
    return None if math.isnan(value) else value


def _constant_guess(s: dict[str, Any]) -> float | None:
    """Accuracy of guessing each policy's majority real outcome: what a sim that knows only the rates gets.

    Failures that no variation parameter explains (e.g. a policy's own perception noise) keep the
    per-episode accuracy near this value however good the sim is.
    """
    agree = [f["agreement"] for f in s["failure_regions"].values()]
    n = sum(a["real_episodes"] for a in agree)
    return sum(a["base_rate_accuracy"] * a["real_episodes"] for a in agree) / n if n else None


def _mean_gap(s: dict[str, Any]) -> float:
    gaps = [abs(p["sim"]["success_rate"] - p["real"]["success_rate"]) for p in s["policies"]]
    return sum(gaps) / len(gaps)


def run_closed_loop(cfg: ClosedLoopConfig) -> dict[str, Any]:
    """Run the loop (see the module docstring); returns the summary written to ``out/summary.json``."""
    targets = load_targets(cfg.targets)  # a bad file fails now, not after the sweeps
    out = Path(cfg.out)
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()
    world, wall = reconstruct_emulated_world(
        work,
        profile=Path(cfg.profile),
        world=cfg.world,
        intrinsics_views=8 if cfg.quick_capture else 12,
        quick_excitation=cfg.quick_capture,
        max_iters=15 if cfg.quick_capture else 30,
        world_id=RECONSTRUCTED_ID,
        progress=_say,
        progress_bars=not cfg.quiet,
    )
    variations = operator_variations(cfg.variations)
    recon_variations = reconstructed_variations(
        variations, world, randomise=cfg.randomise, vary_contacts=cfg.vary_contacts
    )
    stores = {
        "real": work / "real.sqlite",
        "sim": work / "sim_reconstructed.sqlite",
        "baseline": work / "sim_bundled.sqlite",
        "paired": work / "paired_reconstructed.sqlite",
        "paired_baseline": work / "paired_bundled.sqlite",
    }
    ran: dict[str, int] = {}
    t0 = time.perf_counter()
    planned: dict[str, set[str]] = {}
    ran["real"], planned["real"] = run_real(cfg, variations, stores["real"])
    wall["real"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ran["sim_reconstructed"], planned["sim"] = run_sim(
        cfg, recon_variations, world, stores["sim"], label="sim (reconstructed world)"
    )
    wall["sim_reconstructed"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ran["sim_bundled"], planned["baseline"] = run_sim(
        cfg, variations, cfg.world, stores["baseline"], label="baseline sim (bundled world)"
    )
    wall["sim_bundled"] = time.perf_counter() - t0
    for key, name, where, axes, label in (
        ("paired", "paired_reconstructed", world, recon_variations, "paired sim (reconstructed world)"),
        ("paired_baseline", "paired_bundled", cfg.world, variations, "paired baseline sim (bundled world)"),
    ):
        t0 = time.perf_counter()
        ran[name], planned[key] = run_sim(cfg, axes, where, stores[key], label=label, paired=True)
        wall[name] = time.perf_counter() - t0

    t0 = time.perf_counter()
    settings = CompareSettings(allow_different_worlds=True, targets=targets)
    # Only this plan's episodes: a store may also hold those of an earlier run with other settings.
    real = _planned(load_episodes(stores["real"]), planned["real"])
    comps = {}
    for name, key in (("real_vs_reconstructed", "sim"), ("real_vs_bundled", "baseline")):
        comp = compare(_planned(load_episodes(stores[key]), planned[key]), real, settings)
        shutil.rmtree(out / name, ignore_errors=True)  # our own report of an earlier run
        write_report(comp, out / name)
        comps[name] = comp.summary
    real_pairs = _pairs(stores["real"], planned["real"])
    paired = {
        "real_vs_reconstructed": fr.paired_agreement(real_pairs, _pairs(stores["paired"], planned["paired"])),
        "real_vs_bundled": fr.paired_agreement(
            real_pairs, _pairs(stores["paired_baseline"], planned["paired_baseline"])
        ),
    }
    wall["compare"] = time.perf_counter() - t0
    wall["total"] = time.perf_counter() - t_all
    summary = build_summary(
        comps["real_vs_reconstructed"],
        comps["real_vs_bundled"],
        wall=wall,
        cfg=cfg,
        paired=paired,
        targets=targets,
    )
    summary["episodes_run_now"] = ran  # the rest were reused from the stores of an earlier run
    text = format_closed_loop(summary)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    (out / "summary.txt").write_text(text + "\n")
    print(text, flush=True)
    return summary


def _add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--out", required=True, type=Path, help="output folder (reports, summary, work files)")
    ap.add_argument("--small", action="store_true", help="CI size: 3 policies x 6 trials, quick capture")
    ap.add_argument(
        "--trials", type=int, default=None, help="trials per policy per side (default 50; 6 with --small)"
    )
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="worker processes")
    ap.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="control steps (10 Hz) before a trial is given up, every side (default: the task's; pick 200, "
        "the others 300)",
    )
    ap.add_argument(
        "--quick-capture",
        action="store_true",
        help="the shorter capture and identification of --small, with the full family and --trials",
    )
    ap.add_argument(
        "--no-randomise",
        dest="randomise",
        action="store_false",
        help="evaluate the reconstructed world at its identified values only, not drawn over what the "
        "capture could not pin down (its variations.yaml)",
    )
    ap.add_argument(
        "--vary-contacts",
        action="store_true",
        help="the reconstructed world's sim sides also draw the gripper's contacts (pad softness, friction "
        "cone, impratio: the variation engine's contact axis), which no capture phase measures",
    )
    ap.add_argument(
        "--task",
        default="pick",
        choices=sorted(TASK_STUDIES),
        help="task studied: its bundled world, policy family and variations (default pick)",
    )
    ap.add_argument(
        "--world",
        default=None,
        help="the task's world: a bundled id or a folder, e.g. one that r2s2r world new wrote for your arm "
        "(default: the task's bundled world); it is the baseline sim world, its own variations.yaml "
        "gives the operator's axes, and --profile must be written for it",
    )
    ap.add_argument(
        "--profile",
        type=profile_path,
        default=None,
        help="hardware profile of the emulated unit: realistic, ideal or a YAML path (default: "
        "the realistic one, which covers every task world)",
    )
    ap.add_argument(
        "--policy",
        action="append",
        default=None,
        metavar="SPEC",
        help="a policy of the family (repeatable, at least 2), as in `r2s2r sweep`, e.g. "
        "bc:checkpoint=DIR or reference:perception_noise_m=0.02; replaces the task's family, and each "
        "policy reads images at its own rate",
    )
    ap.add_argument("--quiet", action="store_true", help="no progress bars")


def _study_world(ns: argparse.Namespace, study: TaskStudy) -> tuple[str, Path, tuple[PolicySpec, ...]]:
    """The world, its variations and the family of ``--world`` (the task's bundled world without it).

    Raises:
        ValueError: the world does not load, is of another task, or has no profile (naming the flag).
    """
    if ns.world is not None:
        try:
            own = study.on_world(ns.world)
        except ValueError as err:
            raise ValueError(f"--world {err}") from err
        if own is not study and ns.profile is None:
            raise ValueError(
                f"--world {ns.world}: give --profile, a hardware profile written for it (`r2s2r profile new`)"
            )
        study = own
    return study.world, study.variations, study.small_family if ns.small else study.family


def cmd_closed_loop(ns: argparse.Namespace) -> int:
    """Run the closed loop of ``ns``; 0 when it finished, 2 on bad input."""
    try:
        study = task_study(ns.task)
        world, variations, family = _study_world(ns, study)
        profile = ns.profile if ns.profile is not None else study.profile
        if profile is None:
            raise ValueError(
                f"--task {ns.task}: no emulated hardware profile is written for {study.world} yet; "
                "give --profile"
            )
        if ns.policy:  # built now, and checked against the task, not after the capture
            task = load_world_config(world_path(world)).task
            family = check_policies((parse_policy_spec(p) for p in ns.policy), task, world)
        cfg = ClosedLoopConfig(
            out=ns.out,
            profile=profile,
            world=world,
            variations=variations,
            policies=family,
            policy_rates=bool(ns.policy),
            trials=ns.trials if ns.trials is not None else (6 if ns.small else 50),
            workers=ns.workers,
            max_steps=ns.max_steps if ns.max_steps is not None else study.max_steps,
            quick_capture=ns.small or ns.quick_capture,
            randomise=ns.randomise,
            vary_contacts=ns.vary_contacts,
            quiet=ns.quiet,
        )
    except ValueError as err:
        return bad_input("closed-loop", err)
    run_closed_loop(cfg)
    return 0


_HELP = "does the reconstructed world predict the (emulated) hardware?"
COMMAND = Subcommand("closed-loop", _HELP, __doc__, _add_arguments, cmd_closed_loop)
register = COMMAND.register
