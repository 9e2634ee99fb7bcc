"""A ROS node inside the test process that records what the node under test publishes (shared by tests).

Imported as ``from ros_probe import ...``: pytest puts this folder on ``sys.path`` (rootdir-based import of
test modules without ``__init__.py``). Import it after ``pytest.importorskip("rclpy")``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import rclpy
from r2s2r_sim.interface import Interface
from r2s2r_sim.ros.qos import interface_class, qos_profile
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``predicate`` until it returns a truthy value (returned); AssertionError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class RosProbe:
    """A ROS node in its own context in the test's DDS domain, spun on a thread; records (time, message)."""

    def __init__(self, domain_id: int, node_name: str, iface: Interface) -> None:
        self.iface = iface
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node(node_name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.lock = threading.Lock()
        self.received: dict[str, list[tuple[float, Any]]] = {}
        self._running = True
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while self._running and self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception:  # shutting down
                if self._running:
                    raise

    def close(self) -> None:
        self._running = False
        self._thread.join(timeout=5.0)
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)

    def record(
        self,
        key: str,
        camera: str | None = None,
        *,
        keep: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        headers_only: bool = False,
    ) -> str:
        """Record messages of an interface topic with its declared QoS; return the topic name.

        ``clock`` stamps the receipt; ``headers_only`` drops every image's payload; ``keep`` drops the
        payload of messages older than the last ``keep`` (receipt times and headers stay).
        """
        spec = self.iface.topic_spec(key)
        name = self.iface.topic(key, camera)
        self.received[name] = []

        def callback(msg: Any, name: str = name) -> None:
            now = clock()
            with self.lock:
                if headers_only and hasattr(msg, "encoding"):
                    msg.data = b""  # keep headers only
                bucket = self.received[name]
                bucket.append((now, msg))
                if keep is not None and len(bucket) > keep:
                    _, old = bucket[-keep - 1]
                    if hasattr(old, "data"):
                        old.data = b""

        self.node.create_subscription(
            interface_class(spec.type), name, callback, qos_profile(spec.subscription_qos)
        )
        return name

    def offered_qos(self, key: str) -> tuple[Any, Any]:
        """``(reliability, durability)`` a publisher of interface topic ``key`` offers on this middleware.

        Found by publishing with the declared QoS on a scratch topic, so that a ``system_default`` preset is
        resolved by the middleware exactly as it is for the driver (Fast DDS: reliable, transient local).
        """
        spec = self.iface.topic_spec(key)
        scratch = f"/qos_probe/{key}"
        pub = self.node.create_publisher(interface_class(spec.type), scratch, qos_profile(spec.qos))
        try:
            infos = wait_for(lambda: self.node.get_publishers_info_by_topic(scratch), 10.0, scratch)
            return infos[0].qos_profile.reliability, infos[0].qos_profile.durability
        finally:
            self.node.destroy_publisher(pub)

    def msgs(self, name: str) -> list[tuple[float, Any]]:
        with self.lock:
            return list(self.received[name])

    def call_service(self, srv_type: Any, name: str, request: Any, timeout: float = 20.0) -> Any:
        client = self.node.create_client(srv_type, name)
        assert client.wait_for_service(timeout_sec=timeout), f"service {name} not available"
        future = client.call_async(request)
        wait_for(future.done, timeout, f"a response from {name}")
        return future.result()


def open_probe(
    factory: Callable[[int], RosProbe], ros_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    """Body of a ``probe`` fixture: a probe in ``ros_env``'s domain, localhost discovery, closed after."""
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    monkeypatch.delenv("ROS_LOCALHOST_ONLY", raising=False)
    p = factory(int(ros_env["ROS_DOMAIN_ID"]))
    yield p
    p.close()
