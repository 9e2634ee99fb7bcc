"""The nodes' spin loop ends after a signal even when rclpy wakes the executor before the shutdown.

rclpy's signal thread triggers the executors' SIGINT guard conditions and only then shuts the contexts
down (without the Python ``on_shutdown`` callbacks). A plain ``executor.spin()`` that wakes in between
waits again with no timeout and, in a node without timers or incoming messages (sim_node), never
returns: the "no exit after Ctrl-C" hang. The test replays that order deterministically.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import rclpy
from r2s2r_sim.interface import load_interface
from r2s2r_sim.ros.params import spin_until_shutdown
from r2s2r_sim.ros.qos import interface_class, qos_profile
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from ros_probe import RosProbe, open_probe, wait_for

pytestmark = pytest.mark.integration  # real node processes over DDS


@pytest.mark.parametrize("executor_type", [MultiThreadedExecutor, SingleThreadedExecutor])
def test_spin_ends_when_the_signal_wakes_the_executor_before_the_shutdown(
    ros_env: dict[str, str], executor_type: Any
) -> None:
    context = Context()
    rclpy.init(
        context=context,
        domain_id=int(ros_env["ROS_DOMAIN_ID"]),
        signal_handler_options=rclpy.SignalHandlerOptions.NO,
    )
    node = Node("shutdown_race", context=context)
    executor = executor_type(context=context)
    executor.add_node(node)
    spinner = threading.Thread(target=spin_until_shutdown, args=(executor,), daemon=True)
    try:
        spinner.start()
        time.sleep(0.3)
        executor._sigint_gc.trigger()  # what rclpy's signal thread does first ...
        time.sleep(0.5)  # ... the executor wakes, finds the context valid and waits again ...
        with context.handle:
            context.handle.shutdown()  # ... then rclpy::shutdown_contexts(): no on_shutdown callbacks
        spinner.join(timeout=5.0)
        assert not spinner.is_alive(), "spin_until_shutdown still waiting after the context shut down"
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)


# ------------------------------------------------------------------------- SIGINT inherited as ignored

NODE_MODULES = [
    "r2s2r_sim/r2s2r_sim/ros/sim_node.py",
    "r2s2r_sim/r2s2r_sim/ros/emulated_hardware_node.py",
    "r2s2r_eval/r2s2r_eval/nodes/policy_node.py",
    "r2s2r_eval/r2s2r_eval/nodes/evaluator_node.py",
    "r2s2r_capture/r2s2r_capture/ros/recorder_node.py",
    "r2s2r_capture/r2s2r_capture/ros/player_node.py",
]


@pytest.mark.parametrize("module", NODE_MODULES)
def test_every_node_module_restores_sigint_before_its_other_imports(module: str) -> None:
    import ast
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src" / module
    imports = [n for n in ast.parse(src.read_text()).body if isinstance(n, ast.Import | ast.ImportFrom)]
    first = [n for n in imports if not (isinstance(n, ast.ImportFrom) and n.module == "__future__")][0]
    assert isinstance(first, ast.Import) and first.names[0].name == "r2s2r_sim.ros.interrupts", src


def _ignoring_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _sigint_caught(pid: int) -> bool:
    from pathlib import Path

    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << 1))  # bit 1: signal 2
    return False


def test_sim_node_started_with_sigint_ignored_stops_on_a_sigint_during_start_up(
    ros_env: dict[str, str],
) -> None:
    """A shell's background job starts with SIGINT ignored; a SIGINT before rclpy.init must still stop it."""
    import shutil
    import signal
    import subprocess

    exe = shutil.which("sim_node", path=ros_env.get("PATH"))
    assert exe is not None
    proc = subprocess.Popen(  # list arguments
        [exe, "--ros-args", "-p", "lockstep:=true", "-p", "cameras_enabled:=false"],
        env=ros_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_ignoring_sigint,
    )
    try:
        deadline = time.monotonic() + 60.0
        while not _sigint_caught(proc.pid):
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "sim_node never caught SIGINT within 60 s"
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=60.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            pytest.fail(f"sim_node still running 60 s after SIGINT during start-up:\n{out}")
        # It stopped in its imports (KeyboardInterrupt), before rclpy installed its own handler.
        assert proc.returncode == -signal.SIGINT and "KeyboardInterrupt" in out, (proc.returncode, out)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------- SIGINT while the policy node spins


def _feed_joint_states(probe: RosProbe, stop: threading.Event) -> None:
    """Publish joint states at about 500 Hz: the node is nearly always taking one when a signal lands."""
    spec = probe.iface.topic_spec("joint_states")
    pub = probe.node.create_publisher(
        interface_class(spec.type), probe.iface.topic("joint_states"), qos_profile(spec.qos)
    )
    msg = interface_class(spec.type)(name=["shoulder_pan"], position=[0.0])
    while not stop.is_set() and probe.context.ok():
        msg.header.stamp = probe.node.get_clock().now().to_msg()
        pub.publish(msg)
        stop.wait(0.002)  # pacing (about 500 Hz), not a wait for anything


@pytest.mark.parametrize("signals", [1, 2, 5])
def test_policy_node_exits_0_without_traceback_on_sigint(
    processes: Any, ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, signals: int
) -> None:
    """SIGINT once the node spins: one (the launcher's), two or a burst.

    Two reach a node when a terminal's Ctrl-C goes to the launcher and the node, which the launcher then
    signals. Spinning, the node takes joint states: Python's ``KeyboardInterrupt`` inside rclpy's pybind11
    ``take_message`` came out as ``RuntimeError`` (exit 1), and a second one in ``destroy_node`` (exit -2).
    """
    import signal
    import subprocess

    probe_gen = open_probe(lambda d: RosProbe(d, "sigint_probe", load_interface()), ros_env, monkeypatch)
    probe = next(probe_gen)
    stop = threading.Event()
    feeder = threading.Thread(target=_feed_joint_states, args=(probe, stop), daemon=True)
    try:
        started = threading.Event()
        proc = processes.start(["policy_node", "--ros-args", "-p", "autostart:=true"])
        lines: list[str] = []

        def read() -> None:
            for line in proc.stdout:
                lines.append(line)
                if "autostart seed" in line:  # constructed: it spins next
                    started.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        feeder.start()
        assert started.wait(timeout=120.0), f"policy_node did not start within 120 s:\n{''.join(lines)}"
        # The joint-state subscription matched the feeder: the node is taking messages.
        wait_for(
            lambda: probe.node.count_subscribers(probe.iface.topic("joint_states")) > 0,
            60.0,
            "policy_node's joint_states subscription",
        )
        for _ in range(signals):
            if proc.poll() is not None:
                break
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=0.02)  # the next signal lands wherever the shutdown has got to
            except subprocess.TimeoutExpired:
                pass
        try:
            proc.wait(timeout=60.0)
        except subprocess.TimeoutExpired:
            pytest.fail(f"policy_node still running 60 s after SIGINT:\n{''.join(lines)}")
        reader.join(timeout=10.0)
        out = "".join(lines)
        assert proc.returncode == 0 and "Traceback" not in out, (proc.returncode, out)
    finally:
        stop.set()
        feeder.join(timeout=5.0)
        next(probe_gen, None)
