"""The sim under abuse: a flood of malformed commands, and a policy restarted again and again."""

from __future__ import annotations

import math
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy")

from r2s2r_sim.interface import load_interface  # noqa: E402
from r2s2r_sim.world.config import load_world_config  # noqa: E402
from r2s2r_sim.worlds import world_path  # noqa: E402
from ros_probe import RosProbe, open_probe, wait_for  # noqa: E402

pytestmark = pytest.mark.integration
HERE = Path(__file__).resolve().parent


@pytest.fixture
def probe(ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[RosProbe]:
    yield from open_probe(lambda d: RosProbe(d, "fault_probe", load_interface()), ros_env, monkeypatch)


def _lines(proc: subprocess.Popen[str], until: re.Pattern[str], timeout: float, what: str) -> list[str]:
    """Read ``proc``'s output up to the first line matching ``until``."""
    got: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"process exited before {what}:\n" + "".join(got[-40:]))
        got.append(line)
        if until.search(line):
            return got
    raise AssertionError(f"no {what} within {timeout} s:\n" + "".join(got[-40:]))


def test_flood_of_malformed_commands_is_refused_with_throttled_warnings(processes, probe: RosProbe) -> None:  # type: ignore[no-untyped-def]
    from std_msgs.msg import Float64MultiArray

    sim = processes.start(
        [
            "sim_node",
            "--ros-args",
            "-p",
            "real_time:=true",
            "-p",
            "cameras_enabled:=false",
            "-p",
            "lockstep:=false",
        ]
    )
    _lines(sim, re.compile(r"world tabletop-pick-v1"), 120, "the sim's start line")
    iface = load_interface()
    clock = probe.record("clock", keep=10)
    n_arm = len(load_world_config(world_path("tabletop-pick-v1")).robot.arm_joints)
    topic = iface.topic("arm_command")
    pub = probe.node.create_publisher(Float64MultiArray, topic, 10)
    wait_for(
        lambda: pub.get_subscription_count() > 0 and probe.msgs(clock), 60, f"the sim on {topic} and /clock"
    )

    def sim_time() -> float:
        stamp = probe.msgs(clock)[-1][1].clock
        return stamp.sec + stamp.nanosec * 1e-9

    # Baseline in the same run: the real-time factor over as long a window without the flood.
    b_sim0, b0 = sim_time(), time.monotonic()
    time.sleep(3.0)  # a measurement window, not a wait for an event
    baseline = (sim_time() - b_sim0) / (time.monotonic() - b0)
    bad = [Float64MultiArray(data=[math.nan] * n_arm), Float64MultiArray(data=[0.0] * (n_arm + 3))]
    t_sim0, t0 = sim_time(), time.monotonic()
    sent, period, next_at = 0, 1e-4, time.perf_counter()  # up to 10 kHz
    while time.monotonic() - t0 < 3.0:
        pub.publish(bad[sent % 2])
        sent += 1
        next_at += period
        while time.perf_counter() < next_at:
            pass
    flood_s = time.monotonic() - t0
    wait_for(lambda: sim_time() > t_sim0 + 0.5, 60, "/clock to go on after the flood")
    rtf = (sim_time() - t_sim0) / (time.monotonic() - t0)
    print(
        f"flood: {sent} malformed commands in {flood_s:.2f} s ({sent / flood_s:.0f} Hz); "
        f"real-time factor over the flood and after it {rtf:.2f} (without flood {baseline:.2f})"
    )
    sim.send_signal(signal.SIGINT)
    out, _ = sim.communicate(timeout=60)
    assert sim.returncode == 0, out
    refused = [line for line in out.splitlines() if "refused arm command" in line]
    assert refused, out[-3000:]
    # Each line names what was wrong (a NaN or the wrong number of values), whichever message it saw first.
    assert all(re.search(r"must have \d+ values|finite|nan", line, re.I) for line in refused), refused[:5]
    # Throttled: one line per second per call site at most (plus the first), not one per message.
    wall = time.monotonic() - t0
    assert len(refused) <= wall + 2, (len(refused), wall)


def test_sim_keeps_serving_while_a_policy_is_restarted_20_times(processes, ros_env: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    env = dict(ros_env)
    env["PYTHONPATH"] = f"{HERE}:{env.get('PYTHONPATH', '')}"
    processes.env = env
    sim = processes.start(
        [
            "sim_node",
            "--ros-args",
            "-p",
            "lockstep:=true",
            "-p",
            "cameras_enabled:=false",
            "-p",
            "ack_timeout_s:=0.0",
        ]
    )
    _lines(sim, re.compile(r"world tabletop-pick-v1"), 120, "the sim's start line")
    for i in range(20):
        policy = processes.start(
            [
                "policy_node",
                "--ros-args",
                "-p",
                "use_sim_time:=true",
                "-p",
                "policy:=fault_policies:HoldPolicy",
            ]
        )
        _lines(policy, re.compile(r"hold policy: acting in episode 0"), 180, f"policy {i} acting")
        # Half leave cleanly (SIGINT), half die (SIGKILL): both must leave the sim serving.
        if i % 2:
            policy.kill()
        else:
            policy.send_signal(signal.SIGINT)
        policy.communicate(timeout=60)
        assert sim.poll() is None, f"sim exited after policy {i}"
    sim.send_signal(signal.SIGINT)
    out, _ = sim.communicate(timeout=60)
    assert sim.returncode == 0, out[-3000:]
