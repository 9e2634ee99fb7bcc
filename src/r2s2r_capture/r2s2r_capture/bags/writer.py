"""BagWriter: a rosbag2 writer (MCAP or sqlite3) with splitting, embedded definitions and crash safety.

Pure Python over :mod:`rosbags` (no rclpy). One bag is a folder holding ``<name>_<i>.mcap`` (or ``.db3``)
data files and, once closed, a ``metadata.yaml`` as Jazzy's rosbag2 writes it (version 9, one ``files``
entry per split, ``ros_distro`` from ``ROS_DISTRO`` or the installed ``ros-<distro>-rclpy``, ``custom_data``
also in each MCAP file's ``rosbag2`` metadata record). Compression follows ``ros2 bag record``:
``file`` mode compresses each closed split to ``<file>.zstd``, ``message`` mode each payload (zstd).
Message definitions are embedded from a typestore: the Jazzy store plus any type found
in the ament index (``share/<pkg>/msg/<Name>.msg``), e.g. ``r2s2r_msgs`` and ``tf2_msgs``.

Crash safety: the MCAP storage writes a chunk when 1 MiB is buffered; :meth:`BagWriter.write` also forces a
chunk out (and flushes it to the OS) when ``flush_interval_s`` has passed since the last one, and commits
the sqlite3 transaction on the same schedule. After SIGKILL the data files are readable (without a
``metadata.yaml``, without the MCAP summary) by :class:`r2s2r_capture.bags.reader.BagReader` up to the last
flushed chunk: at most ``max(1 MiB, flush_interval_s of data)`` plus one message is lost.
"""

from __future__ import annotations

import enum
import functools
import os
import queue
import re
import sys
import threading
import time
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

from r2s2r_sim.closing import Closing
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import Writer, WriterError
from rosbags.rosbag2.enums import CompressionFormat, CompressionMode, StoragePlugin
from rosbags.typesys import Stores, TypesysError, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore
from ruamel.yaml import YAML

from r2s2r_capture.errors import BagError, CaptureError

__all__ = [
    "BagWriter",
    "Compression",
    "Storage",
    "WriterConfig",
    "TopicSpec",
    "load_typestore",
    "ensure_type",
    "offered_qos",
    "ros_distro",
]

METADATA_VERSION = 9  # what Jazzy's rosbag2 writes
COMPRESSION_FORMATS = ("zstd",)
_TYPE_RE = re.compile(r"^[A-Za-z_][\w]*/(msg|srv|action)/[A-Za-z_]\w*$")


class Storage(enum.Enum):
    """rosbag2 storage plugins."""

    MCAP = "mcap"
    SQLITE3 = "sqlite3"

    @property
    def suffix(self) -> str:
        """File suffix of this storage's data files."""
        return ".mcap" if self is Storage.MCAP else ".db3"


class Compression(enum.Enum):
    """rosbag2 compression modes (``ros2 bag record --compression-mode``)."""

    NONE = "none"
    FILE = "file"
    MESSAGE = "message"


@dataclass(frozen=True, kw_only=True)
class WriterConfig:
    """How a bag is written; 0 disables a split limit. ``flush_interval_s`` bounds the SIGKILL loss."""

    storage: Storage = Storage.MCAP
    max_bag_size_bytes: int = 0
    max_bag_duration_s: float = 0.0
    flush_interval_s: float = 0.5
    compression_mode: Compression = Compression.NONE
    compression_format: str = "zstd"

    def __post_init__(self) -> None:
        if not isinstance(self.storage, Storage):
            raise BagError(f"storage must be one of {[s.value for s in Storage]}: got {self.storage!r}")
        if not isinstance(self.compression_mode, Compression):
            raise BagError(
                f"compression_mode must be one of {[c.value for c in Compression]}: "
                f"got {self.compression_mode!r}"
            )
        if self.compression_format not in COMPRESSION_FORMATS:
            raise BagError(
                f"compression_format must be one of {list(COMPRESSION_FORMATS)}: "
                f"got {self.compression_format!r}"
            )
        if self.max_bag_size_bytes < 0:
            raise BagError(
                f"max_bag_size_bytes must be >= 0 (0: no size split): got {self.max_bag_size_bytes}"
            )
        if self.max_bag_duration_s < 0:
            raise BagError(
                f"max_bag_duration_s must be >= 0 (0: no duration split): got {self.max_bag_duration_s}"
            )
        if not self.flush_interval_s > 0:
            raise BagError(f"flush_interval_s must be > 0: got {self.flush_interval_s}")


