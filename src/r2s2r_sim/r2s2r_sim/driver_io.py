"""The driver-facing topics shared by the sim node and the emulated hardware node.

Publishers and subscriptions of interface topics with their declared types and QoS, and the parsing and
shape checks of the arm / gripper commands (the node logs the returned ``CommandCheck`` itself, so
that rclpy's per-call-site throttling keeps arm and gripper warnings apart).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node
from rclpy.publisher import Publisher

from r2s2r_sim import ros_conversions as conv
from r2s2r_sim.interface import Interface
from r2s2r_sim.ros_qos import interface_class, qos_profile
from r2s2r_sim.world import CommandCheck

__all__ = ["arm_command", "gripper_command", "interface_publisher", "subscribe_topics"]


def interface_publisher(node: Node, iface: Interface, key: str, camera: str | None = None) -> Publisher:
    """Create ``node``'s publisher of the interface topic ``key`` (per camera where it has one)."""
    spec = iface.topic_spec(key)
    return node.create_publisher(interface_class(spec.type), iface.topic(key, camera), qos_profile(spec.qos))


def subscribe_topics(
    node: Node,
    iface: Interface,
    callbacks: Iterable[tuple[str, Callable[[Any], None]]],
    group: CallbackGroup,
) -> None:
    """Subscribe ``node`` to each ``(key, callback)`` interface topic with its declared type and QoS."""
    for key, callback in callbacks:
        spec = iface.topic_spec(key)
        node.create_subscription(
            interface_class(spec.type),
            iface.topic(key),
            callback,
            qos_profile(spec.subscription_qos),
            callback_group=group,
        )


def arm_command(
    msg: Any, submit: Callable[[np.ndarray], CommandCheck], lock: AbstractContextManager[Any]
) -> CommandCheck:
    """Parse an arm command and, when it parses, ``submit`` its values under ``lock``."""
    try:
        values = conv.command_array(msg)
    except conv.CommandError as err:
        return CommandCheck(False, False, str(err))
    with lock:
        return submit(values)


def gripper_command(
    msg: Any, submit: Callable[[float], CommandCheck], lock: AbstractContextManager[Any]
) -> CommandCheck:
    """Parse a gripper command (exactly one value) and, when it is one, ``submit`` it under ``lock``."""
    try:
        values = conv.command_array(msg)
    except conv.CommandError as err:
        return CommandCheck(False, False, str(err))
    if values.shape != (1,):
        return CommandCheck(False, False, f"gripper command must have 1 value, got {values.shape[0]}")
    with lock:
        return submit(float(values[0]))
