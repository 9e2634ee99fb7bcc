"""Contact axis: the gripper pads' softness, the friction cone and ``impratio`` of each episode."""

from __future__ import annotations

from collections.abc import Mapping

import mujoco
import numpy as np

from r2s2r_sim.variations.config import Axis, ContactVariationConfig, lerp, not_found
from r2s2r_sim.world.geom_keys import find_geom

__all__ = ["ContactAxis"]


class ContactAxis(Axis):
    """The contact axis.

    Parameters: ``solref_timeconst`` (s), ``solimp_dmin``, ``impratio`` and ``pyramidal`` (1: the
    pyramidal cone, 0: the elliptic one).  Each pad keeps its own ``solref`` damping ratio and the rest of
    its ``solimp`` (``dmax`` raised to ``dmin`` where it was lower).
    """

    name = "contact"

    def dims(self, cfg: ContactVariationConfig) -> tuple[str, ...]:
        """See :meth:`Axis.dims`."""
        return ("solref_timeconst", "solimp_dmin", "impratio", "pyramidal")

    def realise(
        self, cfg: ContactVariationConfig, unit: tuple[float, ...], earlier: Mapping[str, float]
    ) -> dict[str, float]:
        """See :meth:`Axis.realise`."""
        tc, dmin, ratio, cone = unit
        return {
            "solref_timeconst": lerp(cfg.solref_timeconst, tc),
            "solimp_dmin": lerp(cfg.solimp_dmin, dmin),
            "impratio": lerp(cfg.impratio, ratio),
            "pyramidal": 1.0 if cone < cfg.pyramidal_share else 0.0,
        }

    def apply(self, spec: mujoco.MjSpec, cfg: ContactVariationConfig, params: Mapping[str, float]) -> None:
        """See :meth:`Axis.apply`."""
        for i, key in enumerate(cfg.geoms):
            geom = find_geom(spec, key)
            if geom is None:
                raise not_found(f"contact.geoms[{i}]", "geom", key, [g.name for g in spec.geoms if g.name])
            solref = np.array(geom.solref, dtype=np.float64)
            solref[0] = params["solref_timeconst"]
            geom.solref = solref
            solimp = np.array(geom.solimp, dtype=np.float64)
            solimp[0] = params["solimp_dmin"]
            solimp[1] = max(solimp[1], solimp[0])
            geom.solimp = solimp
        spec.option.impratio = params["impratio"]
        spec.option.cone = (
            mujoco.mjtCone.mjCONE_PYRAMIDAL if params["pyramidal"] else mujoco.mjtCone.mjCONE_ELLIPTIC
        )