@dataclass(frozen=True, kw_only=True)
class TopicSpec:
    """One recorded connection: topic, type, and the offered QoS profiles (rosbags ``Qos`` objects)."""

    topic: str
    msgtype: str
    offered_qos_profiles: tuple[Any, ...] = ()


@functools.cache
def ros_distro() -> str:
    """The ROS distribution, as rosbag2 records it.

    ``ROS_DISTRO`` (set by a sourced ROS install), else the distro of the installed ``ros-<distro>-rclpy``
    wheel, else ``""`` (what rosbag2 writes when ``ROS_DISTRO`` is unset).
    """
    if distro := os.environ.get("ROS_DISTRO", ""):
        return distro
    for entry in sys.path:  # a directory listing; importlib.metadata.distributions() takes ~0.5 s
        for info in sorted(Path(entry or ".").glob("ros_*_rclpy-*.dist-info")):
            if found := re.fullmatch(r"ros_([a-z]+)_rclpy-.*", info.name):
                return found.group(1)
    return ""


def offered_qos(*, reliability: str, durability: str, depth: int) -> Qos:
    """A keep-last profile as a recording stores it (``offered_qos_profiles``), from policy names.

    Raises:
        BagError: a name other than reliable/best_effort, volatile/transient_local, or depth < 1.
    """
    try:
        rel = QosReliability[reliability.upper()]
        dur = QosDurability[durability.upper()]
    except KeyError:
        raise BagError(
            f"QoS reliability/durability {reliability!r}/{durability!r}: expected reliable or best_effort, "
            "volatile or transient_local"
        ) from None
    if depth < 1:
        raise BagError(f"QoS depth must be >= 1: got {depth}")
    never = QosTime(0, 0)  # unspecified: the rmw default (infinite deadline, lifespan and lease)
    return Qos(QosHistory.KEEP_LAST, depth, rel, dur, never, never, QosLiveliness.AUTOMATIC, never, False)


def load_typestore() -> Typestore:
    """The Jazzy typestore (fresh copy), extended on demand by :func:`ensure_type`."""
    return get_typestore(Stores.ROS2_JAZZY)


def _ament_msg_file(msgtype: str) -> Path | None:
    pkg, _, name = msgtype.split("/")
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        candidate = Path(prefix) / "share" / pkg / "msg" / f"{name}.msg"
        if candidate.is_file():
            return candidate
    return None


def ensure_type(typestore: Typestore, msgtype: str, *, topic: str = "?") -> None:
    """Make ``msgtype`` (and the types it uses) known to ``typestore``, reading installed ``.msg`` files.

    Raises:
        BagError: the type is malformed or no ``share/<pkg>/msg/<Name>.msg`` is on ``AMENT_PREFIX_PATH``.
    """
    if not _TYPE_RE.match(msgtype):
        raise BagError(f"topic {topic}: type {msgtype!r} is not of the form pkg/msg/Name")
    for _ in range(64):  # each round loads one missing type; the bound guards against cycles
        try:
            typestore.generate_msgdef(msgtype, ros_version=2)
            return
        except (KeyError, TypesysError) as err:
            found = re.search(r"'([^']+)'", str(err))
            missing = found.group(1) if found else msgtype
        if missing.count("/") == 1:
            missing = missing.replace("/", "/msg/")
        path = _ament_msg_file(missing) if _TYPE_RE.match(missing) else None
        if path is None:
            raise BagError(
                f"topic {topic}: no message definition for {missing!r} (needed by {msgtype}): not in the "
                f"Jazzy typestore and no share/<pkg>/msg/<Name>.msg on AMENT_PREFIX_PATH"
            )
        typestore.register(get_types_from_msg(path.read_text(encoding="utf-8"), missing))
    raise BagError(f"topic {topic}: could not resolve the definition of {msgtype} (too many nested types)")


