"""DDS transport selection shared by every r2s2r process that moves camera images."""

from __future__ import annotations

import os

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
