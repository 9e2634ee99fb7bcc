"""Regenerate the small edge-case bags in ``edge/`` (a few kB each), written with rosbags' writers.

Usage (from the repository root, after ``source env.sh``; a second)::

    python tests/data/bags/make_edge_bags.py          # refuses to overwrite; --force replaces edge/

Every bag holds the same recording (see :func:`recording`): one ``/tf_static`` message (``world ->
camera_link``, offered reliable + transient-local + keep-last 1, as tf2's static broadcaster offers it) and
ten ``/chatter`` strings ``m0``..``m9`` at 10 Hz (reliable, volatile; history unknown, depth 0, as a
recorder sees a publisher through DDS discovery).

- ``file_compressed/``: MCAP, ``ros2 bag record --compression-mode file --compression-format zstd``.
- ``message_compressed/``: MCAP, ``--compression-mode message`` (each payload a zstd frame).
- ``message_compressed_no_metadata.db3``: sqlite3 data file of a message-compressed bag, without its
  ``metadata.yaml`` (a killed recording, or the file given on its own).
- ``truncated_zstd_chunks.mcap``: MCAP with zstd-compressed chunks of ``CHUNK`` messages each (``/tf_static``
  and ``m0``..``m8`` in the first, then ``m9`` and forty more ``/chatter`` strings ``n0``..``n39``), cut in
  the middle of its last chunk, with no summary: two complete chunks (20 messages) are recoverable.
- ``ros1.bag``: a ROS 1 bag (one ``std_msgs/String``) that a rosbag2 reader must refuse, naming the converter.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from r2s2r_capture.bags.writer import BagWriter, Compression, Storage, TopicSpec, WriterConfig, load_typestore
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag1 import Writer as Ros1Writer
from rosbags.rosbag2 import Writer
from rosbags.rosbag2.enums import CompressionFormat, CompressionMode, StoragePlugin
from rosbags.typesys import Stores, get_typestore

HERE = Path(__file__).resolve().parent
OUT = HERE / "edge"
BASE_NS = 1_700_000_000_000_000_000
CHUNK = 10
TRUNCATED_MESSAGES = 50
NEVER = QosTime(2147483647, 4294967295)
STATIC_QOS = Qos(
    QosHistory.KEEP_LAST,
    1,
    QosReliability.RELIABLE,
    QosDurability.TRANSIENT_LOCAL,
    NEVER,
    NEVER,
    QosLiveliness.AUTOMATIC,
    NEVER,
    False,
)
CHATTER_QOS = Qos(
    QosHistory.UNKNOWN,
    0,
    QosReliability.RELIABLE,
    QosDurability.VOLATILE,
    NEVER,
    NEVER,
    QosLiveliness.AUTOMATIC,
    NEVER,
    False,
)
TOPICS = {
    "/tf_static": ("tf2_msgs/msg/TFMessage", STATIC_QOS),
    "/chatter": ("std_msgs/msg/String", CHATTER_QOS),
}


def recording(n_chatter: int = 10) -> Iterator[tuple[str, int, bytes]]:
    """``(topic, receive time ns, CDR)``: one /tf_static at BASE_NS, then /chatter at 10 Hz."""
    ts = load_typestore()
    tfm = ts.types["tf2_msgs/msg/TFMessage"]
    stamped = ts.types["geometry_msgs/msg/TransformStamped"]
    header = ts.types["std_msgs/msg/Header"]
    time = ts.types["builtin_interfaces/msg/Time"]
    transform = ts.types["geometry_msgs/msg/Transform"]
    vec = ts.types["geometry_msgs/msg/Vector3"]
    quat = ts.types["geometry_msgs/msg/Quaternion"]
    string = ts.types["std_msgs/msg/String"]
    sec, nsec = divmod(BASE_NS, 10**9)
    tf = tfm(
        transforms=[
            stamped(
                header=header(stamp=time(sec=sec, nanosec=nsec), frame_id="world"),
                child_frame_id="camera_link",
                transform=transform(
                    translation=vec(x=0.5, y=-0.25, z=1.25), rotation=quat(x=0.0, y=0.0, z=0.0, w=1.0)
                ),
            )
        ]
    )
    yield "/tf_static", BASE_NS, bytes(ts.serialize_cdr(tf, "tf2_msgs/msg/TFMessage"))
    for i in range(n_chatter):
        text = f"m{i}" if i < 10 else f"n{i - 10}"
        yield (
            "/chatter",
            BASE_NS + (i + 1) * 100_000_000,
            bytes(ts.serialize_cdr(string(data=text), "std_msgs/msg/String")),
        )


def write_bag(out: Path, storage: Storage, compression: Compression) -> None:
    """One bag folder of :func:`recording` through the product's BagWriter."""
    with BagWriter(out, WriterConfig(storage=storage, compression_mode=compression)) as bag:
        handles = {
            t: bag.add_topic(TopicSpec(topic=t, msgtype=m, offered_qos_profiles=(q,)))
            for t, (m, q) in TOPICS.items()
        }
        for topic, ts, data in recording():
            bag.write(handles[topic], ts, data)


