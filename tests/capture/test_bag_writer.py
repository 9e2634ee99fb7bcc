import shutil
from pathlib import Path

import pytest
import yaml
from r2s2r_capture.bags.reader import BagReader
from r2s2r_capture.bags.writer import (
    BagWriter,
    Compression,
    Storage,
    ThreadedBagWriter,
    TopicSpec,
    WriterConfig,
    ensure_type,
    load_typestore,
    offered_qos,
    ros_distro,
)
from r2s2r_capture.errors import BagError, CaptureError
from rosbags.rosbag2 import Reader

STRING = "std_msgs/msg/String"


def _cdr(ts, text: str) -> bytes:
    cls = ts.types and ts.get_msgdef(STRING).cls
    return bytes(ts.serialize_cdr(cls(data=text), STRING))


@pytest.mark.parametrize("storage", list(Storage))
def test_roundtrip_split_and_metadata(tmp_path: Path, storage: Storage) -> None:
    ts = load_typestore()
    out = tmp_path / "bag"
    with BagWriter(out, WriterConfig(storage=storage, max_bag_size_bytes=500), typestore=ts) as bag:
        h = bag.add_topic(TopicSpec(topic="/a", msgtype=STRING))
        bag.add_topic(TopicSpec(topic="/r2s2r/episode_outcome", msgtype="r2s2r_msgs/msg/EpisodeOutcome"))
        payloads = [_cdr(ts, f"m{i}" * 5) for i in range(60)]
        for i, data in enumerate(payloads):
            bag.write(h, 1000 + i, data)
    files = sorted(p.name for p in out.iterdir())
    assert "metadata.yaml" in files and len([f for f in files if f.endswith(storage.suffix)]) > 1
    with Reader(out) as reader:  # plain rosbags reads our split bag and its metadata (ros2 bag info format)
        assert reader.message_count == 60
        got = [bytes(d) for _, _, d in reader.messages()]
        conns = {c.topic: c for c in reader.connections}
        assert conns["/r2s2r/episode_outcome"].msgdef.data  # definition embedded from the ament index
    assert got == payloads
    with BagReader(out) as reader:
        assert [m.data for m in reader.messages()] == payloads


def test_duration_split(tmp_path: Path) -> None:
    ts = load_typestore()
    with BagWriter(tmp_path / "d", WriterConfig(max_bag_duration_s=1.0), typestore=ts) as bag:
        h = bag.add_topic(TopicSpec(topic="/a", msgtype=STRING))
        for i in range(5):
            bag.write(h, i * 600_000_000, _cdr(ts, "x"))
    assert len(bag.split_paths) == 3


def test_unfinished_mcap_readable_after_flush(tmp_path: Path) -> None:
    ts = load_typestore()
    out = tmp_path / "killed"
    bag = BagWriter(out, typestore=ts).__enter__()
    h = bag.add_topic(TopicSpec(topic="/a", msgtype=STRING))
    for i in range(10):
        bag.write(h, i, _cdr(ts, "x"))
    bag.flush()
    bag.write(h, 99, _cdr(ts, "lost"))  # still in the pending chunk: what a SIGKILL loses
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(bag.split_paths[0], copy / "copy_0.mcap")
    bag.close()
    with BagReader(copy) as reader:
        assert reader.message_count == 10
        assert any("no metadata.yaml" in n for n in reader.notes)
        assert any("read record by record" in n for n in reader.notes)


def test_threaded_writer_counts_drops(tmp_path: Path) -> None:
    ts = load_typestore()
    with ThreadedBagWriter(BagWriter(tmp_path / "t", typestore=ts), max_queue=5) as tw:
        h = tw.add_topic(TopicSpec(topic="/a", msgtype=STRING))
        for i in range(100):
            tw.put(h, i, _cdr(ts, "x"))
    assert tw.received[h] == 100
    with BagReader(tmp_path / "t") as reader:
        assert reader.message_count == 100 - tw.drops[h]


