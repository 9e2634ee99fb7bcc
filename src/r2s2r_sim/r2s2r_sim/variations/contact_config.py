"""Config of the contact axis: how soft the gripper's pads are and how the solver treats friction.

A capture identifies the arm, the camera and the objects, not how a grasp behaves: how far rubber pads
give, and whether the unit's contacts act like MuJoCo's pyramidal or elliptic friction cone.  An
off-centre grasp succeeds or fails on exactly these, so a world that is to predict a unit's grasps draws
them from the range real pads show.  The ranges are those the emulated hardware draws its unseen profiles'
pads from (``r2s2r_sim.hardware.effect_sampling`` takes them from here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from r2s2r_sim.variations._checks import Range, check_names, check_range, fail

__all__ = ["ContactVariationConfig"]


@dataclass(frozen=True, kw_only=True)
class ContactVariationConfig:
    """Gripper pad softness, friction cone and ``impratio``, one draw per episode for every pad.

    Attributes:
        enabled: whether this axis varies anything (off unless a config or a study turns it on).
        geoms: the pads: geoms as the composed world names them (robot names with the world's prefix;
            ``body:<body>/<index>`` for unnamed ones); empty: every colliding geom that moves with the
            gripper's joints (filled in by :func:`r2s2r_sim.variations.for_world`).
        solref_timeconst: the pads' contact time constant (MuJoCo ``solref[0]``, s): larger is softer.
        solimp_dmin: the pads' impedance at zero penetration (``solimp[0]``, in (0, 1)): smaller gives more.
        impratio: the solver's frictional-to-normal impedance ratio (``option/impratio``, >= 1).
        pyramidal_share: the share of episodes run with MuJoCo's pyramidal friction cone (else elliptic).
    """

    enabled: bool = False
    geoms: tuple[str, ...] = ()
    solref_timeconst: Range = (0.01, 0.03)
    solimp_dmin: Range = (0.7, 0.9)
    impratio: Range = (1.0, 10.0)
    pyramidal_share: float = 0.5

    def __post_init__(self) -> None:
        check_names("geoms", self.geoms)
        check_range("solref_timeconst", self.solref_timeconst, positive=True)
        check_range("solimp_dmin", self.solimp_dmin, positive=True)
        if self.solimp_dmin[1] >= 1.0:
            raise fail("solimp_dmin", f"must lie in (0, 1), got {list(self.solimp_dmin)}")
        check_range("impratio", self.impratio, positive=True)
        if self.impratio[0] < 1.0:
            raise fail("impratio", f"must be >= 1, got {list(self.impratio)}")
        if not (math.isfinite(self.pyramidal_share) and 0.0 <= self.pyramidal_share <= 1.0):
            raise fail("pyramidal_share", f"must lie in [0, 1], got {self.pyramidal_share}")
