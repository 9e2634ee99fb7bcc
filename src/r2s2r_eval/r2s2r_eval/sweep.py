"""Sweeps: policies x variations x repeats, headless and in process; no rclpy, no DDS.

Each episode runs through :class:`r2s2r_eval.runner.EpisodeRunner` (the sim core, policy API and message
conversions the nodes use) on the world built by ``r2s2r_sim.variations.make_world``.  Episodes are
spread over a local process pool (spawn context, sized to the cores) or Ray tasks; both call the same
:func:`run_task`, and each worker keeps its runner (per variation) and policies between episodes.

Every episode has a deterministic key (:func:`episode_key`: policy and parameter digest, base world hash,
variation config digest, method, sweep seed, variation index, repeat, camera rate, step limit).  Rows are
committed to the :class:`~r2s2r_eval.results.ResultsStore` one by one as episodes finish, and keys already
in the store are skipped, so a killed sweep resumes where it stopped.  The episode seed (world reset and
the policy's own stream) is :func:`episode_seed` of (sweep seed, variation index, repeat).

A variation that cannot be realised or compiled, and any other error of one episode, is recorded as a
failed row (``reason`` ``variation_error: ...`` / ``episode_error: ...``) and not retried; a worker that
dies costs only the episodes it was running (retried once in a fresh pool, then ``worker_crashed``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import hashlib
import json
import math
import multiprocessing
import os
import socket
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from r2s2r_sim.errors import WorldError
from r2s2r_sim.variations import Variation, VariationConfig, VariationError, sweep_variation
from r2s2r_sim.variations.engine import Method
from r2s2r_sim.world import SimWorld
from r2s2r_sim.worlds import world_path

from r2s2r_eval.policy import Policy, PolicyError, load_policy
from r2s2r_eval.results import EpisodeRow, ResultsError, ResultsStore, utc_now

__all__ = [
    "EXPORT_FORMATS",
    "EpisodeTask",
    "Executor",
    "PolicySpec",
    "SweepConfig",
    "SweepError",
    "SweepSummary",
    "check_export_path",
    "episode_key",
    "episode_seed",
    "export_rows",
    "parse_policy_spec",
    "plan_sweep",
    "run_sweep",
    "run_task",
    "variations_digest",
]

EXPORT_FORMATS = (".parquet", ".csv")
_CRASH_RETRIES = 1


class SweepError(ValueError):
    """A sweep's inputs are invalid (policy, world, variations, executor, address, output path)."""


class Executor(enum.Enum):
    """Where episodes run."""

    LOCAL = "local"
    RAY = "ray"


# ---------------------------------------------------------------------------------------------- inputs


