"""One rosbag2 data file as BagReader sees it: format sniffing, zstd decompression, recovery of damaged MCAPs.

A file is identified by its first bytes, not its name: MCAP, SQLite, a zstd frame (rosbag2's file
compression), or a ROS 1 bag (refused, naming the converter). A zstd-compressed file is decompressed to a
temporary copy, as ``rosbags`` does for file-compressed bags. Message payloads that start with the zstd frame
magic are decompressed (rosbag2's message compression): a CDR payload starts with its encapsulation header,
whose first byte is 0, so the magic cannot be mistaken for CDR. An MCAP that ``rosbags`` cannot open (no
summary: a killed recording, a truncated copy) is read record by record with the ``mcap`` package's
stream reader, which decompresses chunks and checks their CRCs; every complete chunk is recovered.
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from mcap.records import Channel, Message, Schema
from mcap.stream_reader import StreamReader
from rosbags.interfaces import Qos
from rosbags.rosbag2 import Reader
from rosbags.rosbag2.metadata import parse_qos

if sys.version_info >= (3, 14):  # the zstd module rosbags uses
    from compression import zstd
else:
    from backports import zstd

from r2s2r_capture.errors import BagError

MAX_RECORD_BYTES = 2**31  # one MCAP record or decompressed message larger than this is treated as corruption
MCAP_MAGIC = b"\x89MCAP0\r\n"
SQLITE_MAGIC = b"SQLite format 3\x00"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
COPY_BLOCK_BYTES = 2**20
FREE_MARGIN_BYTES = 2**30  # a decompressed copy never fills the temporary disk beyond this
ROS1_MAGIC = b"#ROSBAG V"
ROS1_CONVERT = "rosbags-convert --src {src} --dst {dst} (installed with rosbags)"


def sniff(path: Path) -> str:
    """``'mcap'``, ``'sqlite3'``, ``'zstd'``, ``'ros1'`` or ``''`` (unknown), from the file's first bytes."""
    try:
        with path.open("rb") as bio:
            head = bio.read(16)
    except OSError as err:
        raise BagError(f"data file {path}: cannot be read: {err}") from err
    for kind, magic in (
        ("mcap", MCAP_MAGIC),
        ("sqlite3", SQLITE_MAGIC),
        ("zstd", ZSTD_MAGIC),
        ("ros1", ROS1_MAGIC),
    ):
        if head.startswith(magic):
            return kind
    return ""


def refuse_ros1(path: Path) -> BagError:
    """The error for a ROS 1 bag: says so and names the conversion command."""
    dst = path.with_name(path.stem + "_ros2") if path.is_file() else path.with_name(path.name + "_ros2")
    return BagError(
        f"bag {path}: a ROS 1 bag (rosbag v2 format), not rosbag2; convert it first: "
        + ROS1_CONVERT.format(src=path, dst=dst)
    )


def decompress_message(data: bytes, where: str) -> bytes:
    """Decompress one zstd-compressed message payload (at most MAX_RECORD_BYTES)."""
    dec = zstd.ZstdDecompressor()
    try:
        out = dec.decompress(data, max_length=MAX_RECORD_BYTES)
    except zstd.ZstdError as err:
        raise BagError(f"{where}: payload is not a valid zstd frame: {err}") from err
    if not dec.eof:
        raise BagError(
            f"{where}: zstd payload is truncated or decompresses to more than {MAX_RECORD_BYTES} bytes"
        )
    return out


@dataclass
class Conn:
    """One connection of a data file: topic, type, serialization format, definition (None: none) and QoS."""

    topic: str
    msgtype: str
    fmt: str
    msgdef: str | None
    qos: tuple[Qos, ...]


class _ExactReads:
    """A file whose ``read(n)`` returns ``n`` bytes or raises: a truncated record is never half-read."""

    def __init__(self, bio: IO[bytes]) -> None:
        self._bio = bio

    def read(self, size: int = -1) -> bytes:
        data = self._bio.read(size)
        if size > 0 and len(data) < size:
            raise EOFError("truncated: a record runs past the end of the file")
        return data


