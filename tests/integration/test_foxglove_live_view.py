"""The live view: a Foxglove WebSocket client connects to foxglove_node beside a running sim node.

The client speaks the Foxglove WebSocket protocol (JSON ``advertise``/``subscribe``, binary message data)
with the `websockets` library, as the Foxglove app does, and decodes the CDR payloads with rosbags.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed; run `make setup`")
pytest.importorskip("foxglove", reason="foxglove-sdk is not installed; run `make setup`")
sync_client = pytest.importorskip("websockets.sync.client", reason="websockets is not installed")

from rosbags.typesys import Stores, get_typestore  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
STARTUP_S = 90.0
# foxglove-sdk's server speaks foxglove.sdk.v1, the successor of foxglove.websocket.v1 with the same framing.
PROTOCOLS = ["foxglove.sdk.v1", "foxglove.websocket.v1"]
MESSAGE_DATA = 0x01  # binary opcode of a message on a subscription


def _drain(proc: Any) -> list[str]:
    lines: list[str] = []

    def read() -> None:
        lines.extend(line.rstrip() for line in proc.stdout)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _wait_port(lines: list[str], proc: Any) -> int:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        for line in lines:
            found = re.search(r"Foxglove WebSocket server on ws://127\.0\.0\.1:(\d+)", line)
            if found:
                return int(found.group(1))
        assert proc.poll() is None, "\n".join(lines)
        time.sleep(0.05)
    raise AssertionError("foxglove_node never reported its port:\n" + "\n".join(lines))


def test_foxglove_client_receives_an_image_transforms_and_the_robot(processes: Any) -> None:
    sim = processes.start(
        [
            "sim_node",
            "--ros-args",
            "--params-file",
            str(REPO / "config" / "sim_node.yaml"),
            "-p",
            "real_time:=true",
        ]
    )
    sim_log = _drain(sim)
    view = processes.start(
        [sys.executable, "-m", "r2s2r_sim.ros.foxglove_node", "--ros-args", "-p", "port:=0"]
    )
    view_log = _drain(view)
    port = _wait_port(view_log, view)
    typestore = get_typestore(Stores.ROS2_JAZZY)
    wanted = {"/camera/camera/color/image_raw", "/tf", "/tf_static", "/robot_description", "/joint_states"}
    got: dict[str, Any] = {}
    with sync_client.connect(f"ws://127.0.0.1:{port}", subprotocols=PROTOCOLS, max_size=None) as ws:
        assert ws.subprotocol in PROTOCOLS
        channels: dict[int, dict[str, Any]] = {}
        subscriptions: dict[int, dict[str, Any]] = {}
        deadline = time.monotonic() + STARTUP_S
        while set(got) != wanted:
            seen = sorted(c["topic"] for c in channels.values())
            assert time.monotonic() < deadline, (
                f"got {sorted(got)} of {sorted(wanted)}; channels {seen}\n"
                + "\n".join(view_log[-20:] + sim_log[-20:])
            )
            frame = ws.recv(timeout=deadline - time.monotonic())
            if isinstance(frame, str):
                op = json.loads(frame)
                if op["op"] == "advertise":
                    new = [c for c in op["channels"] if c["topic"] in wanted]
                    for channel in new:
                        channels[channel["id"]] = channel
                        subscriptions[len(subscriptions) + 1] = channel
                    ws.send(
                        json.dumps(
                            {
                                "op": "subscribe",
                                "subscriptions": [
                                    {"id": sid, "channelId": c["id"]}
                                    for sid, c in subscriptions.items()
                                    if c in new
                                ],
                            }
                        )
                    )
                continue
            assert frame[0] == MESSAGE_DATA
            sid, _receive_ns = struct.unpack_from("<IQ", frame, 1)
            channel = subscriptions[sid]
            assert (channel["encoding"], channel["schemaEncoding"]) == ("cdr", "ros2msg")
            got[channel["topic"]] = typestore.deserialize_cdr(frame[13:], channel["schemaName"])
    image = got["/camera/camera/color/image_raw"]
    assert (image.encoding, image.width, image.height) == ("rgb8", 640, 480)
    assert len(image.data) == 640 * 480 * 3
    assert image.header.frame_id == "camera_color_optical_frame" and image.data.std() > 1.0
    moving = {t.child_frame_id for t in got["/tf"].transforms}
    fixed = {t.child_frame_id for t in got["/tf_static"].transforms}
    assert "shoulder_link" in moving and {"base_link", "camera_link", "camera_color_optical_frame"} <= fixed
    description = got["/robot_description"].data
    assert "<robot" in description and 'name="shoulder_pan"' in description
    assert list(got["/joint_states"].name)[:1] == ["shoulder_pan"]
    view.send_signal(2)
    assert view.wait(timeout=60) == 0, "\n".join(view_log)


def _refused(processes: Any, port: int) -> str:
    args = [sys.executable, "-m", "r2s2r_sim.ros.foxglove_node", "--ros-args", "-p", f"port:={port}"]
    proc = processes.start(args)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 1, out
    return out


def test_foxglove_node_refuses_a_port_out_of_range_or_taken(processes: Any) -> None:
    assert re.search(r"parameter port: .*out of range", _refused(processes, 70000))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = _refused(processes, port)
    assert f"parameter port: cannot listen on 127.0.0.1:{port}" in out, out
