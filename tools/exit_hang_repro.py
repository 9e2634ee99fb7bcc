"""Stress the Ctrl-C exit path: SIGINT a node (or the graph) at random moments; dump the stacks of a hang.

Every process still alive a bound after the SIGINT gets the stack of every thread dumped (py-spy, with
native frames), then SIGKILL.

Usage (from a sourced environment)::

    python tools/exit_hang_repro.py --runs 40 --target sim_node --out out/hang
    python tools/exit_hang_repro.py --runs 20 --target graph --out out/hang

Each run gets its own ROS_DOMAIN_ID; a summary line per run and ``out/hang/run-N.txt`` (output + stacks of
a hung run) are written. Exit status: 1 if any run hung.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

TARGETS = {
    "sim_node": ["sim_node", "--ros-args", "-p", "lockstep:=true"],
    "sim_node_free": ["sim_node"],
    "policy_node": ["policy_node", "--ros-args", "-p", "use_sim_time:=true"],
    "graph": ["r2s2r", "launch", "world", "mode:=sim", "episodes:=3"],
}


def _dump(pid: int) -> str:
    spy = shutil.which("py-spy")
    if spy is None:
        return "(py-spy not installed)"
    try:
        res = subprocess.run(  # list arguments
            [spy, "dump", "--native", "--pid", str(pid)], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        return "(py-spy timed out)"
    return res.stdout + res.stderr


def run_once(index: int, args: argparse.Namespace, out: Path) -> bool:
    """Start, interrupt and watch one process tree; returns whether it hung."""
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str(args.domain)
    env["PYTHONUNBUFFERED"] = "1"
    cmd = list(TARGETS[args.target])
    if args.target == "graph":
        cmd.append(f"results:={tempfile.mkdtemp(prefix='hang_')}/r.sqlite")
    log = (out / f"run-{index}.log").open("w")
    # A shell's background jobs (`cmd &`, nohup, many CI runners) start with SIGINT ignored; a terminal's
    # foreground job with SIGINT at its default. Reproduce the one asked for, whatever ours is.
    disposition = signal.SIG_IGN if args.sigint_ignored else signal.SIG_DFL
    proc = subprocess.Popen(  # list arguments
        cmd,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, disposition),
    )
    delay = random.uniform(args.min_delay, args.max_delay)
    time.sleep(delay)
    tree = [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    try:
        proc.wait(timeout=args.hang_after)
        hung: list[int] = []
    except subprocess.TimeoutExpired:
        hung = [p for p in tree if psutil.pid_exists(p)]
    if args.target != "graph":
        hung = hung if proc.poll() is None else []
    else:
        # Children the launcher is still waiting on count as hung too.
        alive = [p for p in tree if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
        hung = alive if hung else []
    took = time.monotonic() - t0
    report = out / f"run-{index}.txt"
    if hung:
        with report.open("w") as f:
            for pid in hung:
                try:
                    name = " ".join(psutil.Process(pid).cmdline()[:3])
                except psutil.Error:
                    name = "?"
                f.write(f"==== pid {pid} ({name}) alive {took:.1f} s after SIGINT\n{_dump(pid)}\n")
        for pid in hung:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    proc.wait()
    log.close()
    print(
        f"run {index}: SIGINT after {delay:.2f} s -> "
        + (
            f"HUNG ({len(hung)} processes, stacks in {report})"
            if hung
            else f"exit {proc.returncode} in {took:.2f} s"
        ),
        flush=True,
    )
    return bool(hung)


def main() -> int:
    """Run ``--runs`` tries; exit 1 if any hung."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--target", choices=sorted(TARGETS), default="sim_node")
    parser.add_argument("--min-delay", type=float, default=0.3)
    parser.add_argument("--max-delay", type=float, default=8.0)
    parser.add_argument("--hang-after", type=float, default=8.0, help="s after SIGINT that count as a hang")
    parser.add_argument("--domain", type=int, default=88)
    parser.add_argument(
        "--sigint-ignored",
        action="store_true",
        help="start the process with SIGINT ignored, as a shell's background job is",
    )
    parser.add_argument("--out", type=Path, default=Path("out/hang"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    hangs = sum(run_once(i, args, args.out) for i in range(args.runs))
    print(f"{hangs} of {args.runs} runs hung")
    return 1 if hangs else 0


if __name__ == "__main__":
    sys.exit(main())
