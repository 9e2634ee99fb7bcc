"""player_node: replays a bag with its recorded timing and QoS, optionally publishing /clock from bag time.

Reading is :class:`~r2s2r_capture.bags.reader.BagReader` (every conformance bag, compressed bags, our own
bags, unfinished recordings); messages are published as raw CDR bytes (no deserialisation). Each topic is
offered with its recorded QoS, as ``ros2 bag play`` does (see :mod:`r2s2r_capture.bags.playback`), so a
transient-local subscriber (tf2's static listener, RViz) gets ``/tf_static``. The schedule of a message with
bag time ``t`` is ``t0_wall + (t - start) / rate`` with ``start = first + start_offset_s``. With ``clock_hz``
> 0, /clock carries bag time at that rate (``ros2 bag play --clock``). Before the first message the player
waits until the subscriptions it can see on the replayed topics have matched (and ``wait_for_subscribers`` in
all), so an already-running subscriber does not lose the start of the bag. At the end the node prints, per
topic, how many messages it published and how many it skipped and why, and exits 0.
"""

from __future__ import annotations

import r2s2r_sim.ros.interrupts  # noqa: F401 - first: a SIGINT during the imports below must stop us

# isort: split
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import rclpy
from r2s2r_sim.ros.dds import use_large_data_transport
from r2s2r_sim.ros.params import ParamSpecs, declare_parameters, help_requested, rclpy_error, run_node
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy, qos_check_compatible
from rosgraph_msgs.msg import Clock

from r2s2r_capture.bags.playback import (
    PlayerConfig,
    PlaySummary,
    ReplayQos,
    apply_override,
    load_qos_overrides,
    parse_remaps,
    replay_qos,
)
from r2s2r_capture.bags.reader import BagReader, normalize_type
from r2s2r_capture.errors import BagError, CaptureError

__all__ = ["PlayerNode", "main"]
POLL_S = 0.02  # how often the subscriber wait looks at the graph

# The node's parameters: description and (low, high) range, declared read-only by ``declare_parameters``.
PARAMS: ParamSpecs = {
    "bag": ("bag folder or data file to replay", None),
    "rate": ("playback rate factor (1: recorded timing)", (0.01, 100.0)),
    "start_offset_s": ("skip this many seconds from the bag's first message (s)", (0.0, 1e9)),
    "topics": ("topics to replay (empty: all)", None),
    "remap": ("topic remaps /from:=/to", None),
    "loop": ("replay forever", None),
    "clock_hz": ("publish /clock from bag time at this rate (Hz; 0: no /clock)", (0.0, 1e4)),
    "qos_overrides": ("YAML of per-topic QoS overrides (ros2 bag play --qos-profile-overrides-path)", None),
    "default_depth": ("history depth where the recording does not know it", (1, 10**6)),
    "wait_for_subscribers": (
        "before the first message, wait until this many subscriptions in all have matched",
        (0, 10**4),
    ),
    "wait_timeout_s": ("longest wait for subscribers to match (s)", (0.01, 3600.0)),
    "discovery_s": ("time given to discovery to find subscribers already running (s)", (0.0, 60.0)),
}
PARAM_DEFAULTS: dict[str, Any] = {
    "bag": "",
    "rate": 1.0,
    "start_offset_s": 0.0,
    "topics": [""],
    "remap": [""],
    "loop": False,
    "clock_hz": 0.0,
    "qos_overrides": "",
    "default_depth": 1000,
    "wait_for_subscribers": 0,
    "wait_timeout_s": 10.0,
    "discovery_s": 1.0,
}


def _message_class(msgtype: str) -> type:
    pkg, kind, name = normalize_type(msgtype).split("/")
    return getattr(importlib.import_module(f"{pkg}.{kind}"), name)  # type: ignore[no-any-return]


def _profile(qos: ReplayQos) -> QoSProfile:
    return QoSProfile(
        history=HistoryPolicy.KEEP_ALL if qos.history == "keep_all" else HistoryPolicy.KEEP_LAST,
        depth=qos.depth,
        reliability=ReliabilityPolicy.BEST_EFFORT
        if qos.reliability == "best_effort"
        else ReliabilityPolicy.RELIABLE,
        durability=(
            DurabilityPolicy.TRANSIENT_LOCAL
            if qos.durability == "transient_local"
            else DurabilityPolicy.VOLATILE
        ),
    )


