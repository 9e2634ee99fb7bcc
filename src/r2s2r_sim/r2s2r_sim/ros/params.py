"""Shared ROS 2 node plumbing: read-only parameters from a description table, and the ``main()`` skeleton.

``declare_parameters`` declares each parameter of a ``{name: (description, (low, high) | None)}`` table with
the default taken from a typed config, a read-only ``ParameterDescriptor`` and, for numbers with bounds, an
``IntegerRange`` / ``FloatingPointRange``; a rejected value becomes the caller's error (which names the
parameter, the value and what is allowed). ``run_node`` is the init / build / spin / shutdown sequence of
the nodes' console scripts.
"""

from __future__ import annotations

import faulthandler
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import rclpy
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy._rclpy_pybind11 import RCLError
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.executors import (
    Executor,
    ExternalShutdownException,
    MultiThreadedExecutor,
    SingleThreadedExecutor,
)
from rclpy.node import Node

from r2s2r_sim.paths import config_dir

Bounds = tuple[float, float]
ParamSpecs = Mapping[str, tuple[str, Bounds | None]]
ErrorFactory = Callable[[str, Any, Exception], Exception]
T = TypeVar("T")


def parameter_error(error: type[Exception]) -> ErrorFactory:
    """An ``ErrorFactory`` raising ``error("parameter <name>: <what ROS said of the value>")``."""
    return lambda name, _default, err: error(f"parameter {name}: {err}")


_plain_error = parameter_error(ValueError)


def rclpy_error(name: str, default: Any, err: Exception) -> Exception:
    """An ``ErrorFactory`` that keeps rclpy's own exception (it names the parameter and the value)."""
    return err


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


def read_node_config(
    node: Node,
    cls: type[T],
    specs: ParamSpecs,
    *,
    error: ErrorFactory = _plain_error,
    constraints: Mapping[str, str] | None = None,
) -> T:
    """Declare ``specs`` with the defaults of the config dataclass ``cls`` and build it from the values."""
    return cls(**declare_parameters(node, vars(cls()), specs, error=error, constraints=constraints))


def declare_driver_parameters(
    node: Node,
    defaults: Mapping[str, Any],
    specs: ParamSpecs,
    *,
    error: type[Exception],
    wall_clock_why: str,
    param_error: ErrorFactory = _plain_error,
    state_range: bool = False,
) -> dict[str, Any]:
    """Declare the parameters of a node that serves the driver topics (see :func:`declare_parameters`).

    Such a node keeps wall-clock time, so ``use_sim_time`` is refused (``wall_clock_why`` says why to the
    user), and it needs a ``world``.

    Raises:
        error: ``use_sim_time`` is set, or ``world`` is empty; the message names the parameter.
    """
    if node.get_parameter("use_sim_time").value:
        raise error(f"parameter use_sim_time: got true, allowed: false — {wall_clock_why}")
    values = declare_parameters(node, defaults, specs, error=param_error, state_range=state_range)
    if not values["world"]:
        raise error("parameter world: got '', allowed: a bundled world id or a world folder path")
    return values


# How long one executor wait may block before the loop re-checks the context (see spin_until_shutdown).
SHUTDOWN_POLL_S = 0.2


def spin_until_shutdown(executor: Executor, *, poll_s: float = SHUTDOWN_POLL_S) -> None:
    """Spin ``executor`` until its context shuts down (or the executor does), ending quietly on a signal.

    Not ``executor.spin()``: on SIGINT/SIGTERM rclpy's signal thread first triggers the executors'
    signal guard conditions and only then shuts the contexts down. An executor that wakes on the guard
    condition in between sees the context still valid, rebuilds its wait set and waits with no timeout;
    nothing triggers it again (the signal path does not run the Python ``on_shutdown`` callbacks that
    would wake it), so a node with no timer and no incoming messages (sim_node, emulated_hardware_node)
    spins forever after Ctrl-C: main thread in ``wait_set.wait``, physics thread already gone. Waiting
    at most ``poll_s`` per ``spin_once`` bounds that race to one period.

    The same signal thread can also shut the context down while ``spin_once`` builds its wait set; rclpy
    then raises ``RCLError`` ("the given context is not valid") instead of ``ExternalShutdownException``,
    which is swallowed here when the context is indeed down.
    """
    context = executor.context
    try:
        while context.ok() and not executor._is_shutdown:  # what Executor.spin() checks
            executor.spin_once(timeout_sec=poll_s)
    except ExternalShutdownException:
        pass
    except RCLError:
        if context.ok():
            raise
    finally:
        shut_down_executor(executor)


