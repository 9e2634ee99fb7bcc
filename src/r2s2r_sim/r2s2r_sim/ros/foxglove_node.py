"""foxglove_node: a live view of the graph in Foxglove without a ROS distro (foxglove-sdk's WebSocket server).

It does what foxglove_bridge does for the topics a viewer needs: subscribes to them raw (serialized CDR, no
deserialisation) and forwards each message on a Foxglove channel whose schema is the ROS 2 message
definition (``ros2msg``, as rosbag2's MCAP stores it) and whose encoding is ``cdr``; Foxglove decodes them as
it decodes a ROS 2 bag. Topics: the interface profile's joint states, /tf, /tf_static, /robot_description,
/diagnostics, and each camera's colour and aligned-depth images and camera infos (cameras from the world's
world.yaml). Transient-local topics (/tf_static, /robot_description) are latched as in ROS: a client that
subscribes later is sent the last message at once. The server's asset service answers a viewer's
``package://`` requests (the URDF's meshes) with the file the ament index names, so a Foxglove on another
machine draws the robot's meshes too.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import foxglove
from foxglove.websocket import ChannelView, Client, ServerListener
from rclpy.node import Node
from rosbags.typesys import Stores, get_typestore

from r2s2r_sim.interface import Durability, Interface
from r2s2r_sim.paths import FOXGLOVE_LAYOUT, config_dir
from r2s2r_sim.ros.params import declare_parameters, node_help, parameter_error, run_node, spin_single
from r2s2r_sim.ros.qos import declare_interface, interface_class, qos_profile
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.world.mesh_package import MeshPackageError, mesh_environment, read_package_uri
from r2s2r_sim.worlds import world_path

__all__ = ["FoxgloveNode", "FoxgloveNodeError", "asset_handler", "forwarded_topics", "main"]

# What a viewer draws: the robot (description + transforms + joint states), the cameras, the health.
FORWARDED_KEYS = ("joint_states", "tf", "tf_static", "robot_description", "diagnostics")
CAMERA_KEYS = ("color_image", "color_info", "depth_image", "depth_info")


_PARAMS: dict[str, tuple[str, tuple[float, float] | None]] = {
    "world": ("World id or folder; its world.yaml names the cameras to forward.", None),
    "host": ("Address to listen on (0.0.0.0: every interface).", None),
    "port": ("TCP port of the WebSocket server (0: any free port, logged at start-up).", (0, 65535)),
}


class FoxgloveNodeError(ValueError):
    """An invalid parameter; names it, the value and what is allowed."""


def forwarded_topics(iface: Interface, cameras: Sequence[str]) -> list[tuple[str, str]]:
    """``(topic key, name)`` of every forwarded topic the profile defines (camera topics once per camera)."""
    out = [(key, iface.topic(key)) for key in FORWARDED_KEYS if key in iface.topics]
    for camera in cameras:
        out += [(key, iface.topic(key, camera)) for key in CAMERA_KEYS if key in iface.topics]
    return out


def asset_handler(warn: Callable[[str], None]) -> Callable[[str], bytes | None]:
    """The server's asset service: a ``package://`` URI's file bytes, or ``None`` (and a warning) if none."""

    def fetch(uri: str) -> bytes | None:
        try:
            return read_package_uri(uri)
        except (MeshPackageError, OSError) as err:
            warn(f"asset request refused: {err}")
            return None

    return fetch


class _Latch(ServerListener):
    """Re-sends a latched channel's last message to the viewer that subscribes to it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.last: dict[str, tuple[Any, bytes]] = {}  # topic -> (channel, last message)

    def on_subscribe(self, client: Client, channel: ChannelView) -> None:
        with self.lock:
            entry = self.last.get(channel.topic)
        if entry is not None:
            entry[0].log(entry[1], log_time=time.time_ns())


class FoxgloveNode(Node):
    """Thin adapter: raw ROS subscriptions in, Foxglove channels out."""

    def __init__(self, **kwargs: Any) -> None:
        """Declare parameters, start the WebSocket server and subscribe the forwarded topics.

        Raises:
            FoxgloveNodeError: an invalid parameter (world, port) or a server that cannot listen.
        """
        super().__init__("foxglove_server", **kwargs)
        iface = declare_interface(self)
        values = declare_parameters(
            self,
            {"world": "tabletop-pick-v1", "host": "127.0.0.1", "port": 8765},
            _PARAMS,
            error=parameter_error(FoxgloveNodeError),
            state_range=True,
        )
        world, host, port = values["world"], values["host"], values["port"]
        try:
            cameras = [c.name for c in load_world_config(world_path(world)).cameras]
        except (ValueError, OSError) as err:
            raise FoxgloveNodeError(f"parameter world: {err}") from None
        self._typestore = get_typestore(Stores.ROS2_JAZZY)
        self._latch = _Latch()
        # The sim node writes the meshes into this package; resolve it here too when run on its own.
        os.environ.update(mesh_environment(os.environ))
        try:
            self.server = foxglove.start_server(
                name="r2s2r",
                host=host,
                port=port,
                server_listener=self._latch,
                asset_handler=asset_handler(self.get_logger().warning),
            )
        except Exception as err:  # the SDK raises its own error types for bind failures
            raise FoxgloveNodeError(f"parameter port: cannot listen on {host}:{port}: {err}") from None
        self.forwarded: dict[str, int] = {}
        for key, name in forwarded_topics(iface, cameras):
            self._forward(iface, key, name)
        self.get_logger().info(
            f"Foxglove WebSocket server on ws://{host}:{self.server.port}: in Foxglove (app.foxglove.dev "
            "or the desktop app) Open connection -> Foxglove WebSocket -> that URL, then Layout -> Import "
            f"from file -> {config_dir() / FOXGLOVE_LAYOUT}; forwarding {sorted(self.forwarded)}"
        )

    def _forward(self, iface: Interface, key: str, name: str) -> None:
        spec = iface.topic_spec(key)
        msgdef, _ = self._typestore.generate_msgdef(spec.type, ros_version=2)
        schema = foxglove.Schema(name=spec.type, encoding="ros2msg", data=msgdef.encode())
        channel = foxglove.Channel(name, schema=schema, message_encoding="cdr")
        latched = spec.qos.durability is Durability.TRANSIENT_LOCAL
        self.forwarded[name] = 0

        def forward(data: bytes, name: str = name) -> None:
            self.forwarded[name] += 1
            if latched:
                with self._latch.lock:
                    self._latch.last[name] = (channel, data)
            if channel.has_sinks():
                channel.log(data, log_time=time.time_ns())

        self.create_subscription(
            interface_class(spec.type), name, forward, qos_profile(spec.subscription_qos), raw=True
        )

    def destroy_node(self) -> None:
        """Stop the WebSocket server, then destroy the node."""
        server = getattr(self, "server", None)
        if server is not None:
            server.stop()
        super().destroy_node()


def main(args: Sequence[str] | None = None) -> int:
    """Serve until interrupted; exit 1 on a configuration error."""
    return run_node(
        FoxgloveNode,
        args,
        "foxglove_server",
        spin=spin_single,
        errors=(FoxgloveNodeError, ValueError),
        help_text=lambda: node_help("foxglove_node", _PARAMS),
        quiet_sigint=True,
    )


if __name__ == "__main__":
    sys.exit(main())
