"""Running the standard ``ros2`` command line from tests (shared by the launch and conformance tests).

Imported as ``from ros2_tools import ...`` (pytest puts this folder on ``sys.path``). The launch system
and ``ros2`` CLI come from no package registry; ``make test`` installs the unmodified Jazzy sources from
``../shared/conformance/ros2_jazzy_python`` (``tools/setup_tests.sh``). Where they are missing, the tests
that need them skip with :data:`MISSING`.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import pytest

T = TypeVar("T")

_NEEDED = ("launch", "launch_ros", "launch_pytest", "ros2cli", "ros2launch", "ros2topic", "ros2param")
_absent = [name for name in _NEEDED if importlib.util.find_spec(name) is None]
MISSING = (
    f"the ROS 2 launch system / ros2 CLI is not installed ({', '.join(_absent)} missing): `make test` "
    "installs it from ../shared/conformance/ros2_jazzy_python when that folder is present"
    if _absent or shutil.which("ros2") is None
    else ""
)
requires_ros2_tools = pytest.mark.skipif(bool(MISSING), reason=MISSING or "present")


def ros2(
    args: Sequence[str], env: dict[str, str], *, timeout: float = 120.0, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``ros2 ARGS...`` (list arguments, no shell) in ``env``; stdout and stderr captured."""
    try:
        return subprocess.run(
            ["ros2", *args], env=env, cwd=cwd, text=True, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as err:
        raise AssertionError(
            f"`ros2 {' '.join(args)}` did not finish within {timeout} s; "
            f"output so far: {err.stdout!r} {err.stderr!r}"
        ) from None


def ros2_until(
    args: Sequence[str], env: dict[str, str], accept: Callable[[str], T | None], *, timeout: float, what: str
) -> T:
    """Re-run ``ros2 ARGS`` until ``accept(stdout)`` returns a value (returned), for graph discovery.

    A CLI node sees the graph only after DDS discovery, which on a loaded machine can take longer than
    one call's spin time. Raises AssertionError naming ``what`` and the last output after ``timeout`` s.
    """
    deadline = time.monotonic() + timeout
    last: subprocess.CompletedProcess[str] | None = None
    while time.monotonic() < deadline:
        last = ros2(args, env, timeout=max(30.0, deadline - time.monotonic()))
        if last.returncode == 0:
            value = accept(last.stdout)
            if value is not None:
                return value
    output = f"rc={last.returncode} stdout={last.stdout!r} stderr={last.stderr!r}" if last else "no run"
    raise AssertionError(
        f"timed out after {timeout} s waiting for {what} from `ros2 {' '.join(args)}`; last: {output}"
    )


def stop_daemon(env: dict[str, str]) -> None:
    """Stop the ros2cli daemon of ``env``'s ROS_DOMAIN_ID (verbs without ``--no-daemon`` start one)."""
    ros2(["daemon", "stop"], env, timeout=60.0)
