"""The ROS topic/service/frame interface profiles (``config/interface.yaml``) as frozen dataclasses; no rclpy.

``config/interface.yaml`` is a catalogue: ``default`` names the profile used when none is selected and
``profiles`` maps names to profiles. A profile (or a user's own interface file, which holds one profile at
its top level) has ``topics``, ``services``, ``actions`` (the controllers' action servers), ``frames``, an
optional ``description`` and an optional ``extends: <profile>`` that takes every entry of a shipped profile
and overrides only what it lists. ``command`` (``forward`` or ``trajectory``) says which of the driver's
command paths a policy node sends its targets through.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from r2s2r_sim.paths import config_dir
from r2s2r_sim.yaml_files import read_yaml

__all__ = [
    "INTERFACE_FILE",
    "ActionSpec",
    "CommandPath",
    "QOS_PRESETS",
    "Durability",
    "Interface",
    "InterfaceError",
    "QosSpec",
    "Reliability",
    "ServiceSpec",
    "TopicSpec",
    "available_profiles",
    "load_interface",
]

INTERFACE_FILE = "interface.yaml"
_MAX_EXTENDS = 8
_T = TypeVar("_T")
# ROS interface type strings: package/msg/Name, package/srv/Name or package/action/Name.
_TYPE_RE = {
    "msg": re.compile(r"^[a-z][a-z0-9_]*/msg/[A-Z][A-Za-z0-9]*$"),
    "srv": re.compile(r"^[a-z][a-z0-9_]*/srv/[A-Z][A-Za-z0-9]*$"),
    "action": re.compile(r"^[a-z][a-z0-9_]*/action/[A-Z][A-Za-z0-9]*$"),
}
_NAME_RE = re.compile(r"^/[A-Za-z0-9_/{}]+$")
# tf2 frame ids: no leading slash (tf2 refuses them), no spaces.
_FRAME_RE = re.compile(r"^[A-Za-z0-9_{}][A-Za-z0-9_/{}.\-]*$")
_PROFILE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]*$")
_PROFILE_KEYS = {"description", "extends", "command", "frames", "topics", "services", "actions"}
_TOPIC_KEYS = {"name", "type", "qos", "subscription_qos"}


class InterfaceError(ValueError):
    """``interface.yaml`` is malformed, or a topic/service/frame key it lacks was asked for.

    The message names the file and the key at fault, e.g.
    ``".../interface.yaml: profiles.realsense2_camera.topics.clock.qos.depth: must be an integer >= 1,
    got 0"``.
    """


class CommandPath(enum.Enum):
    """How a policy node commands the arm and gripper: what the driver's default launch leaves active.

    ``forward``: ``arm_command``/``gripper_command`` Float64MultiArray topics (forward_command_controller).
    ``trajectory``: ``joint_trajectory`` topic (joint_trajectory_controller) and the ``gripper_command``
    action (GripperCommand): the drivers whose default launch starts a trajectory controller.
    """

    FORWARD = "forward"
    TRAJECTORY = "trajectory"


class Reliability(enum.Enum):
    """DDS reliability kind; ``SYSTEM_DEFAULT`` leaves it to the middleware (only via a QoS preset)."""

    RELIABLE = "reliable"
    BEST_EFFORT = "best_effort"
    SYSTEM_DEFAULT = "system_default"


class Durability(enum.Enum):
    """DDS durability kind; ``SYSTEM_DEFAULT`` leaves it to the middleware (only via a QoS preset)."""

    VOLATILE = "volatile"
    TRANSIENT_LOCAL = "transient_local"
    SYSTEM_DEFAULT = "system_default"


@dataclass(frozen=True, kw_only=True)
class QosSpec:
    """A QoS profile: keep-last ``depth``, or the middleware's own history when ``depth`` is 0.

    Attributes:
        reliability: reliable, best effort or the middleware default.
        durability: volatile, transient local or the middleware default.
        depth: history depth (messages), >= 1; 0 only with the ``system_default`` preset.
        preset: the rclcpp preset name this came from (``system_default``, ``default``, ``sensor_data``),
            or ``None`` when written field by field.
    """

    reliability: Reliability
    durability: Durability
    depth: int
    preset: str | None = None

    def __post_init__(self) -> None:
        if self.depth < 0 or (self.depth == 0 and self.preset != "system_default"):
            raise InterfaceError(f"depth: must be >= 1, got {self.depth}")


# The rclcpp/rmw presets that drivers name in their ``*_qos`` parameters (realsense2_camera's image_qos,
# info_qos): rmw_qos_profile_system_default, rmw_qos_profile_default and rmw_qos_profile_sensor_data.
QOS_PRESETS: Mapping[str, QosSpec] = {
    "system_default": QosSpec(
        reliability=Reliability.SYSTEM_DEFAULT,
        durability=Durability.SYSTEM_DEFAULT,
        depth=0,
        preset="system_default",
    ),
    "default": QosSpec(
        reliability=Reliability.RELIABLE, durability=Durability.VOLATILE, depth=10, preset="default"
    ),
    "sensor_data": QosSpec(
        reliability=Reliability.BEST_EFFORT, durability=Durability.VOLATILE, depth=5, preset="sensor_data"
    ),
}


@dataclass(frozen=True, kw_only=True)
class TopicSpec:
    """One topic: its name (possibly with a ``{camera}`` placeholder), type string and QoS.

    Attributes:
        qos: what the driver publishes with.
        subscription_qos: what the project's own subscribers ask for: the file's ``subscription_qos``,
            else ``qos``, except that a middleware-default ``qos`` is subscribed the way a node written the
            usual way does (``create_subscription(..., 10)``: reliable, volatile, depth 10).
    """

    key: str
    name: str
    type: str
    qos: QosSpec
    subscription_qos: QosSpec

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
class ActionSpec:
    """One action server: its name and type string."""

    key: str
    name: str
    type: str


_Spec = TypeVar("_Spec", ServiceSpec, ActionSpec)


def _fill(source: Path, kind: str, key: str, pattern: str, camera: str | None) -> str:
    if "{camera}" in pattern:
        if not camera:
            raise InterfaceError(f"{source}: {kind}.{key}: {pattern!r} needs a camera name")
        return pattern.replace("{camera}", camera)
    if camera is not None:
        raise InterfaceError(
            f"{source}: {kind}.{key}: {pattern!r} has no {{camera}} placeholder, got camera={camera!r}"
        )
    return pattern


@dataclass(frozen=True, kw_only=True)
class Interface:
    """One profile: all topics, services, actions and frame names, keyed as in ``interface.yaml``.

    Attributes:
        source: the file it was read from.
        profile: the profile's name, or the path of a user's interface file.
        description: one line on what the profile is for.
        command: the command path a policy node uses on this profile.
    """

    source: Path
    topics: Mapping[str, TopicSpec]
    services: Mapping[str, ServiceSpec]
    frames: Mapping[str, str]
    actions: Mapping[str, ActionSpec] = dataclasses.field(default_factory=dict)
    profile: str = ""
    description: str = ""
    command: CommandPath = CommandPath.FORWARD

    def topic_spec(self, key: str) -> TopicSpec:
        """Return the spec of topic ``key``.

        Raises:
            InterfaceError: no such key, listing the keys there are.
        """
        return self._entry("topics", self.topics, key)

    def topic(self, key: str, camera: str | None = None) -> str:
        """Return the name of topic ``key``, with ``{camera}`` replaced by ``camera``.

        Raises:
            InterfaceError: unknown key, a per-camera topic without ``camera``, or ``camera`` given for
                a topic that has no placeholder.
        """
        return _fill(self.source, "topics", key, self.topic_spec(key).name, camera)

    def frame(self, key: str, camera: str | None = None) -> str:
        """Return the tf2 frame id ``key`` (``world``, ``base``, ``camera_link`` ...), per camera if needed.

        Raises:
            InterfaceError: unknown key (listing the keys there are), or a camera placeholder mismatch.
        """
        return _fill(self.source, "frames", key, self._entry("frames", self.frames, key), camera)

    def service_spec(self, key: str) -> ServiceSpec:
        """Return the spec of service ``key``.

        Raises:
            InterfaceError: no such key, listing the keys there are.
        """
        return self._entry("services", self.services, key)

    def _entry(self, section: str, table: Mapping[str, _T], key: str) -> _T:
        """``table[key]``; an unknown key names the file and lists the section's keys."""
        if key not in table:
            raise InterfaceError(
                f"{self.source}: {section}.{key}: no such {section[:-1]} ({section}: {sorted(table)})"
            )
        return table[key]

    def service(self, key: str) -> str:
        """Return the name of service ``key``."""
        return self.service_spec(key).name

    def action_spec(self, key: str) -> ActionSpec:
        """Return the spec of action ``key``.

        Raises:
            InterfaceError: no such key, listing the keys there are.
        """
        return self._entry("actions", self.actions, key)


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
    allowed = [e.value for e in cls if e.value != "system_default"]
    if value not in allowed:
        raise _fail(source, field, f"must be one of {allowed}, got {value!r}")
    return cls(value)