@dataclass(frozen=True, kw_only=True)
class PolicySpec:
    """A policy and its parameters, as given to ``--policy NAME[:k=v,...]``.

    Attributes:
        name: registered policy name or ``package.module:Class``.
        params: parameter values (checked against the policy's parameter dataclass by ``load_policy``).
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def canonical(self) -> str:
        """``name`` and ``params`` as sorted JSON: what the episode key hashes."""
        return json.dumps({"name": self.name, "params": dict(self.params)}, sort_keys=True)

    def __str__(self) -> str:
        args = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.name}:{args}" if args else self.name


def parse_policy_spec(text: str) -> PolicySpec:
    """Parse ``NAME`` or ``NAME:k=v,k=v`` (values are YAML scalars: ``0.01``, ``true``, ``fast``).

    ``NAME`` may itself be ``package.module:Class``; the text after the last ``:`` is read as parameters
    only when it holds a ``=``.

    Raises:
        SweepError: an empty name, an item without ``=``, a repeated or empty key, or a value that is not
            a YAML scalar.
    """
    name, sep, tail = text.rpartition(":")
    if not sep or "=" not in tail:
        name, tail = text, ""
    name = name.strip()
    if not name:
        raise SweepError(f"--policy {text!r}: empty policy name (expected NAME[:k=v,...])")
    params: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in tail.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise SweepError(f"--policy {text!r}: parameter {item!r} is not k=v")
        if key in params:
            raise SweepError(f"--policy {text!r}: parameter {key!r} given twice")
        try:
            parsed = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError as err:
            raise SweepError(f"--policy {text!r}: parameter {key!r}: cannot parse {value!r}") from err
        if isinstance(parsed, dict | list) or (isinstance(parsed, float) and not math.isfinite(parsed)):
            raise SweepError(f"--policy {text!r}: parameter {key!r} must be a finite scalar, got {value!r}")
        params[key] = parsed
    return PolicySpec(name=name, params=params)


@dataclass(frozen=True, kw_only=True)
class SweepConfig:
    """What to sweep.

    Attributes:
        world: bundled world id or world folder.
        policies: policies to evaluate (each on every variation, ``repeats`` times).
        variations: the variation axis config.
        n: number of variations (indices ``0 .. n-1`` of the sweep).
        method: ``"sobol"`` (scrambled Sobol points) or ``"random"`` (one spawned seed per variation).
        seed: sweep seed (>= 0): seeds the Sobol scramble or the spawned seeds, and the episode seeds.
        repeats: episodes per (policy, variation), each with its own episode seed.
        camera_rate_hz: image rate (Hz); None: the world camera's rate.
        max_steps: control steps before an episode ends with ``max_steps``; None: the task's timeout.
        render_profile: the world's render profile to draw cameras with; None: each camera's declared one.
        policy_images: draw images at the size and rate each policy requests (``Policy.image_request``);
            False: at the camera's size and rate, as the sim node publishes them.
    """

    world: str
    policies: tuple[PolicySpec, ...]
    variations: VariationConfig
    n: int
    method: Method = "sobol"
    seed: int = 0
    repeats: int = 1
    camera_rate_hz: float | None = None
    max_steps: int | None = None
    render_profile: str | None = None
    policy_images: bool = True

    def __post_init__(self) -> None:
        if not self.policies:
            raise SweepError("policies: give at least one --policy")
        labels = [p.canonical() for p in self.policies]
        if len(set(labels)) != len(labels):
            raise SweepError(f"policies: the same policy and parameters are given twice: {labels}")
        if self.n < 1:
            raise SweepError(f"n: number of variations must be >= 1, got {self.n}")
        if self.method not in ("sobol", "random"):
            raise SweepError(f"method: must be one of ['random', 'sobol'], got {self.method!r}")
        if self.seed < 0:
            raise SweepError(f"seed: must be >= 0, got {self.seed}")
        if self.repeats < 1:
            raise SweepError(f"repeats: must be >= 1, got {self.repeats}")
        if self.camera_rate_hz is not None and not (
            math.isfinite(self.camera_rate_hz) and self.camera_rate_hz > 0
        ):
            raise SweepError(f"camera_rate_hz: must be > 0 Hz, got {self.camera_rate_hz}")
        if self.max_steps is not None and self.max_steps < 1:
            raise SweepError(f"max_steps: must be >= 1, got {self.max_steps}")


def variations_digest(config: VariationConfig) -> str:
    """sha256 of the variation config's content (independent of the file it was read from)."""
    text = json.dumps(dataclasses.asdict(config), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def episode_seed(sweep_seed: int, index: int, repeat: int) -> int:
    """The episode seed (world reset and policy stream) of variation ``index``, repeat ``repeat`` (32 bit)."""
    return int(np.random.SeedSequence([sweep_seed, index, repeat]).generate_state(1, np.uint32)[0])


def episode_key(
    *,
    policy: PolicySpec,
    world_hash: str,
    variations: str,
    method: str,
    seed: int,
    index: int,
    repeat: int,
    camera_rate_hz: float | None,
    max_steps: int | None,
    render_profile: str | None = None,
    policy_images: bool = True,
) -> str:
    """The deterministic identity of one sweep episode (sha256 hex); ``variations`` is the config digest.

    How images are drawn is part of the identity only when it is not the default (the camera's declared
    profile, at the policy's requested size), so stores written before it existed keep their keys.
    """
    payload = {
        "policy": policy.canonical(),
        "world_hash": world_hash,
        "variations": variations,
        "method": method,
        "seed": int(seed),
        "index": int(index),
        "repeat": int(repeat),
        "camera_rate_hz": camera_rate_hz,
        "max_steps": max_steps,
    }
    if render_profile is not None:
        payload["render_profile"] = render_profile
    if not policy_images:
        payload["policy_images"] = False
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class EpisodeTask:
    """One episode to run: everything a worker needs, picklable.

    Attributes:
        key: :func:`episode_key`.
        world: the world folder.
        world_id: the world's id.
        world_hash: hash of the base (unvaried) world.
        variations: the variation config.
        variations_digest: :func:`variations_digest` of ``variations``.
        method, sweep_seed, index: which variation (``sweep_variation(variations, seed=sweep_seed,
            index=index, method=method)``).
        repeat: repeat number.
        episode_index: index told to the policy (``index * repeats + repeat``).
        seed: the episode seed.
        policy: the policy.
        camera_rate_hz, max_steps: passed to :meth:`EpisodeRunner.run`.
        render_profile, policy_images: passed to :class:`EpisodeRunner`.
    """

    key: str
    world: str
    world_id: str
    world_hash: str
    variations: VariationConfig
    variations_digest: str
    method: Method
    sweep_seed: int
    index: int
    repeat: int
    episode_index: int
    seed: int
    policy: PolicySpec
    camera_rate_hz: float | None
    max_steps: int | None
    render_profile: str | None = None
    policy_images: bool = True


def plan_sweep(
    cfg: SweepConfig, *, world_dir: str | Path, world_id: str, world_hash: str
) -> list[EpisodeTask]:
    """All episodes of ``cfg`` in order (variation index, then policy, then repeat)."""
    digest = variations_digest(cfg.variations)
    tasks = []
    for index in range(cfg.n):
        for policy in cfg.policies:
            for repeat in range(cfg.repeats):
                key = episode_key(
                    policy=policy,
                    world_hash=world_hash,
                    variations=digest,
                    method=cfg.method,
                    seed=cfg.seed,
                    index=index,
                    repeat=repeat,
                    camera_rate_hz=cfg.camera_rate_hz,
                    max_steps=cfg.max_steps,
                    render_profile=cfg.render_profile,
                    policy_images=cfg.policy_images,
                )
                tasks.append(
                    EpisodeTask(
                        key=key,
                        world=str(world_dir),
                        world_id=world_id,
                        world_hash=world_hash,
                        variations=cfg.variations,
                        variations_digest=digest,
                        method=cfg.method,
                        sweep_seed=cfg.seed,
                        index=index,
                        repeat=repeat,
                        episode_index=index * cfg.repeats + repeat,
                        seed=episode_seed(cfg.seed, index, repeat),
                        policy=policy,
                        camera_rate_hz=cfg.camera_rate_hz,
                        max_steps=cfg.max_steps,
                        render_profile=cfg.render_profile,
                        policy_images=cfg.policy_images,
                    )
                )
    return tasks


# ---------------------------------------------------------------------------------------------- worker

# Per worker process: the runner of the last variation (rebuilt when the variation changes) and policies.
_worker_runner: tuple[str, Any] | None = None
_worker_policies: dict[str, Policy] = {}


def _variation_record(task: EpisodeTask, variation: Variation | None) -> dict[str, Any]:
    return {
        "method": task.method,
        "index": task.index,
        "sweep_seed": task.sweep_seed,
        "repeat": task.repeat,
        "config_sha256": task.variations_digest,
        "seed": None if variation is None else int(variation.seed),
        "unit": [] if variation is None else [float(u) for u in variation.unit],
        "params": {} if variation is None else {k: float(v) for k, v in variation.params.items()},
    }


def _failed_row(task: EpisodeTask, reason: str, variation: Variation | None, started_at: str) -> EpisodeRow:
    return EpisodeRow(
        policy=task.policy.name,
        parameters=dict(task.policy.params),
        world_id=task.world_id,
        world_hash=task.world_hash,
        seed=task.seed,
        success=False,
        reason=reason,
        duration_s=0.0,
        metrics={},
        started_at=started_at,
        episode_key=task.key,
        variation=_variation_record(task, variation),
    )


def _runner_for(task: EpisodeTask, variation: Variation) -> Any:
    global _worker_runner
    from r2s2r_eval.runner import EpisodeRunner  # the renderer stack loads in workers only

    vkey = (
        f"{task.world}|{task.variations_digest}|{task.method}|{task.sweep_seed}|{task.index}"
        f"|{task.render_profile}|{task.policy_images}"
    )
    if _worker_runner is not None and _worker_runner[0] == vkey:
        return _worker_runner[1]
    if _worker_runner is not None:
        _worker_runner[1].__exit__(None, None, None)
        _worker_runner = None
    runner = EpisodeRunner(
        task.world, variation=variation, render_profile=task.render_profile, policy_images=task.policy_images
    ).__enter__()
    _worker_runner = (vkey, runner)
    return runner


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}".replace("\n", " ")


