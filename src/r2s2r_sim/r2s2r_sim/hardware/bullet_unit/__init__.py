"""The Bullet unit: a STAND-IN cell simulated and rendered by PyBullet, a reality the product did not write.

A hardware profile with ``engine: pybullet`` makes :class:`~r2s2r_sim.hardware.emulated_arm.EmulatedArm` step
Bullet instead of MuJoCo (:mod:`.physics`) and draw its camera with Bullet's software renderer
(:mod:`.camera`); the scene is the profiled world rebuilt in Bullet (:mod:`.scene`).  :func:`check_profile`
refuses the profile sections that have no Bullet counterpart.
"""

from r2s2r_sim.hardware.bullet_unit.profile_check import check_profile

__all__ = ["check_profile"]
