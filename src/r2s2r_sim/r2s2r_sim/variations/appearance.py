"""Appearance axis: rgb jitter of geoms/materials, material textures, light intensity and direction."""

from __future__ import annotations

import math
from collections.abc import Mapping

import mujoco
import numpy as np

from r2s2r_sim.variations.config import AppearanceConfig, Axis, lerp, not_found, symmetric

__all__ = ["AppearanceAxis"]

_RGB = ("r", "g", "b")
_BUILTINS = {
    "checker": mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
    "gradient": mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
    "flat": mujoco.mjtBuiltin.mjBUILTIN_FLAT,
}


class AppearanceAxis(Axis):
    """The appearance axis.

    Parameters: ``<target>.r|g|b`` (added to the rgb), ``light_intensity`` (diffuse scale),
    ``light_tilt_x`` and ``light_tilt_y`` (rad, rotation of every light direction about world x then y),
    ``<material>.texture`` (index into ``textures``; 0 is the first choice).
    """

    name = "appearance"

    def dims(self, cfg: AppearanceConfig) -> tuple[str, ...]:
        """See :meth:`Axis.dims`."""
        colours = tuple(f"{t}.{c}" for t in cfg.color_targets for c in _RGB)
        textures = tuple(f"{t}.texture" for t in cfg.texture_targets)
        return (*colours, "light_intensity", "light_tilt_x", "light_tilt_y", *textures)

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
        for name, u in zip(names[n_col + 3 :], unit[n_col + 3 :], strict=True):
            out[name] = float(min(int(u * len(cfg.textures)), len(cfg.textures) - 1))
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
        for i, target in enumerate(cfg.texture_targets):
            material = spec.material(target)
            if material is None:
                raise not_found(
                    f"appearance.texture_targets[{i}]",
                    "material",
                    target,
                    [m.name for m in spec.materials if m.name],
                )
            choice = cfg.textures[int(params[f"{target}.texture"])]
            if choice == "none":
                continue
            rgb = np.array(material.rgba[:3], dtype=np.float64)  # after the colour jitter above
            name = f"r2s2r_variation_{target}_texture"
            spec.add_texture(
                name=name,
                type=mujoco.mjtTexture.mjTEXTURE_2D,
                builtin=_BUILTINS[choice],
                rgb1=rgb,
                rgb2=0.6 * rgb,
                width=128,
                height=128,
            )
            material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = name
            material.rgba = [1.0, 1.0, 1.0, material.rgba[3]]  # the texture carries the colour now
            material.texrepeat = [4.0, 4.0]
        cx, sx = math.cos(params["light_tilt_x"]), math.sin(params["light_tilt_x"])
        cy, sy = math.cos(params["light_tilt_y"]), math.sin(params["light_tilt_y"])
        rot = np.array([[cy, 0.0, sy], [0.0, 1.0, 0.0], [-sy, 0.0, cy]]) @ np.array(
            [[1.0, 0.0, 0.0], [0.0, cx, -sx], [0.0, sx, cx]]
        )
        scale = params["light_intensity"]
        for light in spec.lights:
            light.diffuse = np.clip(np.array(light.diffuse, dtype=np.float64) * scale, 0.0, None)
            light.dir = rot @ np.array(light.dir, dtype=np.float64)
