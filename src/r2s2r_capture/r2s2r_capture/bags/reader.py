"""BagReader: read any rosbag2 bag (folder with metadata.yaml, folder of data files, or one data file).

Pure Python over :mod:`rosbags` (no rclpy). It works around what a plain ``rosbags.rosbag2.Reader(folder)``
gets wrong with bags the C++ rosbag2 wrote (see ``shared/conformance/rosbag2/MANIFEST.md``):

1. Every data file is opened directly, so a QoS mismatch between ``metadata.yaml`` and the storage file
   cannot silently drop messages; topics are matched by name and type only.
2. Service-event types (``pkg/srv/Name_Event``) are built from the raw ``.srv`` text the bag embeds.
3. Old-style type names (``pkg/Name``) are normalised to ``pkg/msg/Name`` for deserialisation.
4. The Jazzy typestore is used for known types (embedded definitions can be placeholders); embedded
   definitions (or ``definitions`` given by the caller) supply the others.
5. Start and end times come from the data, never from ``metadata.yaml``.
6. A serialization format other than ``cdr`` is refused, naming the bag, topic and field.
7. Compressed bags (rosbag2's ``file`` and ``message`` modes, zstd) are read, with or without metadata.yaml.
8. Each topic's offered QoS comes from ``metadata.yaml`` or, without one, from the data file (MCAP channel
   metadata, sqlite3 ``topics`` table).

An MCAP file without its summary (a recording killed with SIGKILL, or a truncated copy) is read record by
record: every complete chunk is readable, and :attr:`BagReader.notes` says where the file was cut. A ROS 1
bag is refused with the command that converts it. See :mod:`r2s2r_capture.bags.files` for the file layer.
"""

from __future__ import annotations

import heapq
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from rosbags.interfaces import Qos
from rosbags.typesys import get_types_from_msg
from rosbags.typesys.store import Typestore
from ruamel.yaml import YAML

from r2s2r_capture.bags.files import DataFile, qos_of, refuse_ros1, sniff
from r2s2r_capture.bags.writer import load_typestore
from r2s2r_capture.errors import BagError

__all__ = ["BagMessage", "BagReader", "TopicInfo", "normalize_type"]

DATA_SUFFIXES = (".mcap", ".db3", ".mcap.zstd", ".db3.zstd")
COMPRESSION_MODES = ("", "none", "file", "message")
MAX_METADATA_BYTES = 16 * 2**20


@dataclass(frozen=True)
class BagMessage:
    """One recorded message: topic, type as recorded, receive time (ns) and the raw CDR bytes."""

    topic: str
    msgtype: str
    timestamp_ns: int
    data: bytes


@dataclass(frozen=True)
class TopicInfo:
    """A topic as found in the data files (``message_count`` counted from the data)."""

    name: str
    msgtype: str
    serialization_format: str
    message_count: int
    offered_qos_profiles: tuple[Qos, ...] = ()  # as recorded (rosbags Qos), first the first publisher's
    qos_source: str = ""  # "metadata.yaml", "data file" or "" (no QoS recorded)


def normalize_type(msgtype: str) -> str:
    """``pkg/Name`` -> ``pkg/msg/Name``; other names unchanged."""
    return msgtype.replace("/", "/msg/") if msgtype.count("/") == 1 else msgtype


def _rename(obj: Any, old: str, new: str) -> Any:
    if isinstance(obj, str):
        return obj.replace(old, new)
    if isinstance(obj, tuple):
        return tuple(_rename(x, old, new) for x in obj)
    if isinstance(obj, list):
        return [_rename(x, old, new) for x in obj]
    return obj