def test_failures(tmp_path: Path) -> None:
    ts = load_typestore()
    (tmp_path / "exists").mkdir()
    with pytest.raises(BagError, match="exists already, not overwriting"):
        BagWriter(tmp_path / "exists").__enter__()
    with pytest.raises(BagError, match="max_bag_size_bytes must be >= 0"):
        WriterConfig(max_bag_size_bytes=-1)
    with pytest.raises(BagError, match="max_bag_duration_s must be >= 0"):
        WriterConfig(max_bag_duration_s=-1.0)
    with pytest.raises(BagError, match="flush_interval_s must be > 0"):
        WriterConfig(flush_interval_s=0)
    with pytest.raises(BagError, match="storage must be one of"):
        WriterConfig(storage="zip")  # type: ignore[arg-type]
    with pytest.raises(BagError, match="no message definition for 'nope_msgs/msg/X'"):
        ensure_type(ts, "nope_msgs/msg/X", topic="/n")
    with pytest.raises(BagError, match="is not of the form pkg/msg/Name"):
        ensure_type(ts, "bad", topic="/n")
    bag = BagWriter(tmp_path / "w", typestore=ts)
    with pytest.raises(BagError, match="writer is new, not open"):
        bag.write(0, 0, b"")
    with bag:
        with pytest.raises(BagError, match="unknown topic handle 3"):
            bag.write(3, 0, b"")
        with pytest.raises(BagError, match="topic /n: no message definition"):
            bag.add_topic(TopicSpec(topic="/n", msgtype="nope_msgs/msg/X"))
    with pytest.raises(BagError, match="can be opened once"):
        bag.__enter__()
    with pytest.raises(BagError, match="max_queue must be >= 1"):
        ThreadedBagWriter(BagWriter(tmp_path / "q"), max_queue=0)
    tw = ThreadedBagWriter(BagWriter(tmp_path / "broken", typestore=ts))
    with pytest.raises(CaptureError, match="writer thread failed"):
        with tw:
            h = tw.add_topic(TopicSpec(topic="/a", msgtype=STRING))
            tw.writer._conns[h] = object()  # corrupt the connection: the write fails on the thread
            tw.put(h, 0, b"x")


def test_metadata_as_jazzy_writes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcap.reader import make_reader

    monkeypatch.delenv("ROS_DISTRO", raising=False)
    ros_distro.cache_clear()
    assert ros_distro() == "jazzy"  # from the installed ros-jazzy-rclpy wheel
    monkeypatch.setenv("ROS_DISTRO", "rolling")
    ros_distro.cache_clear()
    assert ros_distro() == "rolling"  # a sourced ROS install wins, as in rosbag2
    monkeypatch.setenv("ROS_DISTRO", "jazzy")
    ros_distro.cache_clear()
    ts = load_typestore()
    with BagWriter(tmp_path / "j", typestore=ts) as bag:
        h = bag.add_topic(TopicSpec(topic="/a", msgtype=STRING))
        bag.write(h, 5, _cdr(ts, "x"))
        bag.set_custom_data("r2s2r.k", "v")
    info = yaml.safe_load((tmp_path / "j" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert (info["version"], info["ros_distro"], info["custom_data"]) == (9, "jazzy", {"r2s2r.k": "v"})
    with (tmp_path / "j" / "j_0.mcap").open("rb") as f:
        records = {m.name: m.metadata for m in make_reader(f).iter_metadata()}
    inner = yaml.safe_load(records["rosbag2"]["serialized_metadata"])
    assert (inner["version"], inner["ros_distro"], inner["custom_data"]) == (9, "jazzy", {"r2s2r.k": "v"})


@pytest.mark.parametrize("storage", list(Storage))
@pytest.mark.parametrize("mode", [Compression.FILE, Compression.MESSAGE])
def test_compressed_roundtrip(tmp_path: Path, storage: Storage, mode: Compression) -> None:
    ts = load_typestore()
    out = tmp_path / "c"
    cfg = WriterConfig(storage=storage, compression_mode=mode, max_bag_size_bytes=300)
    payloads = [_cdr(ts, f"m{i}" * 10) for i in range(30)]
    with BagWriter(out, cfg, typestore=ts) as bag:
        h = bag.add_topic(TopicSpec(topic="/a", msgtype=STRING))
        for i, data in enumerate(payloads):
            bag.write(h, 1000 + i, data)
    info = yaml.safe_load((out / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert (info["compression_mode"], info["compression_format"]) == (mode.value, "zstd")
    files = info["relative_file_paths"]
    assert len(files) > 1 and all(f.endswith(".zstd") == (mode is Compression.FILE) for f in files)
    with Reader(out) as reader:  # plain rosbags reads what we wrote
        assert [bytes(d) for _, _, d in reader.messages()] == payloads
    with BagReader(out) as reader:
        assert [m.data for m in reader.messages()] == payloads


def test_compression_config_refused() -> None:
    with pytest.raises(BagError, match=r"compression_format must be one of \['zstd'\]: got 'lz4'"):
        WriterConfig(compression_mode=Compression.FILE, compression_format="lz4")
    with pytest.raises(BagError, match="compression_mode must be one of"):
        WriterConfig(compression_mode="file")  # type: ignore[arg-type]


def test_offered_qos() -> None:
    q = offered_qos(reliability="best_effort", durability="transient_local", depth=5)
    assert (q.history.name, q.depth, q.reliability.name, q.durability.name) == (
        "KEEP_LAST",
        5,
        "BEST_EFFORT",
        "TRANSIENT_LOCAL",
    )
    with pytest.raises(BagError, match="expected reliable or best_effort"):
        offered_qos(reliability="sure", durability="volatile", depth=1)
    with pytest.raises(BagError, match="QoS depth must be >= 1: got 0"):
        offered_qos(reliability="reliable", durability="volatile", depth=0)
