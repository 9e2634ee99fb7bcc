"""Sim node benchmarks as ratios to bare MuJoCo: ``python -m r2s2r_sim.bench.sim --out out/bench.json``.

Every figure is a ratio against a baseline measured in the same run on the same machine:

(a) ``SimWorld.step`` throughput / raw ``mujoco.mj_step`` on the same compiled model, one step at a time as
    the sim node steps, the two alternating in chunks; the median of the chunks' ratios of CPU time
    (target >= 0.9: the task's judging every 10 ms of sim time must cost the physics little).
    ``--step-only`` runs just this measurement (seconds).
(b) camera frames/s the sim node sustains (as fast as possible, camera at 120 Hz sim so the renderer is the
    bottleneck; counted by a subscriber in this process) / a bare render loop (``mjv_updateScene`` +
    ``mjr_render`` + one ``mjr_readPixels`` for colour and depth, 640x480) in this process (target >= 0.8).
(c) the node's real-time factor, /clock sim seconds per wall second seen from this process: as fast as
    possible with cameras off and with the default camera (15 Hz) and 500 Hz joint states (headroom), and
    paced (``real_time:=true``) with the default camera (target >= 1.0; paced runs cannot exceed ~1.0).
(d) image latency, stamp -> receipt in this process, during the paced run. Stamps are sim time, so each
    receipt is mapped to sim time with the sim->wall offset measured on /clock (the minimum of receipt - stamp
    over the /clock messages of the preceding second: /clock is tiny and published on the step it
    stamps). The latency therefore includes rendering (the image is stamped with the physics snapshot it
    shows), conversion and transport. Reported as median and p95 in ms.
(e) interface profiles: camera frames/s the sim node sustains (camera-bound, as in (b)) and paced image
    latency with the default profile (realsense2_camera: reliable, transient-local images) / with
    ``sensor_data`` (best effort), each profile run twice, alternating, the better run kept (target >= 0.9:
    reliable delivery to one local subscriber must not cost the renderer more than a tenth).
    ``--profiles-only`` runs just this comparison.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import mujoco
import numpy as np

from r2s2r_sim.bench.report import Ratio, add_out_option, print_ratios, write_results
from r2s2r_sim.interface import load_interface
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

WORLD = "tabletop-pick-v1"
_NS = 1_000_000_000
STEP_TARGET = 0.9  # (a): SimWorld.step throughput / raw mj_step


def bench_step(world_id: str, steps: int = 40_000, chunk: int = 500) -> dict[str, Any]:
    """(a) SimWorld.step vs mj_step on the same compiled model, each from the same initial state.

    Each advances ``steps`` physics steps one call at a time, the two alternating every ``chunk`` steps.
    The ratio is the median over the chunks of (raw time / SimWorld time) in CPU time of this thread, which
    other processes on a shared machine do not add to (wall-clock figures are kept beside it); the rates
    are all steps over all wall time.  40 000 steps are 80 s of sim time, past the bundled task's 30 s
    timeout: the episode's judging before and after its verdict both count.
    """
    world = SimWorld(world_path(world_id))
    raw_data = mujoco.MjData(world.model)
    world.reset(0)
    raw_data.qpos[:] = world.data.qpos
    raw_data.ctrl[:] = world.data.ctrl
    mujoco.mj_forward(world.model, raw_data)
    model = world.model

    def timed(fn: Any) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.thread_time()
        for _ in range(chunk):
            fn()
        return time.perf_counter() - wall, time.thread_time() - cpu

    def raw_step() -> None:
        mujoco.mj_step(model, raw_data)

    raw_s, world_s, ratios, wall_ratios = 0.0, 0.0, [], []
    for _ in range(max(1, steps // chunk)):
        raw_wall, raw_cpu = timed(raw_step)
        world_wall, world_cpu = timed(world.step)
        raw_s, world_s = raw_s + raw_wall, world_s + world_wall
        ratios.append(raw_cpu / world_cpu if world_cpu > 0 else math.nan)
        wall_ratios.append(raw_wall / world_wall)
    n = chunk * len(ratios)
    return {
        "raw_steps_per_s": n / raw_s,
        "simworld_steps_per_s": n / world_s,
        "ratio": statistics.median(ratios),
        "ratio_quartiles": [float(q) for q in np.nanpercentile(ratios, [25, 75])],
        "ratio_wall_clock": statistics.median(wall_ratios),
        "chunks": len(ratios),
        "chunk_steps": chunk,
        "target": STEP_TARGET,
    }


def _step_ratio(a: dict[str, Any]) -> Ratio:
    return Ratio(
        "(a) SimWorld.step / mj_step",
        a["ratio"],
        a["target"],
        figures=f"{a['simworld_steps_per_s']:.0f} / {a['raw_steps_per_s']:.0f} steps/s",
    )


def bench_bare_render(world_id: str, seconds: float = 3.0) -> float:
    """(b) baseline: frames/s of a bare colour+depth render loop at the world camera's size."""
    world = SimWorld(world_path(world_id))
    cam = world.config.cameras[0]
    model, data = world.model, world.data
    gl = mujoco.GLContext(cam.width, cam.height)
    gl.make_current()
    ctx = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150.value)
    try:
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN.value, ctx)
        scene = mujoco.MjvScene(model, maxgeom=10000)
        camera = mujoco.MjvCamera()
        camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        camera.fixedcamid = world.camera_id(cam.name)
        option = mujoco.MjvOption()
        rect = mujoco.MjrRect(0, 0, cam.width, cam.height)
        rgb = np.empty((cam.height, cam.width, 3), dtype=np.uint8)
        depth = np.empty((cam.height, cam.width), dtype=np.float32)

        def frame() -> None:
            mujoco.mjv_updateScene(model, data, option, None, camera, mujoco.mjtCatBit.mjCAT_ALL.value, scene)
            mujoco.mjr_render(rect, scene, ctx)
            mujoco.mjr_readPixels(rgb, depth, rect, ctx)

        for _ in range(3):
            frame()
        frames, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            frame()
            frames += 1
        return frames / (time.perf_counter() - start)
    finally:
        ctx.free()
        gl.free()


