"""The serving core both driver-topic nodes wrap: schedules, wall-clock pacing, the render worker, threads.

ROS-free (no rclpy, no message packages): the sim node (:mod:`r2s2r_sim.ros.sim_node`) and the emulated
hardware node (:mod:`r2s2r_sim.ros.emulated_hardware_node`) build messages and read parameters; what ticks,
paces, renders and stops is written here once.

* :class:`Ticker`: a fixed-rate schedule in integer sim-time nanoseconds (joint states, /tf, cameras).
* :class:`WallPacer`: keeps sim time on the wall clock and re-anchors when it falls more than
  :data:`MAX_LAG_S` behind (the real-time factor is then < 1).
* :class:`RenderWorker`: the render thread. It owns the GL context, a private ``MjData`` and the renderers;
  a physics snapshot (:class:`RenderJob`) is posed (``mj_kinematics``, ``mj_camlight``) and handed to the
  node's ``draw`` callback, which renders and publishes. One pending slot: a job that finds the slot full
  either replaces it (counted as dropped) or waits for it, as the caller asks.
* :class:`ServingThreads`: starts the physics thread and the render worker, reports a failing thread once
  and stops the node, and stops and joins both.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import mujoco
import numpy as np

__all__ = [
    "MAX_LAG_S",
    "NS",
    "Logger",
    "RenderJob",
    "RenderWorker",
    "ServingThreads",
    "Ticker",
    "WallPacer",
    "variation_hash",
]

NS = 1_000_000_000
MAX_LAG_S = 0.25  # behind the wall clock by more than this, pacing re-anchors instead of catching up


class Logger(Protocol):
    """What the core logs through: an rclpy logger fits (``throttle_duration_sec`` is its keyword)."""

    def info(self, message: str, **kwargs: Any) -> Any:
        """Log at info level."""
        ...

    def warning(self, message: str, **kwargs: Any) -> Any:
        """Log at warning level (``throttle_duration_sec`` limits repeats)."""
        ...

    def error(self, message: str, **kwargs: Any) -> Any:
        """Log an error the node survives."""
        ...

    def fatal(self, message: str, **kwargs: Any) -> Any:
        """Log a failure that stops the node."""
        ...


def variation_hash(world_hash: str, variation_config: str, seed: int) -> str:
    """Return an initial state's identity: sha256 of ``world_hash``, ``variation_config`` and ``seed``."""
    return hashlib.sha256(f"{world_hash}\n{variation_config}\n{int(seed)}".encode()).hexdigest()


class Ticker:
    """A fixed-rate schedule in integer sim-time nanoseconds, restarted at every episode.

    Missed ticks are skipped: after a gap, the next tick is the first one of the schedule after ``now``.
    """

    def __init__(self, rate_hz: float) -> None:
        self.period_ns = round(NS / rate_hz)
        self.next_ns = 0

    def restart(self, now_ns: int) -> None:
        """Start the schedule again: the next tick is one period after ``now_ns``."""
        self.next_ns = now_ns + self.period_ns

    def due(self, now_ns: int) -> bool:
        """Whether a tick falls at or before ``now_ns``; consumes it (and any missed ones)."""
        if now_ns < self.next_ns:
            return False
        while self.next_ns <= now_ns:
            self.next_ns += self.period_ns
        return True


