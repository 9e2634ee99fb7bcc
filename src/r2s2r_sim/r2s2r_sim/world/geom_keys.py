"""How profiles and variation configs name a world's geoms, and which geoms are the gripper's pads.

**Geoms without names.**  Robot files often leave collision geoms (finger pads among them) unnamed.  Such a
geom is addressed by its body: ``body:<body>/<index>``, the ``index``-th geom (from 0) of that body in the
order of the robot file, counting every geom of the body, visual ones included.  A named geom may be given
either way.  A hardware profile gives robot names unprefixed, as in ``world.yaml`` (the functions take the
world's robot prefix); a variation config gives them as the composed world does (prefix ``""``).
"""

from __future__ import annotations

from collections.abc import Iterable

import mujoco

from r2s2r_sim.world.kinematics import subtree_bodies

__all__ = ["GEOM_BY_BODY", "find_geom", "geom_address", "gripper_contact_geoms"]

GEOM_BY_BODY = "body:"


def _strip(name: str, prefix: str) -> str:
    return name[len(prefix) :] if prefix and name.startswith(prefix) else name


def geom_address(model: mujoco.MjModel, geom_id: int, prefix: str = "") -> str:
    """The key of geom ``geom_id``: its unprefixed name, or ``body:<body>/<index>`` without one."""
    name = model.geom(geom_id).name
    if name:
        return _strip(name, prefix)
    body = int(model.geom_bodyid[geom_id])
    index = geom_id - int(model.body_geomadr[body])
    return f"{GEOM_BY_BODY}{_strip(model.body(body).name, prefix)}/{index}"


def find_geom(spec: mujoco.MjSpec, key: str, prefix: str = "") -> mujoco.MjsGeom | None:
    """The geom of ``spec`` a key names (see the module docstring), or None."""
    if not key.startswith(GEOM_BY_BODY):
        return spec.geom(key) or (spec.geom(prefix + key) if prefix else None)
    body_name, sep, index = key[len(GEOM_BY_BODY) :].rpartition("/")
    if not sep or not index.isdigit():
        return None
    body = spec.body(body_name) or (spec.body(prefix + body_name) if prefix else None)
    if body is None:
        return None
    geoms = body.geoms
    i = int(index)
    return geoms[i] if i < len(geoms) else None


def gripper_contact_geoms(model: mujoco.MjModel, gripper_joints: Iterable[str]) -> list[int]:
    """Ids of the colliding geoms that move with the gripper's joints: the pads and fingers that grasp."""
    roots = {int(model.jnt_bodyid[model.joint(j).id]) for j in gripper_joints}
    moving = {b for r in roots for b in subtree_bodies(model, r)}
    return [
        g
        for g in range(model.ngeom)
        if int(model.geom_bodyid[g]) in moving and (model.geom_contype[g] or model.geom_conaffinity[g])
    ]