class _Listener:
    """rclpy subscriber in the node's domain: receipt times of /clock, joint states and images."""

    def __init__(self, domain_id: int, interface: str = "") -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor

        # reason: r2s2r_sim.ros.qos imports rclpy, and this module stays ROS-free until a listener starts
        from r2s2r_sim.ros.qos import interface_class, qos_profile

        self._rclpy = rclpy
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node("r2s2r_bench", context=self.context)
        iface = load_interface(interface)
        self.clock: list[tuple[float, int]] = []
        self.joint_states: list[float] = []
        self.images: list[tuple[float, int]] = []
        self.lock = threading.Lock()

        def sub(key: str, camera: str | None, callback: Any) -> None:
            spec = iface.topic_spec(key)
            self.node.create_subscription(
                interface_class(spec.type),
                iface.topic(key, camera),
                callback,
                qos_profile(spec.subscription_qos),
            )

        def on_clock(msg: Any) -> None:
            now = time.monotonic()
            with self.lock:
                self.clock.append((now, msg.clock.sec * _NS + msg.clock.nanosec))

        def on_js(msg: Any) -> None:
            now = time.monotonic()
            with self.lock:
                self.joint_states.append(now)

        def on_image(msg: Any) -> None:
            now = time.monotonic()
            with self.lock:
                self.images.append((now, msg.header.stamp.sec * _NS + msg.header.stamp.nanosec))

        sub("clock", None, on_clock)
        sub("joint_states", None, on_js)
        sub("color_image", "camera", on_image)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._running = True
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while self._running and self.context.ok():
            self.executor.spin_once(timeout_sec=0.05)

    def clear(self) -> None:
        with self.lock:
            self.clock.clear()
            self.joint_states.clear()
            self.images.clear()

    def close(self) -> None:
        self._running = False
        self._thread.join(timeout=5.0)
        self.executor.shutdown()
        self.node.destroy_node()
        self._rclpy.shutdown(context=self.context)


def _sim_command() -> list[str]:
    exe = shutil.which("sim_node")
    return [exe] if exe else [sys.executable, "-m", "r2s2r_sim.ros.sim_node"]