class _FileName:
    """Stands in for the folder given to a rosbags storage, which names its file ``<folder.name><suffix>``."""

    def __init__(self, folder: Path, stem: str) -> None:
        self.folder, self.name = folder, stem

    def __truediv__(self, other: str) -> Path:
        return self.folder / other


class _SplitWriter(Writer):
    """A rosbags ``Writer`` for one split file ``<folder>/<stem><suffix>`` of a bag owned by BagWriter."""

    def __init__(self, folder: Path, stem: str, config: WriterConfig, distro: str) -> None:
        plugin = StoragePlugin.MCAP if config.storage is Storage.MCAP else StoragePlugin.SQLITE3
        # rosbags refuses an existing folder; BagWriter owns (and created) it, so pass a name that is free.
        super().__init__(folder / f".{stem}.unused", version=METADATA_VERSION, storage_plugin=plugin)
        if config.compression_mode is not Compression.NONE:
            self.set_compression(
                CompressionMode[config.compression_mode.name],
                CompressionFormat[config.compression_format.upper()],
            )
        self.path = folder
        self.metapath = folder / f".{stem}.metadata.yaml"  # per-file metadata, merged by BagWriter
        self.stem = stem
        self.distro = distro

    def open(self) -> None:
        self.storage = self.STORAGE_PLUGINS[self.storage_plugin](
            _FileName(self.path, self.stem),
            self.compression_mode,  # type: ignore[arg-type]
        )

    def close(self) -> None:
        """Close as rosbags does, with the real distro in the file's own metadata record (MCAP)."""
        assert self.storage is not None
        storage_close = self.storage.close

        def close_with_distro(version: int, text: str) -> None:
            yaml = YAML(typ="safe")
            yaml.default_flow_style = False
            info = yaml.load(text)
            info["ros_distro"] = self.distro
            out = StringIO()
            yaml.dump(info, out)
            storage_close(version, out.getvalue().strip())

        self.storage.close = close_with_distro  # type: ignore[method-assign]
        super().close()


