"""Shared ROS 2 node plumbing: read-only parameters from a description table, and the ``main()`` skeleton.

``declare_parameters`` declares each parameter of a ``{name: (description, (low, high) | None)}`` table with
the default taken from a typed config, a read-only ``ParameterDescriptor`` and, for numbers with bounds, an
``IntegerRange`` / ``FloatingPointRange``; a rejected value becomes the caller's error (which names the
parameter, the value and what is allowed). ``run_node`` is the init / build / spin / shutdown sequence of
the nodes' console scripts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import rclpy
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy._rclpy_pybind11 import RCLError
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.executors import Executor, ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node

Bounds = tuple[float, float]
ParamSpecs = Mapping[str, tuple[str, Bounds | None]]
ErrorFactory = Callable[[str, Any, Exception], Exception]


def _plain_error(name: str, default: Any, err: Exception) -> Exception:
    return ValueError(f"parameter {name}: {err}")


def parameter_descriptor(
    description: str, default: Any, bounds: Bounds | None, *, constraints: str = "", state_range: bool = False
) -> ParameterDescriptor:
    """Return a read-only descriptor; integer / float ``default`` with ``bounds`` get the matching range.

    ``state_range`` writes the range into ``additional_constraints`` when ``constraints`` is empty.
    """
    desc = ParameterDescriptor(description=description, read_only=True, additional_constraints=constraints)
    if bounds is None or isinstance(default, bool | str):
        return desc
    low, high = bounds
    if isinstance(default, int):
        desc.integer_range = [IntegerRange(from_value=int(low), to_value=int(high), step=1)]
        if state_range and not constraints:
            desc.additional_constraints = f"integer in [{int(low)}, {int(high)}]"
    elif isinstance(default, float):
        desc.floating_point_range = [
            FloatingPointRange(from_value=float(low), to_value=float(high), step=0.0)
        ]
        if state_range and not constraints:
            desc.additional_constraints = f"number in [{low}, {high}]"
    return desc


def declare_parameters(
    node: Node,
    defaults: Mapping[str, Any],
    specs: ParamSpecs,
    *,
    error: ErrorFactory = _plain_error,
    constraints: Mapping[str, str] | None = None,
    state_range: bool = False,
) -> dict[str, Any]:
    """Declare every parameter of ``specs`` (in order) on ``node``; return ``{name: value}``.

    ``defaults[name]`` gives each default (and so the type); ``error(name, default, err)`` builds the
    exception raised when ROS rejects a value (wrong type or out of range).
    """
    values: dict[str, Any] = {}
    for name, (text, bounds) in specs.items():
        default = defaults[name]
        desc = parameter_descriptor(
            text,
            default,
            bounds,
            constraints=(constraints or {}).get(name, ""),
            state_range=state_range,
        )
        try:
            values[name] = node.declare_parameter(name, default, desc).value
        except (InvalidParameterTypeException, InvalidParameterValueException) as err:
            raise error(name, default, err) from None
    return values


def spin_until_shutdown(executor: Executor) -> None:
    """``executor.spin()`` until the context shuts down, ending quietly however the shutdown lands.

    rclpy's signal handler shuts the context down from another thread; when that happens while ``spin()``
    is building its wait set, rclpy raises ``RCLError`` ("the given context is not valid") instead of
    ``ExternalShutdownException``, and a Ctrl-C would end the process with a traceback and exit code 1.
    """
    try:
        executor.spin()
    except RCLError:
        if executor.context.ok():
            raise


def spin_multithreaded(node: Node) -> None:
    """Spin ``node`` on a two-thread ``MultiThreadedExecutor`` until shutdown."""
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    # Not spin_until_shutdown: swallowing the RCLError here made sim_node hang at exit after Ctrl-C in
    # 2 of 6 local runs (0 of 8 without); not understood yet.
    executor.spin()


def run_node(
    factory: Callable[[], Node],
    args: Sequence[str] | None,
    logger_name: str,
    *,
    spin: Callable[[Any], int | None] = spin_multithreaded,
    errors: tuple[type[BaseException], ...] = (ValueError, RuntimeError),
) -> int:
    """Init rclpy, build the node, ``spin(node)`` and shut down; return the exit code.

    1 when ``factory`` raises one of ``errors`` (logged as fatal under ``logger_name``); otherwise what
    ``spin`` returns (None: 0). Ctrl-C and an external shutdown end the run quietly.
    """
    # Jazzy's rclpy.init() returns None (the context-manager form arrived in Kilted), hence try/finally.
    rclpy.init(args=args)
    code = 0
    try:
        try:
            node = factory()
        except errors as err:
            rclpy.logging.get_logger(logger_name).fatal(str(err))
            return 1
        try:
            code = spin(node) or 0
        finally:
            node.destroy_node()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        rclpy.try_shutdown()
    return code
