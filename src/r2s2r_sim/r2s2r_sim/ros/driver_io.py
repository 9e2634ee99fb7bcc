"""The driver-facing topics shared by the sim node and the emulated hardware node.

Publishers and subscriptions of interface topics with their declared types and QoS, and the parsing and
shape checks of the arm / gripper commands (the node logs the returned ``CommandCheck`` itself, so
that rclpy's per-call-site throttling keeps arm and gripper warnings apart).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node
from rclpy.publisher import Publisher

from r2s2r_sim.compressed_images import COMPRESSED, transport_topic
from r2s2r_sim.interface import Interface
from r2s2r_sim.ros import conversions as conv
from r2s2r_sim.ros.qos import interface_class, qos_profile
from r2s2r_sim.world.sim_world import CommandCheck

__all__ = [
    "CameraFrame",
    "CameraPublishers",
    "arm_command",
    "camera_frame",
    "gripper_command",
    "interface_publisher",
    "subscribe_topics",
]


def interface_publisher(node: Node, iface: Interface, key: str, camera: str | None = None) -> Publisher:
    """Create ``node``'s publisher of the interface topic ``key`` (per camera where it has one)."""
    spec = iface.topic_spec(key)
    return node.create_publisher(interface_class(spec.type), iface.topic(key, camera), qos_profile(spec.qos))


@dataclass(frozen=True)
class CameraFrame:
    """One camera frame as realsense2_camera publishes it: colour, aligned depth and their CameraInfo."""

    color: Any
    depth: Any
    info: Any  # aligned depth shares the colour frame and intrinsics (align_depth)


def camera_frame(
    rgb: np.ndarray,
    depth_mm: np.ndarray,
    k: np.ndarray,
    stamp: Any,
    frame_id: str,
    d: np.ndarray | tuple[float, ...] | None = None,
) -> CameraFrame:
    """One frame's messages: ``rgb`` (H x W x 3), ``depth_mm`` (uint16, mm), ``k``, plumb_bob ``d``."""
    height, width = rgb.shape[:2]
    info = conv.camera_info_msg(k, width, height, stamp, frame_id)
    if d is not None:
        info.d = np.asarray(d, dtype=np.float64).tolist()  # the images are distorted with these
    return CameraFrame(
        color=conv.rgb_image_msg(rgb, stamp, frame_id),
        depth=conv.depth_image_msg(depth_mm, stamp, frame_id),
        info=info,
    )


class CameraPublishers:
    """A camera's four driver topics: colour and aligned-depth images and their camera infos.

    With ``compressed``, the images also go out as image_transport's ``compressed`` and
    ``compressedDepth`` topics, as a driver with image_transport_plugins publishes them (encoded only
    while someone subscribes, as image_transport does).
    """

    def __init__(self, node: Node, iface: Interface, camera: str, *, compressed: bool = False) -> None:
        self.color = interface_publisher(node, iface, "color_image", camera)
        self.color_info = interface_publisher(node, iface, "color_info", camera)
        self.depth = interface_publisher(node, iface, "depth_image", camera)
        self.depth_info = interface_publisher(node, iface, "depth_info", camera)
        self.compressed: tuple[Publisher, Publisher] | None = None
        if compressed:
            self.compressed = (
                _compressed_publisher(node, iface, "color_image", camera),
                _compressed_publisher(node, iface, "depth_image", camera),
            )

    def publish(self, frame: CameraFrame) -> None:
        """Publish both images, then both camera infos (the order realsense2_camera sends them in)."""
        self.color.publish(frame.color)
        self.depth.publish(frame.depth)
        if self.compressed is not None and any(p.get_subscription_count() for p in self.compressed):
            for pub, msg in zip(
                self.compressed, conv.compressed_image_msgs(frame.color, frame.depth), strict=True
            ):
                pub.publish(msg)
        self.color_info.publish(frame.info)
        self.depth_info.publish(frame.info)


def _compressed_publisher(node: Node, iface: Interface, key: str, camera: str) -> Publisher:
    """A ``sensor_msgs/msg/CompressedImage`` publisher beside image topic ``key``, with its QoS."""
    spec = iface.topic_spec(key)
    topic = transport_topic(iface.topic(key, camera), COMPRESSED, depth=key == "depth_image")
    return node.create_publisher(
        interface_class("sensor_msgs/msg/CompressedImage"), topic, qos_profile(spec.qos)
    )


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
