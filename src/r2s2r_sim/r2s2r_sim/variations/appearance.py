"""Appearance axis: rgb jitter of named geoms/materials, light intensity and light direction."""

from __future__ import annotations

import math
from collections.abc import Mapping

import mujoco
import numpy as np

from r2s2r_sim.variations.config import AppearanceConfig, Axis, lerp, not_found, symmetric

__all__ = ["AppearanceAxis"]

_RGB = ("r", "g", "b")


class AppearanceAxis(Axis):
    """The appearance axis.

    Parameters: ``<target>.r|g|b`` (added to the rgb), ``light_intensity`` (diffuse scale),
    ``light_tilt_x`` and ``light_tilt_y`` (rad, rotation of every light direction about world x then y).
    """

    name = "appearance"

    def dims(self, cfg: AppearanceConfig) -> tuple[str, ...]:
        """See :meth:`Axis.dims`."""
        colours = tuple(f"{t}.{c}" for t in cfg.color_targets for c in _RGB)
        return (*colours, "light_intensity", "light_tilt_x", "light_tilt_y")

    def realise(
        self, cfg: AppearanceConfig, unit: tuple[float, ...], earlier: Mapping[str, float]
    ) -> dict[str, float]:
        """See :meth:`Axis.realise`."""
        names = self.dims(cfg)
        n_col = 3 * len(cfg.color_targets)
        out = {n: symmetric(cfg.color_jitter, u) for n, u in zip(names[:n_col], unit[:n_col], strict=True)}
        out["light_intensity"] = lerp(cfg.light_intensity_scale, unit[n_col])
        out["light_tilt_x"] = symmetric(cfg.light_direction_jitter, unit[n_col + 1])
        out["light_tilt_y"] = symmetric(cfg.light_direction_jitter, unit[n_col + 2])
        return out

    def apply(self, spec: mujoco.MjSpec, cfg: AppearanceConfig, params: Mapping[str, float]) -> None:
        """See :meth:`Axis.apply`."""
        for i, target in enumerate(cfg.color_targets):
            element = spec.material(target) or spec.geom(target)
            if element is None:
                have = [m.name for m in spec.materials if m.name] + [g.name for g in spec.geoms if g.name]
                raise not_found(f"appearance.color_targets[{i}]", "material or geom", target, have)
            rgba = np.array(element.rgba, dtype=np.float64)
            delta = np.array([params[f"{target}.{c}"] for c in _RGB])
            rgba[:3] = np.clip(rgba[:3] + delta, 0.0, 1.0)
            element.rgba = rgba
        cx, sx = math.cos(params["light_tilt_x"]), math.sin(params["light_tilt_x"])
        cy, sy = math.cos(params["light_tilt_y"]), math.sin(params["light_tilt_y"])
        rot = np.array([[cy, 0.0, sy], [0.0, 1.0, 0.0], [-sy, 0.0, cy]]) @ np.array(
            [[1.0, 0.0, 0.0], [0.0, cx, -sx], [0.0, sx, cx]]
        )
        scale = params["light_intensity"]
        for light in spec.lights:
            light.diffuse = np.clip(np.array(light.diffuse, dtype=np.float64) * scale, 0.0, None)
            light.dir = rot @ np.array(light.dir, dtype=np.float64)