class DataFile:
    """One storage file, read with rosbags or, for an MCAP without summary, with the mcap stream reader.

    Args:
        path: the data file as named in the bag.
        tmpdir: where a zstd-compressed file is decompressed (the caller owns and removes it).
        message_compression: the bag's metadata says messages are zstd-compressed (every payload must be).
    """

    def __init__(self, path: Path, tmpdir: Path, *, message_compression: bool = False) -> None:
        self.path = path
        self.source = path  # the file actually read (a decompressed copy for a compressed file)
        self.message_compression = message_compression
        self.conns: list[Conn] = []
        self.counts: dict[str, int] = {}
        self.start_ns: int | None = None
        self.end_ns: int | None = None
        self.notes: list[str] = []
        self.scanned = False
        kind = sniff(path)
        if kind == "ros1":
            raise refuse_ros1(path)
        if kind == "zstd":
            kind = self._decompress_file(tmpdir)
        if kind not in ("mcap", "sqlite3"):
            want = ".mcap" if path.name.endswith((".mcap", ".mcap.zstd")) else ".db3"
            what = "an MCAP file" if want == ".mcap" else "an SQLite file"
            raise BagError(f"data file {path}: not {what} (bad magic): not a rosbag2 data file")
        try:
            self._open_with_rosbags()
        except Exception as err:  # rosbags raises several types; fall back or report below
            if kind != "mcap":
                raise BagError(f"data file {path}: cannot be read: {err}") from err
            self._recover_summary(err)
        self.compressed_payloads = self._first_payload_compressed()
        if self.compressed_payloads and not message_compression:
            self.notes.append(
                f"{path.name}: message payloads are zstd frames (a message-compressed recording read "
                "without its metadata.yaml): decompressed"
            )
        self._srv_defs = self._sqlite_definitions() if kind == "sqlite3" else {}

    # -- opening ---------------------------------------------------------------------------------------
    def _decompress_file(self, tmpdir: Path) -> str:
        name = self.path.name.removesuffix(".zstd")
        out = tmpdir / f"{len(list(tmpdir.iterdir()))}_{name}"
        # Guard the disk: a decompressed copy may not leave less than FREE_MARGIN_BYTES free.
        budget = shutil.disk_usage(tmpdir).free - FREE_MARGIN_BYTES
        written = 0
        try:
            with self.path.open("rb") as bio, zstd.open(bio, "rb") as infile, out.open("wb") as outfile:
                while block := infile.read(COPY_BLOCK_BYTES):
                    written += len(block)
                    if written > budget:
                        raise BagError(
                            f"data file {self.path}: decompresses to more than the {max(budget, 0)} bytes "
                            f"that {tmpdir} can hold (keeping {FREE_MARGIN_BYTES} free); "
                            "set TMPDIR to a larger disk"
                        )
                    outfile.write(block)
        except (zstd.ZstdError, EOFError, OSError) as err:
            raise BagError(f"data file {self.path}: zstd-compressed file does not decompress: {err}") from err
        kind = sniff(out)
        suffix = {"mcap": ".mcap", "sqlite3": ".db3"}.get(kind)
        if suffix is None:
            raise BagError(f"data file {self.path}: decompressed, but holds neither MCAP nor SQLite data")
        if not out.name.endswith(suffix):  # rosbags picks the storage plugin by suffix
            out = out.rename(out.with_name(out.name + suffix))
        self.source = out
        self.notes.append(
            f"{self.path.name}: zstd-compressed file (file compression): read a decompressed copy"
        )
        return kind

    def _open_with_rosbags(self) -> None:
        with Reader(self.source) as reader:
            for c in reader.connections:
                self.conns.append(
                    Conn(
                        c.topic,
                        c.msgtype,
                        c.ext.serialization_format,  # type: ignore[union-attr]
                        c.msgdef.data if c.msgdef.format.value else None,
                        tuple(getattr(c.ext, "offered_qos_profiles", ()) or ()),
                    )
                )
                self.counts[c.topic] = self.counts.get(c.topic, 0) + c.msgcount
            if reader.message_count:  # rosbags' end_time is exclusive (last + 1)
                self.start_ns, self.end_ns = reader.start_time, reader.end_time - 1

    def _recover_summary(self, err: Exception) -> None:
        self.scanned = True
        self.notes.append(f"{self.path.name}: {err} -> read record by record")
        for item in self._scan():
            self.counts[item.topic] = self.counts.get(item.topic, 0) + 1
            self.start_ns = min(item.timestamp_ns, self.start_ns or item.timestamp_ns)
            self.end_ns = max(item.timestamp_ns, self.end_ns or 0)

    def _first_payload_compressed(self) -> bool:
        for _topic, _msgtype, _ts, data in self._raw():
            return data[:4] == ZSTD_MAGIC
        return False

    def srv_definition(self, srvtype: str) -> str:
        """Raw definition the sqlite3 file stores under ``srvtype`` (e.g. ``pkg/srv/Name``), or ''."""
        return self._srv_defs.get(srvtype, "")

    def _sqlite_definitions(self) -> dict[str, str]:
        try:
            db = sqlite3.connect(f"file:{self.source}?immutable=1", uri=True)
            try:
                rows = db.execute("SELECT topic_type, encoded_message_definition FROM message_definitions")
                return {str(t): str(d) for t, d in rows}
            finally:
                db.close()
        except sqlite3.Error:
            return {}

    # -- messages --------------------------------------------------------------------------------------
    def messages(self) -> Iterator[tuple[str, str, int, bytes]]:
        """``(topic, type, receive time ns, CDR bytes)`` in file order; compressed payloads decompressed."""
        for topic, msgtype, ts, data in self._raw():
            if data[:4] == ZSTD_MAGIC:
                data = decompress_message(data, f"data file {self.path} topic {topic} message at {ts} ns")
            elif self.message_compression:
                raise BagError(
                    f"data file {self.path} topic {topic} message at {ts} ns: metadata.yaml field "
                    "compression_mode is 'message' but the payload is not a zstd frame"
                )
            yield topic, msgtype, ts, data

    def _raw(self) -> Iterator[tuple[str, str, int, bytes]]:
        if self.scanned:
            for m in self._scan():
                yield m.topic, m.msgtype, m.timestamp_ns, m.data
            return
        with Reader(self.source) as reader:
            for conn, ts, data in reader.messages():
                yield conn.topic, conn.msgtype, ts, bytes(data)

    def _scan(self) -> Iterator[_Scanned]:
        """Every message of the complete records, in file order; a note says where and why reading stopped."""
        schemas: dict[int, Schema] = {}
        channels: dict[int, tuple[str, str]] = {}
        conns: list[Conn] = []
        with self.source.open("rb") as bio:
            reader = StreamReader(_ExactReads(bio), validate_crcs=True, record_size_limit=MAX_RECORD_BYTES)
            try:
                good = 0  # end of the last record read whole
                for rec in reader.records:
                    good = bio.tell()
                    if isinstance(rec, Schema):
                        schemas[rec.id] = rec
                    elif isinstance(rec, Channel):
                        if rec.id not in channels:
                            conn = _conn_of(rec, schemas.get(rec.schema_id))
                            conns.append(conn)
                            channels[rec.id] = (conn.topic, conn.msgtype)
                    elif isinstance(rec, Message) and rec.channel_id in channels:
                        topic, name = channels[rec.channel_id]
                        yield _Scanned(topic, name, rec.log_time, bytes(rec.data))
            except Exception as err:  # any failure ends the readable prefix of a damaged file
                note = (
                    f"{self.path.name}: stopped reading at byte {good} of {self.source.stat().st_size} "
                    f"(the last whole record ends there; the rest is unreadable): {type(err).__name__}: {err}"
                )
                if note not in self.notes:
                    self.notes.append(note)
        self.conns = conns


@dataclass(frozen=True)
class _Scanned:
    topic: str
    msgtype: str
    timestamp_ns: int
    data: bytes


def _conn_of(channel: Channel, schema: Schema | None) -> Conn:
    try:
        qos = tuple(parse_qos(channel.metadata.get("offered_qos_profiles", "")))
    except Exception:  # unreadable QoS text: no QoS known
        qos = ()
    name = schema.name if schema else ""
    msgdef = schema.data.decode("utf-8", "replace") if schema else None
    return Conn(channel.topic, name, channel.message_encoding, msgdef, qos)


def qos_of(entry: Any) -> tuple[Qos, ...]:
    """The offered QoS profiles of one ``metadata.yaml`` topic entry; () when absent or unreadable."""
    try:
        return tuple(parse_qos((entry or {}).get("offered_qos_profiles") or ""))
    except Exception:  # reported by the caller as "no QoS recorded"
        return ()
