"""What the player replays and with which QoS: config, recorded per-topic QoS and overrides (no rclpy).

QoS follows ``ros2 bag play``: each topic is offered with the QoS it was recorded with (the first offered
profile when several publishers were recorded), reliability and durability as recorded. The history depth
is the recorded one when the recording knows it; DDS discovery does not carry the depth, so bags recorded
from the graph (rosbag2's and ours) store ``history: unknown, depth: 0``, and then ``default_depth`` is used.
A user override per topic, in the format of ``ros2 bag play --qos-profile-overrides-path``, replaces any
of the four fields.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosReliability

from r2s2r_capture.errors import BagError

__all__ = [
    "PlayerConfig",
    "PlaySummary",
    "ReplayQos",
    "load_qos_overrides",
    "parse_remaps",
    "replay_qos",
]

DEFAULT_DEPTH = (
    1000  # deep enough that a reliable burst is buffered, not overwritten, while a reader catches up
)
MAX_OVERRIDES_BYTES = 2**20
RELIABILITY = ("reliable", "best_effort")
DURABILITY = ("volatile", "transient_local")
HISTORY = ("keep_last", "keep_all")


@dataclass(frozen=True, kw_only=True)
class ReplayQos:
    """The QoS one replayed topic is published with; ``source`` says where it came from."""

    reliability: str = "reliable"
    durability: str = "volatile"
    history: str = "keep_last"
    depth: int = DEFAULT_DEPTH
    source: str = "default (no QoS recorded)"

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("reliability", self.reliability, RELIABILITY),
            ("durability", self.durability, DURABILITY),
            ("history", self.history, HISTORY),
        ):
            if value not in allowed:
                raise BagError(f"QoS {name} must be one of {list(allowed)}: got {value!r}")
        if isinstance(self.depth, bool) or not isinstance(self.depth, int) or self.depth < 1:
            raise BagError(f"QoS depth must be an integer >= 1: got {self.depth!r}")

    def text(self) -> str:
        """``reliable, transient_local, keep_last 1 (recorded)``."""
        depth = f" {self.depth}" if self.history == "keep_last" else ""
        return f"{self.reliability}, {self.durability}, {self.history}{depth} ({self.source})"


def replay_qos(profiles: Sequence[Qos], *, default_depth: int = DEFAULT_DEPTH) -> ReplayQos:
    """The QoS to replay a topic recorded with ``profiles`` (rosbags ``Qos``); the first profile counts.

    Policies a recording leaves open (system default, unknown, best available) become reliable, volatile
    and keep-last ``default_depth``: what a subscriber of any QoS can match.
    """
    if not profiles:
        return ReplayQos(depth=default_depth)
    first = profiles[0]
    reliability = "best_effort" if first.reliability == QosReliability.BEST_EFFORT else "reliable"
    durability = "transient_local" if first.durability == QosDurability.TRANSIENT_LOCAL else "volatile"
    if first.history == QosHistory.KEEP_ALL:
        history, depth = "keep_all", default_depth
    elif first.history == QosHistory.KEEP_LAST and int(first.depth) > 0:
        history, depth = "keep_last", int(first.depth)
    else:
        history, depth = "keep_last", default_depth
    more = f", first of {len(profiles)} offered" if len(profiles) > 1 else ""
    return ReplayQos(
        reliability=reliability, durability=durability, history=history, depth=depth, source=f"recorded{more}"
    )


def load_qos_overrides(path: Path | str) -> dict[str, dict[str, Any]]:
    """Read ``{topic: {reliability, durability, history, depth}}`` (any subset of the four) from YAML.

    The format is that of ``ros2 bag play --qos-profile-overrides-path``. Raises BagError naming the file,
    topic and field of anything else.
    """
    path = Path(path)
    try:
        if path.stat().st_size > MAX_OVERRIDES_BYTES:
            raise BagError(f"QoS overrides {path}: larger than {MAX_OVERRIDES_BYTES} bytes")
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise BagError(f"QoS overrides {path}: cannot be read: {err}") from err
    if not isinstance(doc, dict):
        raise BagError(
            f"QoS overrides {path}: expected a mapping of topic -> QoS fields, got {type(doc).__name__}"
        )
    out: dict[str, dict[str, Any]] = {}
    allowed = {"reliability": RELIABILITY, "durability": DURABILITY, "history": HISTORY}
    for topic, fields in doc.items():
        if not isinstance(topic, str) or not isinstance(fields, dict):
            raise BagError(f"QoS overrides {path}: entry {topic!r} must map a topic name to QoS fields")
        clean: dict[str, Any] = {}
        for key, value in fields.items():
            if key == "depth":
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise BagError(
                        f"QoS overrides {path}: topic {topic} field depth must be >= 1: got {value!r}"
                    )
                clean[key] = value
            elif key in allowed:
                text = str(value).lower()
                if text not in allowed[key]:
                    raise BagError(
                        f"QoS overrides {path}: topic {topic} field {key} is {value!r}; "
                        f"allowed: {list(allowed[key])}"
                    )
                clean[key] = text
            else:
                raise BagError(
                    f"QoS overrides {path}: topic {topic} field {key!r} is not one of "
                    "reliability, durability, history, depth"
                )
        out[topic] = clean
    return out


def apply_override(qos: ReplayQos, override: Mapping[str, Any] | None) -> ReplayQos:
    """``qos`` with the fields the user's override gives replaced."""
    if not override:
        return qos
    return replace(qos, **override, source=f"override of {qos.source}")