def _qos(value: Any, source: Path, field: str) -> QosSpec:
    if isinstance(value, str):
        if value not in QOS_PRESETS:
            raise _fail(source, field, f"unknown QoS preset {value!r} (presets: {sorted(QOS_PRESETS)})")
        return QOS_PRESETS[value]
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


def _topic(key: str, data: Mapping[str, Any], source: Path, field: str) -> TopicSpec:
    _only(data, _TOPIC_KEYS, source, field)
    if "qos" not in data:
        raise _fail(source, f"{field}.qos", "required field is missing")
    qos = _qos(data["qos"], source, f"{field}.qos")
    if "subscription_qos" in data:
        sub_qos = _qos(data["subscription_qos"], source, f"{field}.subscription_qos")
    elif qos.preset == "system_default":
        sub_qos = QOS_PRESETS["default"]
    else:
        sub_qos = qos
    return TopicSpec(
        key=key,
        name=_name(data, source, field),
        type=_type(data, "msg", source, field),
        qos=qos,
        subscription_qos=sub_qos,
    )


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``: frames and the topic, service and action tables merge by entry."""
    out = dict(base)
    for key, value in over.items():
        if key == "extends":
            continue
        if key == "frames" and isinstance(value, Mapping) and isinstance(base.get(key), Mapping):
            out[key] = {**base[key], **value}
        elif (
            key in ("topics", "services", "actions")
            and isinstance(value, Mapping)
            and isinstance(base.get(key), Mapping)
        ):
            entries = dict(base[key])
            for name, entry in value.items():
                old = entries.get(name)
                both = isinstance(old, Mapping) and isinstance(entry, Mapping)
                entries[name] = {**old, **entry} if both else entry
            out[key] = entries
        else:
            out[key] = value
    return out


def _read_yaml(source: Path) -> Mapping[str, Any]:
    raw = read_yaml(source, InterfaceError, kind="interface file").data
    return _mapping(raw, source, "<top level>")


def _catalogue(source: Path) -> tuple[str, Mapping[str, Any]]:
    """The default profile's name and the profiles of a catalogue file."""
    top = _read_yaml(source)
    _only(top, {"default", "profiles"}, source, "<top level>")
    profiles = _mapping(top.get("profiles"), source, "profiles")
    default = _string(top, "default", source, "<top level>")
    for name in profiles:
        if not isinstance(name, str) or not _PROFILE_RE.match(name):
            raise _fail(source, f"profiles.{name}", "profile names are letters, digits, '_' and '-'")
    if default not in profiles:
        raise _fail(source, "default", f"no profile {default!r} (profiles: {sorted(profiles)})")
    return default, profiles