# How long shutting an executor down waits for the callbacks it is running (s).
EXECUTOR_SHUTDOWN_S = 10.0


def shut_down_executor(executor: Executor, timeout_s: float = EXECUTOR_SHUTDOWN_S) -> None:
    """Shut ``executor`` down in this thread and join a ``MultiThreadedExecutor``'s worker threads.

    Why: Jazzy's ``MultiThreadedExecutor`` never shuts its ``ThreadPoolExecutor`` down (later rclpy
    releases do, in ``shutdown``), and nothing here called ``shutdown`` at all: the executor's SIGINT guard
    condition was destroyed by ``__del__`` whenever the garbage collector ran, and a pool worker could be
    left blocked on its work queue, which the interpreter joins at exit. A node then hung after Ctrl-C
    with its main thread in ``threading._shutdown`` and one ``concurrent.futures`` worker in
    ``work_queue.get`` (seen with gdb and faulthandler on a hung sim node). Joining the pool here, after the
    callbacks finished, leaves no thread for the interpreter to wait on.
    """
    finished = executor.shutdown(timeout_sec=timeout_s)
    pool = getattr(executor, "_executor", None)  # MultiThreadedExecutor's ThreadPoolExecutor
    if pool is not None:
        # A callback still running after the timeout is not waited for (its thread is a pool worker the
        # interpreter joins; the node's own threads are stopped by destroy_node).
        pool.shutdown(wait=finished, cancel_futures=True)


def _spin_new_executor(node: Node, make: Callable[[], Executor]) -> None:
    """Build an executor with ``make`` and spin ``node`` on it, unless a signal already shut the context down.

    Why the check first: an executor's guard condition cannot be created on a shut-down context, and the
    half-built executor's ``__del__`` then prints a traceback ("no attribute '_sigint_gc'") to stderr. A
    signal landing between the check and the creation still fails the same way; that is taken as the
    shutdown it is.
    """
    if not node.context.ok():
        return
    try:
        executor = make()
    except RCLError:
        if node.context.ok():
            raise
        return
    executor.add_node(node)
    spin_until_shutdown(executor)


def spin_multithreaded(node: Node, num_threads: int = 2) -> None:
    """Spin ``node`` on a ``MultiThreadedExecutor`` (two threads) until shutdown (see spin_until_shutdown)."""
    _spin_new_executor(node, lambda: MultiThreadedExecutor(num_threads=num_threads, context=node.context))


def spin_single(node: Node) -> None:
    """Spin ``node`` on a ``SingleThreadedExecutor`` until shutdown; ``rclpy.spin`` with the bounded wait."""
    _spin_new_executor(node, lambda: SingleThreadedExecutor(context=node.context))


def node_help(
    logger_name: str, specs: ParamSpecs | None = None, defaults: Mapping[str, Any] | None = None
) -> str:
    """The ``--help`` text of a node: its parameters with description, range and default.

    Without ``specs``, the node's parameter file (``config/<name>.yaml``) is shown instead.
    """
    lines = [
        f"usage: {logger_name} [--ros-args -p NAME:=VALUE ... | --params-file FILE]",
        "",
        f"A ROS 2 node; run it with ros2 run, ros2 launch or r2s2r launch. Parameters of {logger_name}:",
    ]
    if specs is not None:
        for name, (text, bounds) in specs.items():
            default = "" if defaults is None or name not in defaults else f" (default: {defaults[name]!r})"
            rng = "" if bounds is None else f" [{bounds[0]}, {bounds[1]}]"
            lines.append(f"  {name}{rng}{default}: {text}")
        return "\n".join(lines)

    try:
        path = config_dir() / f"{logger_name}.yaml"
        lines += [f"(defaults from {path})", path.read_text(encoding="utf-8")]
    except (FileNotFoundError, OSError):
        lines.append("(no parameter file found; `ros2 param describe` lists them while it runs)")
    return "\n".join(lines)


