"""Where r2s2r's shared files (config/, launch/) live, in a colcon install or a source checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = "r2s2r_sim"
# The viewers' shipped files in config/: RViz's displays and Foxglove's panels for the world graph's topics.
RVIZ_CONFIG = "r2s2r.rviz"
FOXGLOVE_LAYOUT = "r2s2r.foxglove.json"
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
    """Return ``<folder>`` of the checkout this code runs from, else ``share/r2s2r_sim/<folder>``.

    Code imported from a source checkout (editable pip install, ``colcon build --symlink-install``)
    uses that checkout's files, so code and config always come from the same tree; an installed copy
    (``colcon build``, a wheel) has no checkout around it and finds its files through the ament index.
    Nothing is resolved against the current directory.

    Raises:
        FileNotFoundError: neither exists, naming the places looked at.
    """
    source = _SOURCE_ROOT / folder
    if (_SOURCE_ROOT / "src" / _PACKAGE / "package.xml").is_file() and source.is_dir():
        return source
    share = _share_dir()
    candidates = [source] + ([share / folder] if share else [])
    if share is not None and (share / folder).is_dir():
        return share / folder
    raise FileNotFoundError(
        f"r2s2r {folder}/ not found; looked in: {', '.join(map(str, candidates))}"
        + ("" if share else f" (package {_PACKAGE} is not in the ament index either)")
    )


def config_dir() -> Path:
    """The folder holding interface.yaml and the nodes' parameter files."""
    return data_dir("config")


def launch_dir() -> Path:
    """The folder holding world.launch.py."""
    return data_dir("launch")
