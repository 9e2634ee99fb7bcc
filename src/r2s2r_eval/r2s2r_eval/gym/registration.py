"""Gymnasium ids of the bundled task worlds and of any world, registered once."""

from __future__ import annotations

import re

import gymnasium
from r2s2r_sim.worlds import WORLDS, default_variations_file

__all__ = ["ENTRY_POINT", "GENERIC_ID", "NAMESPACE", "env_id", "register_envs"]

NAMESPACE = "r2s2r"
ENTRY_POINT = "r2s2r_eval.gym.env:CellEnv"
# Any world folder (a reconstructed one included), given as ``world=``; no variations unless ``variations=``.
GENERIC_ID = f"{NAMESPACE}/World-v1"

_WORLD_ID = re.compile(r"^(?P<name>[a-z][a-z0-9]*(?:-[a-z0-9]+)*)-v(?P<version>\d+)$")


def env_id(world_id: str) -> str:
    """The Gymnasium id of a bundled world id: ``tabletop-pick-v1`` -> ``r2s2r/TabletopPick-v1``.

    Raises:
        ValueError: ``world_id`` is not ``<lower-case-words>-v<N>``.
    """
    match = _WORLD_ID.match(world_id)
    if match is None:
        raise ValueError(f"world id {world_id!r}: expected <lower-case-words>-v<N>, e.g. tabletop-pick-v1")
    name = "".join(part.capitalize() for part in match["name"].split("-"))
    return f"{NAMESPACE}/{name}-v{match['version']}"


def register_envs() -> tuple[str, ...]:
    """Register one id per bundled world (varied by its own defaults) and :data:`GENERIC_ID`; the ids.

    A bundled world's id draws its variation from the world's defaults at each reset (the file
    ``r2s2r sweep`` uses); ``gymnasium.make(id, variations=None)`` gives the world as authored.
    Registering again replaces nothing that is already registered.
    """
    ids = []
    for world_id, folder in WORLDS.items():
        kwargs = {"world": world_id, "variations": str(default_variations_file(folder))}
        ids.append(_register(env_id(world_id), kwargs))
    ids.append(_register(GENERIC_ID, {}))
    return tuple(ids)


def _register(id_: str, kwargs: dict[str, str]) -> str:
    if id_ not in gymnasium.registry:
        gymnasium.register(id=id_, entry_point=ENTRY_POINT, kwargs=kwargs)
    return id_