def help_requested(args: Sequence[str] | None) -> bool:
    """True when ``-h``/``--help`` comes before any ``--ros-args`` (``args`` None: ``sys.argv[1:]``)."""
    argv = list(sys.argv[1:] if args is None else args)
    own = argv[: argv.index("--ros-args")] if "--ros-args" in argv else argv
    return "-h" in own or "--help" in own


def exit_logger(node: Node) -> Any:
    """The logger for what ``node`` says as it shuts down (a summary in ``destroy_node``).

    After a Ctrl-C rclpy has shut the context down, and with it the node's ``/rosout`` publisher: a line
    logged under the node's own name then also prints "Failed to publish log message to rosout" on stderr.
    Once the context is down the line goes under ``<node logger>.exit``, a name no ``/rosout`` publisher
    serves, so it reaches the console only.
    """
    logger = node.get_logger()
    return logger if node.context.ok() else rclpy.logging.get_logger(f"{logger.name}.exit")


def run_node(
    factory: Callable[[], Node],
    args: Sequence[str] | None,
    logger_name: str,
    *,
    spin: Callable[[Any], int | None] = spin_multithreaded,
    errors: tuple[type[BaseException], ...] = (ValueError, RuntimeError),
    help_text: Callable[[], str] | None = None,
    quiet_sigint: bool = False,
) -> int:
    """Init rclpy, build the node, ``spin(node)`` and shut down; return the exit code.

    1 when ``factory`` raises one of ``errors`` (logged as fatal under ``logger_name``); otherwise what
    ``spin`` returns (None: 0). Ctrl-C and an external shutdown end the run quietly (0), also when the
    signal lands while the node is being built: rclpy then fails with ``RCLError`` (a ``RuntimeError``:
    "the given context is not valid") in whatever the constructor or the executor was creating.

    ``quiet_sigint`` (for a ``spin`` that ends when the context shuts down, as :func:`spin_single` and
    :func:`spin_multithreaded` do): SIGINT only shuts the context down, as rclpy's handler does, and
    raises no ``KeyboardInterrupt`` (see :func:`_stop_on_sigint`).
    """
    if help_requested(args):
        # Answer --help with the parameters instead of starting the node.
        print(help_text() if help_text is not None else node_help(logger_name))
        return 0
    # A crash (SIGSEGV, SIGABRT...) prints every thread's Python stack to stderr: the evidence for a node
    # that dies on its way out.
    if not faulthandler.is_enabled():
        faulthandler.enable()
    interrupted = _stop_on_sigint() if quiet_sigint else None
    # Jazzy's rclpy.init() returns None (the context-manager form arrived in Kilted), hence try/finally.
    rclpy.init(args=args)
    context = rclpy.get_default_context()
    code = 0
    node: Node | None = None
    try:
        if interrupted is not None and interrupted.is_set():
            return 0  # Ctrl-C before rclpy's handler was there to shut the context down
        try:
            node = factory()
        except errors as err:
            if not context.ok():  # a signal shut the context down mid-construction: not a config error
                return 0
            rclpy.logging.get_logger(logger_name).fatal(str(err))
            return 1
        code = spin(node) or 0
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RCLError:
        if context.ok():
            raise
    finally:
        # One finally for spin and for a Ctrl-C landing between construction and spin: the node's threads
        # are always joined before the interpreter exits.
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        if interrupted is not None:
            # Nothing is left to stop: a late Ctrl-C (a terminal's, after the launcher's) must not kill
            # the exiting interpreter, which puts SIGINT back to SIG_DFL but leaves an ignored one ignored.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code


def _stop_on_sigint() -> threading.Event:
    """Make SIGINT set the returned event instead of raising ``KeyboardInterrupt``; before ``rclpy.init``.

    Why: rclpy's SIGINT handler shuts the context down (which ends the spin) and then calls the handler it
    found, Python's, which raises ``KeyboardInterrupt`` wherever the main thread is. Inside a pybind11 call
    (``take_message`` converting a message to Python) that exception is lost and becomes ``RuntimeError:
    Unable to convert call argument '0' to Python object``: exit 1 with a traceback. A second SIGINT (a
    terminal's Ctrl-C reaches both the launcher and the node, which the launcher then signals) raised it
    again in ``destroy_node``. With this handler installed first, rclpy chains to it and the context's
    shutdown alone ends the run; SIGTERM, then SIGKILL, stop a node stuck in a callback.
    """
    interrupted = threading.Event()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, lambda _signum, _frame: interrupted.set())
    return interrupted