def _resolve_extends(
    data: Mapping[str, Any], source: Path, field: str, profiles: Mapping[str, Any], catalogue: Path
) -> dict[str, Any]:
    chain: list[str] = []
    merged = dict(data)
    while "extends" in merged:
        base = merged["extends"]
        if not isinstance(base, str) or base not in profiles:
            raise _fail(
                source,
                f"{field}.extends",
                f"no profile {base!r} in {catalogue} (profiles: {sorted(profiles)})",
            )
        if base in chain or len(chain) >= _MAX_EXTENDS:
            raise _fail(
                source, f"{field}.extends", f"profiles extend each other in a cycle: {[*chain, base]}"
            )
        chain.append(base)
        parent = _mapping(profiles[base], catalogue, f"profiles.{base}")
        rest = {k: v for k, v in merged.items() if k != "extends"}
        merged = _merged(parent, rest)
        if "extends" in parent:
            merged["extends"] = parent["extends"]
    return merged


def _named_specs(
    data: Mapping[str, Any], section: str, kind: str, cls: type[_Spec], source: Path, prefix: str
) -> dict[str, _Spec]:
    """The ``services`` or ``actions`` section: each entry a ``name`` and a ``type`` of ``kind``."""
    specs: dict[str, _Spec] = {}
    for key, value in _mapping(data.get(section) or {}, source, f"{prefix}{section}").items():
        where = f"{prefix}{section}.{key}"
        entry = _mapping(value, source, where)
        _only(entry, {"name", "type"}, source, where)
        specs[str(key)] = cls(
            key=str(key), name=_name(entry, source, where), type=_type(entry, kind, source, where)
        )
    return specs


