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

An MCAP file without its summary (a recording killed with SIGKILL, or a truncated copy) is scanned record by
record: every complete chunk is readable, and :attr:`BagReader.notes` says where the file was cut.
"""

from __future__ import annotations

import heapq
import re
import sqlite3
import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from rosbags.rosbag2 import Reader
from rosbags.typesys import get_types_from_msg
from rosbags.typesys.store import Typestore
from ruamel.yaml import YAML

from r2s2r_capture.bag_writer import load_typestore
from r2s2r_capture.errors import BagError

__all__ = ["BagMessage", "BagReader", "TopicInfo", "normalize_type"]

DATA_SUFFIXES = (".mcap", ".db3")
MAX_METADATA_BYTES = 16 * 2**20
MAX_RECORD_BYTES = 2**31  # a single MCAP record larger than this is treated as corruption
_MCAP_MAGIC = b"\x89MCAP0\r\n"


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
    offered_qos_profiles: str = ""


def normalize_type(msgtype: str) -> str:
    """``pkg/Name`` -> ``pkg/msg/Name``; other names unchanged."""
    return msgtype.replace("/", "/msg/") if msgtype.count("/") == 1 else msgtype


@dataclass
class _Conn:
    topic: str
    msgtype: str
    fmt: str
    msgdef: str | None  # None: the file has no definition record for this type
    qos: str


class _DataFile:
    """One storage file, read with rosbags or, for an MCAP without summary, by scanning its records."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conns: list[_Conn] = []
        self.counts: dict[str, int] = {}
        self.start_ns: int | None = None
        self.end_ns: int | None = None
        self.note = ""
        self.scanned = False
        try:
            with Reader(path) as reader:
                for c in reader.connections:
                    self.conns.append(
                        _Conn(
                            c.topic,
                            c.msgtype,
                            c.ext.serialization_format,  # type: ignore[attr-defined]
                            c.msgdef.data if c.msgdef.format.value else None,
                            "",
                        )
                    )
                    self.counts[c.topic] = self.counts.get(c.topic, 0) + c.msgcount
                if reader.message_count:  # rosbags' end_time is exclusive (last + 1)
                    self.start_ns, self.end_ns = reader.start_time, reader.end_time - 1
        except Exception as err:  # noqa: BLE001 - rosbags raises several types; fall back or report below
            if path.suffix != ".mcap":
                raise BagError(f"data file {path}: cannot be read: {err}") from err
            self.scanned = True
            self.note = f"{path.name}: {err} -> scanned record by record"
            for item in self._scan():
                if isinstance(item, BagMessage):
                    self.counts[item.topic] = self.counts.get(item.topic, 0) + 1
                    self.start_ns = min(item.timestamp_ns, self.start_ns or item.timestamp_ns)
                    self.end_ns = max(item.timestamp_ns, self.end_ns or 0)
        if self.path.suffix == ".db3":
            self._srv_defs = self._sqlite_definitions()
        else:
            self._srv_defs = {}

    def srv_definition(self, srvtype: str) -> str:
        """Raw definition the sqlite3 file stores under ``srvtype`` (e.g. ``pkg/srv/Name``), or ''."""
        return self._srv_defs.get(srvtype, "")

    def _sqlite_definitions(self) -> dict[str, str]:
        try:
            db = sqlite3.connect(f"file:{self.path}?immutable=1", uri=True)
            try:
                rows = db.execute("SELECT topic_type, encoded_message_definition FROM message_definitions")
                return {str(t): str(d) for t, d in rows}
            finally:
                db.close()
        except sqlite3.Error:
            return {}

    def messages(self) -> Iterator[BagMessage]:
        if self.scanned:
            yield from (m for m in self._scan() if isinstance(m, BagMessage))
            return
        with Reader(self.path) as reader:
            for conn, ts, data in reader.messages():
                yield BagMessage(conn.topic, conn.msgtype, ts, bytes(data))

    # -- MCAP scan (no summary needed) -----------------------------------------------------------------
    def _scan(self) -> Iterator[BagMessage | None]:
        channels: dict[int, tuple[str, str]] = {}
        schemas: dict[int, tuple[str, str]] = {}
        self.conns = []
        with self.path.open("rb") as bio:
            if bio.read(8) != _MCAP_MAGIC:
                raise BagError(f"data file {self.path}: not an MCAP file (bad magic)")
            offset = 8
            while True:
                head = bio.read(9)
                if len(head) < 9:
                    break
                op, length = head[0], struct.unpack("<Q", head[1:])[0]
                if length > MAX_RECORD_BYTES:
                    self.note += f"; record at byte {offset} claims {length} bytes: stopped there"
                    break
                body = bio.read(length)
                if len(body) < length:
                    self.note += f"; truncated at byte {offset} (record 0x{op:02x} incomplete): stopped there"
                    break
                offset += 9 + length
                if op == 0x02:  # footer
                    break
                yield from self._records(op, body, schemas, channels)
                yield None

    def _records(
        self, op: int, body: bytes, schemas: dict[int, tuple[str, str]], channels: dict[int, tuple[str, str]]
    ) -> Iterator[BagMessage]:
        if op == 0x03:  # schema: id u16, name str, encoding str, data bytes(u32)
            sid = struct.unpack_from("<H", body)[0]
            name, pos = _str(body, 2)
            _enc, pos = _str(body, pos)
            size = struct.unpack_from("<I", body, pos)[0]
            schemas[sid] = (name, body[pos + 4 : pos + 4 + size].decode("utf-8", "replace"))
        elif op == 0x04:  # channel: id u16, schema u16, topic str, encoding str, metadata map
            cid, sid = struct.unpack_from("<HH", body)
            topic, pos = _str(body, 4)
            enc, pos = _str(body, pos)
            name, msgdef = schemas.get(sid, ("", ""))
            if cid not in channels:
                self.conns.append(_Conn(topic, name, enc, msgdef, ""))
            channels[cid] = (topic, name)
        elif op == 0x05:  # message: channel u16, seq u32, log_time u64, publish_time u64, data
            cid, _seq, log_time = struct.unpack_from("<HIQ", body)
            if cid in channels:
                topic, name = channels[cid]
                yield BagMessage(topic, name, log_time, bytes(body[22:]))
        elif op == 0x06:  # chunk: start, end, uncompressed size u64, crc u32, compression str, records
            usize = struct.unpack_from("<Q", body, 16)[0]
            comp, pos = _str(body, 28)
            size = struct.unpack_from("<Q", body, pos)[0]
            data = body[pos + 8 : pos + 8 + size]
            if comp == "zstd":
                import zstandard  # noqa: PLC0415 - only for compressed chunks

                data = zstandard.ZstdDecompressor().decompress(data, max_output_size=usize)
            elif comp:
                self.note += f"; chunk compression {comp!r} not supported: chunk skipped"
                return
            pos = 0
            while pos + 9 <= len(data):
                sub_op, sub_len = data[pos], struct.unpack_from("<Q", data, pos + 1)[0]
                yield from self._records(sub_op, data[pos + 9 : pos + 9 + sub_len], schemas, channels)
                pos += 9 + sub_len


