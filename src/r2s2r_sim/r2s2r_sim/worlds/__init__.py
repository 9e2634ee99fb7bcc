"""Registry of the worlds bundled with r2s2r_sim."""

from __future__ import annotations

from pathlib import Path

from r2s2r_sim.paths import config_dir

__all__ = ["WORLDS", "WORLD_VARIATIONS_FILE", "default_variations_file", "world_path"]

_HERE = Path(__file__).resolve().parent

# A world folder's own variation defaults (a task's axes: its objects, friction, keep-out areas).
WORLD_VARIATIONS_FILE = "variations.yaml"

# id -> world folder.  Ids are versioned: outputs are compared over time.
WORLDS: dict[str, Path] = {
    "tabletop-pick-v1": _HERE / "tabletop_pick",
    "tabletop-push-v1": _HERE / "tabletop_push",
    "tabletop-stack-v1": _HERE / "tabletop_stack",
    "tabletop-drawer-v1": _HERE / "tabletop_drawer",
}


def world_path(id_or_path: str | Path) -> Path:
    """Return the folder of a bundled world id, or an existing world folder given as a path.

    Raises:
        ValueError: if ``id_or_path`` is neither a registered id nor an existing directory; the message
            lists the valid ids.
    """
    key = str(id_or_path)
    if key in WORLDS:
        return WORLDS[key]
    candidate = Path(id_or_path)
    if candidate.is_dir():
        return candidate.resolve()
    raise ValueError(f"unknown world {key!r}: not a directory and not one of the ids {sorted(WORLDS)}")


def default_variations_file(world_dir: str | Path) -> Path:
    """The variation defaults of a world folder: its own ``variations.yaml``, else the package's.

    A task's world carries its own axes (its objects, friction, keep-out areas); any other world is varied
    by the installed package's ``config/variations.yaml``, never a file in the current directory.
    """
    own = Path(world_dir) / WORLD_VARIATIONS_FILE
    return own if own.is_file() else config_dir() / "variations.yaml"