def _parse_profile(data: Mapping[str, Any], source: Path, field: str, profile: str) -> Interface:
    _only(data, _PROFILE_KEYS - {"extends"}, source, field)
    prefix = f"{field}." if field != "<top level>" else ""
    if "topics" not in data:
        raise _fail(source, f"{prefix}topics", "required field is missing")
    topics: dict[str, TopicSpec] = {}
    for key, value in _mapping(data["topics"], source, f"{prefix}topics").items():
        where = f"{prefix}topics.{key}"
        topics[str(key)] = _topic(str(key), _mapping(value, source, where), source, where)
    services = _named_specs(data, "services", "srv", ServiceSpec, source, prefix)
    actions = _named_specs(data, "actions", "action", ActionSpec, source, prefix)
    frames: dict[str, str] = {}
    for key, value in _mapping(data.get("frames") or {}, source, f"{prefix}frames").items():
        if not isinstance(value, str) or not _FRAME_RE.match(value):
            raise _fail(
                source,
                f"{prefix}frames.{key}",
                f"must be a tf2 frame id (no leading '/', no spaces), got {value!r}",
            )
        frames[str(key)] = value
    description = data.get("description") or ""
    if not isinstance(description, str):
        raise _fail(source, f"{prefix}description", f"must be a string, got {description!r}")
    command = _enum(CommandPath, data.get("command", CommandPath.FORWARD.value), source, f"{prefix}command")
    if command is CommandPath.TRAJECTORY:
        # The policy node streams on the topic and sends gripper goals to the action: both must be named.
        for section, table, key in (
            ("topics", topics, "joint_trajectory"),
            ("actions", actions, "gripper_command"),
        ):
            if key not in table:
                raise _fail(
                    source, f"{prefix}command", f"'trajectory' needs {section}.{key}, which is missing"
                )
    return Interface(
        source=source,
        topics=topics,
        services=services,
        actions=actions,
        frames=frames,
        profile=profile,
        description=description.strip(),
        command=command,
    )


def available_profiles() -> dict[str, str]:
    """The shipped profiles (``config/interface.yaml``): name -> description; the default first."""
    source = config_dir() / INTERFACE_FILE
    default, profiles = _catalogue(source)
    names = [default, *sorted(n for n in profiles if n != default)]
    return {
        n: str(_mapping(profiles[n], source, f"profiles.{n}").get("description") or "").strip() for n in names
    }


def _is_path(selection: str | Path) -> bool:
    text = str(selection)
    return isinstance(selection, Path) or "/" in text or text.endswith((".yaml", ".yml"))


def load_interface(selection: str | Path | None = None) -> Interface:
    """Read and validate an interface profile.

    Args:
        selection: ``None`` or ``""``: the default profile of ``config/interface.yaml``; a profile name
            from it (e.g. ``realsense2_camera``); or the path of an interface file, either a catalogue like
            ``config/interface.yaml`` (its default profile) or one profile at its top level, which may
            ``extends:`` a shipped profile.

    Returns:
        The parsed profile.

    Raises:
        InterfaceError: naming the file and the key at fault (missing file, bad YAML, unknown profile,
            unknown or missing keys, bad names, types, frames or QoS values).
    """
    shipped = config_dir() / INTERFACE_FILE
    if selection is None or (not _is_path(selection) and not str(selection)):
        selection = ""
    if not _is_path(selection):
        default, profiles = _catalogue(shipped)
        name = str(selection) or default
        if name not in profiles:
            raise InterfaceError(
                f"interface {name!r}: no such profile in {shipped} (profiles: {sorted(profiles)}); "
                "give a profile name or the path of an interface file"
            )
        field = f"profiles.{name}"
        data = _resolve_extends(_mapping(profiles[name], shipped, field), shipped, field, profiles, shipped)
        return _parse_profile(data, shipped, field, name)
    source = Path(selection)
    top = _read_yaml(source)
    if "profiles" in top:
        default, profiles = _catalogue(source)
        field = f"profiles.{default}"
        data = _resolve_extends(_mapping(profiles[default], source, field), source, field, profiles, source)
        return _parse_profile(data, source, field, default)
    _only(top, _PROFILE_KEYS, source, "<top level>")
    data = dict(top)
    if "extends" in data:
        _, profiles = _catalogue(shipped)
        data = _resolve_extends(data, source, "<top level>", profiles, shipped)
    return _parse_profile(data, source, "<top level>", str(source))