def run_task(task: EpisodeTask) -> EpisodeRow:
    """Run one episode and return its row; every failure of the episode becomes a failed row.

    The same function runs in the local process pool and as a Ray task.
    """
    started_at = utc_now()
    variation = None
    try:
        variation = sweep_variation(
            task.variations, seed=task.sweep_seed, index=task.index, method=task.method
        )
        runner = _runner_for(task, variation)
    except (VariationError, WorldError) as err:
        return _failed_row(task, f"variation_error: {_error(err)}", variation, started_at)
    except Exception as err:  # noqa: BLE001 - one episode's failure must not end the sweep
        return _failed_row(task, f"episode_error: {_error(err)}", variation, started_at)
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
    except Exception as err:  # noqa: BLE001
        return _failed_row(task, f"episode_error: {_error(err)}", variation, started_at)
    return EpisodeRow(
        policy=task.policy.name,
        parameters=dict(task.policy.params),
        world_id=result.world_id,
        world_hash=result.world_hash,
        seed=task.seed,
        success=result.success,
        reason=result.reason,
        duration_s=result.duration_s,
        metrics=dict(result.metrics),
        started_at=started_at,
        episode_key=task.key,
        variation=_variation_record(task, variation),
    )


# -------------------------------------------------------------------------------------------- executors

