"""What nodes print around an episode and on the way out: episode numbers as the evaluator's, and no
"Failed to publish log message to rosout" after a Ctrl-C (the context, and /rosout with it, is gone)."""

from __future__ import annotations

import signal
import subprocess
import threading
from typing import Any

import pytest
from r2s2r_sim.interface import load_interface
from r2s2r_sim.ros.qos import interface_class
from ros_probe import RosProbe, open_probe, wait_for

pytestmark = pytest.mark.integration  # real node processes over DDS

ROSOUT_FAILURE = "Failed to publish log message"


def _read_lines(proc: subprocess.Popen[str]) -> tuple[list[str], threading.Thread]:
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
    reader.start()
    return lines, reader


def _interrupt(proc: subprocess.Popen[str], reader: threading.Thread, lines: list[str]) -> str:
    """SIGINT ``proc`` as a launcher does, wait for its exit and return everything it printed."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60.0)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running 60 s after SIGINT:\n{''.join(lines)}")
    reader.join(timeout=10.0)
    out = "".join(lines)
    assert proc.returncode == 0, (proc.returncode, out)
    return out


@pytest.fixture
def probe(ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    yield from open_probe(lambda d: RosProbe(d, "exit_log_probe", load_interface()), ros_env, monkeypatch)


def test_sim_node_logs_its_frame_counts_on_sigint_without_a_rosout_failure(
    processes: Any, probe: Any
) -> None:
    images = probe.record("color_image", "camera", headers_only=True)
    proc = processes.start(["sim_node", "--ros-args", "-p", "lockstep:=false"])
    lines, reader = _read_lines(proc)
    wait_for(lambda: probe.msgs(images), 120.0, "a camera frame from sim_node")  # frames to count at exit
    out = _interrupt(proc, reader, lines)
    assert "camera frames: " in out and ROSOUT_FAILURE not in out, out


def test_policy_node_numbers_episodes_from_its_seed_as_the_evaluator_does(processes: Any, probe: Any) -> None:
    proc = processes.start(["policy_node", "--ros-args", "-p", "seed:=5", "-p", "autostart:=true"])
    lines, reader = _read_lines(proc)
    srv = interface_class(probe.iface.service_spec("reset_episode").type)
    # The evaluator with seed0 5 resets its episode i with seed 5 + i.
    for seed, index in ((7, 2), (5, 0)):
        response = probe.call_service(
            srv, "/policy_node/reset_episode", srv.Request(variation_seed=seed), 120.0
        )
        assert response.success and response.message == f"episode {index} started with seed {seed}"
    out = _interrupt(proc, reader, lines)
    assert ROSOUT_FAILURE not in out, out
