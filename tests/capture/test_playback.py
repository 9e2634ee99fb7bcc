"""The player's ROS-free core: QoS chosen from the recording, user overrides, config validation."""

from pathlib import Path

import pytest
from r2s2r_capture.bags.playback import (
    PlayerConfig,
    ReplayQos,
    apply_override,
    load_qos_overrides,
    parse_remaps,
    replay_qos,
)
from r2s2r_capture.errors import BagError
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

T = QosTime(0, 0)


def _qos(history: QosHistory, depth: int, rel: QosReliability, dur: QosDurability) -> Qos:
    return Qos(history, depth, rel, dur, T, T, QosLiveliness.AUTOMATIC, T, False)


def test_replay_qos_follows_the_first_recorded_profile() -> None:
    latched = _qos(QosHistory.KEEP_LAST, 1, QosReliability.RELIABLE, QosDurability.TRANSIENT_LOCAL)
    best = _qos(QosHistory.KEEP_LAST, 5, QosReliability.BEST_EFFORT, QosDurability.VOLATILE)
    q = replay_qos([latched, best])
    assert (q.reliability, q.durability, q.history, q.depth) == (
        "reliable",
        "transient_local",
        "keep_last",
        1,
    )
    assert q.source == "recorded, first of 2 offered"
    q = replay_qos([best, latched])
    assert (q.reliability, q.durability, q.depth) == ("best_effort", "volatile", 5)
    unknown = _qos(QosHistory.UNKNOWN, 0, QosReliability.RELIABLE, QosDurability.VOLATILE)
    assert replay_qos([unknown], default_depth=42).depth == 42  # discovery does not carry the depth
    keep_all = _qos(QosHistory.KEEP_ALL, 0, QosReliability.RELIABLE, QosDurability.VOLATILE)
    assert replay_qos([keep_all]).history == "keep_all"
    open_ = _qos(QosHistory.SYSTEM_DEFAULT, 0, QosReliability.SYSTEM_DEFAULT, QosDurability.UNKNOWN)
    q = replay_qos([open_], default_depth=7)
    assert (q.reliability, q.durability, q.history, q.depth) == ("reliable", "volatile", "keep_last", 7)
    assert replay_qos([]).source == "default (no QoS recorded)"
    assert replay_qos([latched]).text() == "reliable, transient_local, keep_last 1 (recorded)"


def test_overrides(tmp_path: Path) -> None:
    f = tmp_path / "o.yaml"
    f.write_text("/tf_static: {durability: TRANSIENT_LOCAL, depth: 3}\n/a: {reliability: best_effort}\n")
    got = load_qos_overrides(f)
    assert got == {
        "/tf_static": {"durability": "transient_local", "depth": 3},
        "/a": {"reliability": "best_effort"},
    }
    q = apply_override(ReplayQos(), got["/tf_static"])
    assert (q.durability, q.depth, q.reliability) == ("transient_local", 3, "reliable")
    assert q.source.startswith("override of")
    assert apply_override(ReplayQos(), None) == ReplayQos()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("- a\n", "expected a mapping of topic -> QoS fields, got list"),
        ("/a: 3\n", "entry '/a' must map a topic name to QoS fields"),
        (
            "/a: {durability: sticky}\n",
            r"topic /a field durability is 'sticky'; allowed: \['volatile', 'transient_local'\]",
        ),
        ("/a: {depth: 0}\n", "topic /a field depth must be >= 1: got 0"),
        (
            "/a: {deadline: 1}\n",
            "topic /a field 'deadline' is not one of reliability, durability, history, depth",
        ),
        ("/a: [\n", "cannot be read"),
    ],
)
def test_overrides_refused(tmp_path: Path, text: str, match: str) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(BagError, match=f"QoS overrides {f}: {match}"):
        load_qos_overrides(f)


def test_overrides_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BagError, match="nope.yaml: cannot be read"):
        load_qos_overrides(tmp_path / "nope.yaml")


def test_config_and_remaps_refused() -> None:
    bag = Path("b")
    for kwargs, match in [
        ({"rate": 0.0}, "rate must be > 0"),
        ({"start_offset_s": -1.0}, "start_offset_s must be >= 0"),
        ({"clock_hz": -1.0}, r"clock_hz must be >= 0 \(0: no /clock\)"),
        ({"default_depth": 0}, "default_depth must be >= 1"),
        ({"wait_for_subscribers": -1}, "wait_for_subscribers must be >= 0"),
        ({"wait_timeout_s": 0.0}, "wait_timeout_s must be > 0"),
        ({"discovery_s": -0.1}, "discovery_s must be >= 0"),
    ]:
        with pytest.raises(BagError, match=match):
            PlayerConfig(bag=bag, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(BagError, match="QoS durability must be one of"):
        ReplayQos(durability="sticky")
    assert parse_remaps(["/a:=/b", ""]) == (("/a", "/b"),)
    with pytest.raises(BagError, match="remap entry '/a' is not of the form"):
        parse_remaps(["/a"])
