"""Scripted stacking: the reference pick, with the place target perceived on the support block."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
from r2s2r_sim.world.config import load_world_config

from r2s2r_eval.policies.reference.perception import estimate_cube
from r2s2r_eval.policies.reference.policy import ReferencePolicy
from r2s2r_eval.policies.scripted.camera import nominal_camera
from r2s2r_eval.policies.scripted.perception import geom_colour
from r2s2r_eval.policies.scripted.scene import arm_scene, body_geom, half_height
from r2s2r_eval.policies.stack.config import StackParams
from r2s2r_eval.policy import EpisodeInfo, ImageRequest, Observation, PolicyError

__all__ = ["StackPolicy"]


@lru_cache(maxsize=4)
def _support(world_dir: Path) -> tuple[tuple[float, float, float], float]:
    """Colour and half height (m) of the world's support block, from its MJCF."""
    task = load_world_config(world_dir).task
    if task is None or task.support_body is None:
        raise PolicyError(f"stack policy: world {world_dir} has no stack task (task.support_body)")
    model = arm_scene(world_dir).model
    g = body_geom(model, task.support_body, "stack")
    return geom_colour(model, model.geom(g).name), half_height(model, g)


class StackPolicy(ReferencePolicy):
    """Scripted stacking: see both blocks once, pick the object block, place it on the support, retreat.

    The reference pick-and-place script (:class:`ReferencePolicy`), whose place target is the perceived
    support block's top centre plus the held block's half height, released ``release_height_m`` above
    it.  Reads what the reference policy reads, plus the support block's colour and size from the MJCF.
    """

    params_type = StackParams
    tasks = frozenset({"stack"})

    def __init__(self, params: StackParams | None = None) -> None:
        """Build the policy; the world model is loaded at the first :meth:`reset`."""
        super().__init__(params)
        self._sp: StackParams = self.params  # type: ignore[assignment]
        self.release_height_m = self._sp.release_height_m
        self._place = np.zeros(3)

    def image_request(self) -> ImageRequest:
        """The frames the policy reads (:meth:`FrameParams.image_request`)."""
        return self._sp.image_request()

    def reset(self, info: EpisodeInfo) -> None:
        """Start an episode (see :meth:`ReferencePolicy.reset`); draws the support estimate's noise too."""
        super().reset(info)
        self._support_colour, self._support_half = _support(Path(info.world_dir))
        self._support_noise = self._rng.normal(0.0, self._p.perception_noise_m, size=2)

    def _target(self) -> np.ndarray:
        return self._place

    def _perceive(self, obs: Observation) -> None:
        super()._perceive(obs)
        assert obs.rgb is not None and obs.depth is not None and self._estimate is not None
        camera_k, camera_pose = obs.camera_k, obs.camera_pose
        if self._p.assume_camera_of:
            height, width = obs.rgb.shape[:2]
            camera_k, camera_pose = nominal_camera(self._p.assume_camera_of, width, height)
        assert camera_k is not None and camera_pose is not None
        found = estimate_cube(
            obs.rgb, obs.depth, camera_k, camera_pose, self._support_colour, self._support_half
        )
        if found is None:
            raise PolicyError("stack policy: support block not found in the colour image")
        centre = found.position.copy()
        centre[:2] += self._support_noise
        centre = self._world_to_model[:3, :3] @ centre + self._world_to_model[:3, 3]
        self._place = centre + [0.0, 0.0, self._support_half + self._scene.cube_half_size]
