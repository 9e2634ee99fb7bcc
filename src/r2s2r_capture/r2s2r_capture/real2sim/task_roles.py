"""Which reconstructed object is the task's object and which its target.

The target is the largest open box (the bin), or the largest object when none is open.  The task object
is the object whose size is most like the template's task object: the smallest one would be a pen, a
strip of tape or a sliver of depth noise whenever the table holds one, and a capture's scene may show
more than the task's two objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import mujoco
import numpy as np
from r2s2r_sim.world.sim_world import SimWorld

from r2s2r_capture.errors import ReconstructionError
from r2s2r_capture.reconstruction.scene import PrimitiveKind, ReconstructedObject

__all__ = ["pick_task", "template_object_size"]

_BOX_CORNERS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)


def template_object_size(template_dir: str | Path, body: str) -> np.ndarray | None:
    """Extents (m) of ``body``'s collision geoms in its own frame in the template world; None without one."""
    world = SimWorld(template_dir)
    model, data = world.model, world.data
    try:
        bid = model.body(body).id
    except KeyError:
        return None
    mujoco.mj_forward(model, data)
    R_b, p_b = data.xmat[bid].reshape(3, 3), data.xpos[bid]
    points = []
    for g in range(model.ngeom):
        if model.geom_bodyid[g] != bid or not (model.geom_contype[g] | model.geom_conaffinity[g]):
            continue
        R = data.geom_xmat[g].reshape(3, 3)
        corners = model.geom_aabb[g, :3] + _BOX_CORNERS * model.geom_aabb[g, 3:]
        points.append((data.geom_xpos[g] + corners @ R.T - p_b) @ R_b)
    if not points:
        return None
    pts = np.concatenate(points)
    return pts.max(axis=0) - pts.min(axis=0)


def _unlikeness(obj: ReconstructedObject, like: np.ndarray) -> float:
    """How far an object's sorted extents are from ``like``'s, as a sum of log ratios (0: the same)."""
    a = np.sort(np.maximum(np.asarray(obj.size, dtype=float), 1e-4))
    b = np.sort(np.maximum(np.asarray(like, dtype=float), 1e-4))
    return float(np.abs(np.log(a / b)).sum())


def pick_task(
    objects: Sequence[ReconstructedObject],
    *,
    marker: bool,
    like: np.ndarray | None,
    target: str | None = None,
) -> tuple[str, str | None]:
    """The task object's and the target's names; with a ``marker`` target (no depth), the object only.

    Args:
        objects: the reconstructed objects on the table.
        marker: the target is a marker on the table, not an object.
        like: the template's task object extents (m); None: the smallest object is taken.
        target: the target's name when the user gave it.

    Raises:
        ReconstructionError: no object, no target beside it (names what to record), or no object of the
            given target's name.
    """

    def most_like(candidates: Sequence[ReconstructedObject]) -> ReconstructedObject:
        if like is None:
            return min(candidates, key=lambda o: o.volume)
        return min(candidates, key=lambda o: _unlikeness(o, like))

    if marker and objects:
        return most_like(objects).name, None
    if len(objects) < 2:
        raise ReconstructionError(
            f"the scene shows {len(objects)} object(s) on the table; the task needs an object and a target "
            "(bin): record the scene phase with both in view and clear of the robot's base"
        )
    if target is None:
        boxes = [o for o in objects if o.primitive is PrimitiveKind.OPEN_BOX]
        chosen = max(boxes or objects, key=lambda o: o.volume)
    else:
        named = [o for o in objects if o.name == target]
        if not named:
            raise ReconstructionError(
                f"target: no object {target!r} on the table (objects: {[o.name for o in objects]})"
            )
        chosen = named[0]
    obj = most_like([o for o in objects if o is not chosen])
    return obj.name, chosen.name