def run_node(
    params: Sequence[str], *, warmup: float, seconds: float, domain_id: int, interface: str = ""
) -> dict[str, Any]:
    """Run the sim node with ``params`` (and ``interface``) in its own domain; measure for ``seconds``."""
    env = dict(os.environ)
    env.update(ROS_DOMAIN_ID=str(domain_id), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1")
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    args = [*_sim_command(), "--ros-args"]
    for p in [*params, *([f"interface:={interface}"] if interface else [])]:
        args += ["-p", p]
    listener = _Listener(domain_id, interface)
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not listener.clock and time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"sim_node exited with {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}"
                )
            time.sleep(0.05)
        if not listener.clock:
            raise RuntimeError("sim_node published no /clock within 60 s")
        time.sleep(warmup)
        listener.clear()
        time.sleep(seconds)
        with listener.lock:
            clock, js, images = list(listener.clock), list(listener.joint_states), list(listener.images)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            output, _ = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
        listener.close()
    result: dict[str, Any] = {"params": list(params)}
    if len(clock) > 1:
        result["rtf"] = (clock[-1][1] - clock[0][1]) / _NS / (clock[-1][0] - clock[0][0])
    if len(js) > 1:
        result["joint_states_hz"] = (len(js) - 1) / (js[-1] - js[0])
    if len(images) > 1:
        result["camera_hz"] = (len(images) - 1) / (images[-1][0] - images[0][0])
        result["latency_ms"] = _latencies(clock, images)
    for line in output.splitlines():
        if "camera frames:" in line:
            result["node_camera_stats"] = line.split("]: ", 1)[-1]
    return result


def _latencies(clock: list[tuple[float, int]], images: list[tuple[float, int]]) -> dict[str, float]:
    wall = np.array([c[0] for c in clock])
    offsets = wall - np.array([c[1] for c in clock]) / _NS  # wall - sim, per /clock message
    lat = []
    for receipt, stamp in images:
        window = (wall <= receipt) & (wall >= receipt - 1.0)
        if window.any():
            lat.append(receipt - (stamp / _NS + offsets[window].min()))
    if not lat:
        return {}
    ms = np.array(lat) * 1e3
    return {"median": float(np.median(ms)), "p95": float(np.percentile(ms, 95)), "n": len(ms)}


def bench_profiles(world: str, seconds: float, domain_id: int) -> dict[str, Any]:
    """(e) the default interface profile against ``sensor_data``: camera-bound frames/s and paced latency."""
    best: dict[str, dict[str, Any]] = {}
    for round_ in range(2):
        for k, profile in enumerate(("realsense2_camera", "sensor_data")):
            domain = domain_id + 4 * round_ + 2 * k
            fast = run_node(
                [f"world:={world}", "real_time:=false", "camera_rate_hz:=120.0"],
                warmup=2.0,
                seconds=seconds,
                domain_id=domain,
                interface=profile,
            )
            paced = run_node(
                [f"world:={world}", "real_time:=true"],
                warmup=2.0,
                seconds=seconds,
                domain_id=domain + 1,
                interface=profile,
            )
            entry = {"camera_fps": fast.get("camera_hz", 0.0), "latency_ms": paced.get("latency_ms", {})}
            if entry["camera_fps"] >= best.get(profile, {}).get("camera_fps", -1.0):
                best[profile] = entry
    default, best_effort = best["realsense2_camera"], best["sensor_data"]
    ratio = default["camera_fps"] / best_effort["camera_fps"] if best_effort["camera_fps"] else 0.0
    return {"realsense2_camera": default, "sensor_data": best_effort, "ratio": ratio, "target": 0.9}


def _print_profiles(e: dict[str, Any]) -> None:
    for profile in ("realsense2_camera", "sensor_data"):
        lat = e[profile]["latency_ms"]
        print(
            f"(e) {profile:18} camera {e[profile]['camera_fps']:.1f} frames/s, paced latency median "
            f"{lat.get('median', float('nan')):.1f} ms, p95 {lat.get('p95', float('nan')):.1f} ms"
        )


