"""The ROS topic/service interface (``config/interface.yaml``) as frozen dataclasses; no rclpy."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from r2s2r_sim.paths import config_dir

__all__ = [
    "INTERFACE_FILE",
    "Durability",
    "Interface",
    "InterfaceError",
    "QosSpec",
    "Reliability",
    "ServiceSpec",
    "TopicSpec",
    "load_interface",
]

INTERFACE_FILE = "interface.yaml"
# interface.yaml is a small hand-written file; anything bigger is not one.
_MAX_FILE_BYTES = 1 << 20
# ROS interface type strings: package/msg/Name or package/srv/Name.
_TYPE_RE = {
    "msg": re.compile(r"^[a-z][a-z0-9_]*/msg/[A-Z][A-Za-z0-9]*$"),
    "srv": re.compile(r"^[a-z][a-z0-9_]*/srv/[A-Z][A-Za-z0-9]*$"),
}
_NAME_RE = re.compile(r"^/[A-Za-z0-9_/{}]+$")


class InterfaceError(ValueError):
    """``interface.yaml`` is malformed, or a topic/service key it lacks was asked for.

    The message names the file and the key at fault, e.g.
    ``".../interface.yaml: topics.clock.qos.depth: must be an integer >= 1, got 0"``.
    """


class Reliability(enum.Enum):
    """DDS reliability kind."""

    RELIABLE = "reliable"
    BEST_EFFORT = "best_effort"


class Durability(enum.Enum):
    """DDS durability kind."""

    VOLATILE = "volatile"
    TRANSIENT_LOCAL = "transient_local"


@dataclass(frozen=True, kw_only=True)
class QosSpec:
    """A keep-last QoS profile.

    Attributes:
        reliability: reliable or best effort.
        durability: volatile or transient local.
        depth: history depth (messages), >= 1.
    """

    reliability: Reliability
    durability: Durability
    depth: int

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise InterfaceError(f"depth: must be >= 1, got {self.depth}")


@dataclass(frozen=True, kw_only=True)
class TopicSpec:
    """One topic: its name (possibly with a ``{camera}`` placeholder), type string and QoS."""

    key: str
    name: str
    type: str
    qos: QosSpec

    @property
    def per_camera(self) -> bool:
        """Whether the name has a ``{camera}`` placeholder."""
        return "{camera}" in self.name


@dataclass(frozen=True, kw_only=True)
class ServiceSpec:
    """One service: its name and type string."""

    key: str
    name: str
    type: str


@dataclass(frozen=True, kw_only=True)
class Interface:
    """All topics and services, keyed as in ``interface.yaml``."""

    source: Path
    topics: Mapping[str, TopicSpec]
    services: Mapping[str, ServiceSpec]

    def topic_spec(self, key: str) -> TopicSpec:
        """Return the spec of topic ``key``.

        Raises:
            InterfaceError: no such key, listing the keys there are.
        """
        try:
            return self.topics[key]
        except KeyError:
            raise InterfaceError(
                f"{self.source}: topics.{key}: no such topic (topics: {sorted(self.topics)})"
            ) from None

    def topic(self, key: str, camera: str | None = None) -> str:
        """Return the name of topic ``key``, with ``{camera}`` replaced by ``camera``.

        Raises:
            InterfaceError: unknown key, a per-camera topic without ``camera``, or ``camera`` given for
                a topic that has no placeholder.
        """
        spec = self.topic_spec(key)
        if spec.per_camera:
            if not camera:
                raise InterfaceError(f"{self.source}: topics.{key}: {spec.name!r} needs a camera name")
            return spec.name.replace("{camera}", camera)
        if camera is not None:
            raise InterfaceError(
                f"{self.source}: topics.{key}: {spec.name!r} has no {{camera}} placeholder, "
                f"got camera={camera!r}"
            )
        return spec.name

    def service_spec(self, key: str) -> ServiceSpec:
        """Return the spec of service ``key``.

        Raises:
            InterfaceError: no such key, listing the keys there are.
        """
        try:
            return self.services[key]
        except KeyError:
            raise InterfaceError(
                f"{self.source}: services.{key}: no such service (services: {sorted(self.services)})"
            ) from None

    def service(self, key: str) -> str:
        """Return the name of service ``key``."""
        return self.service_spec(key).name


def _fail(source: Path, field: str, msg: str) -> InterfaceError:
    return InterfaceError(f"{source}: {field}: {msg}")


def _mapping(value: Any, source: Path, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(source, field, f"must be a mapping, got {type(value).__name__} {value!r}")
    return value


def _only(data: Mapping[str, Any], allowed: set[str], source: Path, field: str) -> None:
    unknown = sorted(set(data) - allowed, key=str)
    if unknown:
        raise _fail(source, field, f"unknown key(s) {unknown} (allowed: {sorted(allowed)})")


def _string(data: Mapping[str, Any], key: str, source: Path, field: str) -> str:
    if key not in data or data[key] is None:
        raise _fail(source, f"{field}.{key}", "required field is missing")
    value = data[key]
    if not isinstance(value, str) or not value:
        raise _fail(source, f"{field}.{key}", f"must be a non-empty string, got {value!r}")
    return value


def _name(data: Mapping[str, Any], source: Path, field: str) -> str:
    name = _string(data, "name", source, field)
    if not _NAME_RE.match(name) or "//" in name or name.endswith("/"):
        raise _fail(source, f"{field}.name", f"must be an absolute ROS name like /a/b, got {name!r}")
    return name


def _type(data: Mapping[str, Any], kind: str, source: Path, field: str) -> str:
    type_ = _string(data, "type", source, field)
    if not _TYPE_RE[kind].match(type_):
        raise _fail(source, f"{field}.type", f"must look like 'package/{kind}/Name', got {type_!r}")
    return type_


def _enum(cls: type[enum.Enum], value: Any, source: Path, field: str) -> Any:
    allowed = [e.value for e in cls]
    if value not in allowed:
        raise _fail(source, field, f"must be one of {allowed}, got {value!r}")
    return cls(value)


def _qos(value: Any, source: Path, field: str) -> QosSpec:
    data = _mapping(value, source, field)
    _only(data, {"reliability", "durability", "depth"}, source, field)
    for key in ("reliability", "durability", "depth"):
        if key not in data:
            raise _fail(source, f"{field}.{key}", "required field is missing")
    depth = data["depth"]
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise _fail(source, f"{field}.depth", f"must be an integer >= 1, got {depth!r}")
    return QosSpec(
        reliability=_enum(Reliability, data["reliability"], source, f"{field}.reliability"),
        durability=_enum(Durability, data["durability"], source, f"{field}.durability"),
        depth=depth,
    )


def load_interface(path: str | Path | None = None) -> Interface:
    """Read and validate ``interface.yaml``.

    Args:
        path: the file; ``None`` uses ``config_dir()/interface.yaml``.

    Returns:
        The parsed interface.

    Raises:
        InterfaceError: naming the file and the key at fault (missing file, bad YAML, unknown or missing
            keys, bad names, types or QoS values).
    """
    source = Path(path) if path is not None else config_dir() / INTERFACE_FILE
    if not source.is_file():
        raise InterfaceError(f"{source}: interface file not found")
    size = source.stat().st_size
    if size > _MAX_FILE_BYTES:
        raise InterfaceError(f"{source}: file is {size} bytes, more than the {_MAX_FILE_BYTES} allowed")
    try:
        raw = yaml.safe_load(source.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise InterfaceError(f"{source}: not valid YAML: {err}") from err
    top = _mapping(raw, source, "<top level>")
    _only(top, {"topics", "services"}, source, "<top level>")
    if "topics" not in top:
        raise _fail(source, "topics", "required field is missing")
    topics: dict[str, TopicSpec] = {}
    for key, value in _mapping(top["topics"], source, "topics").items():
        field = f"topics.{key}"
        data = _mapping(value, source, field)
        _only(data, {"name", "type", "qos"}, source, field)
        if "qos" not in data:
            raise _fail(source, f"{field}.qos", "required field is missing")
        topics[str(key)] = TopicSpec(
            key=str(key),
            name=_name(data, source, field),
            type=_type(data, "msg", source, field),
            qos=_qos(data["qos"], source, f"{field}.qos"),
        )
    services: dict[str, ServiceSpec] = {}
    for key, value in _mapping(top.get("services") or {}, source, "services").items():
        field = f"services.{key}"
        data = _mapping(value, source, field)
        _only(data, {"name", "type"}, source, field)
        services[str(key)] = ServiceSpec(
            key=str(key), name=_name(data, source, field), type=_type(data, "srv", source, field)
        )
    return Interface(source=source, topics=topics, services=services)
