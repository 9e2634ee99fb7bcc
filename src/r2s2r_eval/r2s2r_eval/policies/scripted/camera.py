"""The nominal camera of a bundled world: what a policy that never saw a calibration assumes."""

from __future__ import annotations

import numpy as np
from r2s2r_sim.render.renderer import camera_intrinsics
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

from r2s2r_eval.policy import PolicyError

__all__ = ["nominal_camera"]


def nominal_camera(world_id: str, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Intrinsics (for ``width`` x ``height``) and optical-frame pose of a bundled world's first camera.

    What a policy developed against a nominal, uncalibrated camera model assumes (``assume_camera_of``).
    """
    import transforms3d

    try:
        world = SimWorld(world_path(world_id))
    except (ValueError, OSError) as err:
        raise PolicyError(f"assume_camera_of: {err}") from err
    if not world.config.cameras:
        raise PolicyError(f"assume_camera_of: world {world_id!r} has no camera")
    cam = world.config.cameras[0]
    mjcf_camera = world.model.camera(world.camera_id(cam.name)).name
    k = camera_intrinsics(world.model, mjcf_camera, width, height)
    pos, quat = world.camera_pose(cam.name)
    pose = np.eye(4)
    pose[:3, :3] = transforms3d.quaternions.quat2mat(quat)
    pose[:3, 3] = pos
    return np.asarray(k, dtype=np.float64), pose