def _str(buf: bytes, pos: int) -> tuple[str, int]:
    size = struct.unpack_from("<I", buf, pos)[0]
    return buf[pos + 4 : pos + 4 + size].decode("utf-8", "replace"), pos + 4 + size


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
        self.files: list[_DataFile] = []
        self.topics: dict[str, TopicInfo] = {}
        self.notes: list[str] = []
        self.undeserializable: dict[str, str] = {}  # type -> why
        self.metadata: dict[str, Any] | None = None
        self._open = False

    # -- lifecycle -----------------------------------------------------------------------------------
    def __enter__(self) -> BagReader:
        if self._open:
            raise BagError(f"bag {self.path}: reader is already open")
        paths = self._data_paths()
        for p in paths:
            data_file = _DataFile(p)
            if data_file.note:
                self.notes.append(data_file.note)
            self.files.append(data_file)
        self._check_formats()
        self._collect_topics()
        self._register_types()
        self._open = True
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._open = False

    def _data_paths(self) -> list[Path]:
        path = self.path
        if path.is_file():
            if path.suffix not in DATA_SUFFIXES:
                raise BagError(f"bag {path}: not a bag folder or a {'/'.join(DATA_SUFFIXES)} data file")
            return [path]
        if not path.is_dir():
            raise BagError(f"bag {path}: no such file or folder")
        meta = path / "metadata.yaml"
        if not meta.is_file():
            found = sorted(p for p in path.iterdir() if p.suffix in DATA_SUFFIXES)
            if not found:
                raise BagError(f"bag {path}: no metadata.yaml and no {'/'.join(DATA_SUFFIXES)} data files")
            self.notes.append(f"{path.name}: no metadata.yaml (unfinished recording?); read the data files")
            return found
        if meta.stat().st_size > MAX_METADATA_BYTES:
            raise BagError(f"bag {path}: metadata.yaml is larger than {MAX_METADATA_BYTES} bytes")
        try:
            doc = YAML(typ="safe").load(meta.read_text(encoding="utf-8"))
            info = doc["rosbag2_bagfile_information"]
        except Exception as err:  # noqa: BLE001 - yaml errors, wrong shape
            raise BagError(
                f"bag {path}: metadata.yaml has no readable rosbag2_bagfile_information: {err}"
            ) from err
        self.metadata = info
        mode = info.get("compression_mode") or ""
        if mode:
            raise BagError(
                f"bag {path}: metadata.yaml field compression_mode is {mode!r}; "
                "compressed bags are not supported (decompress them first)"
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
            raise BagError(f"bag {path}: metadata.yaml relative_file_paths lists missing file(s) {missing}")
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
        for f in self.files:
            for c in f.conns:
                types.setdefault(c.topic, (c.msgtype, c.fmt))
            for topic, n in f.counts.items():
                counts[topic] = counts.get(topic, 0) + n
        self.topics = {t: TopicInfo(t, mt, fmt, counts.get(t, 0)) for t, (mt, fmt) in types.items()}

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
        except Exception as err:  # noqa: BLE001 - parser and store raise several types
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
        except Exception as err:  # noqa: BLE001
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
        streams = [f.messages() for f in self.files]
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
        except Exception as err:  # noqa: BLE001
            raise BagError(
                f"bag {self.path}: topic {msg.topic} message at {msg.timestamp_ns} ns "
                f"does not deserialize as {msg.msgtype}: {err}"
            ) from err
