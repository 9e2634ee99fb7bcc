"""recorder_node: records topics to a rosbag2 bag (MCAP by default) without deserialising them.

Subscriptions are raw (serialized CDR bytes straight from the middleware). Their QoS follows the publishers
found on the graph (reliable and transient-local only if every publisher offers it) with a deep history, so
a burst is buffered rather than lost. Messages go to a :class:`~r2s2r_capture.bags.writer.ThreadedBagWriter`
(bounded queue, drops counted). Topics are (re)discovered every 0.5 s, so publishers may start later.
SIGINT and SIGTERM both end the recording after what already arrived is taken; the bag is closed in
``finally`` (metadata.yaml written). A writer
failure (full disk, file size limit) stops the recording within 0.5 s with exit 1 and a message naming it.
``/r2s2r/episode_outcome`` (r2s2r_msgs/msg/EpisodeOutcome) is recorded like any topic: it is the episode
boundary record. Each topic's ``offered_qos_profiles`` in the metadata are the QoS of the publishers found
when it was first discovered (as ``ros2 bag record`` writes them).

Provenance goes into the metadata's ``custom_data`` when the bag closes: ``r2s2r.software`` (the installed
r2s2r package versions), ``r2s2r.calibration`` (the ``calibration`` parameter's CameraInfo YAML path and its
sha256, if given) and ``r2s2r.episodes`` (JSON list of the world id, world hash, variation seed and
outcome of every EpisodeOutcome seen during the recording: the world and variation identity).
"""

from __future__ import annotations

import r2s2r_sim.ros.interrupts  # noqa: F401 - first: a SIGINT during the imports below must stop us

# isort: split
import hashlib
import json
import signal
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import rclpy
from r2s2r_sim.compressed_images import RAW, TRANSPORTS, transport_topic
from r2s2r_sim.interface import Interface
from r2s2r_sim.ros.dds import use_large_data_transport
from r2s2r_sim.ros.params import (
    SHUTDOWN_POLL_S,
    ParamSpecs,
    declare_parameters,
    help_requested,
    node_help,
    rclpy_error,
)
from r2s2r_sim.ros.qos import declare_interface
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

from r2s2r_capture.bags.writer import (
    BagWriter,
    Compression,
    Storage,
    ThreadedBagWriter,
    TopicSpec,
    WriterConfig,
)
from r2s2r_capture.errors import BagError, CaptureError

EPISODE_TOPIC = "/r2s2r/episode_outcome"
HISTORY_DEPTH = 1000
DRAIN_QUIET_SPINS = 4  # spins of 50 ms with no new message: the middleware holds nothing more
DRAIN_LIMIT_S = 5.0

# The node's parameters: description and (low, high) range, declared read-only by ``declare_parameters``.
PARAMS: ParamSpecs = {
    "topics": ("absolute topic names to record", None),
    "interface_cameras": (
        "record the interface profile's driver topics of these cameras (world.yaml names) too; "
        "empty: record only 'topics'",
        None,
    ),
    "all_topics": ("record every topic on the graph", None),
    "output": ("bag folder to create (must not exist)", None),
    "storage": ("storage plugin", None),
    "max_bag_size_bytes": ("split when a file holds this many bytes (0: never)", (0, 2**62)),
    "max_bag_duration_s": ("split after this many seconds (s, 0: never)", (0.0, 1e9)),
    "flush_interval_s": ("flush a chunk at least this often (s): the crash-loss bound", (0.01, 60.0)),
    "max_queue": ("messages buffered for the writer thread before dropping", (1, 10**7)),
    "compression_mode": (
        "compress each closed file (file) or each message (message), as ros2 bag record",
        None,
    ),
    "compression_format": ("compressor", None),
    "calibration": ("CameraInfo YAML of the camera calibration, stamped into the provenance", None),
    "image_transport": (
        "how interface_cameras' images are recorded, as image_transport names it: raw (the image topics) "
        "or compressed (<image>/compressed and <depth>/compressedDepth, as published)",
        None,
    ),
}
PARAM_DEFAULTS: dict[str, Any] = {
    "topics": [""],
    "interface_cameras": [""],
    "all_topics": False,
    "output": "",
    "storage": "mcap",
    "max_bag_size_bytes": 0,
    "max_bag_duration_s": 0.0,
    "flush_interval_s": 0.5,
    "max_queue": 10000,
    "compression_mode": "none",
    "compression_format": "zstd",
    "calibration": "",
    "image_transport": RAW,
}
PARAM_CONSTRAINTS = {
    "storage": "one of: mcap, sqlite3",
    "compression_mode": "one of: none, file, message",
    "compression_format": "one of: zstd",
    "image_transport": f"one of: {', '.join(TRANSPORTS)}",
}


