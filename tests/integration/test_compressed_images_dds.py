"""Compressed images over real DDS: the sim node publishes image_transport's compressed topics; the policy
node, with ``image_transport: compressed``, acts on them alone; the recorder records them and real2sim's
frame reader decodes them from the bag."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed; run `make setup`")

from r2s2r_capture.bags.reader import BagReader  # noqa: E402
from r2s2r_capture.real2sim.frames import camera_topics, image_array  # noqa: E402
from r2s2r_sim.interface import load_interface  # noqa: E402
from r2s2r_sim.ros import conversions as rc  # noqa: E402
from r2s2r_sim.ros.qos import qos_profile  # noqa: E402
from r2s2r_sim.world.config import load_world_config  # noqa: E402
from r2s2r_sim.worlds import world_path  # noqa: E402
from ros_probe import RosProbe, open_probe, wait_for  # noqa: E402
from sensor_msgs.msg import CompressedImage  # noqa: E402

pytestmark = pytest.mark.integration

WAIT_S = 240.0  # start-up of both nodes and the first renders on a loaded 2-core machine


class CompressedProbe(RosProbe):
    """Records the policy's arm commands and the sim's compressed colour and depth images."""

    def __init__(self, domain_id: int) -> None:
        super().__init__(domain_id, "compressed_probe", load_interface())
        self.commands = self.record("arm_command")
        self.color = self.iface.topic("color_image", "camera")
        self.depth = self.iface.topic("depth_image", "camera")
        self.counts = dict.fromkeys((self.color + "/compressed", self.depth + "/compressedDepth"), 0)
        self.compressed: dict[str, list[Any]] = {
            self.color + "/compressed": [],
            self.depth + "/compressedDepth": [],
        }
        for topic, key in zip(self.compressed, ("color_image", "depth_image"), strict=True):
            qos = qos_profile(self.iface.topic_spec(key).subscription_qos)
            self.node.create_subscription(CompressedImage, topic, lambda m, t=topic: self._keep(t, m), qos)

    def _keep(self, topic: str, msg: Any) -> None:
        with self.lock:
            self.compressed[topic][-1:] = [msg]  # the latest only
            self.counts[topic] += 1

    def subscribers(self, topic: str) -> set[str]:
        return {i.node_name for i in self.node.get_subscriptions_info_by_topic(topic)}


@pytest.fixture
def probe(ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    yield from open_probe(CompressedProbe, ros_env, monkeypatch)


@pytest.mark.timeout(int(WAIT_S) + 120)
def test_policy_node_acts_on_compressed_images_only(processes: Any, probe: CompressedProbe) -> None:
    sim = processes.start(["sim_node", "--ros-args", "-p", "compressed_images:=true"])
    policy = processes.start(
        ["policy_node", "--ros-args", "-p", "use_sim_time:=true", "-p", "image_transport:=compressed"]
    )
    # The reference policy needs colour and depth: it sends no command until it has decoded both.  The
    # probe's own subscriptions may match later than the policy's: wait for an image on each as well.
    wait_for(
        lambda: len(probe.msgs(probe.commands)) >= 3 and all(probe.counts.values()),
        WAIT_S,
        f"3 arm commands on {probe.commands} and an image on each of {list(probe.compressed)}",
    )
    assert sim.poll() is None and policy.poll() is None
    assert "policy_node" in probe.subscribers(probe.color + "/compressed")
    assert "policy_node" in probe.subscribers(probe.depth + "/compressedDepth")
    assert "policy_node" not in probe.subscribers(probe.color)
    assert "policy_node" not in probe.subscribers(probe.depth)

    cam = load_world_config(world_path("tabletop-pick-v1")).cameras[0]
    with probe.lock:
        color, depth = (probe.compressed[t][-1] for t in probe.compressed)
    assert color.format == "rgb8; jpeg compressed bgr8" and depth.format == "16UC1; compressedDepth png"
    rgb, mm = (
        rc.image_to_numpy(rc.image_from_compressed(color)),
        rc.image_to_numpy(rc.image_from_compressed(depth)),
    )
    assert rgb.shape == (cam.height, cam.width, 3) and mm.shape == (cam.height, cam.width)
    assert rgb.std() > 5.0  # a rendered scene, not a blank frame
    valid = mm[mm > 0] / 1000.0
    assert valid.size > 0.5 * mm.size and 0.2 < np.median(valid) < 3.0  # the table, in metres from the camera


@pytest.mark.timeout(int(WAIT_S) + 120)
def test_recorder_records_compressed_images_that_real2sim_reads(
    processes: Any, probe: CompressedProbe, tmp_path: Path
) -> None:
    processes.start(["sim_node", "--ros-args", "-p", "compressed_images:=true"])
    out = tmp_path / "bag"
    rec = processes.start(
        [
            "recorder_node",
            "--ros-args",
            "-p",
            f"output:={out}",
            "-p",
            "interface_cameras:=['camera']",
            "-p",
            "image_transport:=compressed",
        ]
    )
    topics = list(probe.counts)
    for topic in topics:
        wait_for(lambda t=topic: "recorder_node" in probe.subscribers(t), WAIT_S, f"the recorder on {topic}")
    with probe.lock:
        seen = dict(probe.counts)
    wait_for(
        lambda: all(probe.counts[t] >= seen[t] + 3 for t in topics), WAIT_S, f"3 more frames on {topics}"
    )
    rec.send_signal(signal.SIGINT)
    log = rec.communicate(timeout=60)[0]
    assert rec.returncode == 0, log
    with BagReader(out) as bag:
        assert probe.color not in bag.topics and probe.depth not in bag.topics, sorted(bag.topics)
        color, depth = camera_topics(bag.topics, probe.color, probe.depth)
        assert (color, depth) == tuple(topics)
        assert all(bag.topics[t].msgtype == "sensor_msgs/msg/CompressedImage" for t in topics)
        assert min(bag.topics[t].message_count for t in topics) >= 3, log
        last = {m.topic: bag.deserialize(m) for m in bag.messages(topics)}
        rgb, mm = (image_array(last[t], t) for t in topics)
    assert rgb.ndim == 3 and rgb.shape[2] == 3 and rgb.std() > 5.0
    assert mm.dtype == np.uint16 and mm.shape == rgb.shape[:2] and np.median(mm[mm > 0]) > 200