def write_truncated(out: Path) -> int:
    """A zstd-chunked MCAP cut in its last chunk; returns the number of recoverable messages."""
    ts = load_typestore()
    with tempfile.TemporaryDirectory() as tmp:
        writer = Writer(Path(tmp) / "t", version=9, storage_plugin=StoragePlugin.MCAP)
        writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
        writer.open()
        conns = {
            t: writer.add_connection(t, m, typestore=ts, offered_qos_profiles=[q])
            for t, (m, q) in TOPICS.items()
        }
        storage = writer.storage
        assert storage is not None
        ends = []
        for i, (topic, stamp, data) in enumerate(recording(TRUNCATED_MESSAGES - 1)):
            writer.write(conns[topic], stamp, data)
            if (i + 1) % CHUNK == 0:
                storage.close_chunk()  # type: ignore[attr-defined]
                ends.append(storage.bio.tell())  # type: ignore[attr-defined]
        writer.close()
        full = (Path(tmp) / "t" / "t.mcap").read_bytes()
    last_chunk_start, last_chunk_end = ends[1], ends[2]
    cut = (last_chunk_start + last_chunk_end) // 2
    out.write_bytes(full[:cut])
    return 2 * CHUNK


def write_ros1(out: Path) -> None:
    """A one-message ROS 1 bag."""
    ts = get_typestore(Stores.ROS1_NOETIC)
    string = ts.types["std_msgs/msg/String"]
    with Ros1Writer(out) as bag:
        conn = bag.add_connection("/chatter", "std_msgs/msg/String", typestore=ts)
        bag.write(conn, BASE_NS, bytes(ts.serialize_ros1(string(data="ros1"), "std_msgs/msg/String")))


def main() -> int:
    """Write every edge-case bag into ``edge/``."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--force", action="store_true", help="replace edge/")
    ns = parser.parse_args()
    if OUT.exists():
        if not ns.force:
            raise SystemExit(f"make_edge_bags: {OUT} exists; pass --force to replace it")
        shutil.rmtree(OUT)
    OUT.mkdir()
    write_bag(OUT / "file_compressed", Storage.MCAP, Compression.FILE)
    write_bag(OUT / "message_compressed", Storage.MCAP, Compression.MESSAGE)
    with tempfile.TemporaryDirectory() as tmp:
        write_bag(Path(tmp) / "killed", Storage.SQLITE3, Compression.MESSAGE)
        shutil.copy(Path(tmp) / "killed" / "killed_0.db3", OUT / "message_compressed_no_metadata.db3")
    n = write_truncated(OUT / "truncated_zstd_chunks.mcap")
    write_ros1(OUT / "ros1.bag")
    size = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"make_edge_bags: wrote {OUT} ({size} bytes; {n} messages recoverable from the truncated MCAP)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
