"""Where r2s2r's shared files (config/, launch/) live, in a colcon install or a source checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = "r2s2r_sim"
# src/r2s2r_sim/r2s2r_sim/paths.py -> repository root, for editable (pip-mode) installs.
_SOURCE_ROOT = Path(__file__).resolve().parents[3]


def _share_dir() -> Path | None:
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:
        return None
    try:
        return Path(get_package_share_directory(_PACKAGE))
    except PackageNotFoundError:
        return None


def data_dir(folder: str) -> Path:
    """Return the installed ``share/r2s2r_sim/<folder>`` if colcon installed it, else the checkout's.

    Raises:
        FileNotFoundError: neither exists, naming both places looked at.
    """
    share = _share_dir()
    candidates = ([share / folder] if share else []) + [_SOURCE_ROOT / folder]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"r2s2r {folder}/ not found; looked in: {', '.join(map(str, candidates))}")


def config_dir() -> Path:
    """The folder holding interface.yaml and the nodes' parameter files."""
    return data_dir("config")


def launch_dir() -> Path:
    """The folder holding world.launch.py."""
    return data_dir("launch")
