"""player_node: replays a bag with its recorded timing and publishes /clock from bag time.

Reading is :class:`~r2s2r_capture.bag_reader.BagReader` (every conformance bag, our own bags, unfinished
recordings); messages are published as raw CDR bytes (no deserialisation). The schedule of a message with
bag time ``t`` is ``t0_wall + (t - start) / rate`` with ``start = first + start_offset_s``. /clock carries
the bag time of each message as it is published, and is also sent every ``clock_period_s`` while waiting.
At the end the node prints, per topic, how many messages it published and how many it skipped and why
(filtered out, before the start offset, type not installed), and exits 0.
"""

from __future__ import annotations

import r2s2r_sim.interrupts  # noqa: F401 - first: a SIGINT during the imports below must stop us

# isort: split
import importlib
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import rclpy
from r2s2r_sim.dds import use_large_data_transport
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy._rclpy_pybind11 import RCLError
from rclpy.duration import Duration
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock

from r2s2r_capture.bag_reader import BagReader, normalize_type
from r2s2r_capture.errors import BagError


@dataclass(frozen=True, kw_only=True)
class PlayerConfig:
    """What to replay and how."""

    bag: Path
    rate: float = 1.0
    start_offset_s: float = 0.0
    topics: tuple[str, ...] = ()  # empty: all topics
    remap: tuple[tuple[str, str], ...] = ()
    loop: bool = False
    clock: bool = True
    clock_period_s: float = 0.01

    def __post_init__(self) -> None:
        if not self.rate > 0:
            raise BagError(f"rate must be > 0: got {self.rate}")
        if self.start_offset_s < 0:
            raise BagError(f"start_offset_s must be >= 0: got {self.start_offset_s}")


def parse_remaps(items: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``['/a:=/b']`` -> ``(('/a', '/b'),)``; raises BagError naming a malformed entry."""
    out = []
    for item in items:
        if not item:
            continue
        src, sep, dst = item.partition(":=")
        if not sep or not src or not dst:
            raise BagError(f"remap entry {item!r} is not of the form /from:=/to")
        out.append((src, dst))
    return tuple(out)


@dataclass
class PlaySummary:
    """Counts per topic: published, and skipped by reason."""

    published: Counter[str] = field(default_factory=Counter)
    skipped: dict[str, Counter[str]] = field(default_factory=dict)

    def skip(self, topic: str, why: str, n: int = 1) -> None:
        """Count ``n`` skipped messages of ``topic`` under reason ``why``."""
        self.skipped.setdefault(topic, Counter())[why] += n

    def text(self) -> str:
        """One line per topic: published and skipped counts with reasons."""
        lines = []
        for topic in sorted(set(self.published) | set(self.skipped)):
            parts = [f"published {self.published[topic]}"]
            parts += [f"skipped {n} ({why})" for why, n in sorted(self.skipped.get(topic, {}).items())]
            lines.append(f"  {topic}: " + ", ".join(parts))
        return "\n".join(lines)


def _message_class(msgtype: str) -> type:
    pkg, kind, name = normalize_type(msgtype).split("/")
    return getattr(importlib.import_module(f"{pkg}.{kind}"), name)  # type: ignore[no-any-return]


class PlayerNode(Node):
    """Thin adapter: creates publishers, then :meth:`play` paces the bag's messages onto them."""

    def __init__(self, config: PlayerConfig | None = None) -> None:
        super().__init__("player_node")
        self.config = config or self._read_parameters()
        self.summary = PlaySummary()
        self.clock_pub = self.create_publisher(Clock, "/clock", 10) if self.config.clock else None

    def _read_parameters(self) -> PlayerConfig:
        def desc(text: str, **kw: object) -> ParameterDescriptor:
            return ParameterDescriptor(description=text, read_only=True, **kw)  # type: ignore[arg-type]

        p = self.declare_parameter
        bag = p("bag", "", desc("bag folder or data file to replay")).value
        rate = p(
            "rate",
            1.0,
            desc(
                "playback rate factor (1: recorded timing)",
                floating_point_range=[FloatingPointRange(from_value=0.01, to_value=100.0)],
            ),
        ).value
        offset = p(
            "start_offset_s",
            0.0,
            desc(
                "skip this many seconds from the bag's first message (s)",
                floating_point_range=[FloatingPointRange(from_value=0.0, to_value=1e9)],
            ),
        ).value
        topics = p("topics", [""], desc("topics to replay (empty: all)")).value
        remap = p("remap", [""], desc("topic remaps /from:=/to")).value
        loop = p("loop", False, desc("replay forever")).value
        clock = p("clock", True, desc("publish /clock from bag time")).value
        if not bag:
            raise BagError("parameter bag is empty: give the bag folder or data file to replay")
        return PlayerConfig(
            bag=Path(bag),
            rate=rate,
            start_offset_s=offset,
            topics=tuple(t for t in topics if t),
            remap=parse_remaps(remap),
            loop=loop,
            clock=clock,
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
            pubs = {}
            for topic, info in reader.topics.items():
                if cfg.topics and topic not in cfg.topics:
                    self.summary.skip(topic, "not in topics filter", info.message_count)
                    continue
                try:
                    msg_class = _message_class(info.msgtype)
                except (ImportError, AttributeError, ValueError):
                    self.summary.skip(topic, f"type {info.msgtype} not installed", info.message_count)
                    continue
                pubs[topic] = self.create_publisher(
                    msg_class,
                    remap.get(topic, topic),
                    QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE),
                )
            if reader.start_ns is None:
                self.get_logger().warning(f"{cfg.bag}: no messages to replay")
                return self.summary
            deadline = time.monotonic() + 2.0  # let existing subscribers match the new publishers
            while time.monotonic() < deadline and any(p.get_subscription_count() == 0 for p in pubs.values()):
                time.sleep(0.05)
            time.sleep(0.5)  # matched on our side; give the remote side time to finish its handshake
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

    def _play_once(self, reader: BagReader, pubs: dict[str, object], start: int) -> None:
        cfg = self.config
        t0 = time.monotonic()
        last_clock = 0.0
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
                if self.clock_pub is not None and time.monotonic() - last_clock >= cfg.clock_period_s:
                    elapsed_ns = int((time.monotonic() - t0) * cfg.rate * 1e9)
                    self._publish_clock(min(start + elapsed_ns, msg.timestamp_ns))
                    last_clock = time.monotonic()
                time.sleep(min(wait, cfg.clock_period_s))
            self._publish_clock(msg.timestamp_ns)
            pubs[msg.topic].publish(msg.data)  # type: ignore[attr-defined]  # raw CDR bytes
            self.summary.published[msg.topic] += 1


def main(args: Sequence[str] | None = None) -> int:
    """Replay a bag; returns 0 at the end, 1 if the bag cannot be read or parameters are invalid."""
    use_large_data_transport()  # before init: Fast DDS reads the profile at participant creation
    rclpy.init(args=args)
    node: PlayerNode | None = None
    code = 0
    try:
        node = PlayerNode()
        summary = node.play()
        print(f"player_node: finished {node.config.bag}\n{summary.text()}", flush=True)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RCLError:
        if rclpy.ok():  # else a Ctrl-C shut the context down mid-publish (see spin_until_shutdown)
            raise
    except BagError as err:
        rclpy.logging.get_logger("player_node").fatal(str(err))
        code = 1
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