class WallPacer:
    """Keeps sim time on the wall clock from an anchor ``(wall time, sim time)``.

    Args:
        max_lag_s: how far (s) the sim may fall behind the wall clock before the anchor moves to now.
        clock: the wall clock (s, monotonic).
        sleep: how to wait (s).
    """

    def __init__(
        self,
        *,
        max_lag_s: float = MAX_LAG_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.max_lag_s = max_lag_s
        self._clock = clock
        self._sleep = sleep
        self._anchor: tuple[float, int] | None = None

    def restart(self) -> None:
        """Forget the anchor (after a pause or a wait): the next :meth:`pace` anchors at its sim time."""
        self._anchor = None

    def anchor(self, sim_ns: int) -> None:
        """Anchor ``sim_ns`` at the wall clock's now."""
        self._anchor = (self._clock(), sim_ns)

    def behind_s(self, sim_ns: int) -> float:
        """How far (s) the wall clock is past ``sim_ns`` on the anchor; 0 without one."""
        if self._anchor is None:
            return 0.0
        return max(0.0, self._clock() - self._anchor[0] - (sim_ns - self._anchor[1]) / NS)

    def pace(self, sim_ns: int) -> float | None:
        """Wait until the wall clock reaches ``sim_ns``; without an anchor, anchor it now.

        Returns:
            How far (s) the sim was behind when that was more than ``max_lag_s`` (the anchor then moves to
            ``sim_ns`` now), else ``None``.
        """
        now = self._clock()
        if self._anchor is None:
            self._anchor = (now, sim_ns)
            return None
        ahead = self._anchor[0] + (sim_ns - self._anchor[1]) / NS - now
        if ahead > 0:
            self._sleep(ahead)
        elif ahead < -self.max_lag_s:
            self._anchor = (now, sim_ns)
            return -ahead
        return None


@dataclass(frozen=True)
class RenderJob:
    """A physics snapshot to render: the state (copies) and the model it belongs to.

    ``stamp`` and ``payload`` are the node's (which cameras, the stamp as it publishes it); the worker only
    passes them to ``draw``.
    """

    stamp: Any
    qpos: np.ndarray
    mocap_pos: np.ndarray
    mocap_quat: np.ndarray
    model: mujoco.MjModel  # a reset may swap the world: the worker re-opens its renderers for a new model
    payload: Any = None

    @classmethod
    def of(cls, stamp: Any, model: mujoco.MjModel, data: mujoco.MjData, payload: Any = None) -> RenderJob:
        """Snapshot ``data`` (call with the physics lock held)."""
        return cls(stamp, data.qpos.copy(), data.mocap_pos.copy(), data.mocap_quat.copy(), model, payload)


class RenderWorker:
    """The render thread: poses each job on a private ``MjData`` and hands it to ``draw``.

    Args:
        model: the model rendered until a job brings another.
        open_renderers: ``(model, payload) -> renderers``, called on the render thread (GL contexts are
            current on one thread only); ``payload`` is ``None`` for the first model, else the job's.
        close_renderers: releases what ``open_renderers`` made.
        draw: ``(renderers, data, job) -> frames published``; ``data`` holds the job's posed state.
        log: where a busy renderer's dropped frames are reported (throttled).
    """

    def __init__(
        self,
        *,
        model: mujoco.MjModel,
        open_renderers: Callable[[mujoco.MjModel, Any], Any],
        close_renderers: Callable[[Any], None],
        draw: Callable[[Any, mujoco.MjData, RenderJob], int],
        log: Logger,
    ) -> None:
        self._model = model
        self._open = open_renderers
        self._close = close_renderers
        self._draw = draw
        self._log = log
        self.cv = threading.Condition()
        self.running = True
        self._job: RenderJob | None = None
        self._busy = False
        self.error: BaseException | None = None
        self.ready = threading.Event()
        self.frames_published = 0
        self.frames_dropped = 0
        self.render_seconds = 0.0  # wall time spent in draw (rendering and publishing)

    def count_dropped(self) -> None:
        """Count a frame lost after rendering (a stand-in driver drops it)."""
        with self.cv:
            self.frames_dropped += 1

    def submit(self, job: RenderJob, *, drop_when_busy: bool) -> None:
        """Hand ``job`` to the render thread.

        Args:
            job: the snapshot.
            drop_when_busy: a pending job not yet started is replaced and counted as dropped (physics never
                waits); otherwise wait until the slot is free, so every job is rendered.
        """
        with self.cv:
            if not drop_when_busy:
                self.cv.wait_for(lambda: self._job is None or not self.running)
            elif self._job is not None:
                self.frames_dropped += 1
                self._log.warning(
                    f"renderer busy: dropped camera frame ({self.frames_dropped} so far)",
                    throttle_duration_sec=5.0,
                )
            self._job = job
            self.cv.notify_all()

    def wait_idle(self) -> None:
        """Wait until no job is pending or being drawn (or the worker stops)."""
        with self.cv:
            self.cv.wait_for(lambda: (self._job is None and not self._busy) or not self.running)

    def stop(self) -> None:
        """Ask the loop to end after the current job."""
        with self.cv:
            self.running = False
            self.cv.notify_all()

    def run(self) -> None:
        """Thread body: open the renderers (``ready`` is set either way), then draw jobs until stopped."""
        model = self._model
        data = mujoco.MjData(model)
        try:
            renderers = self._open(model, None)
        except BaseException as err:  # reported to whoever waits on ready
            self.error = err
            self.ready.set()
            return
        self.ready.set()
        try:
            while self.running:
                with self.cv:
                    self.cv.wait_for(lambda: self._job is not None or not self.running, 0.5)
                    job = self._job
                    if job is None:
                        continue
                    self._job = None
                    self._busy = True
                    self.cv.notify_all()
                try:
                    if job.model is not model:
                        # A reset swapped the world (variation): new model, new GL resources.
                        self._close(renderers)
                        renderers = None
                        model = job.model
                        data = mujoco.MjData(model)
                        renderers = self._open(model, job.payload)
                    data.qpos[:] = job.qpos
                    data.mocap_pos[:] = job.mocap_pos
                    data.mocap_quat[:] = job.mocap_quat
                    mujoco.mj_kinematics(model, data)
                    mujoco.mj_camlight(model, data)
                    started = time.perf_counter()
                    published = self._draw(renderers, data, job)
                    self.render_seconds += time.perf_counter() - started
                    with self.cv:
                        self.frames_published += published
                finally:
                    with self.cv:
                        self._busy = False
                        self.cv.notify_all()
        finally:
            if renderers is not None:
                self._close(renderers)


class ServingThreads:
    """A serving node's physics thread and render worker: start, failure report, stop and join.

    Args:
        name: thread name prefix (``sim``, ``emu``).
        log: where a failing thread is reported.
        ok: whether the node's context is still up (a failure after shutdown is not reported).
    """

    def __init__(self, name: str, log: Logger, ok: Callable[[], bool] = lambda: True) -> None:
        self.name = name
        self.log = log
        self.ok = ok
        self.running = True
        self.render: RenderWorker | None = None
        self._threads: list[threading.Thread] = []
        self._wakeups: list[threading.Condition] = []

    def alive(self) -> bool:
        """Whether the loops should go on: not stopped, and the node's context is up."""
        return self.running and self.ok()

    @property
    def frames_published(self) -> int:
        """Camera frames published so far (0 without a render worker)."""
        return self.render.frames_published if self.render is not None else 0

    @property
    def frames_dropped(self) -> int:
        """Camera frames dropped so far: renderer busy, or lost by a stand-in driver."""
        return self.render.frames_dropped if self.render is not None else 0

    def start_render(self, worker: RenderWorker, timeout_s: float = 30.0) -> None:
        """Start ``worker`` on its thread and wait until its renderers are open.

        Raises:
            RuntimeError: the renderers failed to open, or did not open within ``timeout_s``.
        """
        self.render = worker
        self._start("render", worker.run, reraise=False)
        if not worker.ready.wait(timeout=timeout_s) or worker.error is not None:
            raise RuntimeError(f"camera renderer failed to start: {worker.error}")

    def start_physics(self, loop: Callable[[], None], wakeups: Iterable[threading.Condition] = ()) -> None:
        """Run ``loop`` on the physics thread; ``wakeups`` are notified when the threads stop."""
        self._wakeups.extend(wakeups)
        self._start("physics", loop, reraise=True)

    def _start(self, what: str, body: Callable[[], None], *, reraise: bool) -> None:
        def guarded() -> None:
            try:
                body()
            except Exception as err:  # reported, then the node stops
                if self.alive():
                    self.log.fatal(f"{what} thread failed: {err!r}")
                    self.stop_loops()
                    if reraise:
                        raise

        thread = threading.Thread(target=guarded, name=f"{self.name}_{what}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def stop_loops(self) -> None:
        """Tell every loop to end (without joining)."""
        self.running = False
        for cv in self._wakeups:
            with cv:
                cv.notify_all()
        if self.render is not None:
            self.render.stop()

    def stop(self, timeout_s: float = 30.0) -> list[str]:
        """Stop the loops and join their threads (each at most ``timeout_s``); the names of any still running.

        A thread left running when the interpreter finalises is force-unwound out of MuJoCo, which can end
        the process with SIGSEGV, so one that outlives the join is reported by name.
        """
        self.stop_loops()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=timeout_s)
        alive = [t.name for t in self._threads if t.is_alive() and t is not threading.current_thread()]
        if alive:
            self.log.error(f"threads still running {timeout_s:.0f} s after the stop: {alive}")
        return alive
