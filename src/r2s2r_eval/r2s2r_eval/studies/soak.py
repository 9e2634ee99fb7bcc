"""Soak test: run the world graph for a long time and sample what drifts (``make soak``).

Runs the shipped graph (``r2s2r launch world``) with an endless episode count, in sim (lockstep episodes) and
in real mode with the emulated hardware (on the wall clock), one after the other, and every ``--interval``
seconds samples each node's RSS and CPU (psutil), the rates of the interface's low-volume topics, lockstep
waits, lost-policy and watchdog events (from the nodes' log lines) and the episodes stored so far. Samples
and a summary (memory growth per hour, stalls, success and episode rate over time) go to ``out/soak.json``,
rewritten atomically after every sample.

Resumable: run it again with the same ``--out`` and it continues where it stopped, per mode, until each has
run ``--minutes``; the evaluator itself resumes at the next unfinished seed of its results store.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from r2s2r_sim.interface import load_interface
from r2s2r_sim.progress import Progress
from r2s2r_sim.ros.dds import DOMAIN_IDS, claim_domain

from r2s2r_eval.episodes.results import ResultsStore

__all__ = ["main", "summarize"]

MODES = {
    # Lockstep episodes end at the task's sim-time limit; the wall limit only guards (slow CPU rendering).
    "sim": ["mode:=sim", "lockstep:=true", "episode_timeout_s:=1800.0"],
    "real": ["mode:=real", "emulate_hardware:=true"],
}
TOPICS = ("joint_states", "clock", "policy_heartbeat", "episode_outcome")
# Log lines counted as events (per node output prefix).
EVENTS = {
    "lockstep_wait": re.compile(r"lockstep: waiting for the policy"),
    "policy_lost": re.compile(r"the policy is lost|policy lost|policy_lost:"),
    "watchdog_hold": re.compile(r"watchdog: holding"),
    "physics_behind": re.compile(r"behind real time"),
    "frames_dropped": re.compile(r"renderer busy: dropped"),
    "error": re.compile(r"\[(ERROR|FATAL)\]"),
    "respawn": re.compile(r"respawned "),
    "died": re.compile(r"process has died"),
}
STALL_S = 30.0  # no acknowledgement and no stored episode for this long (wall) counts as a stall


class _Rates:
    """Counts messages per topic in a private rclpy context (its own thread)."""

    def __init__(self, domain: int) -> None:
        import rclpy

        # reason: r2s2r_sim.ros.qos imports rclpy, and this module stays ROS-free until the probe starts
        from r2s2r_sim.ros.qos import interface_class, qos_profile
        from rclpy.executors import SingleThreadedExecutor

        self._rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(
            context=self.context, domain_id=domain, signal_handler_options=rclpy.SignalHandlerOptions.NO
        )
        self.node = rclpy.create_node("soak_probe", context=self.context)
        iface = load_interface()
        self.counts: Counter[str] = Counter()
        self.last_seen: dict[str, float] = {}
        self._lock = threading.Lock()
        for key in TOPICS:
            spec = iface.topic_spec(key)

            def cb(_msg: Any, key: str = key) -> None:
                with self._lock:
                    self.counts[key] += 1
                    self.last_seen[key] = time.monotonic()

            self.node.create_subscription(
                interface_class(spec.type), iface.topic(key), cb, qos_profile(spec.qos)
            )
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.2)
            except Exception:  # the context went down under us: stop sampling
                return

    def take(self) -> tuple[dict[str, int], dict[str, float]]:
        """Counts since the last call, and when each topic was last seen (monotonic s)."""
        with self._lock:
            counts, self.counts = dict(self.counts), Counter()
            return counts, dict(self.last_seen)

    def close(self) -> None:
        """Shut the probe's context down."""
        self.executor.shutdown(timeout_sec=2.0)
        self.node.destroy_node()
        self._rclpy.try_shutdown(context=self.context)


@dataclass
class _Run:
    """One mode's graph process, its output and event counters."""

    proc: subprocess.Popen[str]
    events: Counter[str] = field(default_factory=Counter)
    tail: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def pump(self, log: Path) -> None:
        assert self.proc.stdout is not None
        with log.open("a") as f:
            for line in self.proc.stdout:
                f.write(line)
                with self.lock:
                    for name, pattern in EVENTS.items():
                        if pattern.search(line):
                            self.events[name] += 1
                    self.tail = (self.tail + [line.rstrip()])[-20:]

    def take_events(self) -> dict[str, int]:
        with self.lock:
            events, self.events = dict(self.events), Counter()
            return events


def _node_name(proc: psutil.Process) -> str:
    cmd = proc.cmdline()
    for arg in cmd:
        if arg.startswith("__node:="):
            return arg.split(":=", 1)[1]
    return Path(cmd[1] if len(cmd) > 1 else cmd[0]).name