@dataclass(frozen=True, kw_only=True)
class PlayerConfig:
    """What to replay and how.

    ``clock_hz`` > 0 publishes /clock from bag time at that rate, as ``ros2 bag play --clock``; 0 does not.
    Before the first message the player waits, at most ``wait_timeout_s``, until every subscription it can
    see on a replayed topic has matched, and until ``wait_for_subscribers`` subscriptions in all have
    matched (0: do not wait for any); discovery gets ``discovery_s`` after its last change to the graph.
    """

    bag: Path
    rate: float = 1.0
    start_offset_s: float = 0.0
    topics: tuple[str, ...] = ()  # empty: all topics
    remap: tuple[tuple[str, str], ...] = ()
    loop: bool = False
    clock_hz: float = 0.0
    qos_overrides: Path | None = None
    default_depth: int = DEFAULT_DEPTH
    wait_for_subscribers: int = 0
    wait_timeout_s: float = 10.0
    discovery_s: float = 1.0

    def __post_init__(self) -> None:
        if not self.rate > 0:
            raise BagError(f"rate must be > 0: got {self.rate}")
        if self.start_offset_s < 0:
            raise BagError(f"start_offset_s must be >= 0: got {self.start_offset_s}")
        if self.clock_hz < 0:
            raise BagError(f"clock_hz must be >= 0 (0: no /clock): got {self.clock_hz}")
        if self.default_depth < 1:
            raise BagError(f"default_depth must be >= 1: got {self.default_depth}")
        if self.wait_for_subscribers < 0:
            raise BagError(f"wait_for_subscribers must be >= 0: got {self.wait_for_subscribers}")
        if not self.wait_timeout_s > 0:
            raise BagError(f"wait_timeout_s must be > 0: got {self.wait_timeout_s}")
        if self.discovery_s < 0:
            raise BagError(f"discovery_s must be >= 0: got {self.discovery_s}")


def parse_remaps(items: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``['/a:=/b']`` -> ``(('/a', '/b'),)``; raises BagError naming a malformed entry."""
    out = []
    for item in items:
        if not item:
            continue
        src, sep, dst = item.partition(":=")
        if not sep or not src or not dst:
            raise BagError(f"remap entry {item!r} is not of the form /from:=/to")
        out.append((src, dst))
    return tuple(out)


@dataclass
class PlaySummary:
    """Counts per topic: published, and skipped by reason."""

    published: Counter[str] = field(default_factory=Counter)
    skipped: dict[str, Counter[str]] = field(default_factory=dict)

    def skip(self, topic: str, why: str, n: int = 1) -> None:
        """Count ``n`` skipped messages of ``topic`` under reason ``why``."""
        self.skipped.setdefault(topic, Counter())[why] += n

    def text(self) -> str:
        """One line per topic: published and skipped counts with reasons."""
        lines = []
        for topic in sorted(set(self.published) | set(self.skipped)):
            parts = [f"published {self.published[topic]}"]
            parts += [f"skipped {n} ({why})" for why, n in sorted(self.skipped.get(topic, {}).items())]
            lines.append(f"  {topic}: " + ", ".join(parts))
        return "\n".join(lines)
