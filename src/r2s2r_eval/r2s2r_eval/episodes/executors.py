"""Where jobs run: the one local process pool and the Ray executor that sweeps and studies share.

A job is a picklable argument of a module-level function that returns a list of rows.  Both executors
hand each job's rows to ``on_rows`` as the job finishes; a job whose worker dies is retried once in a fresh
pool (locally) or by Ray, then handed to ``on_crash``.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

__all__ = ["CRASH_RETRIES", "ExecutorError", "run_local", "run_ray", "start_ray"]

CRASH_RETRIES = 1

J = TypeVar("J")
R = TypeVar("R")


class ExecutorError(ValueError):
    """An executor cannot start: Ray missing, or a cluster address that is malformed or unreachable."""


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}".replace("\n", " ")


def _die_with_parent(parent: int) -> None:
    """Pool-worker initializer: the kernel ends this worker when the process that started it dies.

    A parent killed by a signal it does not handle (``kill PID``, a job scheduler's SIGTERM, SIGKILL) runs
    no cleanup, and a worker busy with a long job (a shard of demonstrations) would otherwise run it to the
    end, writing into the study's folder, for up to an hour.  Linux only (``PR_SET_PDEATHSIG``); elsewhere
    a no-op.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0) != 0:
        return  # not fatal: the worker still ends when its job does
    if os.getppid() != parent:  # the parent died before the call took effect
        os.kill(os.getpid(), signal.SIGTERM)


def run_local(
    fn: Callable[[J], list[R]],
    jobs: Sequence[J],
    workers: int,
    on_rows: Callable[[J, list[R]], None],
    on_crash: Callable[[J, str], None],
) -> None:
    """Run ``fn`` on each job in a spawn-context process pool of at most ``workers`` processes.

    A broken pool is rebuilt and the jobs it lost are retried once; ``on_crash(job, reason)`` gets a job
    that broke it twice.  Workers end with this process, however it ends (:func:`_die_with_parent`).
    """
    attempts: dict[int, int] = {}
    pending = list(enumerate(jobs))
    ctx = multiprocessing.get_context("spawn")
    while pending:
        pool = ProcessPoolExecutor(
            max_workers=min(workers, len(pending)),
            mp_context=ctx,
            initializer=_die_with_parent,
            initargs=(os.getpid(),),
        )
        retry: list[tuple[int, J]] = []
        try:
            futures: dict[Future[list[R]], tuple[int, J]] = {pool.submit(fn, j): (i, j) for i, j in pending}
            not_done = set(futures)
            while not_done:
                done, not_done = wait(not_done, return_when=FIRST_COMPLETED)
                for fut in done:
                    i, job = futures[fut]
                    try:
                        rows = fut.result()
                    except BrokenProcessPool as err:
                        attempts[i] = attempts.get(i, 0) + 1
                        if attempts[i] > CRASH_RETRIES:
                            on_crash(job, f"worker_crashed: {_error(err)}")
                        else:
                            retry.append((i, job))
                        continue
                    on_rows(job, rows)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        pending = retry


def _ray_address_check(address: str) -> None:
    """Refuse an unreachable ``host:port`` quickly (``ray.init`` would wait a long time)."""
    if address in ("auto", "local") or address.startswith("ray://"):
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ExecutorError(f"--address {address!r}: expected host:port of a Ray cluster's GCS (or 'auto')")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=3.0):
            pass
    except OSError as err:
        raise ExecutorError(f"--address {address!r}: cannot reach a Ray cluster there: {err}") from None


def start_ray(address: str | None, workers: int) -> bool:
    """Connect to (or start) Ray; return whether this call started it (and so must shut it down).

    Raises:
        ExecutorError: Ray is not installed, or the address is malformed or unreachable.
    """
    try:
        import ray
    except ImportError as err:
        raise ExecutorError(f"--executor ray: ray is not installed: {err}") from None
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
        raise ExecutorError(f"--executor ray: cannot start or join Ray (address {address!r}): {err}") from err
    return True


def run_ray(
    fn: Callable[[J], list[R]],
    jobs: Sequence[J],
    on_rows: Callable[[J, list[R]], None],
    on_crash: Callable[[J, str], None],
) -> None:
    """Run ``fn`` on each job as a Ray task (``ray.init`` done); a crashed worker fails only its job."""
    import ray

    remote = ray.remote(num_cpus=1, max_retries=CRASH_RETRIES)(fn)
    refs: dict[Any, J] = {remote.remote(j): j for j in jobs}
    waiting = list(refs)
    try:
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            for ref in ready:
                try:
                    rows = ray.get(ref)
                except ray.exceptions.RayError as err:
                    on_crash(refs[ref], f"worker_crashed: {_error(err)}")
                    continue
                on_rows(refs[ref], rows)
    except BaseException:
        for ref in waiting:
            ray.cancel(ref, force=True)
        raise