class BagWriter(Closing):
    """Writes one rosbag2 bag folder; a context manager that refuses an existing output path.

    Use::

        with BagWriter(Path("out/run1"), WriterConfig()) as bag:
            conn = bag.add_topic(TopicSpec(topic="/joint_states", msgtype="sensor_msgs/msg/JointState"))
            bag.write(conn, timestamp_ns, cdr_bytes)
    """

    def __init__(
        self, path: Path | str, config: WriterConfig | None = None, *, typestore: Typestore | None = None
    ) -> None:
        self.path = Path(path)
        self.config = config or WriterConfig()
        self.typestore = typestore or load_typestore()
        self._topics: list[TopicSpec] = []
        self._writer: _SplitWriter | None = None
        self._conns: list[Any] = []
        self._files: list[dict[str, Any]] = []
        self._topic_counts: dict[int, int] = {}
        self._split_index = 0
        self._split_start_ns: int | None = None
        self._split_bytes = 0
        self._last_flush = time.monotonic()
        self._topic_meta_template: list[dict[str, Any]] = []
        self._state = "new"
        self.bytes_written = 0
        self.messages_written = 0
        self.custom_data: dict[str, str] = {}

    # -- lifecycle -----------------------------------------------------------------------------------
    def __enter__(self) -> BagWriter:
        if self._state != "new":
            raise BagError(f"bag {self.path}: a BagWriter can be opened once (state {self._state})")
        if self.path.exists():
            raise BagError(f"bag {self.path}: output path exists already, not overwriting")
        try:
            self.path.mkdir(parents=True)
        except OSError as err:
            raise BagError(f"bag {self.path}: cannot create the output folder: {err}") from err
        self._state = "open"
        self._open_split()
        return self

    def close(self) -> None:
        """Close the current split and write ``metadata.yaml``; idempotent."""
        if self._state != "open":
            return
        self._state = "closed"
        self._close_split()
        self._write_metadata()

    def set_custom_data(self, key: str, value: str) -> None:
        """Store a string in the bag's ``custom_data`` (rosbag2 metadata, shown by ``ros2 bag info``).

        Raises:
            BagError: a non-string key or value, or the bag is already closed.
        """
        if not isinstance(key, str) or not isinstance(value, str):
            raise BagError(
                f"bag {self.path}: custom_data {key!r} must map a string to a string, got {value!r}"
            )
        if self._state == "closed":
            raise BagError(f"bag {self.path}: custom_data {key!r} set after the bag was closed")
        self.custom_data[key] = value

    @property
    def split_paths(self) -> list[Path]:
        """Data files written so far (closed splits and the open one)."""
        names = [f["path"] for f in self._files]
        if self._writer is not None:  # the open split is uncompressed until it closes
            names.append(self._writer.stem + self.config.storage.suffix)
        return [self.path / n for n in names]

    # -- topics and messages -------------------------------------------------------------------------
    def add_topic(self, spec: TopicSpec) -> int:
        """Register a connection (definition embedded from the typestore); returns its handle."""
        self._check_open()
        ensure_type(self.typestore, spec.msgtype, topic=spec.topic)
        self._topics.append(spec)
        self._topic_counts[len(self._topics) - 1] = 0
        self._conns.append(self._add_connection(spec))
        return len(self._topics) - 1

    def write(self, handle: int, timestamp_ns: int, data: bytes | memoryview) -> None:
        """Write one serialized (CDR) message; splits and flushes as configured."""
        self._check_open()
        if not 0 <= handle < len(self._conns):
            raise BagError(f"bag {self.path}: unknown topic handle {handle}; use add_topic() first")
        cfg = self.config
        if self._split_start_ns is None:
            self._split_start_ns = timestamp_ns
        size_due = cfg.max_bag_size_bytes and self._split_bytes >= cfg.max_bag_size_bytes
        age_due = (
            cfg.max_bag_duration_s and timestamp_ns - self._split_start_ns >= cfg.max_bag_duration_s * 1e9
        )
        if (size_due or age_due) and self._split_bytes:
            self._close_split()
            self._split_index += 1
            self._open_split()
            self._split_start_ns = timestamp_ns
        assert self._writer is not None
        try:
            self._writer.write(self._conns[handle], timestamp_ns, data)
        except (WriterError, OSError) as err:
            raise BagError(
                f"bag {self.path}: writing topic {self._topics[handle].topic} failed: {err}"
            ) from err
        self._topic_counts[handle] += 1
        self._split_bytes += len(data)
        self.bytes_written += len(data)
        self.messages_written += 1
        if time.monotonic() - self._last_flush >= cfg.flush_interval_s:
            self.flush()

    def flush(self) -> None:
        """Push buffered messages to the OS: an MCAP chunk, or a sqlite3 commit."""
        self._check_open()
        self._last_flush = time.monotonic()
        storage = self._writer.storage if self._writer else None
        if storage is None:
            return
        if self.config.storage is Storage.MCAP:
            if storage.chunk.msgs:
                storage.close_chunk()
            storage.bio.flush()
        else:
            storage.conn.commit()

    # -- internals -----------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._state != "open":
            raise BagError(
                f"bag {self.path}: writer is {self._state}, not open (use it as a context manager)"
            )

    def _add_connection(self, spec: TopicSpec) -> Any:
        assert self._writer is not None
        try:
            return self._writer.add_connection(
                spec.topic,
                spec.msgtype,
                typestore=self.typestore,
                offered_qos_profiles=list(spec.offered_qos_profiles),
            )
        except WriterError as err:
            raise BagError(f"bag {self.path}: cannot add topic {spec.topic} ({spec.msgtype}): {err}") from err

    def _open_split(self) -> None:
        stem = f"{self.path.name}_{self._split_index}"
        self._writer = _SplitWriter(self.path, stem, self.config, ros_distro())
        self._writer.open()
        self._conns = [self._add_connection(spec) for spec in self._topics]
        self._split_bytes = 0

    def _close_split(self) -> None:
        writer, self._writer = self._writer, None
        if writer is None:
            return
        writer.custom_data = dict(self.custom_data)  # also in the MCAP file's rosbag2 metadata record
        writer.close()
        yaml = YAML(typ="safe")
        info = yaml.load(writer.metapath.read_text(encoding="utf-8"))["rosbag2_bagfile_information"]
        writer.metapath.unlink()
        entry = dict(info["files"][0])
        entry["path"] = Path(info["relative_file_paths"][0]).name  # <stem>.mcap, or .mcap.zstd (file mode)
        self._files.append(entry)
        if not self._topic_meta_template:
            self._topic_meta_template = info["topics_with_message_count"]

    def _write_metadata(self) -> None:
        starts = [f["starting_time"]["nanoseconds_since_epoch"] for f in self._files if f["message_count"]]
        ends = [
            f["starting_time"]["nanoseconds_since_epoch"] + f["duration"]["nanoseconds"]
            for f in self._files
            if f["message_count"]
        ]
        start = min(starts) if starts else 0
        compressed = self.config.compression_mode is not Compression.NONE
        cfg_mode = self.config.compression_mode.value if compressed else ""
        cfg_format = self.config.compression_format if compressed else ""
        topics = []
        for i, meta in enumerate(self._topic_meta_template or []):
            topics.append({"topic_metadata": meta["topic_metadata"], "message_count": self._topic_counts[i]})
        info = {
            "version": METADATA_VERSION,
            "storage_identifier": self.config.storage.value,
            "relative_file_paths": [f["path"] for f in self._files],
            "duration": {"nanoseconds": (max(ends) - start) if ends else 0},
            "starting_time": {"nanoseconds_since_epoch": start},
            "message_count": sum(self._topic_counts.values()),
            "topics_with_message_count": topics,
            "compression_format": cfg_format,
            "compression_mode": cfg_mode,
            "files": self._files,
            "custom_data": dict(self.custom_data) or None,
            "ros_distro": ros_distro(),
        }
        yaml = YAML(typ="safe")
        yaml.default_flow_style = False
        text = StringIO()
        yaml.dump({"rosbag2_bagfile_information": info}, text)
        tmp = self.path / "metadata.yaml.tmp"
        tmp.write_text(text.getvalue(), encoding="utf-8")
        tmp.replace(self.path / "metadata.yaml")