class PlayerNode(Node):
    """Thin adapter: creates publishers with the recorded QoS, waits for subscribers, paces the messages."""

    def __init__(self, config: PlayerConfig | None = None) -> None:
        super().__init__("player_node")
        self.config = config or self._read_parameters()
        self.summary = PlaySummary()
        self.clock_pub = self.create_publisher(Clock, "/clock", 10) if self.config.clock_hz > 0 else None
        self._overrides = load_qos_overrides(self.config.qos_overrides) if self.config.qos_overrides else {}

    def _read_parameters(self) -> PlayerConfig:
        v = declare_parameters(self, PARAM_DEFAULTS, PARAMS, error=rclpy_error)
        bag, topics, remap, overrides = v["bag"], v["topics"], v["remap"], v["qos_overrides"]
        if not bag:
            raise BagError("parameter bag is empty: give the bag folder or data file to replay")
        return PlayerConfig(
            bag=Path(bag),
            rate=v["rate"],
            start_offset_s=v["start_offset_s"],
            topics=tuple(t for t in topics if t),
            remap=parse_remaps(remap),
            loop=v["loop"],
            clock_hz=v["clock_hz"],
            qos_overrides=Path(overrides) if overrides else None,
            default_depth=v["default_depth"],
            wait_for_subscribers=v["wait_for_subscribers"],
            wait_timeout_s=v["wait_timeout_s"],
            discovery_s=v["discovery_s"],
        )

    def _publish_clock(self, stamp_ns: int) -> None:
        if self.clock_pub is not None:
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = divmod(stamp_ns, 1_000_000_000)
            self.clock_pub.publish(msg)

    def play(self) -> PlaySummary:
        """Replay the bag once (or forever with ``loop``); returns the summary."""
        cfg = self.config
        remap = dict(cfg.remap)
        with BagReader(cfg.bag) as reader:
            for note in reader.notes:
                self.get_logger().warning(f"{cfg.bag}: {note}")
            pubs: dict[str, Any] = {}
            for topic, info in reader.topics.items():
                if cfg.topics and topic not in cfg.topics:
                    self.summary.skip(topic, "not in topics filter", info.message_count)
                    continue
                try:
                    msg_class = _message_class(info.msgtype)
                except (ImportError, AttributeError, ValueError):
                    self.summary.skip(topic, f"type {info.msgtype} not installed", info.message_count)
                    continue
                qos = replay_qos(info.offered_qos_profiles, default_depth=cfg.default_depth)
                qos = apply_override(qos, self._overrides.get(topic))
                name = remap.get(topic, topic)
                self.get_logger().info(f"{name}: {qos.text()}")
                pubs[topic] = self.create_publisher(msg_class, name, _profile(qos))
            unknown = sorted(set(self._overrides) - set(reader.topics))
            if unknown:
                self.get_logger().warning(f"QoS overrides for topics not in the bag: {unknown}")
            if reader.start_ns is None:
                self.get_logger().warning(f"{cfg.bag}: no messages to replay")
                return self.summary
            self._wait_for_subscribers(pubs)
            start = reader.start_ns + int(cfg.start_offset_s * 1e9)
            while True:
                self._play_once(reader, pubs, start)
                if not cfg.loop or not rclpy.ok():
                    break
            # Reliable delivery of the last messages: exiting right after publish() destroys the
            # participant before DDS has sent them, and subscribers lose the tail of the bag.
            for topic, pub in pubs.items():
                if pub.get_subscription_count() and not pub.wait_for_all_acked(Duration(seconds=5.0)):
                    self.get_logger().warning(f"{remap.get(topic, topic)}: not all subscribers acknowledged")
        return self.summary

    def _wait_for_subscribers(self, pubs: dict[str, Any]) -> None:
        """Wait until every compatible subscription seen on a replayed topic has matched, and N in all.

        Discovery gets ``discovery_s`` after the last change it made to the graph (nodes, subscriptions
        seen): while peers keep appearing the window stays open, so a subscriber found late still counts.

        Raises:
            CaptureError: ``wait_for_subscribers`` were asked for and not matched within ``wait_timeout_s``.
        """
        cfg = self.config
        t0 = last_change = time.monotonic()
        warned: set[tuple[str, str]] = set()
        graph: tuple[Any, ...] = ()
        while True:
            matched, pending, seen_all = {}, {}, []
            for pub in pubs.values():
                name = pub.topic_name
                matched[name] = pub.get_subscription_count()
                seen = 0
                for sub in self.get_subscriptions_info_by_topic(name):
                    compatible, why = qos_check_compatible(pub.qos_profile, sub.qos_profile)[:2]
                    if compatible.name == "ERROR":
                        if (name, sub.node_name) not in warned:
                            warned.add((name, sub.node_name))
                            self.get_logger().warning(
                                f"{name}: subscriber {sub.node_namespace.rstrip('/')}/{sub.node_name} cannot "
                                f"match the recorded QoS ({why}); override it with qos_overrides"
                            )
                        continue
                    seen += 1
                seen_all.append(seen)
                if seen > matched[name]:
                    pending[name] = f"{matched[name]}/{seen}"
            now_graph = (tuple(sorted(self.get_node_names_and_namespaces())), tuple(seen_all))
            if now_graph != graph:
                graph, last_change = now_graph, time.monotonic()
            total = sum(matched.values())
            elapsed = time.monotonic() - t0
            quiet = time.monotonic() - last_change >= cfg.discovery_s
            if quiet and not pending and total >= cfg.wait_for_subscribers:
                return
            if elapsed >= cfg.wait_timeout_s:
                what = (
                    f"waited {cfg.wait_timeout_s:g} s for {cfg.wait_for_subscribers} subscription(s) on the "
                    f"replayed topics and for the visible ones to match: {total} matched"
                    + (f"; not yet matched (matched/seen): {pending}" if pending else "")
                )
                if total < cfg.wait_for_subscribers:
                    raise CaptureError(f"{cfg.bag}: {what}; not replaying")
                self.get_logger().warning(f"{what}; replaying anyway")
                return
            time.sleep(POLL_S)

    def _play_once(self, reader: BagReader, pubs: dict[str, Any], start: int) -> None:
        cfg = self.config
        period = 1.0 / cfg.clock_hz if cfg.clock_hz > 0 else float("inf")
        t0 = time.monotonic()
        last_clock = -period
        for msg in reader.messages():
            if not rclpy.ok():
                return
            if msg.topic not in pubs:
                continue
            if msg.timestamp_ns < start:
                self.summary.skip(msg.topic, "before start_offset_s")
                continue
            due = t0 + (msg.timestamp_ns - start) / 1e9 / cfg.rate
            while (wait := due - time.monotonic()) > 0:
                if self.clock_pub is not None and time.monotonic() - last_clock >= period:
                    elapsed_ns = int((time.monotonic() - t0) * cfg.rate * 1e9)
                    self._publish_clock(min(start + elapsed_ns, msg.timestamp_ns))
                    last_clock = time.monotonic()
                time.sleep(min(wait, period, 0.01))
            if self.clock_pub is not None and time.monotonic() - last_clock >= period:
                self._publish_clock(msg.timestamp_ns)
                last_clock = time.monotonic()
            pubs[msg.topic].publish(msg.data)  # raw CDR bytes
            self.summary.published[msg.topic] += 1


def _play(node: PlayerNode) -> int:
    """Replay the bag and print the summary; 1 (logged as fatal) when the bag cannot be read."""
    try:
        summary = node.play()
    except (BagError, CaptureError) as err:
        rclpy.logging.get_logger("player_node").fatal(str(err))
        return 1
    print(f"player_node: finished {node.config.bag}\n{summary.text()}", flush=True)
    return 0


def main(args: Sequence[str] | None = None) -> int:
    """Replay a bag; returns 0 at the end, 1 if the bag cannot be read or parameters are invalid."""
    if not help_requested(args):
        use_large_data_transport()  # before init: Fast DDS reads the profile at participant creation
    return run_node(PlayerNode, args, "player_node", spin=_play, errors=(BagError, CaptureError))


if __name__ == "__main__":
    sys.exit(main())