OnRow = Callable[[EpisodeRow], None]


def _run_local(tasks: Sequence[EpisodeTask], workers: int, on_row: OnRow) -> None:
    """Run ``tasks`` in a spawn-context process pool; a broken pool is rebuilt and its tasks retried once."""
    attempts: dict[str, int] = {}
    pending = list(tasks)
    ctx = multiprocessing.get_context("spawn")
    while pending:
        pool = ProcessPoolExecutor(max_workers=min(workers, len(pending)), mp_context=ctx)
        retry: list[EpisodeTask] = []
        try:
            futures: dict[Future[EpisodeRow], EpisodeTask] = {pool.submit(run_task, t): t for t in pending}
            not_done = set(futures)
            while not_done:
                done, not_done = wait(not_done, return_when=FIRST_COMPLETED)
                for fut in done:
                    task = futures[fut]
                    try:
                        row = fut.result()
                    except BrokenProcessPool as err:
                        attempts[task.key] = attempts.get(task.key, 0) + 1
                        if attempts[task.key] > _CRASH_RETRIES:
                            on_row(_failed_row(task, f"worker_crashed: {_error(err)}", None, utc_now()))
                        else:
                            retry.append(task)
                        continue
                    on_row(row)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        pending = retry


def _ray_address_check(address: str) -> None:
    """Refuse an unreachable ``host:port`` quickly (``ray.init`` would wait a long time)."""
    if address in ("auto", "local") or address.startswith("ray://"):
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise SweepError(f"--address {address!r}: expected host:port of a Ray cluster's GCS (or 'auto')")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=3.0):
            pass
    except OSError as err:
        raise SweepError(f"--address {address!r}: cannot reach a Ray cluster there: {err}") from None


