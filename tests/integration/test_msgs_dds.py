"""r2s2r_msgs and tf2_msgs types cross process boundaries over real DDS (topic and service)."""

from __future__ import annotations

import sys
import time

import pytest
import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile

pytestmark = pytest.mark.integration

SERVER = r"""
import rclpy
from r2s2r_msgs.msg import EpisodeOutcome, Metric
from r2s2r_msgs.srv import ResetEpisode
from rclpy.qos import DurabilityPolicy, QoSProfile
from tf2_msgs.msg import TFMessage
from geometry_msgs.msg import TransformStamped

rclpy.init()
node = rclpy.create_node("msgs_peer")
qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
pub = node.create_publisher(EpisodeOutcome, "outcome", qos)
tf = node.create_publisher(TFMessage, "tf_static", qos)
def reset(req, res):
    res.success = True
    res.world_id = "w"
    res.variation_hash = f"{req.variation_seed}:{req.variation_config}"
    return res
node.create_service(ResetEpisode, "reset", reset)
pub.publish(EpisodeOutcome(policy_id="ref", variation_seed=7, success=False, failure_reason="timeout",
                           metrics=[Metric(name="object_to_target_m", value=0.25)]))
t = TransformStamped(child_frame_id="camera_color_optical_frame")
t.header.frame_id = "world"
t.transform.rotation.w = 1.0
tf.publish(TFMessage(transforms=[t]))
print("peer up", flush=True)
try:
    rclpy.spin(node)
except KeyboardInterrupt:
    pass
"""


def test_outcome_tf_and_reset_service_between_processes(processes, ros_env) -> None:
    from tf2_msgs.msg import TFMessage

    from r2s2r_msgs.msg import EpisodeOutcome
    from r2s2r_msgs.srv import ResetEpisode

    peer = processes.start([sys.executable, "-c", SERVER])
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=int(ros_env["ROS_DOMAIN_ID"]))
    try:
        node = rclpy.create_node("msgs_test", context=context)
        qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        got: dict[str, object] = {}
        node.create_subscription(EpisodeOutcome, "outcome", lambda m: got.setdefault("outcome", m), qos)
        node.create_subscription(TFMessage, "tf_static", lambda m: got.setdefault("tf", m), qos)
        client = node.create_client(ResetEpisode, "reset")
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(node)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
            {"outcome", "tf"} <= got.keys() and client.service_is_ready()
        ):
            executor.spin_once(timeout_sec=0.1)
            assert peer.poll() is None, peer.stdout.read()  # type: ignore[union-attr]
        outcome = got["outcome"]
        assert isinstance(outcome, EpisodeOutcome)
        assert (outcome.policy_id, outcome.variation_seed, outcome.failure_reason) == ("ref", 7, "timeout")
        assert [(m.name, m.value) for m in outcome.metrics] == [("object_to_target_m", 0.25)]
        assert got["tf"].transforms[0].child_frame_id == "camera_color_optical_frame"  # type: ignore[attr-defined]
        future = client.call_async(ResetEpisode.Request(variation_seed=2**40, variation_config="a: 1"))
        executor.spin_until_future_complete(future, timeout_sec=30)
        assert future.result() is not None
        assert future.result().variation_hash == f"{2**40}:a: 1"
    finally:
        rclpy.shutdown(context=context)
