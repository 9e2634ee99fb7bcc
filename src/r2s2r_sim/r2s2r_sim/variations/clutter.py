"""Clutter axis: distractor primitives on the table, placed without overlap by rejection sampling."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from r2s2r_sim.variations.config import Axis, ClutterConfig, ClutterShape, VariationError

__all__ = ["BODY_PREFIX", "ClutterAxis", "Distractor", "distractors", "footprint_radius", "place"]

BODY_PREFIX = "clutter_"
_GEOM_TYPE = {
    ClutterShape.BOX: mujoco.mjtGeom.mjGEOM_BOX,
    ClutterShape.SPHERE: mujoco.mjtGeom.mjGEOM_SPHERE,
    ClutterShape.CYLINDER: mujoco.mjtGeom.mjGEOM_CYLINDER,
}
_FIELDS = ("shape", "size", "x", "y", "yaw")


@dataclass(frozen=True)
class Distractor:
    """One placed distractor: shape, half size (m), centre x, y (m) and yaw (rad)."""

    shape: ClutterShape
    size: float
    x: float
    y: float
    yaw: float

    @property
    def radius(self) -> float:
        """Radius of the disc that covers its footprint at any yaw (m)."""
        return footprint_radius(self.shape, self.size)


def footprint_radius(shape: ClutterShape, size: float) -> float:
    """Radius (m) of the disc covering the footprint of a distractor of half size ``size`` at any yaw."""
    return size * math.sqrt(2.0) if shape is ClutterShape.BOX else size


def _rect_distance(x: float, y: float, xr: tuple[float, float], yr: tuple[float, float]) -> float:
    dx = max(xr[0] - x, 0.0, x - xr[1])
    dy = max(yr[0] - y, 0.0, y - yr[1])
    return math.hypot(dx, dy)


def place(
    cfg: ClutterConfig, count: int, rng: np.random.Generator, discs: Sequence[tuple[float, float, float]] = ()
) -> list[Distractor]:
    """Place ``count`` distractors in the region, clear of each other, of ``cfg.keep_out`` and of ``discs``.

    Args:
        cfg: the clutter config.
        count: how many to place.
        rng: the only source of randomness.
        discs: further ``(x, y, radius)`` discs to avoid (e.g. the task object's start).

    Raises:
        VariationError: if a distractor finds no free spot in ``cfg.max_tries`` candidates.
    """
    placed: list[Distractor] = []
    for i in range(count):
        for _ in range(cfg.max_tries):
            shape = cfg.shapes[int(rng.integers(len(cfg.shapes)))]
            size = float(rng.uniform(*cfg.half_size))
            cand = Distractor(
                shape=shape,
                size=size,
                x=float(rng.uniform(*cfg.region_x)),
                y=float(rng.uniform(*cfg.region_y)),
                yaw=float(rng.uniform(-math.pi, math.pi)),
            )
            gap = cand.radius + cfg.clearance
            if any(_rect_distance(cand.x, cand.y, z.x, z.y) < gap for z in cfg.keep_out):
                continue
            if any(math.hypot(cand.x - dx, cand.y - dy) < gap + dr for dx, dy, dr in discs):
                continue
            if any(math.hypot(cand.x - p.x, cand.y - p.y) < gap + p.radius for p in placed):
                continue
            placed.append(cand)
            break
        else:
            raise VariationError(
                f"clutter: could not place distractor {i + 1} of {count} in {cfg.max_tries} tries "
                f"(region_x {list(cfg.region_x)}, region_y {list(cfg.region_y)}, keep_out "
                f"{[z.name for z in cfg.keep_out]}); lower clutter.count or clutter.half_size, or widen "
                "the region"
            )
    return placed


def distractors(cfg: ClutterConfig, params: Mapping[str, float]) -> list[Distractor]:
    """The distractors described by realised clutter parameters (unprefixed names)."""
    return [
        Distractor(
            shape=cfg.shapes[int(params[f"{i}.shape"])],
            size=params[f"{i}.size"],
            x=params[f"{i}.x"],
            y=params[f"{i}.y"],
            yaw=params[f"{i}.yaw"],
        )
        for i in range(int(params["count"]))
    ]


class ClutterAxis(Axis):
    """The clutter axis.

    Parameters: ``count``, then per distractor ``<i>.shape`` (index into ``clutter.shapes``),
    ``<i>.size`` (m), ``<i>.x``, ``<i>.y`` (m) and ``<i>.yaw`` (rad).

    The unit-cube point has two coordinates: the count and a layout seed for the rejection sampler.
    Distractors are free bodies named ``clutter_<i>`` resting on ``table_top_z``.
    """

    name = "clutter"

    def dims(self, cfg: ClutterConfig) -> tuple[str, ...]:
        """See :meth:`Axis.dims`."""
        return ("count", "layout")

    def realise(
        self, cfg: ClutterConfig, unit: tuple[float, ...], earlier: Mapping[str, float]
    ) -> dict[str, float]:
        """See :meth:`Axis.realise`."""
        lo, hi = cfg.count
        count = lo + min(int(unit[0] * (hi - lo + 1)), hi - lo)
        rng = np.random.default_rng(int(unit[1] * 2.0**53))
        discs = []
        if "objects.x" in earlier:
            discs.append((earlier["objects.x"], earlier["objects.y"], cfg.object_radius))
        out: dict[str, float] = {"count": float(count)}
        for i, d in enumerate(place(cfg, count, rng, discs)):
            values = (float(cfg.shapes.index(d.shape)), d.size, d.x, d.y, d.yaw)
            out.update({f"{i}.{f}": v for f, v in zip(_FIELDS, values, strict=True)})
        return out

    def apply(self, spec: mujoco.MjSpec, cfg: ClutterConfig, params: Mapping[str, float]) -> None:
        """See :meth:`Axis.apply`."""
        for i, d in enumerate(distractors(cfg, params)):
            name = f"{BODY_PREFIX}{i}"
            if spec.body(name) is not None:
                raise VariationError(f"clutter: the world already has a body named {name!r}")
            half = d.yaw / 2.0
            s = d.size
            body = spec.worldbody.add_body(
                name=name,
                pos=[d.x, d.y, cfg.table_top_z + s],
                quat=[math.cos(half), 0.0, 0.0, math.sin(half)],
            )
            body.add_freejoint(name=f"{name}_joint")
            grey = 0.35 + 0.1 * (i % 4)
            body.add_geom(
                name=f"{name}_geom",
                type=_GEOM_TYPE[d.shape],
                size=[s, s, s],
                density=cfg.density,
                rgba=[grey, grey, 0.3, 1.0],
                contype=1,
                conaffinity=3,
            )