def _sample_processes(
    root: psutil.Process, cpu_prev: dict[int, float], dt: float
) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for proc in root.children(recursive=True):
        try:
            with proc.oneshot():
                name = _node_name(proc)
                times = proc.cpu_times()
                used = times.user + times.system
                rss = proc.memory_info().rss
                threads = proc.num_threads()
        except psutil.Error:
            continue
        cpu = (used - cpu_prev[proc.pid]) / dt * 100.0 if proc.pid in cpu_prev and dt > 0 else float("nan")
        cpu_prev[proc.pid] = used
        out[name] = {"pid": proc.pid, "rss_mb": rss / 2**20, "cpu_percent": cpu, "threads": threads}
    return out


def _episodes(db: Path) -> tuple[int, int]:
    if not db.exists():
        return 0, 0
    with ResultsStore(db) as store:
        rows = list(store.rows())
    return len(rows), sum(r.success for r in rows)


def _slope_per_hour(t: Sequence[float], y: Sequence[float]) -> float:
    if len(t) < 3 or t[-1] - t[0] <= 0:
        return float("nan")
    return float(np.polyfit(np.asarray(t) / 3600.0, np.asarray(y), 1)[0])


def summarize(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Per mode: duration, memory growth per hour of each node, CPU, topic rates, stalls, episodes over time.

    Memory growth is the least-squares slope of RSS over the samples after the first tenth of the run
    (warm-up: imports, first renders), in MB/h and in % per hour of the RSS at the start of that window.
    """
    summary: dict[str, Any] = {}
    for mode in MODES:
        s = [x for x in samples if x["mode"] == mode]
        if not s:
            continue
        t = [x["t_mode_s"] for x in s]
        warm = [x for x in s if x["t_mode_s"] >= t[-1] * 0.1] or s
        nodes: dict[str, Any] = {}
        for name in sorted({n for x in s for n in x["nodes"]}):
            pts = [(x["t_mode_s"], x["nodes"][name]) for x in warm if name in x["nodes"]]
            if len(pts) < 2:
                continue
            rss = [p[1]["rss_mb"] for p in pts]
            cpu = [p[1]["cpu_percent"] for p in pts if np.isfinite(p[1]["cpu_percent"])]
            slope = _slope_per_hour([p[0] for p in pts], rss)
            nodes[name] = {
                "rss_mb_start": rss[0],
                "rss_mb_end": rss[-1],
                "rss_mb_max": max(rss),
                "rss_growth_mb_per_h": slope,
                "rss_growth_percent_per_h": 100.0 * slope / rss[0] if rss[0] else float("nan"),
                "cpu_percent_mean": float(np.mean(cpu)) if cpu else float("nan"),
                "restarts": len({p[1]["pid"] for p in pts}) - 1,
            }
        rates = {
            topic: {
                "mean_hz": float(np.mean([x["rates_hz"].get(topic, 0.0) for x in s])),
                "min_hz": float(np.min([x["rates_hz"].get(topic, 0.0) for x in s])),
            }
            for topic in TOPICS
        }
        events: Counter[str] = Counter()
        for x in s:
            events.update(x["events"])
        episodes = [x["episodes"] for x in s]
        quarters = []
        for q in range(4):
            lo, hi = t[-1] * q / 4, t[-1] * (q + 1) / 4
            inq = [x for x in s if lo <= x["t_mode_s"] <= hi]
            if len(inq) >= 2:
                n = inq[-1]["episodes"] - inq[0]["episodes"]
                ok = inq[-1]["successes"] - inq[0]["successes"]
                span = inq[-1]["t_mode_s"] - inq[0]["t_mode_s"]
                quarters.append(
                    {
                        "from_s": lo,
                        "to_s": hi,
                        "episodes": n,
                        "success_rate": ok / n if n else None,
                        "episodes_per_h": 3600.0 * n / span if span > 0 else None,
                    }
                )
        summary[mode] = {
            "duration_s": t[-1],
            "samples": len(s),
            "nodes": nodes,
            "topic_rates": rates,
            "events": dict(events),
            "stalls": sum(1 for x in s if x.get("stalled")),
            "episodes": episodes[-1] - episodes[0] if len(episodes) > 1 else 0,
            "episodes_total_in_store": episodes[-1],
            "success_rate": (
                (s[-1]["successes"] - s[0]["successes"]) / (episodes[-1] - episodes[0])
                if episodes[-1] > episodes[0]
                else None
            ),
            "over_time": quarters,
        }
    return summary


def _write(path: Path, doc: dict[str, Any]) -> None:
    doc["summary"] = summarize(doc["samples"])
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, allow_nan=True))
    os.replace(tmp, path)


def _run_mode(
    mode: str, seconds: float, doc: dict[str, Any], args: argparse.Namespace, stop: threading.Event
) -> None:
    out: Path = args.out
    db = out.parent / f"soak_{mode}.sqlite"
    domain = args.domains[mode]  # held by main for the whole run
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    cmd = ["r2s2r", "launch", "world", *MODES[mode], "episodes:=1000000", f"results:={db}"]
    proc = subprocess.Popen(  # list arguments
        cmd,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    run = _Run(proc)
    threading.Thread(target=run.pump, args=(out.parent / f"soak_{mode}.log",), daemon=True).start()
    rates = _Rates(domain)
    root = psutil.Process(proc.pid)
    cpu_prev: dict[int, float] = {}
    done_before = max((x["t_mode_s"] for x in doc["samples"] if x["mode"] == mode), default=0.0)
    started = time.monotonic()
    last = started
    last_progress = started
    last_episodes = _episodes(db)[0]
    print(f"soak: {mode}: {cmd!r}, {seconds:.0f} s to go ({done_before:.0f} s done before)", flush=True)
    total = int(round(done_before + seconds))
    bar = Progress(total, f"soak {mode}", "s", initial=int(done_before), quiet=args.quiet)
    try:
        while not stop.wait(args.interval):
            now = time.monotonic()
            dt, last = now - last, now
            counts, seen = rates.take()
            n, ok = _episodes(db)
            if n > last_episodes or counts.get("policy_heartbeat", 0) > 0:
                last_progress = now
            last_episodes = n
            sample = {
                "mode": mode,
                "wall_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "t_mode_s": done_before + now - started,
                "nodes": _sample_processes(root, cpu_prev, dt),
                "rates_hz": {k: v / dt for k, v in counts.items()},
                "events": run.take_events(),
                "episodes": n,
                "successes": ok,
                "stalled": now - last_progress > STALL_S,
                "load_avg_1m": os.getloadavg()[0],
            }
            doc["samples"].append(sample)
            _write(out, doc)
            bar.set(min(total, int(sample["t_mode_s"])), episodes=n, stalled=sample["stalled"])
            if proc.poll() is not None:
                doc.setdefault("notes", []).append(
                    f"{mode}: graph exited with {proc.returncode} at {sample['t_mode_s']:.0f} s: "
                    f"{run.tail[-5:]}"
                )
                _write(out, doc)
                break
            if now - started >= seconds:
                break
    finally:
        bar.close()
        rates.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def main(argv: Sequence[str] | None = None) -> int:
    """Run (or continue) the soak; returns 0, or 1 if a graph exited on its own."""
    parser = argparse.ArgumentParser(
        prog="python -m r2s2r_eval.studies.soak", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--minutes", type=float, default=60.0, help="wall minutes per mode (total, resumed)")
    parser.add_argument("--modes", default="sim,real", help="comma-separated: sim, real")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--out", type=Path, default=Path("out/soak.json"))
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument(
        "--domain",
        type=int,
        default=42,
        choices=DOMAIN_IDS,
        metavar=f"[{DOMAIN_IDS.start}-{DOMAIN_IDS.stop - 1}]",
        help="ROS_DOMAIN_ID of the first mode's graph; each further mode takes the next one",
    )
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"--modes: unknown {unknown}; allowed: {', '.join(MODES)}")
    # Each mode's graph gets a DDS domain of its own, held for the run, so a sim soak and a real soak (or a
    # test or study started meanwhile) never see each other's nodes.
    locks = []
    for i, mode in enumerate(modes):
        try:
            locks.append(claim_domain(args.domain + i))
        except ValueError as err:
            parser.error(f"--domain: {mode}: {err}")
    args.domains = {mode: lock.domain for mode, lock in zip(modes, locks, strict=True)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {"samples": []}
    if args.out.exists():
        doc = json.loads(args.out.read_text())
        print(f"soak: continuing {args.out} ({len(doc['samples'])} samples)", flush=True)
    doc.setdefault("runs", []).append(
        {
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "minutes_per_mode": args.minutes,
            "modes": modes,
            "interval_s": args.interval,
        }
    )
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    failed = False
    for mode in modes:
        done = max((x["t_mode_s"] for x in doc["samples"] if x["mode"] == mode), default=0.0)
        left = args.minutes * 60.0 - done
        if left <= 0 or stop.is_set():
            continue
        _run_mode(mode, left, doc, args, stop)
        failed |= any(n.startswith(f"{mode}:") for n in doc.get("notes", []))
    _write(args.out, doc)
    print(json.dumps(doc["summary"], indent=1), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