class ThreadedBagWriter:
    """Feeds a :class:`BagWriter` from a bounded queue on a background thread (ROS-free).

    ``put()`` never blocks: when the queue is full the message is dropped and counted in ``drops``
    (per topic handle), so a slow disk cannot stall the middleware callbacks. ``close()`` drains the queue,
    closes the bag and re-raises a writer failure as :class:`~r2s2r_capture.errors.CaptureError`.
    """

    def __init__(self, writer: BagWriter, *, max_queue: int = 10000) -> None:
        if max_queue < 1:
            raise BagError(f"max_queue must be >= 1: got {max_queue}")
        self.writer = writer
        self._queue: queue.Queue[tuple[int, int, bytes] | None] = queue.Queue(maxsize=max_queue)
        self._full = queue.Full
        self.drops: dict[int, int] = {}
        self.received: dict[int, int] = {}
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="bag-writer", daemon=True)
        self._closed = False

    def __enter__(self) -> ThreadedBagWriter:
        self.writer.__enter__()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_topic(self, spec: TopicSpec) -> int:
        """Register a topic (call from one thread; the writer thread only writes)."""
        handle = self.writer.add_topic(spec)
        self.drops[handle] = 0
        self.received[handle] = 0
        return handle

    def put(self, handle: int, timestamp_ns: int, data: bytes) -> bool:
        """Queue one message; False (and counted) if dropped because the queue is full or writer failed."""
        self.received[handle] += 1
        if self.error is not None or self._closed:
            self.drops[handle] += 1
            return False
        try:
            self._queue.put_nowait((handle, timestamp_ns, data))
        except self._full:
            self.drops[handle] += 1
            return False
        return True

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self.error is None:
                try:
                    self.writer.write(*item)
                except BaseException as err:  # reported by close()
                    self.error = err

    def close(self) -> None:
        """Drain, close the bag (metadata.yaml written) and report a writer failure."""
        if self._closed:
            return
        self._closed = True
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self.writer.close()
        if self.error is not None:
            raise CaptureError(f"bag {self.writer.path}: writer thread failed: {self.error}") from self.error
