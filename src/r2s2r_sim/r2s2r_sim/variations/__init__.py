"""Variation engine: one world, many controlled variations (pure Python over ``MjSpec``; no ROS).

Nine axes, registered in :data:`AXES` and applied in this order: ``appearance``, ``objects``, ``clutter``,
``physics``, ``robot_state``, ``camera``, ``dynamics``, ``sensor`` and ``contact`` (the last three off
unless a config enables them: a reconstructed world's own ``variations.yaml`` does for the first two, a
study for the gripper's contacts).  Settings live in
``config/variations.yaml``.  ``sensor`` leaves the model alone: it gives the world's rendered frames
their sensor effects (:func:`sensor_effects`).
"""

from __future__ import annotations

# Importing the axis modules registers them; they are applied in the order of the VariationConfig fields.
from r2s2r_sim.variations import (  # noqa: F401
    appearance,
    camera,
    clutter,
    contact,
    dynamics,
    initial_joints,
    objects,
    physics,
    sensor,
)
from r2s2r_sim.variations.config import (
    AXES,
    VariationConfig,
    VariationError,
    load_variation_config,
    parse_variation_text,
)
from r2s2r_sim.variations.engine import (
    VariedWorld,
    apply_variation,
    for_world,
    initial_state_offsets,
    make_world,
    sample_sweep,
    sample_variation,
    sweep_variation,
    with_world_axes,
)
from r2s2r_sim.variations.sensor import sensor_effects
from r2s2r_sim.variations.variation import Variation

__all__ = [
    "AXES",
    "Variation",
    "VariationConfig",
    "VariationError",
    "VariedWorld",
    "apply_variation",
    "initial_state_offsets",
    "load_variation_config",
    "for_world",
    "make_world",
    "parse_variation_text",
    "sample_sweep",
    "sample_variation",
    "sensor_effects",
    "sweep_variation",
    "with_world_axes",
]
