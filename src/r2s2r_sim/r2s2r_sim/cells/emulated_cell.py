"""The emulated hardware as a cell: a STAND-IN for a real arm and camera that episodes run on; no ROS.

A policy meets what the emulated hardware node would give it over ROS, at full speed: images from the
profile's distorted camera with its ``K``, the profile's camera extrinsics, noisy joint states, commands
delayed by the driver latency, and the outcome by the same rule as in sim
(:class:`r2s2r_sim.tasks.registry.EpisodeJudge`: the task judges one settle period after the policy says it is
done, or at the timeout), which needs no more of the truth than a person judging a real cell sees.

An operator's per-episode changes of the cell are a :class:`~r2s2r_sim.variations.Variation` restricted to
:data:`OPERATOR_AXES`: lighting and clutter are spec edits composed after the profile's, and the object is
put at the variation's ``x, y, yaw`` at each reset (its height stays the profile's), as a person placing it
would.  Physics, robot start state and camera are the profile's and cannot be varied here.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from r2s2r_sim.cells.camera_frames import ImageSize
from r2s2r_sim.cells.sim_cell import CellBase, CellError, Pose
from r2s2r_sim.errors import RenderError
from r2s2r_sim.hardware.emulated_arm import EmulatedArm
from r2s2r_sim.hardware.emulated_camera import DistortedRgbdCamera
from r2s2r_sim.hardware.profile import HardwareProfile, load_hardware_profile
from r2s2r_sim.variations import Variation, VariationConfig, VariationError, apply_variation
from r2s2r_sim.variations.engine import object_pose_of
from r2s2r_sim.world.config import CameraConfig
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

__all__ = ["OPERATOR_AXES", "EmulatedCell", "check_operator_config"]

OPERATOR_AXES = ("appearance", "objects", "clutter")
"""Variation axes an operator changes between real episodes (lighting and colours, object pose, clutter)."""


def check_operator_config(config: VariationConfig) -> None:
    """Refuse a variation config that varies what an operator cannot (physics, robot state, camera).

    Raises:
        VariationError: naming the axes at fault.
    """
    bad = [a for a in config.enabled_axes() if a not in OPERATOR_AXES]
    if bad:
        raise VariationError(
            f"emulated hardware: variation axes {bad} cannot be varied by an operator between real "
            f"episodes (allowed: {list(OPERATOR_AXES)}); disable them in the variation config"
        )


class EmulatedCell(CellBase):
    """STAND-IN for a real cell: an :class:`EmulatedArm` of a hardware profile and its distorted camera.

    Example:
        with EmulatedCell("tabletop-pick-v1", "config/emulated_hardware/ideal_profile.yaml") as cell:
            EpisodeRunner(cell).run(policy, seed=3)
    """

    def __init__(
        self,
        world: str | Path,
        profile: HardwareProfile | str | Path,
        *,
        variation: Variation | None = None,
    ) -> None:
        """Build the cell (the profile, then the variation's operator edits); the camera opens in ``open``.

        Raises:
            VariationError: the variation varies a non-operator axis or cannot be applied.
            CellError: the world has no task.
            HardwareProfileError: the profile does not fit the world.
        """
        self.profile = profile if isinstance(profile, HardwareProfile) else load_hardware_profile(profile)
        self.variation = variation
        editor = None
        if variation is not None:
            check_operator_config(variation.config)
            editor = partial(apply_variation, variation=variation)
        self.world_dir: Path = world_path(world)
        self.arm = EmulatedArm(self.world_dir, self.profile, extra_spec_editor=editor)
        self.world: SimWorld = self.arm.world  # the emulator's MuJoCo world (the profile applied)
        self.world_id: str = self.arm.world_id
        # The unprofiled base world's hash, the same for every variation: what results rows record.
        self.world_hash: str = self.arm.base_world_hash
        w = self.world
        if w.task is None or w.config.task is None:
            raise CellError(f"world {w.world_id!r} has no task to evaluate")
        self._object_pose = None if variation is None else object_pose_of(variation, w.config)
        cam = self.profile.camera
        self.camera: CameraConfig = w.config.camera(cam.name)
        self.camera_k: np.ndarray = cam.intrinsics.k()
        self.camera_d: np.ndarray = cam.distortion.d()
        self.camera_rate_hz: float = float(cam.rate_hz)
        self.dt: float = self.arm.dt
        self._camera: DistortedRgbdCamera | None = None

    def open(self) -> None:
        """Open the distorted camera."""
        if self._camera is None:
            self._camera = self.arm.camera_renderer().__enter__()

    def close(self) -> None:
        """Close the camera."""
        if self._camera is not None:
            self._camera.__exit__(None, None, None)
        self._camera = None

    def reset(self, seed: int) -> None:
        """Operator reset: the arm home, the object where the variation puts it (else the seed's pose)."""
        self.arm.reset(seed, object_pose=self._object_pose)

    @property
    def time(self) -> float:
        """Emulator time since the reset (s)."""
        return self.arm.clock - self.arm.episode_start

    def joint_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Joint states with the driver's noise."""
        return self.arm.joint_state()

    def camera_pose(self) -> Pose:
        """The calibrated optical frame of the profile's camera."""
        return self.world.camera_pose(self.profile.camera.name)

    def advance(self, n: int) -> None:
        """See :meth:`Cell.advance`."""
        self.arm.advance(n)

    def render(self, request: ImageSize | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The distorted camera's frame, at the driver's size whatever ``request`` asks (as on hardware).

        Raises:
            RenderError: the cell is not open.
        """
        if self._camera is None:
            raise RenderError("EmulatedCell.render called before open()")
        return self._camera.render(self.world.data)
