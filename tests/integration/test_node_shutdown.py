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
from r2s2r_sim.ros_params import spin_until_shutdown
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node


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
        executor._sigint_gc.trigger()  # noqa: SLF001 - what rclpy's signal thread does first ...
        time.sleep(0.5)  # ... the executor wakes, finds the context valid and waits again ...
        with context.handle:
            context.handle.shutdown()  # ... then rclpy::shutdown_contexts(): no on_shutdown callbacks
        spinner.join(timeout=5.0)
        assert not spinner.is_alive(), "spin_until_shutdown still waiting after the context shut down"
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)
