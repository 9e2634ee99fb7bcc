"""Small real rclpy nodes the launcher tests run as separate processes (roles chosen by argv[1])."""

from __future__ import annotations

import sys

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from std_msgs.msg import String


def talker(node: Node) -> None:
    pub = node.create_publisher(String, "chatter", 10)
    count = [0]

    def tick() -> None:
        count[0] += 1
        pub.publish(String(data=f"hello {count[0]}"))

    node.create_timer(0.05, tick)
    rclpy.spin(node)


def counter(node: Node) -> None:
    """Prints a line every 20 ms, as a node logging at a steady rate does."""
    count = [0]

    def tick() -> None:
        count[0] += 1
        print(f"count {count[0]}", flush=True)

    node.create_timer(0.02, tick)
    rclpy.spin(node)


def listener(node: Node) -> None:
    node.declare_parameter("want", 5)
    want = node.get_parameter("want").value
    got: list[str] = []
    node.create_subscription(String, "chatter", lambda m: got.append(m.data), 10)
    while rclpy.ok() and len(got) < want:
        rclpy.spin_once(node, timeout_sec=0.1)
    print(f"listener received {len(got)} messages, last: {got[-1]}", flush=True)


def echo_params(node: Node) -> None:
    for name, default in (("greeting", ""), ("count", 0), ("flag", False)):
        node.declare_parameter(name, default)
    values = {n: node.get_parameter(n).value for n in ("greeting", "count", "flag")}
    print(f"params {values!r} node_name={node.get_name()}", flush=True)
    if values["count"] == 0:  # default: keep running until stopped
        rclpy.spin(node)


def crasher(node: Node) -> None:
    node.get_logger().error("crashing on purpose")
    sys.exit(3)


ROLES = {
    "talker": talker,
    "counter": counter,
    "listener": listener,
    "echo_params": echo_params,
    "crasher": crasher,
}


def main() -> None:
    role = sys.argv[1]
    rclpy.init(args=sys.argv)  # Jazzy's rclpy.init is not yet a context manager
    try:
        node = rclpy.create_node(f"test_{role}")
        print(f"{role} up", flush=True)
        ROLES[role](node)
    except (KeyboardInterrupt, ExternalShutdownException):
        print(f"{role} stopped by SIGINT", flush=True)
    finally:
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
