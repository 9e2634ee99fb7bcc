"""Pieces the scripted task policies share: the arm model of a world, a paced Cartesian mover, blobs."""

from r2s2r_eval.policies.scripted.motion import ArmScene, CartesianMover, arm_scene
from r2s2r_eval.policies.scripted.perception import blob_points, geom_colour

__all__ = ["ArmScene", "CartesianMover", "arm_scene", "blob_points", "geom_colour"]
