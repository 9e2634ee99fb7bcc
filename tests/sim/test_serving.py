"""The serving core both driver-topic nodes wrap: schedules, wall-clock pacing and the render worker."""

from __future__ import annotations

import threading
from typing import Any

import mujoco
import pytest
from r2s2r_sim.serving.loop import (
    NS,
    RenderJob,
    RenderWorker,
    ServingThreads,
    Ticker,
    WallPacer,
    variation_hash,
)

_XML = "<mujoco><worldbody><body><freejoint/><geom size='0.1'/></body></worldbody></mujoco>"


class _Log:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def info(self, message: str, **kwargs: Any) -> None:
        self.lines.append(("info", message))

    def warning(self, message: str, **kwargs: Any) -> None:
        self.lines.append(("warning", message))

    def fatal(self, message: str, **kwargs: Any) -> None:
        self.lines.append(("fatal", message))


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def test_ticker_fires_on_its_period_and_skips_missed_ticks() -> None:
    tick = Ticker(100.0)  # 10 ms
    tick.restart(0)
    assert [t for t in range(0, 30_000_001, 2_000_000) if tick.due(t)] == [10_000_000, 20_000_000, 30_000_000]
    assert tick.due(75_000_000)  # a gap: one tick, then the schedule goes on from the next one after it
    assert not tick.due(79_000_000)
    assert tick.due(80_000_000)


def test_pacer_sleeps_to_the_wall_clock_and_reanchors_when_far_behind() -> None:
    clock = _Clock()
    pacer = WallPacer(max_lag_s=0.25, clock=clock, sleep=clock.sleep)
    assert pacer.pace(0) is None and clock.slept == []  # anchors
    assert pacer.pace(NS // 100) is None
    assert clock.slept == pytest.approx([0.01])
    clock.now += 0.1  # 0.09 s late at the next step: caught up without sleeping, not re-anchored
    assert pacer.pace(2 * NS // 100) is None and len(clock.slept) == 1
    assert pacer.behind_s(2 * NS // 100) == pytest.approx(0.09)
    clock.now += 0.5
    lag = pacer.pace(3 * NS // 100)
    assert lag == pytest.approx(0.58)
    assert pacer.behind_s(3 * NS // 100) == 0.0  # re-anchored at now
    pacer.restart()
    assert pacer.behind_s(0) == 0.0 and pacer.pace(10 * NS) is None


def test_variation_hash_names_world_config_and_seed() -> None:
    base = variation_hash("abc", "", 1)
    assert len(base) == 64
    others = {variation_hash("abd", "", 1), variation_hash("abc", "x", 1), variation_hash("abc", "", 2)}
    assert len({base, *others}) == 4


def _worker(
    log: _Log, model: mujoco.MjModel, drawn: list[Any], opened: list[Any], gate: threading.Event
) -> RenderWorker:
    def draw(renderers: Any, data: mujoco.MjData, job: RenderJob) -> int:
        gate.wait(10.0)
        drawn.append((renderers, job.stamp, float(data.qpos[2])))
        return 1

    def open_renderers(m: mujoco.MjModel, payload: Any) -> Any:
        opened.append(payload)
        return f"renderers{len(opened)}"

    return RenderWorker(
        model=model, open_renderers=open_renderers, close_renderers=lambda r: None, draw=draw, log=log
    )


def test_render_worker_poses_each_job_drops_when_busy_and_reopens_for_a_new_model() -> None:
    model = mujoco.MjModel.from_xml_string(_XML)
    data = mujoco.MjData(model)
    log, drawn, opened, gate = _Log(), [], [], threading.Event()
    threads = ServingThreads("test", log)
    worker = _worker(log, model, drawn, opened, gate)
    threads.start_render(worker)
    try:
        assert opened == [None]
        data.qpos[2] = 1.0
        worker.submit(RenderJob.of(1, model, data), drop_when_busy=True)
        with worker.cv:  # the worker took the first job and is drawing it (held at the gate)
            worker.cv.wait_for(lambda: worker._job is None, 10.0)
        data.qpos[2] = 2.0
        worker.submit(RenderJob.of(2, model, data), drop_when_busy=True)
        data.qpos[2] = 3.0
        worker.submit(RenderJob.of(3, model, data), drop_when_busy=True)  # replaces job 2
        assert worker.frames_dropped == 1
        assert any("renderer busy: dropped camera frame (1 so far)" in m for _, m in log.lines)
        gate.set()
        worker.wait_idle()
        assert [(s, z) for _, s, z in drawn] == [(1, 1.0), (3, 3.0)]
        other = mujoco.MjModel.from_xml_string(_XML)
        worker.submit(RenderJob.of(4, other, mujoco.MjData(other), payload="cams"), drop_when_busy=False)
        worker.wait_idle()
        assert opened == [None, "cams"] and drawn[-1][0] == "renderers2"
        assert worker.frames_published == 3
    finally:
        threads.stop(timeout_s=10.0)
    assert not worker.running


# The physics thread re-raises after reporting, so its traceback reaches stderr as well.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_failing_physics_loop_is_reported_once_and_stops_the_threads() -> None:
    log = _Log()
    threads = ServingThreads("test", log)
    done = threading.Event()

    def loop() -> None:
        try:
            raise RuntimeError("boom")
        finally:
            done.set()

    threads.start_physics(loop)
    assert done.wait(10.0)
    threads.stop(timeout_s=10.0)
    assert not threads.running and not threads.alive()
    assert [m for lvl, m in log.lines if lvl == "fatal"] == ["physics thread failed: RuntimeError('boom')"]


def test_a_renderer_that_cannot_open_fails_the_start_with_its_error() -> None:
    model = mujoco.MjModel.from_xml_string(_XML)

    def cannot_open(m: mujoco.MjModel, payload: Any) -> Any:
        raise OSError("no EGL display")

    worker = RenderWorker(
        model=model,
        open_renderers=cannot_open,
        close_renderers=lambda r: None,
        draw=lambda r, d, j: 0,
        log=_Log(),
    )
    threads = ServingThreads("test", _Log())
    with pytest.raises(RuntimeError, match="camera renderer failed to start: no EGL display"):
        threads.start_render(worker)
    threads.stop(timeout_s=10.0)