@dataclass(frozen=True, kw_only=True)
class RecorderConfig:
    """What and where to record."""

    output: Path
    topics: tuple[str, ...] = ()
    all_topics: bool = False
    writer: WriterConfig = WriterConfig()
    max_queue: int = 10000
    calibration: Path | None = None

    def __post_init__(self) -> None:
        if not self.topics and not self.all_topics:
            raise BagError("topics is empty and all_topics is false: nothing to record")
        bad = [t for t in self.topics if not t.startswith("/")]
        if bad:
            raise BagError(f"topics must be absolute names starting with '/': got {bad}")
        if self.output.exists():
            raise BagError(f"output {self.output} exists already, not overwriting")
        if self.calibration is not None and not self.calibration.is_file():
            raise BagError(f"parameter calibration: {self.calibration} is not a file")


class RecorderNode(Node):
    """Thin adapter: discovers topics, subscribes raw, hands bytes to the threaded writer."""

    def __init__(self) -> None:
        super().__init__("recorder_node")
        self.config = self._read_parameters()
        self.bag = ThreadedBagWriter(
            BagWriter(self.config.output, self.config.writer), max_queue=self.config.max_queue
        )
        self.bag.__enter__()
        self._handles: dict[str, int] = {}
        self._subs: list[object] = []
        self._episodes: list[dict[str, object]] = []
        self._watch_episodes()
        self._discover()
        self.create_timer(0.5, self._discover)
        self.get_logger().info(f"recording to {self.config.output} ({self.config.writer.storage.value})")

    def _read_parameters(self) -> RecorderConfig:
        v = declare_parameters(self, PARAM_DEFAULTS, PARAMS, error=rclpy_error, constraints=PARAM_CONSTRAINTS)
        topics, cameras, output, storage = v["topics"], v["interface_cameras"], v["output"], v["storage"]
        compression_mode, calibration = v["compression_mode"], v["calibration"]
        if v["image_transport"] not in TRANSPORTS:
            raise BagError(
                f"parameter image_transport is {v['image_transport']!r}: allowed {list(TRANSPORTS)}"
            )
        if any(cameras):
            iface = declare_interface(self)
            named = [c for c in cameras if c]
            topics = [*topics, *interface_topics(iface, named, image_transport=v["image_transport"])]
        if not output:
            raise BagError("parameter output is empty: give the bag folder to create")
        try:
            kind = Storage(storage)
        except ValueError:
            raise BagError(
                f"parameter storage is {storage!r}: allowed {[s.value for s in Storage]}"
            ) from None
        try:
            compression = Compression(compression_mode)
        except ValueError:
            raise BagError(
                f"parameter compression_mode is {compression_mode!r}: "
                f"allowed {[c.value for c in Compression]}"
            ) from None
        return RecorderConfig(
            output=Path(output),
            topics=tuple(t for t in topics if t),
            all_topics=v["all_topics"],
            writer=WriterConfig(
                storage=kind,
                max_bag_size_bytes=v["max_bag_size_bytes"],
                max_bag_duration_s=v["max_bag_duration_s"],
                flush_interval_s=v["flush_interval_s"],
                compression_mode=compression,
                compression_format=v["compression_format"],
            ),
            max_queue=v["max_queue"],
            calibration=Path(calibration) if calibration else None,
        )

    def _watch_episodes(self) -> None:
        """Collect the identity of every episode seen (a typed subscription beside the raw recording)."""
        try:
            from r2s2r_msgs.msg import EpisodeOutcome
        except ImportError:
            return

        def seen(msg: EpisodeOutcome) -> None:
            self._episodes.append(
                {
                    "episode_index": msg.episode_index,
                    "world_id": msg.world_id,
                    "world_hash": msg.world_hash,
                    "variation_seed": msg.variation_seed,
                    "policy_id": msg.policy_id,
                    "success": msg.success,
                }
            )

        qos = QoSProfile(
            depth=HISTORY_DEPTH,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL,
        )
        self._subs.append(self.create_subscription(EpisodeOutcome, EPISODE_TOPIC, seen, qos))

    def stamp_provenance(self) -> None:
        """Write the provenance ``custom_data`` (see the module docstring); call before closing the bag."""
        writer = self.bag.writer
        versions = {}
        for pkg in ("r2s2r_sim", "r2s2r_eval", "r2s2r_capture", "r2s2r_msgs"):
            try:
                versions[pkg] = metadata.version(pkg)
            except metadata.PackageNotFoundError:
                continue
        writer.set_custom_data("r2s2r.software", json.dumps(versions, sort_keys=True))
        if self.config.calibration is not None:
            digest = hashlib.sha256(self.config.calibration.read_bytes()).hexdigest()
            writer.set_custom_data(
                "r2s2r.calibration", json.dumps({"path": str(self.config.calibration), "sha256": digest})
            )
        writer.set_custom_data("r2s2r.episodes", json.dumps(self._episodes))

    def _offered_qos(self, topic: str) -> tuple[Qos, ...]:
        return tuple(_bag_qos(i.qos_profile) for i in self.get_publishers_info_by_topic(topic))

    def _qos_for(self, topic: str) -> QoSProfile | None:
        infos = self.get_publishers_info_by_topic(topic)
        if not infos:
            return None
        reliable = all(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in infos)
        latched = all(i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos)
        return QoSProfile(
            history=HistoryPolicy.KEEP_LAST,
            depth=HISTORY_DEPTH,
            reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
            durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
        )

    def _discover(self) -> None:
        if self.bag.error is not None:
            # A full disk or a file size limit: stop now and say so, rather than drop everything silently.
            raise CaptureError(
                f"bag {self.config.output}: writing failed ({self.bag.error}); recording stopped. The data "
                "files hold what was written before (readable with BagReader; free space to go on)"
            )
        wanted = set(self.config.topics)
        for topic, types in self.get_topic_names_and_types():
            if topic in self._handles or (not self.config.all_topics and topic not in wanted):
                continue
            if self.config.all_topics and topic in ("/rosout", "/parameter_events") and topic not in wanted:
                continue
            qos = self._qos_for(topic)
            if qos is None:
                continue
            msgtype = types[0]
            try:
                handle = self.bag.add_topic(
                    TopicSpec(topic=topic, msgtype=msgtype, offered_qos_profiles=self._offered_qos(topic))
                )
                msg_class = _import_type(msgtype)
            except (BagError, ImportError, AttributeError) as err:
                self.get_logger().error(f"not recording {topic}: {err}")
                self._handles[topic] = -1
                continue
            self._handles[topic] = handle
            self._subs.append(
                self.create_subscription(
                    msg_class,
                    topic,
                    lambda data, h=handle: self.bag.put(h, self.get_clock().now().nanoseconds, data),
                    qos,
                    raw=True,
                )
            )
            self.get_logger().info(f"recording {topic} ({msgtype}, {qos.reliability.name.lower()})")

    def received_total(self) -> int:
        """Messages received on all topics so far."""
        return sum(self.bag.received.values())

    def summary(self) -> str:
        """Per-topic received and dropped counts."""
        lines = []
        for topic, h in sorted(self._handles.items()):
            if h >= 0:
                lines.append(f"{topic}: received {self.bag.received[h]}, dropped {self.bag.drops[h]}")
        return "; ".join(lines) or "no topics recorded"