def _start_ray(address: str | None, workers: int) -> bool:
    """Connect to (or start) Ray; return whether this call started it (and so must shut it down)."""
    try:
        import ray
    except ImportError as err:
        raise SweepError(f"--executor ray: ray is not installed: {err}") from None
    if ray.is_initialized():
        return False
    if address is not None:
        _ray_address_check(address)
    env = {k: os.environ[k] for k in ("MUJOCO_GL", "PYOPENGL_PLATFORM") if k in os.environ}
    try:
        if address is None:
            ray.init(num_cpus=workers, include_dashboard=False, runtime_env={"env_vars": env})
        else:
            ray.init(address=address, runtime_env={"env_vars": env})
    except (ConnectionError, RuntimeError, ValueError) as err:
        raise SweepError(f"--executor ray: cannot start or join Ray (address {address!r}): {err}") from err
    return True


def _run_ray(tasks: Sequence[EpisodeTask], on_row: OnRow) -> None:
    """Run ``tasks`` as Ray tasks (``ray.init`` done); a crashed worker fails only its episode."""
    import ray

    remote = ray.remote(num_cpus=1, max_retries=_CRASH_RETRIES)(run_task)
    refs = {remote.remote(t): t for t in tasks}
    waiting = list(refs)
    try:
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            for ref in ready:
                try:
                    row = ray.get(ref)
                except ray.exceptions.RayError as err:
                    row = _failed_row(refs[ref], f"worker_crashed: {_error(err)}", None, utc_now())
                on_row(row)
    except BaseException:
        for ref in waiting:
            ray.cancel(ref, force=True)
        raise


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
        keys: every episode key of the sweep, in plan order.
    """

    total: int
    skipped: int
    ran: int
    succeeded: int
    errors: int
    wall_s: float
    keys: tuple[str, ...]

    @property
    def episodes_per_minute(self) -> float:
        """Episodes run now per minute of wall time."""
        return 60.0 * self.ran / self.wall_s if self.wall_s > 0 else math.nan


def _check_policies(policies: Iterable[PolicySpec]) -> None:
    for spec in policies:
        try:
            load_policy(spec.name, spec.params)
        except PolicyError as err:
            raise SweepError(f"--policy {spec}: {err}") from None


def check_export_path(path: str | Path) -> Path:
    """The export path, if its suffix is known and nothing is there yet.

    Raises:
        SweepError: another suffix, or the file exists (outputs are never overwritten).
    """
    out = Path(path)
    if out.suffix.lower() not in EXPORT_FORMATS:
        raise SweepError(f"--export {out}: unknown format {out.suffix!r} (formats: {list(EXPORT_FORMATS)})")
    if out.exists():
        raise SweepError(f"--export {out}: already exists; refusing to overwrite it")
    return out


def run_sweep(
    cfg: SweepConfig,
    results: str | Path,
    *,
    executor: Executor | str = Executor.LOCAL,
    workers: int | None = None,
    address: str | None = None,
    progress: bool = True,
) -> SweepSummary:
    """Run the episodes of ``cfg`` not yet in ``results`` and store one row per episode.

    Everything is checked before the store is created or changed: the world, every policy and its
    parameters, the executor and (for Ray) the cluster address.

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
    if cfg.render_profile is not None and cfg.render_profile not in base.config.render_profiles:
        raise SweepError(
            f"--render-profile {cfg.render_profile!r}: world {base.world_id!r} has no such profile "
            f"(profiles: {sorted(base.config.render_profiles)})"
        )
    _check_policies(cfg.policies)
    tasks = plan_sweep(cfg, world_dir=world_dir, world_id=base.world_id, world_hash=base.world_hash)
    del base

    owns_ray = _start_ray(address, workers) if executor is Executor.RAY else False
    try:
        try:
            store = ResultsStore(results).__enter__()
        except ResultsError as err:
            raise SweepError(f"--results: {err}") from None
        with contextlib.closing(store):  # entered above, so that a bad file is a SweepError
            done = store.episode_keys()
            pending = [t for t in tasks if t.key not in done]
            counts = {"ok": 0, "err": 0}
            bar = _progress(len(tasks), len(tasks) - len(pending), enabled=progress)

            def on_row(row: EpisodeRow) -> None:
                store.add(row)
                counts["ok"] += int(row.success)
                counts["err"] += int(row.reason.split(":")[0] in _ERROR_REASONS)
                bar.update(1)

            t0 = time.perf_counter()
            try:
                if pending:
                    if executor is Executor.LOCAL:
                        _run_local(pending, workers, on_row)
                    else:
                        _run_ray(pending, on_row)
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
        keys=tuple(t.key for t in tasks),
    )


