from pathlib import Path

import pytest
from r2s2r_capture.bags.reader import BagReader, normalize_type
from r2s2r_capture.errors import BagError

# folder: (total messages from MANIFEST.md, first ns, last ns)
EXPECTED = {
    "empty_bag": (0, None, None),
    "talker_sqlite3": (20, 1585866235112411371, 1585866239643508139),
    "talker_mcap": (20, 1585866235112411371, 1585866239643508139),
    "wbag_sqlite3": (6074, 1000, 2998),
    "wbag_mcap": (6074, 1000, 2998),
    "cdr_test_sqlite3": (7, 1586406456763032325, 1586406456914169506),
    "cdr_test_mcap": (7, 1586406456763032325, 1586406456914169506),
    "bag_with_topics_and_service_events_sqlite3": (10, 1699345836023194036, 1699345836093827766),
    "bag_with_topics_and_service_events_mcap": (10, 1699345836270074454, 1699345836340728398),
    "rewriter_a_sqlite3": (150, 0, 100000000),
    "rewriter_b_mcap": (75, 0, 222000000),
    "test_bag_for_seek_sqlite3": (5, 1000000000, 1400000000),
    "test_bag_for_seek_mcap": (5, 1000000000, 1400000000),
}
REFUSED = ["wrong_rmw_test_sqlite3", "wrong_rmw_test_mcap"]
SHARED = Path(__file__).resolve().parents[3] / "shared"  # ../shared beside the checkout, as in conftest.py


@pytest.fixture(scope="module")
def test_msgs_defs(request: pytest.FixtureRequest) -> dict[str, str]:
    """test_msgs definitions are embedded only in some mcap bags; sqlite3 bags need them from there."""
    root = request.getfixturevalue("shared_dir") / "conformance" / "rosbag2"
    defs: dict[str, str] = {}
    for name in ("cdr_test_mcap", "rewriter_b_mcap"):
        with BagReader(root / name) as reader:
            for f in reader.files:
                defs.update({c.msgtype: c.msgdef for c in f.conns if c.msgdef is not None})
    return defs


@pytest.fixture(scope="module")
def shared_dir() -> Path:  # module-scoped twin of the conftest fixture
    # Not imported from tests/conftest.py: `tests` names another package in the venv (draccus installs its
    # own test suite as a top-level `tests`), which wins over this repository's folder of the same name.
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} (the shared conformance corpora) is not present beside this checkout")
    return SHARED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_conformance_bag_reads_fully(shared_dir: Path, test_msgs_defs: dict[str, str], name: str) -> None:
    total, first, last = EXPECTED[name]
    with BagReader(shared_dir / "conformance" / "rosbag2" / name, definitions=test_msgs_defs) as reader:
        msgs = list(reader.messages())
        assert len(msgs) == total == reader.message_count
        assert (reader.start_ns, reader.end_ns) == (first, last)
        assert [m.timestamp_ns for m in msgs] == sorted(m.timestamp_ns for m in msgs)
        for msg in msgs:
            reader.deserialize(msg)  # every message decodes
        assert not reader.undeserializable


def test_service_event_contents(shared_dir: Path, test_msgs_defs: dict[str, str]) -> None:
    bag = shared_dir / "conformance" / "rosbag2" / "bag_with_topics_and_service_events_sqlite3"
    with BagReader(bag, definitions=test_msgs_defs) as reader:
        events = [reader.deserialize(m) for m in reader.messages(["/test_service1/_service_event"])]
    assert len(events) == 4
    assert all(len(e.request) + len(e.response) == 1 for e in events)


def test_missing_definitions_are_reported(shared_dir: Path) -> None:
    with BagReader(shared_dir / "conformance" / "rosbag2" / "rewriter_a_sqlite3") as reader:
        assert "test_msgs/msg/Empty" in reader.undeserializable
        assert any("a_empty" in n for n in reader.notes)
        msg = next(reader.messages(["a_empty"]))
        with pytest.raises(BagError, match="topic a_empty type test_msgs/msg/Empty: no definition"):
            reader.deserialize(msg)


