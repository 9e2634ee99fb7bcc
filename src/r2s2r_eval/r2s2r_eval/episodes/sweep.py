"""Sweeps: policies x variations x repeats, headless and in process; no rclpy, no DDS.

The plan (inputs, keys, seeds) is :mod:`r2s2r_eval.episodes.sweep_plan`.  A sweep runs on one
side: the simulated world (the world built by ``r2s2r_sim.variations.make_world``) or the emulated
hardware of a hardware profile (``r2s2r_sim.cells.emulated_cell.EmulatedCell``, the variation
restricted to what an operator changes).  Each episode runs through the one episode runner
(:class:`r2s2r_eval.episodes.runner.EpisodeRunner`).  The episodes of one variation form a job; jobs are
spread over a local process pool (spawn context, sized to the cores) or Ray tasks; both call the same
:func:`run_batch`, and each worker keeps its cell (per variation) and policies between episodes.

Every episode has a deterministic key (:func:`episode_key`: policy and parameter digest, base world hash,
variation config digest, method, sweep seed, variation index, repeat, camera rate, step limit, and the
hardware profile's hash on the emulated side).  Rows are committed to the
:class:`~r2s2r_eval.episodes.results.ResultsStore` as each job finishes, and keys already in the store are
skipped, so a killed sweep resumes where it stopped (losing at most the jobs in flight).  The episode seed
(world reset and the policy's own stream) is :func:`episode_seed` of (sweep seed, variation index, repeat).

A variation that cannot be realised or compiled, and any other error of one episode, is recorded as a
failed row (``reason`` ``variation_error: ...`` / ``episode_error: ...``) and not retried; a worker that
dies costs only the job it was running (retried once in a fresh pool, then ``worker_crashed``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from r2s2r_sim.cells.emulated_cell import EmulatedCell, check_operator_config
from r2s2r_sim.errors import WorldError
from r2s2r_sim.hardware.profile import load_hardware_profile
from r2s2r_sim.progress import Progress
from r2s2r_sim.tasks.config import TaskConfig, reference_policy
from r2s2r_sim.variations import Variation, VariationError, sweep_variation
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

from r2s2r_eval.episodes.executors import ExecutorError, run_local, run_ray, start_ray
from r2s2r_eval.episodes.results import EpisodeRow, ResultsError, ResultsStore, utc_now
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.episodes.sweep_plan import (
    EpisodeTask,
    Executor,
    PolicySpec,
    SweepConfig,
    SweepError,
    plan_sweep,
)
from r2s2r_eval.policy import Policy, PolicyError, check_policy_task, load_policy

if TYPE_CHECKING:
    from r2s2r_eval.episodes.runner import EpisodeResult

__all__ = [
    "SweepSummary",
    "run_batch",
    "run_sweep",
    "run_task",
]


# ---------------------------------------------------------------------------------------------- worker

# Per worker process: the runner of the last variation (rebuilt when the variation changes) and policies.
_worker_runner: tuple[str, Any] | None = None
_worker_policies: dict[str, Policy] = {}


def _variation_record(task: EpisodeTask, variation: Variation | None) -> dict[str, Any]:
    record = {
        "method": task.method,
        "index": task.index,
        "sweep_seed": task.sweep_seed,
        "repeat": task.repeat,
        "config_sha256": task.variations_digest,
        "seed": None if variation is None else int(variation.seed),
        "unit": [] if variation is None else [float(u) for u in variation.unit],
        "params": {} if variation is None else {k: float(v) for k, v in variation.params.items()},
    }
    if task.profile_sha256 is not None:
        record["operator"] = "emulated (random object pose, lighting and clutter per trial)"
        record["profile_sha256"] = task.profile_sha256
    return record


def _row(
    task: EpisodeTask,
    variation: Variation | None,
    started_at: str,
    *,
    result: EpisodeResult | None = None,
    failure: str = "",
) -> EpisodeRow:
    """The stored row of ``task``: its episode's ``result``, or without one a failure for ``failure``.

    A failed episode has no varied world to name, so its row carries the base world's id and hash.
    """
    return EpisodeRow(
        policy=task.policy.name,
        parameters=dict(task.policy.params),
        world_id=task.world_id if result is None else result.world_id,
        world_hash=task.world_hash if result is None else result.world_hash,
        seed=task.seed,
        success=result is not None and result.success,
        reason=failure if result is None else result.reason,
        duration_s=0.0 if result is None else result.duration_s,
        metrics={} if result is None else dict(result.metrics),
        started_at=started_at,
        episode_key=task.key,
        variation=_variation_record(task, variation),
    )


def _runner_for(task: EpisodeTask, variation: Variation) -> Any:
    global _worker_runner

    vkey = (
        f"{task.world}|{task.hardware_profile}|{task.variations_digest}|{task.method}|{task.sweep_seed}|"
        f"{task.index}|{task.render_profile}|{task.policy_images}"
    )
    if _worker_runner is not None and _worker_runner[0] == vkey:
        return _worker_runner[1]
    if _worker_runner is not None:
        _worker_runner[1].__exit__(None, None, None)
        _worker_runner = None
    if task.hardware_profile is None:
        runner = EpisodeRunner(
            task.world,
            variation=variation,
            render_profile=task.render_profile,
            policy_images=task.policy_images,
        ).__enter__()
    else:
        cell = EmulatedCell(task.world, task.hardware_profile, variation=variation)
        runner = EpisodeRunner(cell, policy_images=task.policy_images).__enter__()
    _worker_runner = (vkey, runner)
    return runner


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}".replace("\n", " ")


def run_task(task: EpisodeTask) -> EpisodeRow:
    """Run one episode and return its row; every failure of the episode becomes a failed row."""
    started_at = utc_now()
    variation = None
    try:
        variation = sweep_variation(
            task.variations, seed=task.sweep_seed, index=task.index, method=task.method
        )
        runner = _runner_for(task, variation)
    except (VariationError, WorldError) as err:
        return _row(task, variation, started_at, failure=f"variation_error: {_error(err)}")
    except Exception as err:  # one episode's failure must not end the sweep
        return _row(task, variation, started_at, failure=f"episode_error: {_error(err)}")
    try:
        canonical = task.policy.canonical()
        policy = _worker_policies.get(canonical)
        if policy is None:
            policy = _worker_policies[canonical] = load_policy(task.policy.name, task.policy.params)
        result = runner.run(
            policy,
            task.seed,
            episode_index=task.episode_index,
            camera_rate_hz=task.camera_rate_hz,
            max_steps=task.max_steps,
        )
    except Exception as err:
        return _row(task, variation, started_at, failure=f"episode_error: {_error(err)}")
    return _row(task, variation, started_at, result=result)


def run_batch(tasks: Sequence[EpisodeTask]) -> list[EpisodeRow]:
    """Run the episodes of one job (one variation's policies and repeats) in order; one row each.

    The same function runs in the local process pool and as a Ray task.  The worker keeps the cell of the
    variation between them, so on the emulated side its noise stream runs through the job's episodes in
    plan order, whichever worker runs the job.
    """
    return [run_task(t) for t in tasks]


def _jobs(tasks: Sequence[EpisodeTask]) -> list[list[EpisodeTask]]:
    """``tasks`` grouped by variation index, in plan order."""
    by_index: dict[int, list[EpisodeTask]] = {}
    for t in tasks:
        by_index.setdefault(t.index, []).append(t)
    return list(by_index.values())


# ------------------------------------------------------------------------------------------------ sweep


@dataclass(frozen=True, kw_only=True)
class SweepSummary:
    """How a sweep went.

    Attributes:
        total: episodes in the sweep.
        skipped: episodes already in the store (resumed).
        ran: episodes run now.
        succeeded: of ``ran``, how many succeeded.
        errors: of ``ran``, how many ended with a variation, episode or worker error.
        wall_s: wall time of the run (s, without setup).
        keys: every episode key of the sweep, in plan order; an episode resumed from a row stored under
            one of its ``key_aliases`` is listed under that alias (the key its row has).
        policies: the policies swept, ``auto`` resolved to the world's reference policy.
    """

    total: int
    skipped: int
    ran: int
    succeeded: int
    errors: int
    wall_s: float
    keys: tuple[str, ...]
    policies: tuple[PolicySpec, ...] = ()

    @property
    def episodes_per_minute(self) -> float:
        """Episodes run now per minute of wall time."""
        return 60.0 * self.ran / self.wall_s if self.wall_s > 0 else math.nan


def _check_side(cfg: SweepConfig) -> str | None:
    """The hardware profile's hash on the emulated side (None in sim), once the side is checked."""
    if cfg.hardware_profile is None:
        return None

    try:
        profile = load_hardware_profile(cfg.hardware_profile)
        check_operator_config(cfg.variations)
    except ValueError as err:
        raise SweepError(f"--profile: {err}") from None
    return profile.sha256


def _start(executor: Executor, address: str | None, workers: int) -> bool:
    """Start Ray for the Ray executor; whether this sweep owns it (and must shut it down)."""
    if executor is not Executor.RAY:
        return False
    try:
        return start_ray(address, workers)
    except ExecutorError as err:
        raise SweepError(str(err)) from None


def check_policies(
    policies: Iterable[PolicySpec], task: TaskConfig | None, world: str
) -> tuple[PolicySpec, ...]:
    """``policies`` with ``auto`` resolved, once each is built and known to solve the world's task.

    Checked before any episode: a policy for another task would otherwise fail every episode it runs.
    """
    checked = []
    for given in policies:
        spec = given
        try:
            if task is not None:
                spec = dataclasses.replace(given, name=reference_policy(given.name, task.type))
                check_policy_task(spec.name, task.type, world)
            load_policy(spec.name, spec.params)
        except PolicyError as err:
            raise SweepError(f"--policy {given}: {err}") from None
        checked.append(spec)
    return tuple(checked)


def run_sweep(
    cfg: SweepConfig,
    results: str | Path,
    *,
    executor: Executor | str = Executor.LOCAL,
    workers: int | None = None,
    address: str | None = None,
    progress: bool = True,
    progress_label: str = "sweep",
) -> SweepSummary:
    """Run the episodes of ``cfg`` not yet in ``results`` and store one row per episode.

    Everything is checked before the store is created or changed: the world, every policy (``auto``: the
    world's reference policy), that it solves the world's task, its parameters, the executor and (for Ray)
    the cluster address.

    Raises:
        SweepError: bad input (the message names the argument at fault); nothing has been written.
    """
    try:
        executor = Executor(executor)
    except ValueError:
        raise SweepError(
            f"--executor {executor!r}: unknown executor (executors: {[e.value for e in Executor]})"
        ) from None
    workers = workers if workers is not None else (os.cpu_count() or 1)
    if workers < 1:
        raise SweepError(f"--workers: must be >= 1, got {workers}")
    if address is not None and executor is not Executor.RAY:
        raise SweepError("--address: only meaningful with --executor ray")
    try:
        world_dir = world_path(cfg.world)
        base = SimWorld(world_dir)
    except (WorldError, ValueError) as err:
        raise SweepError(f"--world {cfg.world!r}: {err}") from None
    profile_sha = _check_side(cfg)
    if cfg.render_profile is not None and cfg.render_profile not in base.config.render_profiles:
        raise SweepError(
            f"--render-profile {cfg.render_profile!r}: world {base.world_id!r} has no such profile "
            f"(profiles: {sorted(base.config.render_profiles)})"
        )
    cfg = dataclasses.replace(cfg, policies=check_policies(cfg.policies, base.config.task, cfg.world))
    tasks = plan_sweep(
        cfg,
        world_dir=world_dir,
        world_id=base.world_id,
        world_hash=base.world_hash,
        profile_sha256=profile_sha,
    )
    del base

    owns_ray = _start(executor, address, workers)
    try:
        try:
            store = ResultsStore(results).__enter__()
        except ResultsError as err:
            raise SweepError(f"--results: {err}") from None
        with contextlib.closing(store):  # entered above, so that a bad file is a SweepError
            done = store.episode_keys()
            stored = {t.key: _stored_key(t, done) for t in tasks}
            pending = [t for t in tasks if stored[t.key] not in done]
            counts = {"ok": 0, "err": 0}
            bar = Progress(
                len(tasks), progress_label, "ep", initial=len(tasks) - len(pending), quiet=not progress
            )

            def on_rows(job: Sequence[EpisodeTask], rows: list[EpisodeRow]) -> None:
                for row in rows:
                    store.add(row)
                    counts["ok"] += int(row.success)
                    counts["err"] += int(row.reason.split(":")[0] in _ERROR_REASONS)
                    bar.update(1)

            def on_crash(job: Sequence[EpisodeTask], reason: str) -> None:
                on_rows(job, [_row(t, None, utc_now(), failure=reason) for t in job])

            t0 = time.perf_counter()
            try:
                jobs = _jobs(pending)
                if jobs and executor is Executor.LOCAL:
                    run_local(run_batch, jobs, workers, on_rows, on_crash)
                elif jobs:
                    run_ray(run_batch, jobs, on_rows, on_crash)
            finally:
                bar.close()
            wall = time.perf_counter() - t0
    finally:
        if owns_ray:
            import ray

            ray.shutdown()
    return SweepSummary(
        total=len(tasks),
        skipped=len(tasks) - len(pending),
        ran=len(pending),
        succeeded=counts["ok"],
        errors=counts["err"],
        wall_s=wall,
        keys=tuple(stored[t.key] for t in tasks),
        policies=cfg.policies,
    )


_ERROR_REASONS = ("variation_error", "episode_error", "worker_crashed")


def _stored_key(task: EpisodeTask, done: set[str]) -> str:
    """The key ``task``'s row is stored under in a store holding ``done``: an alias only if it is there."""
    return next((k for k in task.key_aliases if k in done and task.key not in done), task.key)