_ERROR_REASONS = ("variation_error", "episode_error", "worker_crashed")


def _progress(total: int, initial: int, *, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=initial,
        unit="ep",
        desc="sweep",
        disable=not enabled,
        file=sys.stderr,
        smoothing=0.1,
    )


# ----------------------------------------------------------------------------------------------- export


def export_rows(results: str | Path, out: str | Path, *, keys: Sequence[str] | None = None) -> int:
    """Write the sweep rows of ``results`` to Parquet or CSV (by ``out``'s suffix); return the row count.

    One row per episode: the store's columns, ``method``, ``index``, ``repeat``, ``variation_seed``,
    ``metric.<name>`` per metric and ``var.<axis>.<name>`` per realised variation parameter (empty where
    a row lacks it).  ``keys``: only these episodes, in this order; None: every row with an episode key.
    The file is written next to ``out`` and renamed into place, so it is never half-written.

    Raises:
        SweepError: unknown suffix, or ``out`` exists.
    """
    import pyarrow as pa

    path = check_export_path(out)
    with ResultsStore(results) as store:
        rows = [r for r in store.rows() if r.episode_key is not None]
    if keys is not None:
        by_key = {r.episode_key: r for r in rows}
        rows = [by_key[k] for k in keys if k in by_key]
    var_names: dict[str, None] = {}
    metric_names: set[str] = set()
    for r in rows:
        var_names.update(dict.fromkeys((r.variation or {}).get("params", {})))
        metric_names.update(r.metrics)
    var = [r.variation or {} for r in rows]
    columns: dict[str, pa.Array] = {
        "episode_key": pa.array([r.episode_key for r in rows], pa.string()),
        "policy": pa.array([r.policy for r in rows], pa.string()),
        "parameters": pa.array([json.dumps(dict(r.parameters), sort_keys=True) for r in rows], pa.string()),
        "world_id": pa.array([r.world_id for r in rows], pa.string()),
        "world_hash": pa.array([r.world_hash for r in rows], pa.string()),
        "seed": pa.array([r.seed for r in rows], pa.int64()),
        "success": pa.array([r.success for r in rows], pa.bool_()),
        "reason": pa.array([r.reason for r in rows], pa.string()),
        "duration_s": pa.array([r.duration_s for r in rows], pa.float64()),
        "started_at": pa.array([r.started_at for r in rows], pa.string()),
        "method": pa.array([v.get("method") for v in var], pa.string()),
        "index": pa.array([v.get("index") for v in var], pa.int64()),
        "repeat": pa.array([v.get("repeat") for v in var], pa.int64()),
        "variation_seed": pa.array([v.get("seed") for v in var], pa.uint64()),
    }
    for name in sorted(metric_names):
        columns[f"metric.{name}"] = pa.array([r.metrics.get(name) for r in rows], pa.float64())
    for name in var_names:
        columns[f"var.{name}"] = pa.array([v.get("params", {}).get(name) for v in var], pa.float64())
    table = pa.table(columns)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if path.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, tmp)
        else:
            import pyarrow.csv as pcsv

            pcsv.write_csv(table, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return table.num_rows
