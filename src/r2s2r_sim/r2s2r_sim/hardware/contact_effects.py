"""How real contacts differ from the sim world's: solver settings, rounded uneven objects, soft finger pads.

Part of the EMULATED HARDWARE (a stand-in for a real cell).  A printed cube has rounded edges and a
centre of mass off its geometric centre (infill, a seam); rubber finger pads give a few millimetres; and
no contact model is the real one, so the stand-in uses other MuJoCo contact settings than the sim (e.g.
the pyramidal friction cone where the sim world uses the elliptic one, and a higher ``impratio``, which
makes friction stiffer).  The section is optional: without it the contacts are the
world's own.

Layout::

    contacts:
      cone: elliptic | pyramidal
      impratio: 10
      geoms: {finger_geom: {solref: [timeconst, dampratio], solimp: [dmin, dmax, width, mid, power]}}
      objects: {cube: {rounded_edge_m: 0.003, com_offset_m: [x, y, z]}}
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

__all__ = ["ContactEffects", "GeomContact", "ObjectShape", "apply_contacts", "read_contacts", "rounded_box"]


@dataclass(frozen=True, kw_only=True)
class GeomContact:
    """A geom's contact softness (MuJoCo ``solref``/``solimp``; ``None`` keeps the MJCF's)."""

    solref: tuple[float, float] | None = None
    solimp: tuple[float, float, float, float, float] | None = None


@dataclass(frozen=True, kw_only=True)
class ObjectShape:
    """A task object as made: box geoms with rounded edges (m) and a centre of mass offset (m, body frame)."""

    rounded_edge_m: float = 0.0
    com_offset_m: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True, kw_only=True)
class ContactEffects:
    """The ``contacts`` section (every field optional)."""

    cone: str | None = None
    impratio: float | None = None
    geoms: Mapping[str, GeomContact] = field(default_factory=dict)
    objects: Mapping[str, ObjectShape] = field(default_factory=dict)


_CONES = {"elliptic": mujoco.mjtCone.mjCONE_ELLIPTIC, "pyramidal": mujoco.mjtCone.mjCONE_PYRAMIDAL}


def read_contacts(r: Any, top: Mapping[str, Any]) -> ContactEffects:
    """The optional ``contacts`` section of a hardware profile (``r``: the profile's field reader)."""
    value = top.get("contacts")
    if value is None:
        return ContactEffects()
    data = r.mapping(value, "contacts")
    r.only(data, {"cone", "impratio", "geoms", "objects"}, "contacts")
    cone = None
    if data.get("cone") is not None:
        cone = str(data["cone"])
        if cone not in _CONES:
            raise r.fail("contacts.cone", f"must be one of {sorted(_CONES)}, got {cone!r}")
    impratio = None
    if data.get("impratio") is not None:
        impratio = r.number(data["impratio"], "contacts.impratio", 1.0, 1000.0)
    geoms: dict[str, GeomContact] = {}
    for name, gvalue in r.mapping(data.get("geoms") or {}, "contacts.geoms").items():
        fld = f"contacts.geoms.{name}"
        g = r.mapping(gvalue, fld)
        r.only(g, {"solref", "solimp"}, fld)
        solref = solimp = None
        if g.get("solref") is not None:
            ref = r.vector(g["solref"], f"{fld}.solref", 2, 0.0)
            solref = (ref[0], ref[1])
        if g.get("solimp") is not None:
            imp = r.vector(g["solimp"], f"{fld}.solimp", 5, 0.0)
            if not 0 < imp[0] <= imp[1] < 1:
                raise r.fail(f"{fld}.solimp", f"needs 0 < dmin <= dmax < 1, got {list(imp[:2])}")
            solimp = (imp[0], imp[1], imp[2], imp[3], imp[4])
        geoms[str(name)] = GeomContact(solref=solref, solimp=solimp)
    objects: dict[str, ObjectShape] = {}
    for name, ovalue in r.mapping(data.get("objects") or {}, "contacts.objects").items():
        fld = f"contacts.objects.{name}"
        o = r.mapping(ovalue, fld)
        r.only(o, {"rounded_edge_m", "com_offset_m"}, fld)
        edge = r.number(o.get("rounded_edge_m", 0.0), f"{fld}.rounded_edge_m", 0.0, 0.1)
        com = r.vector(o.get("com_offset_m", [0.0, 0.0, 0.0]), f"{fld}.com_offset_m", 3)
        objects[str(name)] = ObjectShape(rounded_edge_m=edge, com_offset_m=(com[0], com[1], com[2]))
    return ContactEffects(cone=cone, impratio=impratio, geoms=geoms, objects=objects)


def rounded_box(half: np.ndarray, radius: float, segments: int = 4) -> np.ndarray:
    """Vertices (N x 3) whose convex hull is a box of half sizes ``half`` with edges rounded by ``radius``."""
    inner = np.asarray(half, dtype=np.float64) - radius
    angles = np.linspace(0.0, math.pi / 2, segments + 1)
    octant = np.array(
        [
            (math.cos(a) * math.cos(b), math.cos(a) * math.sin(b), math.sin(a))
            for a, b in itertools.product(angles, angles)
        ]
    )
    octant = np.unique(np.round(octant, 12), axis=0)
    verts = [inner * signs + radius * octant * signs for signs in itertools.product((-1.0, 1.0), repeat=3)]
    return np.unique(np.round(np.concatenate([np.asarray(s) for s in verts]), 12), axis=0)


def apply_contacts(
    spec: mujoco.MjSpec,
    effects: ContactEffects,
    find: Callable[[Callable[[str], Any], str], Any],
    fail: Callable[[str, str], Exception],
) -> None:
    """Edit ``spec``: solver options, geom softness, rounded and unevenly weighted objects.

    ``find(getter, name)`` looks a robot or scene element up by its unprefixed name.
    """
    if effects.cone is not None:
        spec.option.cone = _CONES[effects.cone]
    if effects.impratio is not None:
        spec.option.impratio = effects.impratio
    for name, contact in effects.geoms.items():
        geom = find(spec.geom, name)
        if geom is None:
            raise fail(f"contacts.geoms.{name}", f"no geom {name!r} (geoms: {_names(spec.geoms)})")
        if contact.solref is not None:
            geom.solref = np.array(contact.solref)
        if contact.solimp is not None:
            geom.solimp = np.array(contact.solimp)
    for name, shape in effects.objects.items():
        body = find(spec.body, name)
        if body is None:
            raise fail(f"contacts.objects.{name}", f"no body {name!r} (bodies: {_names(spec.bodies)})")
        boxes = [g for g in body.geoms if g.type == mujoco.mjtGeom.mjGEOM_BOX]
        if shape.rounded_edge_m > 0:
            if not boxes:
                raise fail(
                    f"contacts.objects.{name}.rounded_edge_m", f"body {name!r} has no box geom to round"
                )
            for geom in boxes:
                half = np.array(geom.size[:3], dtype=np.float64)
                if shape.rounded_edge_m >= half.min():
                    raise fail(
                        f"contacts.objects.{name}.rounded_edge_m",
                        f"{shape.rounded_edge_m} m is not below the smallest half size {half.min()} m of "
                        f"geom {geom.name!r}",
                    )
                mesh = spec.add_mesh(name=f"{geom.name or name}_rounded")
                mesh.uservert = rounded_box(half, shape.rounded_edge_m).ravel()
                geom.type = mujoco.mjtGeom.mjGEOM_MESH
                geom.meshname = mesh.name
        if any(shape.com_offset_m):
            _offset_mass(body, np.array(shape.com_offset_m), name, fail)


def _offset_mass(body: Any, offset: np.ndarray, name: str, fail: Callable[[str, str], Exception]) -> None:
    """Move the body's centre of mass by ``offset``, keeping its mass.

    A fifth of the mass moves into a hidden, collision-free weight (a printed part's dense seam or
    infill); the rest stays in its geoms.
    """
    geoms = list(body.geoms)
    if not geoms or any(math.isnan(g.mass) for g in geoms):
        raise fail(f"contacts.objects.{name}.com_offset_m", f"body {name!r} needs geoms with explicit masses")
    total = sum(float(g.mass) for g in geoms)
    share = 0.2
    centre = sum(float(g.mass) * np.array(g.pos, dtype=np.float64) for g in geoms) / total
    for g in geoms:
        g.mass = float(g.mass) * (1.0 - share)
    weight = body.add_geom()
    weight.name = f"{name}_weight"
    weight.type = mujoco.mjtGeom.mjGEOM_SPHERE
    weight.size = np.array([0.002, 0.0, 0.0])
    weight.pos = centre + offset / share
    weight.mass = total * share
    weight.contype = 0
    weight.conaffinity = 0
    weight.group = 5  # not drawn by the default visual groups, and rgba alpha 0 for every renderer
    weight.rgba = np.array([0.0, 0.0, 0.0, 0.0])


def _names(items: Any) -> list[str]:
    return sorted({i.name for i in items} - {""})
