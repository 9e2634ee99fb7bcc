"""DDS set-up shared by r2s2r processes: the transport for camera images, and a domain per graph."""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path
from typing import Any

from r2s2r_sim.paths import config_dir

LARGE_DATA_PROFILE = "fastdds_sim.xml"


def use_large_data_transport() -> None:
    """Select ``config/fastdds_sim.xml`` (a 32 MiB shared-memory segment) unless a DDS profile is set.

    Why: Fast DDS's default shared-memory segment is smaller than one 640x480 RGB-D pair, so images
    fall back to ~25 UDP fragments each, and best-effort image topics lose whole frames when a fragment
    is dropped. Call before ``rclpy.init`` (Fast DDS reads the profile when the participant is made).
    Only for Fast DDS; a user's own ``FASTRTPS_DEFAULT_PROFILES_FILE``/``FASTDDS_DEFAULT_PROFILES_FILE``
    always wins.
    """
    rmw = os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    if not rmw.startswith("rmw_fastrtps"):
        return
    if os.environ.get("FASTRTPS_DEFAULT_PROFILES_FILE") or os.environ.get("FASTDDS_DEFAULT_PROFILES_FILE"):
        return
    try:
        profile = config_dir() / LARGE_DATA_PROFILE
    except FileNotFoundError:
        return
    if profile.is_file():
        os.environ["FASTRTPS_DEFAULT_PROFILES_FILE"] = str(profile)


# ROS_DOMAIN_ID values Linux hosts can use without port clashes (the ROS 2 domain-id guidance).
DOMAIN_IDS = range(1, 102)


class DomainLock:
    """A ROS_DOMAIN_ID held by this process: an exclusive lock file that other r2s2r runs on the host respect.

    Why: a test, a soak and a study started on one machine each bring up a whole graph; on a shared domain
    a probe's heartbeat publisher looks like a restarted policy and another sim's images reach the wrong
    policy. The lock is released when :meth:`release` is called or the process exits.
    """

    def __init__(self, domain: int, handle: Any) -> None:
        """Hold ``domain`` by the locked file ``handle``."""
        self.domain = domain
        self._handle = handle

    def release(self) -> None:
        """Let another run take the domain."""
        self._handle.close()


def _lock_dir() -> Path:
    path = Path(tempfile.gettempdir()) / "r2s2r-ros-domains"
    path.mkdir(exist_ok=True)
    return path


def _try_lock(domain: int) -> DomainLock | None:
    handle = open(_lock_dir() / f"{domain}.lock", "w")  # held open for the lock's life
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return DomainLock(domain, handle)


def claim_domain(domain: int | None = None) -> DomainLock:
    """Hold ``domain``, or (None) the first free id from a per-process starting point.

    Raises:
        ValueError: ``domain`` is outside 1..101, already held by another r2s2r run (the message names
            its lock file), or every id is held.
    """
    if domain is not None:
        if domain not in DOMAIN_IDS:
            raise ValueError(f"ROS_DOMAIN_ID {domain}: outside {DOMAIN_IDS.start}..{DOMAIN_IDS.stop - 1}")
        lock = _try_lock(domain)
        if lock is None:
            raise ValueError(
                f"ROS_DOMAIN_ID {domain} is in use by another r2s2r run on this host "
                f"(lock file {_lock_dir() / f'{domain}.lock'}); choose another domain"
            )
        return lock
    start = os.getpid() % len(DOMAIN_IDS)
    for offset in range(len(DOMAIN_IDS)):
        lock = _try_lock(DOMAIN_IDS[(start + offset) % len(DOMAIN_IDS)])
        if lock is not None:
            return lock
    raise ValueError(
        f"every ROS_DOMAIN_ID {DOMAIN_IDS.start}..{DOMAIN_IDS.stop - 1} is held (lock files in {_lock_dir()})"
    )
