"""The committed edge-case bags (tests/data/bags/edge, from make_edge_bags.py): read, recovered or refused."""

import shutil
from pathlib import Path

import pytest
import yaml
from r2s2r_capture.bags.playback import replay_qos
from r2s2r_capture.bags.reader import BagReader
from r2s2r_capture.bags.signature import compare, signature_of_bag
from r2s2r_capture.errors import BagError

EDGE = Path(__file__).resolve().parents[1] / "data" / "bags" / "edge"
CHATTER = [f"m{i}" for i in range(10)]


def _read(path: Path) -> tuple[BagReader, list[tuple[str, object]]]:
    with BagReader(path) as bag:
        return bag, [(m.topic, bag.deserialize(m)) for m in bag.messages()]


def _check_recording(msgs: list[tuple[str, object]], chatter: list[str]) -> None:
    (topic, tf), *rest = msgs
    assert topic == "/tf_static"
    t = tf.transforms[0]  # type: ignore[attr-defined]
    assert (t.header.frame_id, t.child_frame_id) == ("world", "camera_link")
    assert (t.transform.translation.x, t.transform.translation.y, t.transform.translation.z) == (
        0.5,
        -0.25,
        1.25,
    )
    assert [(tp, m.data) for tp, m in rest] == [("/chatter", c) for c in chatter]  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["file_compressed", "message_compressed"])
def test_compressed_bags_read_with_recorded_qos(name: str) -> None:
    bag, msgs = _read(EDGE / name)
    _check_recording(msgs, CHATTER)
    static = bag.topics["/tf_static"]
    assert static.qos_source == "metadata.yaml"
    qos = replay_qos(static.offered_qos_profiles)
    assert (qos.reliability, qos.durability, qos.history, qos.depth) == (
        "reliable",
        "transient_local",
        "keep_last",
        1,
    )
    chatter = replay_qos(bag.topics["/chatter"].offered_qos_profiles, default_depth=77)
    assert (chatter.reliability, chatter.durability, chatter.depth) == (
        "reliable",
        "volatile",
        77,
    )  # depth 0: unknown


def test_file_compressed_data_file_alone(tmp_path: Path) -> None:
    data = EDGE / "file_compressed" / "file_compressed_0.mcap.zstd"
    bag, msgs = _read(data)
    _check_recording(msgs, CHATTER)
    assert bag.topics["/tf_static"].qos_source == "data file"  # MCAP channel metadata
    renamed = tmp_path / "renamed.mcap"  # a compressed file under a plain name is found by its magic
    shutil.copy(data, renamed)
    _check_recording(_read(renamed)[1], CHATTER)


def test_message_compressed_db3_without_metadata_is_decompressed_not_replayed_as_cdr() -> None:
    bag, msgs = _read(EDGE / "message_compressed_no_metadata.db3")
    _check_recording(msgs, CHATTER)
    assert any("payloads are zstd frames" in n and "decompressed" in n for n in bag.notes)
    assert bag.topics["/tf_static"].qos_source == "data file"
    with BagReader(EDGE / "message_compressed_no_metadata.db3") as reader:
        assert all(m.data[:4] == b"\x00\x01\x00\x00" for m in reader.messages())  # CDR LE header


def test_message_mode_metadata_with_plain_payloads_refused(tmp_path: Path) -> None:
    bag = tmp_path / "lying"
    shutil.copytree(EDGE / "message_compressed", bag)
    shutil.copy(EDGE / "file_compressed" / "file_compressed_0.mcap.zstd", tmp_path / "x.mcap.zstd")
    with BagReader(tmp_path / "x.mcap.zstd") as plain:  # an uncompressed-payload copy of the same recording
        assert plain.message_count == 11
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())
    src = EDGE / "message_compressed" / "message_compressed_0.mcap"
    (bag / src.name).unlink()
    from r2s2r_capture.bags.files import zstd  # the module rosbags uses

    (bag / src.name).write_bytes(zstd.decompress((tmp_path / "x.mcap.zstd").read_bytes()))
    (bag / "metadata.yaml").write_text(yaml.safe_dump(meta))
    with (
        BagReader(bag) as reader,
        pytest.raises(
            BagError,
            match="topic /tf_static message at .* compression_mode is 'message' but the payload is not a",
        ),
    ):
        list(reader.messages())