# What a recording of a cell holds: the driver topics, the commands, the robot model and the episode outcomes.
RECORDED_KEYS = (
    "joint_states",
    "arm_command",
    "gripper_command",
    "joint_trajectory",
    "controller_state",
    "color_image",
    "color_info",
    "depth_image",
    "depth_info",
    "tf",
    "tf_static",
    "robot_description",
    "episode_outcome",
)


def interface_topics(iface: Interface, cameras: Sequence[str], *, image_transport: str = RAW) -> list[str]:
    """The names of ``RECORDED_KEYS`` in ``iface`` (per-camera topics once per camera) that it defines.

    ``image_transport`` ``compressed``: the images' ``/compressed`` and ``/compressedDepth`` topics instead.
    """
    names: list[str] = []
    for key in RECORDED_KEYS:
        if key not in iface.topics:
            continue
        if iface.topic_spec(key).per_camera:
            topics = [iface.topic(key, camera) for camera in cameras]
            if key in _IMAGE_KEYS:
                topics = [transport_topic(t, image_transport, depth=key == "depth_image") for t in topics]
            names += topics
        else:
            names.append(iface.topic(key))
    return names


_IMAGE_KEYS = ("color_image", "depth_image")


def _bag_qos(qos: QoSProfile) -> Qos:
    """An endpoint's rclpy QoS as the rosbags ``Qos`` that rosbag2 metadata stores (enums by name)."""

    def enum(kind: type, policy: object) -> object:
        name = getattr(policy, "name", "UNKNOWN").upper()
        return kind.__members__.get(name, kind.__members__["UNKNOWN"])  # type: ignore[attr-defined]

    def qtime(duration: object) -> QosTime:
        ns = int(getattr(duration, "nanoseconds", 0))
        return QosTime(*divmod(ns, 1_000_000_000))

    return Qos(
        enum(QosHistory, qos.history),  # type: ignore[arg-type]
        int(qos.depth),
        enum(QosReliability, qos.reliability),  # type: ignore[arg-type]
        enum(QosDurability, qos.durability),  # type: ignore[arg-type]
        qtime(qos.deadline),
        qtime(qos.lifespan),
        enum(QosLiveliness, qos.liveliness),  # type: ignore[arg-type]
        qtime(qos.liveliness_lease_duration),
        bool(qos.avoid_ros_namespace_conventions),
    )


