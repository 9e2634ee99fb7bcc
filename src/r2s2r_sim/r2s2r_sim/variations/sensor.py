"""Sensor axis: the RGB-D sensor effects the sim's rendered frames get (depth noise and holes, colour)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mujoco

from r2s2r_sim.render.sensor_effects import ColorSensor, DepthSensor, SensorEffects
from r2s2r_sim.variations.config import Axis, lerp
from r2s2r_sim.variations.sensor_config import COLOR_RANGES, DEPTH_RANGES, SensorVariationConfig
from r2s2r_sim.variations.variation import Variation

__all__ = ["SensorAxis", "sensor_effects"]

_SIDE = "projector_side"


class SensorAxis(Axis):
    """The sensor axis.

    Parameters: every range field of the effects that are on (``subpixel_px``, ``baseline_m``, ...,
    ``vignetting``; see :class:`SensorVariationConfig`) and ``projector_side`` (+1 or -1, with depth).
    The world's model is not touched: :func:`sensor_effects` turns the parameters into the effects the
    sim's camera frames get (``r2s2r_sim.cells.camera_frames``), with each episode's noise drawn from its
    seed.
    """

    name = "sensor"

    def dims(self, cfg: SensorVariationConfig) -> tuple[str, ...]:
        """See :meth:`Axis.dims`."""
        return cfg.ranges() + ((_SIDE,) if cfg.depth else ())

    def realise(
        self, cfg: SensorVariationConfig, unit: tuple[float, ...], earlier: Mapping[str, float]
    ) -> dict[str, float]:
        """See :meth:`Axis.realise`."""
        names = self.dims(cfg)
        out = {n: lerp(getattr(cfg, n), u) for n, u in zip(names, unit, strict=True) if n != _SIDE}
        if cfg.depth:
            out[_SIDE] = 1.0 if unit[names.index(_SIDE)] < 0.5 else -1.0
        return out

    def apply(self, spec: mujoco.MjSpec, cfg: SensorVariationConfig, params: Mapping[str, float]) -> None:
        """Nothing to edit: the effects act on rendered frames, not the model (see :func:`sensor_effects`)."""


def sensor_effects(variation: Variation) -> SensorEffects | None:
    """The sensor effects ``variation`` gives the sim's camera frames; None when its sensor axis is off."""
    params = variation.axis_params("sensor")
    if not params:
        return None
    cfg: SensorVariationConfig = variation.config.sensor
    depth = color = None
    if cfg.depth:
        values = {n: params[n] for n in DEPTH_RANGES}
        values["projector_offset_m"] *= params[_SIDE]
        depth = DepthSensor(**values, depth_unit_m=cfg.depth_unit_m, max_range_m=cfg.max_range_m)
    if cfg.color:
        # No motion blur: the sim draws one state per frame (the emulated camera renders the exposure).
        color_values: dict[str, Any] = {n: params[n] for n in COLOR_RANGES}
        color = ColorSensor(**color_values)
    return SensorEffects(depth=depth, color=color)