def test_truncated_zstd_chunked_mcap_recovers_complete_chunks() -> None:
    bag, msgs = _read(EDGE / "truncated_zstd_chunks.mcap")
    assert len(msgs) == 20  # two complete chunks of ten; the cut third chunk is lost
    _check_recording(msgs[:11], CHATTER)
    assert [m.data for _, m in msgs[11:]] == [f"n{i}" for i in range(9)]  # type: ignore[attr-defined]
    assert any("read record by record" in n for n in bag.notes)
    assert any("stopped reading at byte" in n and "truncated" in n for n in bag.notes)
    assert bag.topics["/tf_static"].qos_source == "data file"
    assert bag.end_ns == max(
        m.timestamp_ns for m in BagReader(EDGE / "truncated_zstd_chunks.mcap").__enter__().messages()
    )


@pytest.mark.parametrize("damage", ["crc", "frame"])
def test_damaged_chunk_ends_the_readable_prefix(tmp_path: Path, damage: str) -> None:
    raw = bytearray((EDGE / "truncated_zstd_chunks.mcap").read_bytes())
    magic = b"\x28\xb5\x2f\xfd"  # each chunk's data is one zstd frame
    second = raw.find(magic, raw.find(magic) + 1)
    if (
        damage == "crc"
    ):  # chunk record: op, length, start, end, size (8 each), crc u32, "zstd", data length u64
        crc_at = second - 8 - (4 + 4) - 4
        raw[crc_at : crc_at + 4] = b"\x01\x02\x03\x04"
        why = "CRCValidationError"
    else:
        raw[second + 4] ^= 0xFF  # the frame header descriptor
        why = "Zstd"
    bad = tmp_path / "bad.mcap"
    bad.write_bytes(bytes(raw))
    with BagReader(bad) as bag:
        assert len(list(bag.messages())) == 10  # the first chunk only
        assert any("stopped reading" in n and why in n for n in bag.notes), bag.notes


def test_ros1_bag_refused_naming_the_converter(tmp_path: Path) -> None:
    with pytest.raises(
        BagError, match=r"ros1.bag: a ROS 1 bag .* convert it first: rosbags-convert --src .*ros1.bag --dst"
    ):
        BagReader(EDGE / "ros1.bag").__enter__()
    folder = tmp_path / "old"
    folder.mkdir()
    shutil.copy(EDGE / "ros1.bag", folder / "run.bag")
    with pytest.raises(BagError, match=r"run.bag: a ROS 1 bag"):
        BagReader(folder).__enter__()
    renamed = tmp_path / "run.mcap"
    shutil.copy(EDGE / "ros1.bag", renamed)
    with pytest.raises(BagError, match=r"run.mcap: a ROS 1 bag"):
        BagReader(renamed).__enter__()


def test_signature_qos_from_mcap_channels_without_metadata(tmp_path: Path) -> None:
    with_meta = signature_of_bag(EDGE / "message_compressed")
    data = tmp_path / "alone.mcap"
    shutil.copy(EDGE / "message_compressed" / "message_compressed_0.mcap", data)
    alone = signature_of_bag(data)
    for sig, source in ((with_meta, "metadata.yaml"), (alone, "data file")):
        assert sig["topics"]["/tf_static"]["qos"] == [
            {"reliability": "reliable", "durability": "transient_local", "depth": 1}
        ]
        assert sig["topics"]["/tf_static"]["qos_source"] == source
    assert compare(with_meta, alone) == []
    volatile = yaml.safe_load(yaml.safe_dump(alone))
    volatile["topics"]["/tf_static"]["qos"][0]["durability"] = "volatile"
    assert [str(d) for d in compare(with_meta, volatile)] == [
        "/tf_static: qos.durability: ['transient_local'] != ['volatile']"
    ]
    volatile["topics"]["/tf_static"]["qos"] = []
    assert [d.field for d in compare(with_meta, volatile)] == ["qos.recorded"]  # not skipped silently


def test_file_decompression_guards_the_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    import r2s2r_capture.bags.files as files

    usage = shutil.disk_usage("/")._replace(free=files.FREE_MARGIN_BYTES + 100)
    monkeypatch.setattr(files.shutil, "disk_usage", lambda path: usage)  # a nearly full temporary disk
    with pytest.raises(BagError, match=r"_0.mcap.zstd: decompresses to more than the 100 bytes"):
        BagReader(EDGE / "file_compressed").__enter__()
