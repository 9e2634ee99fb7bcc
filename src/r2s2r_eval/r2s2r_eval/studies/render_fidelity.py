"""Does a cheaper way of drawing change outcomes?  The same sweep episodes under several render settings.

    python -m r2s2r_eval.studies.render_fidelity --policy reference -n 200 --out out/render_fidelity

Each arm is a render profile and an image mode (``camera``: the camera's size and rate, as the sim node
publishes; ``policy``: what the policy's ``image_request()`` asks for).  Every arm runs the same sweep
(same variations and episode seeds) through :func:`r2s2r_eval.episodes.sweep.run_sweep` into one results
store, so a rerun resumes.  The report gives each arm's success rate with its 95 % Wilson interval, how many
episodes changed outcome against the first arm (the baseline), whether the intervals overlap, and the
per-pixel colour differences of each arm's first frame against the baseline's over the first
``--image-episodes`` episodes' reset states.  An arm is called equivalent only when no episode changed
outcome: success rates inside each other's intervals are reported too, but a profile that turns some
successes into failures (and others back) is not offered as a stand-in for the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from r2s2r_sim.cells.camera_frames import CameraFrames
from r2s2r_sim.errors import WorldError
from r2s2r_sim.variations import load_variation_config, make_world, sweep_variation
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.worlds import default_variations_file, world_path

from r2s2r_eval.analysis.metrics import wilson_interval
from r2s2r_eval.episodes.results import ResultsStore
from r2s2r_eval.episodes.sweep import check_policies, run_sweep
from r2s2r_eval.episodes.sweep_plan import SweepConfig, SweepError, episode_seed, parse_policy_spec
from r2s2r_eval.policy import load_policy

__all__ = ["Arm", "compare_to_baseline", "image_differences", "main", "parse_arm", "run_fidelity"]


@dataclass(frozen=True)
class Arm:
    """One way of drawing: a render profile and an image mode (``camera`` or ``policy``)."""

    profile: str
    images: str

    @property
    def label(self) -> str:
        """``profile/images``."""
        return f"{self.profile}/{self.images}"


def parse_arm(text: str) -> Arm:
    """``PROFILE/IMAGES``, e.g. ``fast/policy``.

    Raises:
        ValueError: not of that form, or an image mode other than camera/policy.
    """
    profile, sep, images = text.partition("/")
    if not sep or not profile or images not in ("camera", "policy"):
        raise ValueError(f"--arm {text!r}: expected PROFILE/IMAGES with IMAGES camera or policy")
    return Arm(profile, images)


def image_differences(cfg: SweepConfig, arms: Sequence[Arm], episodes: int) -> dict[str, dict[str, float]]:
    """Per-pixel colour differences of each arm's first frame against the first arm's.

    The frame is the one a policy gets at t = 0 of each of the first ``episodes`` episodes (the world
    reset with the episode seed, the arm's size); where sizes differ the larger image is area-downscaled
    to the smaller (what a policy that reads small images does with a camera frame).  Differences are
    over all pixels and channels, in 8-bit levels.
    """
    import cv2

    policy = load_policy(cfg.policies[0].name, cfg.policies[0].params)
    request = policy.image_request()
    diffs: dict[str, list[np.ndarray]] = {a.label: [] for a in arms[1:]}
    for index in range(episodes):
        variation = sweep_variation(cfg.variations, seed=cfg.seed, index=index, method=cfg.method)
        world = make_world(world_path(cfg.world), variation)
        world.reset(episode_seed(cfg.seed, index, 0))
        camera = world.config.cameras[0]
        mjcf = world.model.camera(world.camera_id(camera.name)).name
        images = []
        for arm in arms:
            profile = world.config.render_profile(camera, arm.profile)
            with CameraFrames(world.model, mjcf, camera, profile) as frames:
                images.append(frames.render(world.data, request if arm.images == "policy" else None).rgb)
        for arm, rgb in zip(arms[1:], images[1:], strict=True):
            base = images[0]
            if rgb.shape != base.shape:  # compare at the smaller size, area-downscaling the larger
                small, large = sorted((rgb, base), key=lambda a: a.shape[0])
                large = cv2.resize(large, (small.shape[1], small.shape[0]), interpolation=cv2.INTER_AREA)
                rgb, base = small, large
            diffs[arm.label].append(np.abs(rgb.astype(np.int16) - base.astype(np.int16)).ravel())
    out = {}
    for label, parts in diffs.items():
        d = np.concatenate(parts)
        out[label] = {
            "mean": float(d.mean()),
            "p99": float(np.percentile(d, 99)),
            "max": float(d.max()),
            "fraction_over_16": float((d > 16).mean()),
        }
    return out


def run_fidelity(
    cfg: SweepConfig,
    arms: Sequence[Arm],
    results: Path,
    *,
    workers: int,
    image_episodes: int,
    quiet: bool = True,
) -> dict[str, Any]:
    """Run every arm's sweep into ``results`` and compare them with the first arm; returns the report.

    Unless ``quiet``, each arm's sweep shows its progress with an ETA on stderr.
    """
    outcomes: dict[str, dict[str, Any]] = {}
    for arm in arms:
        arm_cfg = replace(cfg, render_profile=arm.profile, policy_images=arm.images == "policy")
        summary = run_sweep(arm_cfg, results, workers=workers, progress=not quiet, progress_label=arm.label)
        with ResultsStore(results) as store:
            by_key = {r.episode_key: r for r in store.rows()}
        rows = [by_key[k] for k in summary.keys]
        success = np.array([r.success for r in rows])
        k, n = int(success.sum()), len(rows)
        low, high = wilson_interval(k, n)
        outcomes[arm.label] = {
            "successes": k,
            "episodes": n,
            "rate": k / n,
            "wilson95": [float(low), float(high)],
            "reasons": dict(sorted(Counter(r.reason for r in rows).items())),
            "wall_s_this_run": summary.wall_s,
            "success_by_episode": success.tolist(),
        }
        print(f"{arm.label:16} {k}/{n} = {k / n:.1%} [{low:.1%}, {high:.1%}]", file=sys.stderr)
    base = outcomes[arms[0].label]
    for arm in arms[1:]:
        outcomes[arm.label].update(compare_to_baseline(base, outcomes[arm.label]))
    pixels = image_differences(cfg, arms, image_episodes) if image_episodes > 0 else {}
    return {
        "world": cfg.world,
        "policy": str(cfg.policies[0]),
        "n": cfg.n,
        "seed": cfg.seed,
        "baseline": arms[0].label,
        "arms": outcomes,
        "pixel_differences_vs_baseline": pixels,
    }


def compare_to_baseline(base: dict[str, Any], arm: dict[str, Any]) -> dict[str, Any]:
    """Episodes whose outcome changed, whether the rates lie in each other's interval, and equivalence.

    ``base`` and ``arm`` are outcome entries of the report (``success_by_episode``, ``rate``, ``wilson95``),
    episode for episode the same seeds.
    """
    changed = int(np.sum(np.array(arm["success_by_episode"]) != np.array(base["success_by_episode"])))
    inside = base["wilson95"][0] <= arm["rate"] <= base["wilson95"][1] and (
        arm["wilson95"][0] <= base["rate"] <= arm["wilson95"][1]
    )
    return {
        "changed_outcomes": changed,
        "rates_within_each_others_interval": bool(inside),
        "equivalent": changed == 0,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison, print a table and write ``report.json`` under ``--out``."""
    parser = argparse.ArgumentParser(prog="python -m r2s2r_eval.studies.render_fidelity", description=__doc__)
    parser.add_argument("--out", type=Path, required=True, help="folder for results.sqlite and report.json")
    parser.add_argument("--world", default="tabletop-pick-v1", help="bundled world id or world folder")
    parser.add_argument("--policy", default="reference", help="NAME[:k=v,...] as for r2s2r sweep")
    parser.add_argument(
        "--variations",
        type=Path,
        default=None,
        help="variation axes YAML (default: the world's own variations.yaml, else config/variations.yaml)",
    )
    parser.add_argument("-n", type=int, default=200, help="episodes per arm (one per variation)")
    parser.add_argument("--seed", type=int, default=0, help="sweep seed")
    parser.add_argument("--max-steps", type=int, default=None, help="control steps per episode at most")
    parser.add_argument(
        "--camera-rate-hz",
        type=float,
        default=None,
        help="camera rate (default: the world's); a policy that looks once needs few frames",
    )
    parser.add_argument(
        "--arm",
        action="append",
        default=None,
        help="PROFILE/IMAGES (IMAGES: camera or policy); the first is the baseline "
        "(default: full/camera fast/camera)",
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="sweep processes")
    parser.add_argument("--image-episodes", type=int, default=20, help="reset states compared pixel by pixel")
    parser.add_argument("--pixels-only", action="store_true", help="compare images only; run no episodes")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    ns = parser.parse_args(argv)
    arms = [parse_arm(a) for a in (ns.arm or ["full/camera", "fast/camera"])]
    cfg = SweepConfig(
        world=ns.world,
        policies=(parse_policy_spec(ns.policy),),
        variations=load_variation_config(ns.variations or default_variations_file(world_path(ns.world))),
        n=ns.n,
        seed=ns.seed,
        max_steps=ns.max_steps,
        camera_rate_hz=ns.camera_rate_hz,
    )
    try:  # `auto` resolved and the policy's task checked before any frame is drawn, as a sweep does
        task = load_world_config(world_path(cfg.world)).task
        cfg = replace(cfg, policies=check_policies(cfg.policies, task, cfg.world))
    except (SweepError, WorldError, ValueError) as err:
        parser.error(str(err))
    ns.out.mkdir(parents=True, exist_ok=True)
    if ns.pixels_only:
        report = {
            "world": cfg.world,
            "policy": str(cfg.policies[0]),
            "baseline": arms[0].label,
            "pixel_differences_vs_baseline": image_differences(cfg, arms, ns.image_episodes),
        }
    else:
        report = run_fidelity(
            cfg,
            arms,
            ns.out / "results.sqlite",
            workers=ns.workers,
            image_episodes=ns.image_episodes,
            quiet=ns.quiet,
        )
    (ns.out / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    for label, o in report.get("arms", {}).items():
        if "changed_outcomes" in o:
            verdict = "equivalent" if o["equivalent"] else "not equivalent"
            print(f"{label:16} {o['changed_outcomes']} outcomes changed: {verdict}", file=sys.stderr)
    for label, px in report["pixel_differences_vs_baseline"].items():
        print(
            f"{label:16} pixels vs {report['baseline']}: mean {px['mean']:.2f}, p99 {px['p99']:.0f}, "
            f"> 16 levels {px['fraction_over_16']:.2%}",
            file=sys.stderr,
        )
    print(f"wrote {ns.out / 'report.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
