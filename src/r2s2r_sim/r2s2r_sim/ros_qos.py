"""rclpy side of the interface: QoS profiles and message/service classes from ``interface.yaml`` specs."""

from __future__ import annotations

import importlib
from typing import Any

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from r2s2r_sim.interface import Durability, InterfaceError, QosSpec, Reliability

__all__ = ["interface_class", "qos_profile"]

_RELIABILITY = {
    Reliability.RELIABLE: ReliabilityPolicy.RELIABLE,
    Reliability.BEST_EFFORT: ReliabilityPolicy.BEST_EFFORT,
}
_DURABILITY = {
    Durability.VOLATILE: DurabilityPolicy.VOLATILE,
    Durability.TRANSIENT_LOCAL: DurabilityPolicy.TRANSIENT_LOCAL,
}


def qos_profile(spec: QosSpec) -> QoSProfile:
    """Return the keep-last ``QoSProfile`` for ``spec``."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=spec.depth,
        reliability=_RELIABILITY[spec.reliability],
        durability=_DURABILITY[spec.durability],
    )


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
