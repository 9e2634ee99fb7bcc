"""The emulated camera: a STAND-IN RealSense that renders with the profile's lens distortion.

The profile's ``(K, D)`` at ``width x height`` is drawn as :mod:`r2s2r_sim.render.lens` describes, from a
pinhole render with focal length ``f = max(fx, fy)`` (no loss of resolution at the centre) and a size just
large enough to contain every ray of the distorted image (so no black border appears for barrel distortion);
the MJCF camera's ``fovy`` and the offscreen buffer are set accordingly.  A point ``P`` in the optical frame
therefore lands at ``cv2.projectPoints(P, K, D)`` in the published image, to the accuracy of the render
(tested within 1 px).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol

import mujoco
import numpy as np

from r2s2r_sim.hardware.profile import CameraProfile
from r2s2r_sim.render.lens import distort, distortion_maps, undistorted_rays
from r2s2r_sim.render.renderer import RgbdRenderer, camera_intrinsics, depth_to_uint16_mm
from r2s2r_sim.render.sensor_effects import SensorEffects, SensorState

__all__ = ["DistortedRgbdCamera", "PinholeRenderer", "render_geometry"]


class PinholeRenderer(Protocol):
    """What draws the undistorted frames: ``RgbdRenderer``'s calls (a context manager, ``render``)."""

    def __enter__(self) -> Any:
        """Acquire the drawing context on the thread that renders."""

    def close(self) -> None:
        """Release it."""

    def render(
        self, data: mujoco.MjData, camera_name: str, *, depth_range: tuple[float, float] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``rgb`` uint8 (H, W, 3) and metric z-depth float32 (H, W; 0 = no data) of ``data``."""


def render_geometry(camera: CameraProfile) -> tuple[int, int, float]:
    """Size ``(W, H)`` (px) and focal length ``f`` (px) of the pinhole render that the distortion resamples.

    ``f = max(fx, fy)``; ``W``, ``H`` are even and just contain every undistorted ray of the output image
    (plus a 2 px margin for interpolation).
    """
    k, d = camera.intrinsics.k(), camera.distortion.d()
    x, y = undistorted_rays(k, d, camera.width, camera.height)
    f = max(camera.intrinsics.fx, camera.intrinsics.fy)
    width = 2 * math.ceil(f * float(np.max(np.abs(x))) + 2.0)
    height = 2 * math.ceil(f * float(np.max(np.abs(y))) + 2.0)
    return width, height, f


class DistortedRgbdCamera:
    """Renders one MJCF camera as a distorted RGB-D image with the profile's ``K``, ``D``; a context manager.

    Example:
        with arm.camera_renderer() as cam:
            rgb, depth_mm = cam.render(data)
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        mjcf_camera: str,
        camera: CameraProfile,
        depth_range: tuple[float, float],
        *,
        sensors: SensorEffects | None = None,
        episode_seed: Callable[[], int] | None = None,
        history: Callable[[mujoco.MjData], np.ndarray | None] | None = None,
        renderer: PinholeRenderer | None = None,
    ) -> None:
        """Compute the remap tables; the GL context is made in ``__enter__``.

        ``sensors`` adds the profile's sensor effects (noise, holes, drift) to every frame; their random
        draws follow ``episode_seed()`` (the cell's current episode) and the frame's index in it.
        ``history(data)`` gives the ``qpos`` at the start of the exposure when ``data`` is the cell's live
        state (motion blur); a frame rendered from a snapshot passes it to :meth:`render` instead.
        ``renderer``: what draws the pinhole frames at ``render_geometry``'s size and this camera's
        ``render_k`` (another engine's, e.g. the Bullet unit's); None: MuJoCo's.

        Raises:
            WorldError: the model's offscreen buffer is smaller than the render (see ``render_geometry``).
        """
        self.camera = camera
        self.mjcf_camera = mjcf_camera
        self.depth_range = depth_range
        width, height, _ = render_geometry(camera)
        self.render_size = (width, height)
        self.render_k = camera_intrinsics(model, mjcf_camera, width, height)
        k = camera.intrinsics.k()
        self.map_x, self.map_y = distortion_maps(
            k, camera.distortion.d(), camera.width, camera.height, self.render_k
        )
        self._renderer: PinholeRenderer = RgbdRenderer(model, width, height) if renderer is None else renderer
        self._sensor = (
            None
            if sensors is None or sensors.ideal
            else SensorState(
                sensors, (camera.height, camera.width), camera.intrinsics.fx, camera.intrinsics.k()
            )
        )
        self._episode_seed = episode_seed
        self._history = history
        self._scratch = mujoco.MjData(model)
        self._model = model
        self.dropped = False  # the last rendered frame is lost by the driver (never published)
        self.stamp_offset_s = 0.0  # to add to the last frame's ideal stamp (driver timestamp jitter)

    def __enter__(self) -> DistortedRgbdCamera:
        """Create the renderer's GL context."""
        self._renderer.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Free the GL context."""
        self._renderer.close()

    def render(
        self, data: mujoco.MjData, *, motion_from: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Distorted ``rgb`` (uint8 HxWx3) and aligned ``depth`` (uint16 mm, 0 = no data) of ``data``.

        ``motion_from``: ``qpos`` at the start of the exposure, for motion blur (the profile's colour
        sensor decides whether there is any); by default looked up in the cell's history.

        Raises:
            RenderError: outside the with-block.
        """
        rgb, depth = self._renderer.render(data, self.mjcf_camera, depth_range=self.depth_range)
        color = self._sensor.effects.color if self._sensor is not None else None
        if color is not None and color.blurs:
            if motion_from is None and self._history is not None:
                motion_from = self._history(data)
            if motion_from is not None and np.any(motion_from != data.qpos):
                rgb = self._blurred(data, motion_from, rgb, color.motion_blur_samples)
        out_rgb, out_depth = distort(rgb, depth, self.map_x, self.map_y)
        if self._sensor is not None:
            rng = self._sensor.begin_frame(self._episode_seed() if self._episode_seed is not None else 0)
            self.dropped = self._sensor.drop(rng)
            self.stamp_offset_s = self._sensor.stamp_offset(rng)
            out_rgb, out_depth = self._sensor.apply(out_rgb, out_depth, rng)
        return out_rgb, depth_to_uint16_mm(out_depth)

    def _blurred(
        self, data: mujoco.MjData, start: np.ndarray, end_rgb: np.ndarray, samples: int
    ) -> np.ndarray:
        """The colour image averaged over ``samples`` states from ``start`` to ``data`` (the exposure).

        Depth is left sharp: the depth imagers' global shutter exposes for a fraction of a millisecond.
        """
        scratch, model = self._scratch, self._model
        scratch.mocap_pos[:] = data.mocap_pos
        scratch.mocap_quat[:] = data.mocap_quat
        total = end_rgb.astype(np.float64)
        for k in range(samples - 1):
            alpha = k / (samples - 1)
            scratch.qpos[:] = start + alpha * (data.qpos - start)
            mujoco.mj_normalizeQuat(model, scratch.qpos)
            mujoco.mj_kinematics(model, scratch)
            mujoco.mj_camlight(model, scratch)
            rgb, _ = self._renderer.render(scratch, self.mjcf_camera, depth_range=self.depth_range)
            total += rgb
        return np.clip(np.rint(total / samples), 0, 255).astype(np.uint8)
