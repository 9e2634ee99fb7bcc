"""Interface signature of a recording: what a robot's drivers publish, learned from a bag; and its comparison.

A signature is plain data (YAML-able) with one entry per topic: type, offered QoS (reliability, durability,
depth, from ``metadata.yaml`` or, without one, from the data file's own records such as the MCAP channels'
``offered_qos_profiles``; ``qos_source`` says which), message count, rate and jitter (from header
stamps when the type has a header, else from receive times), frame ids (``parent->child`` pairs for tf),
and, per kind of message, image encodings and sizes with depth units, ``CameraInfo`` size, distortion model
and whether ``D`` is non-zero, and joint names.  :func:`compare` lists the :class:`Difference` s between two
signatures; which of them matter is the caller's policy (see ``tests/integration/test_signature_gate.py``).

Pure Python over :class:`~r2s2r_capture.bags.reader.BagReader` (no rclpy).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rosbags.interfaces import Qos

from r2s2r_capture.bags.reader import BagReader, normalize_type
from r2s2r_capture.errors import BagError

__all__ = ["SIGNATURE_VERSION", "Difference", "Tolerances", "compare", "signature_of_bag"]

SIGNATURE_VERSION = 1
# Depth units by encoding (REP 118: 32FC1 in metres; 16UC1 in millimetres as realsense2_camera publishes).
DEPTH_UNITS = {"16UC1": "mm", "mono16": "mm", "32FC1": "m"}
_MAX_FRAME_IDS = 32


@dataclass
class _Acc:
    msgtype: str
    count: int = 0
    first_rx: int | None = None
    last_rx: int | None = None
    stamps: list[float] | None = None
    rx: list[int] | None = None
    frame_ids: set[str] | None = None
    encodings: set[str] | None = None
    sizes: set[tuple[int, int]] | None = None
    info: set[tuple[int, int, str, bool]] | None = None
    joints: tuple[str, ...] | None = None


def _periods(times: list[float]) -> dict[str, float]:
    if len(times) < 3:
        return {}
    t = np.sort(np.asarray(times, dtype=np.float64))
    dt = np.diff(t)
    dt = dt[dt > 0]
    if dt.size < 2:
        return {}
    span = float(t[-1] - t[0])
    return {
        "rate_hz": round((len(t) - 1) / span, 3) if span > 0 else 0.0,
        "period_median_ms": round(float(np.median(dt)) * 1e3, 3),
        "period_jitter_ms": round(float(np.std(dt)) * 1e3, 3),
        "period_p99_ms": round(float(np.percentile(dt, 99)) * 1e3, 3),
    }


def _qos_summary(profiles: tuple[Qos, ...]) -> list[dict[str, Any]]:
    return [
        {
            "reliability": p.reliability.name.lower(),
            "durability": p.durability.name.lower(),
            "depth": int(p.depth),
        }
        for p in profiles
    ]


def signature_of_bag(path: Path | str, *, topics: Iterable[str] | None = None) -> dict[str, Any]:
    """Learn the interface signature of the bag at ``path`` (optionally only ``topics``).

    Raises:
        BagError: the bag cannot be read.
    """
    wanted = set(topics) if topics is not None else None
    accs: dict[str, _Acc] = {}
    with BagReader(path) as bag:
        qos = {
            t: (_qos_summary(i.offered_qos_profiles), i.qos_source or "none") for t, i in bag.topics.items()
        }
        for msg in bag.messages(wanted):
            acc = accs.get(msg.topic)
            if acc is None:
                acc = accs[msg.topic] = _Acc(normalize_type(msg.msgtype), stamps=[], rx=[], frame_ids=set())
            acc.count += 1
            assert acc.rx is not None and acc.stamps is not None and acc.frame_ids is not None
            acc.rx.append(msg.timestamp_ns)
            try:
                m = bag.deserialize(msg)
            except BagError:
                continue
            _observe(acc, m)
        start, end = bag.start_ns, bag.end_ns
    sig_topics: dict[str, Any] = {}
    for name in sorted(accs):
        sig_topics[name] = _entry(accs[name], *qos.get(name, ([], "none")))
    return {
        "signature_version": SIGNATURE_VERSION,
        "source": Path(path).name,
        "duration_s": round((end - start) / 1e9, 3) if start is not None and end is not None else 0.0,
        "topics": sig_topics,
    }


def _observe(acc: _Acc, m: Any) -> None:
    assert acc.stamps is not None and acc.frame_ids is not None
    header = getattr(m, "header", None)
    if header is not None:
        stamp = int(header.stamp.sec) + int(header.stamp.nanosec) * 1e-9
        if stamp > 0:
            acc.stamps.append(stamp)
        if len(acc.frame_ids) < _MAX_FRAME_IDS:
            acc.frame_ids.add(str(header.frame_id))
    kind = acc.msgtype
    if kind == "tf2_msgs/msg/TFMessage":
        for t in m.transforms:
            if len(acc.frame_ids) < _MAX_FRAME_IDS:
                acc.frame_ids.add(f"{t.header.frame_id}->{t.child_frame_id}")
    elif kind == "sensor_msgs/msg/Image":
        acc.encodings = (acc.encodings or set()) | {str(m.encoding)}
        acc.sizes = (acc.sizes or set()) | {(int(m.width), int(m.height))}
    elif kind == "sensor_msgs/msg/CameraInfo":
        d = [float(v) for v in m.d]
        nonzero = any(abs(v) > 0 for v in d)
        acc.info = (acc.info or set()) | {(int(m.width), int(m.height), str(m.distortion_model), nonzero)}
    elif kind == "sensor_msgs/msg/JointState" and acc.joints is None:
        acc.joints = tuple(str(n) for n in m.name)


def _entry(acc: _Acc, qos: list[dict[str, Any]], qos_source: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": acc.msgtype, "message_count": acc.count}
    entry["qos"] = qos
    entry["qos_source"] = qos_source
    assert acc.stamps is not None and acc.rx is not None
    timing = _periods(acc.stamps) if len(acc.stamps) >= 3 else {}
    if timing:
        entry["timing_source"] = "header.stamp"
    else:
        timing = _periods([t / 1e9 for t in acc.rx])
        entry["timing_source"] = "receive time" if timing else "too few messages"
    entry.update(timing)
    if acc.frame_ids:
        entry["frame_ids"] = sorted(acc.frame_ids)
    if acc.encodings is not None and acc.sizes is not None:
        entry["encodings"] = sorted(acc.encodings)
        entry["sizes"] = [list(s) for s in sorted(acc.sizes)]
        units = sorted({DEPTH_UNITS[e] for e in acc.encodings if e in DEPTH_UNITS})
        if units:
            entry["depth_units"] = units
    if acc.info is not None:
        entry["camera_info"] = [
            {"width": w, "height": h, "distortion_model": model, "distortion_nonzero": nz}
            for w, h, model, nz in sorted(acc.info)
        ]
    if acc.joints is not None:
        entry["joint_names"] = list(acc.joints)
    return entry


# ----------------------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class Difference:
    """How signature ``b`` differs from ``a`` on ``topic``: ``field`` names what, ``a``/``b`` the values."""

    topic: str
    field: str
    a: Any
    b: Any

    def __str__(self) -> str:
        return f"{self.topic}: {self.field}: {self.a!r} != {self.b!r}"


@dataclass(frozen=True, kw_only=True)
class Tolerances:
    """What :func:`compare` lets pass: relative rate difference, and fields not compared at all."""

    rate_rel: float = 0.25
    jitter_ms: float = math.inf  # jitter above a's + this is a difference (inf: not compared)
    ignore: frozenset[str] = frozenset()  # field names to skip, e.g. {"qos.depth"}

    def __post_init__(self) -> None:
        if not 0 <= self.rate_rel:
            raise ValueError(f"rate_rel must be >= 0, got {self.rate_rel}")


def compare(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    *,
    topics: Iterable[str] | None = None,
    tolerances: Tolerances | None = None,
) -> list[Difference]:
    """Differences of signature ``b`` from the reference ``a`` over ``topics`` (default: all of ``a``'s).

    Fields: ``missing`` (a topic absent from ``b``), ``type``, ``qos.recorded`` (QoS known on one side
    only: the values say whether each side has it), ``qos.reliability``, ``qos.durability``, ``qos.depth``,
    ``rate_hz`` (the nominal rate, 1 / median period, outside ``rate_rel``),
    ``period_jitter_ms``, ``frame_ids``, ``encodings``, ``sizes``, ``depth_units``, ``camera_info.size``,
    ``camera_info.distortion_model``, ``camera_info.distortion_nonzero`` and ``joint_names``.  Another field
    missing on either side (e.g. the rate of a latched topic) is not compared.
    """
    tol = tolerances or Tolerances()
    ta, tb = a.get("topics", {}), b.get("topics", {})
    out: list[Difference] = []

    def add(topic: str, fld: str, va: Any, vb: Any) -> None:
        if fld not in tol.ignore:
            out.append(Difference(topic, fld, va, vb))

    for topic in sorted(topics if topics is not None else ta):
        ea, eb = ta.get(topic), tb.get(topic)
        if ea is None or eb is None:
            add(topic, "missing", ea is not None, eb is not None)
            continue
        if ea["type"] != eb["type"]:
            add(topic, "type", ea["type"], eb["type"])
            continue
        qa, qb = ea.get("qos") or [], eb.get("qos") or []
        if bool(qa) != bool(qb):
            add(topic, "qos.recorded", bool(qa), bool(qb))
        elif qa and qb:
            for key in ("reliability", "durability", "depth"):
                va, vb = sorted({q[key] for q in qa}), sorted({q[key] for q in qb})
                if va != vb:
                    add(topic, f"qos.{key}", va, vb)
        # The nominal rate is 1 / median period: robust to the frames a loaded machine drops.
        pa, pb = ea.get("period_median_ms"), eb.get("period_median_ms")
        if pa and pb and abs(1e3 / pb - 1e3 / pa) > tol.rate_rel * 1e3 / pa:
            add(topic, "rate_hz", round(1e3 / pa, 3), round(1e3 / pb, 3))
        ja, jb = ea.get("period_jitter_ms"), eb.get("period_jitter_ms")
        if ja is not None and jb is not None and jb > ja + tol.jitter_ms:
            add(topic, "period_jitter_ms", ja, jb)
        for key in ("frame_ids", "encodings", "sizes", "depth_units", "joint_names"):
            if key in ea and key in eb and ea[key] != eb[key]:
                add(topic, key, ea[key], eb[key])
        ca, cb = ea.get("camera_info"), eb.get("camera_info")
        if ca and cb:
            sa, sb = (
                sorted({(c["width"], c["height"]) for c in ca}),
                sorted({(c["width"], c["height"]) for c in cb}),
            )
            if sa != sb:
                add(topic, "camera_info.size", [list(s) for s in sa], [list(s) for s in sb])
            for key in ("distortion_model", "distortion_nonzero"):
                va, vb = sorted({c[key] for c in ca}), sorted({c[key] for c in cb})
                if va != vb:
                    add(topic, f"camera_info.{key}", va, vb)
    return out
