"""rclpy side of the interface: QoS profiles and message/service classes from ``interface.yaml`` specs."""

from __future__ import annotations

import importlib
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from r2s2r_sim.interface import (
    Durability,
    Interface,
    InterfaceError,
    QosSpec,
    Reliability,
    available_profiles,
    load_interface,
)

__all__ = ["declare_interface", "interface_class", "qos_profile"]

_RELIABILITY = {
    Reliability.RELIABLE: ReliabilityPolicy.RELIABLE,
    Reliability.BEST_EFFORT: ReliabilityPolicy.BEST_EFFORT,
    Reliability.SYSTEM_DEFAULT: ReliabilityPolicy.SYSTEM_DEFAULT,
}
_DURABILITY = {
    Durability.VOLATILE: DurabilityPolicy.VOLATILE,
    Durability.TRANSIENT_LOCAL: DurabilityPolicy.TRANSIENT_LOCAL,
    Durability.SYSTEM_DEFAULT: DurabilityPolicy.SYSTEM_DEFAULT,
}


def qos_profile(spec: QosSpec) -> QoSProfile:
    """Return the ``QoSProfile`` for ``spec``: keep-last ``depth``, or the middleware's history at depth 0."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST if spec.depth > 0 else HistoryPolicy.SYSTEM_DEFAULT,
        depth=spec.depth,
        reliability=_RELIABILITY[spec.reliability],
        durability=_DURABILITY[spec.durability],
    )


def declare_interface(node: Node) -> Interface:
    """Declare ``node``'s read-only ``interface`` parameter and load the profile it selects.

    Raises:
        InterfaceError: the value is neither a shipped profile nor a readable interface file; the message
            names the parameter, the value and the profiles there are.
    """
    profiles = available_profiles()
    descriptor = ParameterDescriptor(
        description="Topic/frame interface profile: a name from config/interface.yaml or the path of an "
        "interface file; empty: the default profile.",
        additional_constraints=f"one of {list(profiles)} or a file path",
        read_only=True,
    )
    value = node.declare_parameter("interface", "", descriptor).value
    try:
        return load_interface(str(value or ""))
    except InterfaceError as err:
        raise InterfaceError(f"parameter interface: {err}") from None


def interface_class(type_string: str) -> Any:
    """Import the class of ``package/msg/Name`` or ``package/srv/Name``.

    Raises:
        InterfaceError: the string is malformed, or the package or class cannot be imported.
    """
    parts = type_string.split("/")
    if len(parts) != 3 or parts[1] not in ("msg", "srv", "action") or not all(parts):
        raise InterfaceError(
            f"interface type {type_string!r}: expected 'package/msg/Name' or 'package/srv/Name'"
        )
    package, kind, name = parts
    try:
        module = importlib.import_module(f"{package}.{kind}")
    except ImportError as err:
        raise InterfaceError(
            f"interface type {type_string!r}: cannot import {package}.{kind}: {err}"
        ) from err
    try:
        return getattr(module, name)
    except AttributeError:
        raise InterfaceError(f"interface type {type_string!r}: {package}.{kind} has no {name}") from None
