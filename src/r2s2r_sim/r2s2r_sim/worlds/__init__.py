"""Registry of the worlds bundled with r2s2r_sim."""

from __future__ import annotations

from pathlib import Path

__all__ = ["WORLDS", "WORLD_VARIATIONS_FILE", "world_path"]

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
