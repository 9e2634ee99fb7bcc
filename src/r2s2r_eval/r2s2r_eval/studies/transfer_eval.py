"""The transfer study's evaluation episodes: a policy on the emulated hardware or in sim, over workers."""

from __future__ import annotations

import contextlib
import multiprocessing
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from r2s2r_sim.cells.emulated_cell import EmulatedCell
from r2s2r_sim.progress import Progress
from r2s2r_sim.variations import load_variation_config, sample_variation

from r2s2r_eval.analysis.metrics import wilson_interval
from r2s2r_eval.episodes.executors import run_local
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.learning.demos import attempt_seed
from r2s2r_eval.policy import load_policy
from r2s2r_eval.studies.study_variations import operator_variations

__all__ = ["EVAL_SEED", "evaluate_policy", "in_pool"]

# Evaluation seeds are drawn from another base seed than any demonstration.
EVAL_SEED = 1_000_003


def in_pool(
    fn: Callable[..., Any], jobs: list[tuple[Any, ...]], workers: int, *, bar: Progress | None = None
) -> list[Any]:
    """``fn(*job)`` for each job, in parallel on the shared process pool; results in job order.

    With ``bar``, ``fn`` is called as ``fn(*job, report=report)`` and each ``report(n)`` in a worker
    advances ``bar`` by ``n`` here: the workers' units of work reach one progress line as they are done,
    not when their job ends.
    """
    results: dict[int, Any] = {}
    Job = tuple[int, Callable[..., Any], tuple[Any, ...], Any]

    def on_crash(job: Job, reason: str) -> None:
        raise RuntimeError(f"transfer: a worker died running {fn.__name__}: {reason}")

    def on_rows(job: Job, rows: list[Any]) -> None:
        results[job[0]] = rows[0]

    with contextlib.ExitStack() as stack:
        reports = None
        if bar is not None:
            reports = stack.enter_context(multiprocessing.get_context("spawn").Manager()).Queue()
            stack.enter_context(_forwarding(reports, bar))
        run_local(_call, [(i, fn, job, reports) for i, job in enumerate(jobs)], workers, on_rows, on_crash)
    return [results[i] for i in range(len(jobs))]


@contextlib.contextmanager
def _forwarding(reports: Any, bar: Progress) -> Any:
    """A thread moving the workers' reports from ``reports`` onto ``bar`` until the block ends."""
    stop = threading.Event()

    def drain() -> None:
        while True:
            try:
                bar.update(reports.get(timeout=0.2))
            except queue.Empty:
                if stop.is_set():
                    return

    thread = threading.Thread(target=drain, name="progress-reports", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5.0)


def _call(job: tuple[int, Callable[..., Any], tuple[Any, ...], Any]) -> list[Any]:
    """Worker side of :func:`in_pool`."""
    _, fn, args, reports = job
    if reports is None:
        return [fn(*args)]
    return [fn(*args, report=reports.put)]


def _episodes(
    spec: tuple[str, dict[str, Any]],
    *,
    where: str,
    world: str,
    indices: list[int],
    max_steps: int,
    variations: Path | None,
    profile: Path,
    report: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """Run the evaluation episodes ``indices`` of policy ``spec = (name, params)`` (a worker's share).

    ``report(1)`` is called after each episode.

    In sim, each episode samples ``variations``; on the emulated hardware, ``variations`` (if given) is
    reduced to what an operator changes between trials (object pose, lighting, clutter;
    :func:`~r2s2r_eval.studies.study_variations.operator_variations`) and the cell is rebuilt for each
    episode.
    """
    if variations is None:
        vcfg = None
    else:
        vcfg = operator_variations(variations) if where == "real" else load_variation_config(variations)
    policy = load_policy(*spec)
    rate = policy.control_rate_hz() or 10.0
    episodes: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        # The emulated hardware as captured is one cell for every episode; any other is rebuilt per episode.
        fixed = None
        if where == "real" and vcfg is None:
            fixed = stack.enter_context(EpisodeRunner(EmulatedCell(world, profile)))
        for i in indices:
            seed = attempt_seed(EVAL_SEED, i)
            variation = sample_variation(vcfg, seed) if vcfg is not None else None
            with contextlib.ExitStack() as per_episode:
                if fixed is not None:
                    runner = fixed
                elif where == "real":
                    runner = per_episode.enter_context(
                        EpisodeRunner(EmulatedCell(world, profile, variation=variation))
                    )
                else:
                    runner = per_episode.enter_context(EpisodeRunner(world, variation=variation))
                res = runner.run(policy, seed, episode_index=i, camera_rate_hz=rate, max_steps=max_steps)
            episodes.append(
                {
                    "index": i,
                    "seed": seed,
                    "success": res.success,
                    "reason": res.reason,
                    "steps": res.steps,
                    "wall_s": res.wall_s,
                    **{
                        k: res.metrics[k] for k in ("object_lifted", "object_to_target_m") if k in res.metrics
                    },
                    "variation": None
                    if variation is None
                    else {k: float(v) for k, v in variation.params.items()},
                }
            )
            if report is not None:
                report(1)
    return episodes


def _episodes_of(
    spec: tuple[str, dict[str, Any]],
    indices: list[int],
    kw: dict[str, Any],
    report: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """:func:`_episodes` with keyword arguments as one picklable job."""
    return _episodes(spec, indices=indices, report=report, **kw)


def evaluate_policy(
    spec: tuple[str, dict[str, Any]],
    *,
    where: str,
    world: str,
    n: int,
    max_steps: int,
    variations: Path | None,
    profile: Path,
    workers: int,
    log: Callable[[str], None],
    progress_label: str | None = None,
) -> dict[str, Any]:
    """Run ``n`` episodes on the emulated hardware (``where == "real"``) or in sim; counts and reasons.

    Episode ``i`` has seed ``attempt_seed(EVAL_SEED, i)`` whichever worker runs it.  With
    ``progress_label`` the episodes done are counted on stderr under that label, with an ETA.
    """
    wall = time.perf_counter()
    kw = {
        "where": where,
        "world": world,
        "max_steps": max_steps,
        "variations": variations,
        "profile": profile,
    }
    shares = [list(range(k, n, workers)) for k in range(min(workers, n))]
    with Progress(n, progress_label or "", "ep", quiet=progress_label is None) as bar:
        if len(shares) <= 1:
            episodes = _episodes(spec, indices=list(range(n)), report=bar.update, **kw)
        else:
            jobs = [(spec, share, kw) for share in shares]
            parts = in_pool(_episodes_of, jobs, len(shares), bar=None if bar.quiet else bar)
            episodes = sorted((e for part in parts for e in part), key=lambda e: e["index"])
    for e in episodes:
        log(f"  {where} {e['index'] + 1}/{n}: {e['reason']} ({e['steps']} steps, {e['wall_s']:.1f} s)")
    successes = sum(int(e["success"]) for e in episodes)
    reasons: dict[str, int] = {}
    for e in episodes:
        reasons[e["reason"]] = reasons.get(e["reason"], 0) + 1
    low, high = wilson_interval(successes, n)
    return {
        "world": world,
        "variations": None if variations is None else str(variations),
        "n": n,
        "successes": successes,
        "rate": successes / n if n else float("nan"),
        "ci95": [float(low), float(high)],
        "reasons": reasons,
        "lifted": sum(e.get("object_lifted", 0.0) > 0 for e in episodes),
        "episodes": episodes,
        "wall_s": time.perf_counter() - wall,
    }