class BagReader:
    """Read-only view of one bag; a context manager.

    Args:
        path: a bag folder (with or without ``metadata.yaml``) or one ``.mcap``/``.db3`` file.
        typestore: types to deserialise with (default: a fresh Jazzy store).
        definitions: extra ``{type: .msg text}`` for types neither the store nor the bag defines.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        typestore: Typestore | None = None,
        definitions: Mapping[str, str] | None = None,
    ) -> None:
        self.path = Path(path)
        self.typestore = typestore or load_typestore()
        self._extra = dict(definitions or {})
        self.files: list[DataFile] = []
        self.topics: dict[str, TopicInfo] = {}
        self.notes: list[str] = []
        self.undeserializable: dict[str, str] = {}  # type -> why
        self.metadata: dict[str, Any] | None = None
        self._open = False
        self._stack = ExitStack()

    # -- lifecycle -----------------------------------------------------------------------------------
    def __enter__(self) -> BagReader:
        if self._open:
            raise BagError(f"bag {self.path}: reader is already open")
        try:
            paths = self._data_paths()
            mode = str((self.metadata or {}).get("compression_mode") or "").lower()
            tmpdir: Path | None = None
            for p in paths:
                if tmpdir is None and sniff(p) == "zstd":  # a decompressed copy lives as long as the reader
                    tmpdir = Path(self._stack.enter_context(tempfile.TemporaryDirectory(prefix="r2s2r-bag-")))
                data_file = DataFile(p, tmpdir or p.parent, message_compression=mode == "message")
                self.notes.extend(data_file.notes)
                self.files.append(data_file)
            self._check_formats()
            self._collect_topics()
            self._register_types()
        except BaseException:
            self._stack.close()
            raise
        self._open = True
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._open = False
        self._stack.close()

    def _data_paths(self) -> list[Path]:
        path = self.path
        if path.is_file():
            if sniff(path) == "ros1" or path.suffix == ".bag":
                raise refuse_ros1(path)
            if not path.name.endswith(DATA_SUFFIXES):
                raise BagError(f"bag {path}: not a bag folder or a {'/'.join(DATA_SUFFIXES)} data file")
            return [path]
        if not path.is_dir():
            raise BagError(f"bag {path}: no such file or folder")
        meta = path / "metadata.yaml"
        found = sorted(p for p in path.iterdir() if p.name.endswith(DATA_SUFFIXES))
        if not meta.is_file():
            if not found:
                ros1 = sorted(p for p in path.iterdir() if p.suffix == ".bag")
                if ros1:
                    raise refuse_ros1(ros1[0])
                raise BagError(f"bag {path}: no metadata.yaml and no {'/'.join(DATA_SUFFIXES)} data files")
            self.notes.append(f"{path.name}: no metadata.yaml (unfinished recording?); read the data files")
            return found
        if meta.stat().st_size > MAX_METADATA_BYTES:
            raise BagError(f"bag {path}: metadata.yaml is larger than {MAX_METADATA_BYTES} bytes")
        try:
            doc = YAML(typ="safe").load(meta.read_text(encoding="utf-8"))
            info = doc["rosbag2_bagfile_information"]
            if not isinstance(info, dict):
                raise TypeError(f"expected a mapping, got {type(info).__name__}")
        except Exception as err:  # yaml errors, wrong shape
            raise BagError(
                f"bag {path}: metadata.yaml has no readable rosbag2_bagfile_information: {err}"
            ) from err
        self.metadata = info
        mode = str(info.get("compression_mode") or "").lower()
        fmt = str(info.get("compression_format") or "")
        if mode not in COMPRESSION_MODES:
            raise BagError(
                f"bag {path}: metadata.yaml field compression_mode is {mode!r}; "
                "allowed: file, message or none"
            )
        if mode in ("file", "message") and fmt != "zstd":
            raise BagError(
                f"bag {path}: metadata.yaml field compression_format is {fmt!r} with compression_mode "
                f"{mode!r}; only 'zstd' can be read"
            )
        for entry in info.get("topics_with_message_count") or []:
            meta_topic = entry.get("topic_metadata", {})
            fmt = meta_topic.get("serialization_format", "cdr")
            if fmt != "cdr":
                raise BagError(
                    f"bag {path}: metadata.yaml topic {meta_topic.get('name')} field "
                    f"serialization_format is {fmt!r}; only 'cdr' can be read"
                )
        names = info.get("relative_file_paths")
        if not names:
            raise BagError(f"bag {path}: metadata.yaml field relative_file_paths is empty or missing")
        paths = [path / Path(str(n)).name for n in names]
        missing = [p.name for p in paths if not p.is_file()]
        if missing:
            there = [p.name for p in found] or "none"
            raise BagError(
                f"bag {path}: metadata.yaml relative_file_paths lists missing file(s) {missing}; "
                f"data files in the folder: {there}"
            )
        return paths

    def _check_formats(self) -> None:
        for f in self.files:
            for c in f.conns:
                if c.fmt != "cdr":
                    raise BagError(
                        f"bag {self.path}: file {f.path.name} topic {c.topic} field "
                        f"serialization_format is {c.fmt!r}; only 'cdr' can be read"
                    )

    def _collect_topics(self) -> None:
        counts: dict[str, int] = {}
        types: dict[str, tuple[str, str]] = {}
        file_qos: dict[str, tuple[Qos, ...]] = {}
        for f in self.files:
            for c in f.conns:
                types.setdefault(c.topic, (c.msgtype, c.fmt))
                if c.qos and c.topic not in file_qos:
                    file_qos[c.topic] = c.qos
            for topic, n in f.counts.items():
                counts[topic] = counts.get(topic, 0) + n
        meta_qos = {}
        for entry in (self.metadata or {}).get("topics_with_message_count") or []:
            meta = (entry or {}).get("topic_metadata") or {}
            if profiles := qos_of(meta):
                meta_qos[str(meta.get("name"))] = profiles
        self.topics = {}
        for t, (mt, fmt) in types.items():
            if t in meta_qos:
                qos, source = meta_qos[t], "metadata.yaml"
            else:
                qos, source = file_qos.get(t, ()), "data file"
            self.topics[t] = TopicInfo(t, mt, fmt, counts.get(t, 0), qos, source if qos else "")

    # -- types ---------------------------------------------------------------------------------------
    def _register_types(self) -> None:
        embedded: dict[str, str] = {}
        for f in self.files:
            for c in f.conns:
                if c.msgdef is not None and c.msgtype not in embedded:
                    embedded[c.msgtype] = c.msgdef
        for topic in self.topics.values():
            msgtype = topic.msgtype
            name = normalize_type(msgtype)
            if name in self.typestore.types:
                continue
            text = next(
                (
                    d
                    for d in (self._extra.get(msgtype), self._extra.get(name), embedded.get(msgtype))
                    if d is not None
                ),
                None,
            )
            if name.endswith("_Event") and "/srv/" in name:
                srv = name[: -len("_Event")]
                text = (
                    text
                    or self._extra.get(srv)
                    or next(  # sqlite3 stores it under pkg/srv/Name
                        (t for f in self.files if (t := f.srv_definition(srv))), ""
                    )
                )
                why = self._register_service_event(name, text)
            else:
                why = self._register_msg(name, text)
            if why:
                self.undeserializable[msgtype] = why
                self.notes.append(f"topic {topic.name} ({msgtype}): {why}")

    def _register_msg(self, name: str, text: str | None) -> str:
        if text is None:
            return "no definition: not in the Jazzy typestore, not embedded in the bag, not given"
        try:
            types = get_types_from_msg(text, name)
            self.typestore.register(types)
            self.typestore.generate_msgdef(name, ros_version=2)  # all nested types resolve
        except Exception as err:  # parser and store raise several types
            return f"embedded definition does not parse or resolve: {err}"
        return ""

    def _register_service_event(self, name: str, srv_text: str) -> str:
        if "---" not in srv_text:
            return "service event without a .srv definition (request --- response) in the bag"
        pkg, _, event = name.split("/")
        base = event[: -len("_Event")]
        request, response = (
            part.strip("\n") for part in re.split(r"^---\s*$", srv_text, maxsplit=1, flags=re.M)
        )
        tmp = f"{pkg}/msg/{base}_"
        try:
            types: dict[str, Any] = {}
            types.update(get_types_from_msg(request, f"{tmp}Request"))
            types.update(get_types_from_msg(response, f"{tmp}Response"))
            types.update(
                get_types_from_msg(
                    f"service_msgs/msg/ServiceEventInfo info\n{tmp}Request[<=1] request\n"
                    f"{tmp}Response[<=1] response\n",
                    f"{tmp}Event",
                )
            )
            renamed = {
                _rename(k, tmp, f"{pkg}/srv/{base}_"): _rename(v, tmp, f"{pkg}/srv/{base}_")
                for k, v in types.items()
            }
            self.typestore.register(renamed)  # (generate_msgdef cannot render /srv/ names; not needed here)
        except Exception as err:
            return f"cannot build the service event type from the .srv text: {err}"
        return ""

    # -- reading -------------------------------------------------------------------------------------
    @property
    def message_count(self) -> int:
        """Messages in the data files (counted from the data, not metadata.yaml)."""
        return sum(t.message_count for t in self.topics.values())

    @property
    def start_ns(self) -> int | None:
        """Earliest receive timestamp in the data, or None for an empty bag."""
        starts = [f.start_ns for f in self.files if f.start_ns is not None]
        return min(starts) if starts else None

    @property
    def end_ns(self) -> int | None:
        """Latest receive timestamp in the data, or None for an empty bag."""
        ends = [f.end_ns for f in self.files if f.end_ns is not None]
        return max(ends) if ends else None

    def messages(self, topics: Iterable[str] | None = None) -> Iterator[BagMessage]:
        """All messages of all files, in receive-time order, optionally only ``topics``."""
        if not self._open:
            raise BagError(f"bag {self.path}: reader is not open (use it as a context manager)")
        wanted = set(topics) if topics is not None else None
        streams = [(BagMessage(*m) for m in f.messages()) for f in self.files]
        for msg in heapq.merge(*streams, key=lambda m: m.timestamp_ns):
            if wanted is None or msg.topic in wanted:
                yield msg

    def deserialize(self, msg: BagMessage) -> Any:
        """Decode a message's CDR bytes with the bag's typestore."""
        why = self.undeserializable.get(msg.msgtype)
        if why:
            raise BagError(f"bag {self.path}: topic {msg.topic} type {msg.msgtype}: {why}")
        try:
            return self.typestore.deserialize_cdr(msg.data, normalize_type(msg.msgtype))
        except Exception as err:
            raise BagError(
                f"bag {self.path}: topic {msg.topic} message at {msg.timestamp_ns} ns "
                f"does not deserialize as {msg.msgtype}: {err}"
            ) from err
