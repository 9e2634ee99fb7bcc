"""Which parts of a hardware profile the Bullet unit cannot honour, refused by name."""

from __future__ import annotations

from r2s2r_sim.hardware.profile import HardwareProfile, HardwareProfileError

__all__ = ["check_profile"]


def check_profile(profile: HardwareProfile) -> None:
    """Refuse a profile with a section that has no Bullet counterpart.

    ``arm_effects`` (gear play, compliance, Stribeck friction and encoder counts are modelled on MuJoCo's
    constraints), ``contacts`` (MuJoCo's solver settings), ``lights`` (the tiny renderer draws the world's key
    light only) are refused, so that a profile is never silently half applied.

    Raises:
        HardwareProfileError: naming the file and the first section at fault.
    """
    where = f"{profile.source}: engine pybullet"
    if not profile.arm.rigid:
        raise HardwareProfileError(f"{where}: section arm_effects has no Bullet counterpart; remove it")
    c = profile.contacts
    if c.cone is not None or c.impratio is not None or c.geoms or c.objects:
        raise HardwareProfileError(
            f"{where}: section contacts (MuJoCo's contact solver) has no Bullet counterpart"
        )
    if profile.lights:
        raise HardwareProfileError(
            f"{where}: section lights has no Bullet counterpart (the tiny renderer draws the key light only)"
        )
