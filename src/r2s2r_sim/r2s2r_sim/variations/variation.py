"""One realised variation: the seed, the unit-cube point and the parameters an axis config gives them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from r2s2r_sim.variations.config import VariationConfig

__all__ = ["Method", "Variation"]

Method = Literal["sobol", "random"]


@dataclass(frozen=True, eq=True)
class Variation:
    """One realised variation.

    Attributes:
        seed: the seed it was drawn with (the sweep seed for Sobol sweeps).
        config: the axis config.
        method: ``"random"`` (unit point from ``default_rng(seed)``) or ``"sobol"`` (point ``index`` of
            the scrambled Sobol sequence seeded with ``seed``).
        index: position in its sweep (0 for a single random variation).
        unit: the unit-cube point, one coordinate per name of :func:`dimension_names`.
        params: realised parameters, ``"<axis>.<name>" -> value`` in physical units, in axis order.
    """

    seed: int
    config: VariationConfig
    method: Method
    index: int
    unit: tuple[float, ...]
    params: Mapping[str, float]

    __hash__ = None  # type: ignore[assignment]  # params is a dict

    def vector(self) -> np.ndarray:
        """The realised parameters as a float array, in ``params`` order."""
        return np.fromiter(self.params.values(), dtype=np.float64, count=len(self.params))

    def axis_params(self, axis: str) -> dict[str, float]:
        """The realised parameters of one axis, unprefixed (empty when the axis is disabled)."""
        self.config.axis(axis)
        prefix = f"{axis}."
        return {k[len(prefix) :]: v for k, v in self.params.items() if k.startswith(prefix)}