def _import_type(msgtype: str) -> type:
    import importlib

    pkg, kind, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{pkg}.{kind}"), name)  # type: ignore[no-any-return]


def _spin_until_signal(executor: SingleThreadedExecutor, node: RecorderNode) -> None:
    """Record until SIGINT/SIGTERM, then take what the middleware already holds before returning.

    rclpy's own handlers shut the context down on the signal, after which nothing more can be taken:
    messages that had already arrived (a reliable publisher's last burst, acknowledged by DDS) would be
    lost from the bag. Here the signal only sets a flag; the executor then spins until no new message
    arrives for ``DRAIN_QUIET_SPINS`` spins (at most ``DRAIN_LIMIT_S``). A second signal leaves at once.
    """
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    while not stop.is_set() and executor.context.ok():
        executor.spin_once(timeout_sec=SHUTDOWN_POLL_S)
    quiet, deadline = 0, time.monotonic() + DRAIN_LIMIT_S
    last = node.received_total()
    while quiet < DRAIN_QUIET_SPINS and time.monotonic() < deadline and executor.context.ok():
        executor.spin_once(timeout_sec=0.05)
        now = node.received_total()
        quiet = quiet + 1 if now == last else 0
        last = now


def main(args: Sequence[str] | None = None) -> int:
    """Record until SIGINT/SIGTERM; returns 0, or 1 on a configuration or writer error."""
    if help_requested(args):
        print(node_help("recorder_node"))  # the parameters, instead of starting
        return 0
    use_large_data_transport()  # before init: Fast DDS reads the profile at participant creation
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node: RecorderNode | None = None
    code = 0
    try:
        node = RecorderNode()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        _spin_until_signal(executor, node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (BagError, CaptureError) as err:
        rclpy.logging.get_logger("recorder_node").fatal(str(err))
        code = 1
    finally:
        if node is not None:
            try:
                node.stamp_provenance()
                node.bag.close()
                print(f"recorder_node: closed {node.config.output}: {node.summary()}", flush=True)
            except (CaptureError, BagError, OSError) as err:
                print(f"recorder_node: {err}", file=sys.stderr, flush=True)
                code = 1
            node.destroy_node()
        rclpy.try_shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
