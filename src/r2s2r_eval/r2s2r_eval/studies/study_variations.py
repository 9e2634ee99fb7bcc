"""The variations of a study's sides: an operator's changes on the unit, and what sims draw on top.

On the unit, an operator moves the object, the lights and the clutter between trials; the reconstructed
world's sim sides draw those and, on top, what the capture could not pin down.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from r2s2r_sim.variations import for_world, load_variation_config, with_world_axes

__all__ = ["operator_variations", "reconstructed_variations"]


def operator_variations(path: str | Path) -> Any:
    """The variation config of ``path`` reduced to what an operator changes between trials.

    Object pose, lighting (intensity, direction) and clutter stay as configured; colours, textures,
    physics, robot start state and camera are disabled (an operator does not repaint the cube, swap the
    table top or move the camera).
    """
    cfg = load_variation_config(path)
    rep = dataclasses.replace
    return rep(
        cfg,
        appearance=rep(cfg.appearance, color_targets=(), color_jitter=0.0, texture_targets=()),
        physics=rep(cfg.physics, enabled=False),
        robot_state=rep(cfg.robot_state, enabled=False),
        camera=rep(cfg.camera, enabled=False),
    )


def reconstructed_variations(operator: Any, world: Path, *, randomise: bool, vary_contacts: bool) -> Any:
    """What the reconstructed world's sim sides draw: the operator's axes, the world's own, then contacts.

    The operator's axes come first, so a paired side's seed draws the real side's very variation.
    """
    out = with_world_axes(operator, world) if randomise else operator
    if vary_contacts:
        out = for_world(
            dataclasses.replace(out, contact=dataclasses.replace(out.contact, enabled=True)), world
        )
    return out