def _profiles_ratio(e: dict[str, Any]) -> Ratio:
    return Ratio(
        "(e) camera realsense2_camera / sensor_data",
        e["ratio"],
        e["target"],
        figures=(
            f"{e['realsense2_camera']['camera_fps']:.1f} / {e['sensor_data']['camera_fps']:.1f} frames/s"
        ),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks, print a table and write JSON to ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_out_option(parser)
    parser.add_argument("--world", default=WORLD, help="world id or folder (default %(default)s)")
    parser.add_argument("--seconds", type=float, default=6.0, help="measurement window per node run (s)")
    parser.add_argument("--profiles-only", action="store_true", help="run only (e), the interface profiles")
    parser.add_argument("--step-only", action="store_true", help="run only (a), SimWorld.step (seconds)")
    ns = parser.parse_args(argv)
    domain = 40 + os.getpid() % 50
    if ns.profiles_only:
        e = bench_profiles(ns.world, ns.seconds, domain)
        _print_profiles(e)
        print_ratios([_profiles_ratio(e)])
        out = {"world": ns.world, "e_interface_profiles": e, "ratios": [_profiles_ratio(e).as_dict()]}
        write_results(out, ns.out)
        return 0
    if ns.step_only:
        a = bench_step(ns.world)
        print_ratios([_step_ratio(a)])
        out = {"world": ns.world, "cpu_count": os.cpu_count(), "a_step_throughput": a}
        out["ratios"] = [_step_ratio(a).as_dict()]
        write_results(out, ns.out)
        return 0

    results: dict[str, Any] = {"world": ns.world, "cpu_count": os.cpu_count()}
    a = bench_step(ns.world)
    results["a_step_throughput"] = a
    # The bare baseline is measured right before and right after the node run and the faster one is used,
    # so load from other processes during one of them cannot flatter the ratio.
    bare_before = bench_bare_render(ns.world)
    world_arg = f"world:={ns.world}"
    cam_run = run_node(
        [world_arg, "real_time:=false", "camera_rate_hz:=120.0"],
        warmup=2.0,
        seconds=ns.seconds,
        domain_id=domain,
    )
    bare_after = bench_bare_render(ns.world)
    bare_fps = max(bare_before, bare_after)
    node_fps = cam_run.get("camera_hz", 0.0)
    results["b_camera_rate"] = {
        "bare_render_fps": bare_fps,
        "bare_render_fps_before_after": [bare_before, bare_after],
        "node_fps": node_fps,
        "ratio": node_fps / bare_fps,
        "target": 0.8,
        "run": cam_run,
    }
    off = run_node(
        [world_arg, "real_time:=false", "cameras_enabled:=false"],
        warmup=1.0,
        seconds=ns.seconds,
        domain_id=domain + 1,
    )
    on = run_node([world_arg, "real_time:=false"], warmup=2.0, seconds=ns.seconds, domain_id=domain + 2)
    paced = run_node([world_arg, "real_time:=true"], warmup=2.0, seconds=ns.seconds, domain_id=domain + 3)
    results["c_real_time_factor"] = {
        "cameras_off_fast": off.get("rtf", 0.0),
        "camera_15hz_fast": on.get("rtf", 0.0),
        "camera_15hz_paced": paced.get("rtf", 0.0),
        "target": 1.0,
        "runs": {"cameras_off_fast": off, "camera_15hz_fast": on, "camera_15hz_paced": paced},
    }
    results["d_image_latency_ms"] = paced.get("latency_ms", {})
    results["e_interface_profiles"] = bench_profiles(ns.world, ns.seconds, domain + 4)

    e = results["e_interface_profiles"]
    rtf_target = results["c_real_time_factor"]["target"]
    # A paced run cannot exceed ~1.0: the real-time factors count as met within 0.02 of their target.
    ratios = [
        _step_ratio(a),
        Ratio(
            "(b) node camera / bare render",
            node_fps / bare_fps,
            results["b_camera_rate"]["target"],
            figures=f"{node_fps:.1f} / {bare_fps:.1f} frames/s",
        ),
        Ratio(
            "(c) RTF, cameras off, fast",
            off.get("rtf", 0.0),
            rtf_target,
            tolerance=0.02,
            figures=f"js {off.get('joint_states_hz', 0):.0f} Hz (wall)",
        ),
        Ratio(
            "(c) RTF, camera 15 Hz, fast",
            on.get("rtf", 0.0),
            rtf_target,
            tolerance=0.02,
            figures=f"cam {on.get('camera_hz', 0):.1f} Hz (wall)",
        ),
        Ratio(
            "(c) RTF, camera 15 Hz, paced",
            paced.get("rtf", 0.0),
            rtf_target,
            tolerance=0.02,
            figures=f"js {paced.get('joint_states_hz', 0):.0f} Hz, cam {paced.get('camera_hz', 0):.1f} Hz",
        ),
        _profiles_ratio(e),
    ]
    lat = results["d_image_latency_ms"]
    if lat:
        print(
            f"(d) image latency stamp->receipt: median {lat['median']:.1f} ms, p95 {lat['p95']:.1f} ms "
            f"(n={lat['n']}, paced run)"
        )
    _print_profiles(e)
    print_ratios(ratios)
    results["ratios"] = [r.as_dict() for r in ratios]
    write_results(results, ns.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