@pytest.mark.parametrize("name", REFUSED)
def test_wrong_serialization_format_refused(shared_dir: Path, name: str) -> None:
    with pytest.raises(
        BagError,
        match=rf"{name}: metadata.yaml topic /\w+ field serialization_format is "
        r"'wrong_format'; only 'cdr'",
    ):
        BagReader(shared_dir / "conformance" / "rosbag2" / name).__enter__()


def test_wrong_format_in_data_file_refused(shared_dir: Path) -> None:
    data = shared_dir / "conformance" / "rosbag2" / "wrong_rmw_test_mcap" / "wrong_rmw_test_0.mcap"
    with pytest.raises(BagError, match=r"file wrong_rmw_test_0.mcap topic /\w+ field serialization_format"):
        BagReader(data).__enter__()


def test_single_data_file(shared_dir: Path) -> None:
    with BagReader(shared_dir / "conformance" / "rosbag2" / "talker_mcap" / "talker.mcap") as reader:
        assert reader.message_count == 20


def test_normalize_type() -> None:
    assert normalize_type("test_msgs/BasicTypes") == "test_msgs/msg/BasicTypes"
    assert normalize_type("std_msgs/msg/String") == "std_msgs/msg/String"


def test_failures(tmp_path: Path) -> None:
    with pytest.raises(BagError, match="no such file or folder"):
        BagReader(tmp_path / "nope").__enter__()
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(BagError, match="x.txt: not a bag folder"):
        BagReader(tmp_path / "x.txt").__enter__()
    (tmp_path / "empty").mkdir()
    with pytest.raises(BagError, match="no metadata.yaml and no"):
        BagReader(tmp_path / "empty").__enter__()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "metadata.yaml").write_text("just: text\n")
    with pytest.raises(BagError, match="no readable rosbag2_bagfile_information"):
        BagReader(bad).__enter__()
    (bad / "metadata.yaml").write_text("rosbag2_bagfile_information:\n  relative_file_paths: [gone.mcap]\n")
    with pytest.raises(BagError, match=r"lists missing file\(s\) \['gone.mcap'\]"):
        BagReader(bad).__enter__()
    (bad / "metadata.yaml").write_text("rosbag2_bagfile_information:\n  relative_file_paths: [gone.mcap]\n")
    (bad / "renamed.mcap").write_bytes(b"")
    with pytest.raises(
        BagError, match=r"missing file\(s\) \['gone.mcap'\]; data files in the folder: \['renamed.mcap'\]"
    ):
        BagReader(bad).__enter__()
    (bad / "metadata.yaml").write_text("rosbag2_bagfile_information:\n  compression_mode: file\n")
    with pytest.raises(
        BagError, match="field compression_format is '' with compression_mode 'file'; only 'zstd'"
    ):
        BagReader(bad).__enter__()
    (bad / "metadata.yaml").write_text("rosbag2_bagfile_information:\n  compression_mode: chunk\n")
    with pytest.raises(BagError, match="field compression_mode is 'chunk'; allowed: file, message or none"):
        BagReader(bad).__enter__()
    (bad / "metadata.yaml").write_text("rosbag2_bagfile_information:\n  version: 8\n")
    with pytest.raises(BagError, match="field relative_file_paths is empty"):
        BagReader(bad).__enter__()
    junk = tmp_path / "junk.mcap"
    junk.write_bytes(b"not an mcap at all")
    with pytest.raises(BagError, match="junk.mcap: not an MCAP file"):
        BagReader(junk).__enter__()
    junk_db = tmp_path / "junk.db3"
    junk_db.write_bytes(b"not sqlite")
    with pytest.raises(BagError, match="junk.db3: not an SQLite file"):
        BagReader(junk_db).__enter__()
    reader = BagReader(tmp_path / "nope")
    with pytest.raises(BagError, match="reader is not open"):
        next(reader.messages())
