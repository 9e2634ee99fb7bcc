"""Camera frames of the sim: drawn with a render profile at the size the consumer reads, with sensor effects.

The one place the simulated world's camera frames are made, for the in-process runner (and sweeps) and for
the sim node alike.  A world drawn with the ``sensor`` variation axis gets its effects here, after the
render (and the supersampling), with the noise of each frame drawn from the episode's seed and the
frame's index in the episode (``r2s2r_sim.render.sensor_effects.SensorState``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import cv2
import mujoco
import numpy as np

from r2s2r_sim.closing import Closing
from r2s2r_sim.render.lens import distort, distortion_maps, has_distortion, pinhole_margin
from r2s2r_sim.render.profile import RenderProfile
from r2s2r_sim.render.renderer import RgbdRenderer, camera_intrinsics
from r2s2r_sim.render.sensor_effects import SensorEffects, SensorState
from r2s2r_sim.world.config import CameraConfig

__all__ = ["CameraFrames", "Frame", "ImageSize", "frame_size"]


class ImageSize(Protocol):
    """The image a consumer reads (a policy's ``ImageRequest`` is one): size and supersampling."""

    @property
    def width(self) -> int:
        """Image width (px)."""
        ...

    @property
    def height(self) -> int:
        """Image height (px)."""
        ...

    @property
    def supersample(self) -> int:
        """Draw at this multiple of the size, then area-downscale."""
        ...


@dataclass(frozen=True, eq=False)
class Frame:
    """One rendered camera frame.

    Attributes:
        rgb: colour, (H, W, 3) uint8.
        depth: aligned metric depth (m), (H, W) float32; 0 = no data.
        k: intrinsics (3, 3) of this size.
        d: plumb_bob distortion ``(k1, k2, p1, p2, k3)`` the frame is drawn with.
    """

    rgb: np.ndarray
    depth: np.ndarray
    k: np.ndarray
    d: np.ndarray

    @property
    def width(self) -> int:
        """Image width (px)."""
        return int(self.rgb.shape[1])

    @property
    def height(self) -> int:
        """Image height (px)."""
        return int(self.rgb.shape[0])


def frame_size(camera: CameraConfig, profile: RenderProfile, request: ImageSize | None) -> tuple[int, int]:
    """The delivered image size: the policy's request, else the profile's size, else the camera's."""
    if request is not None:
        return request.width, request.height
    return profile.size(camera.width, camera.height)


class CameraFrames(Closing):
    """Renders one world camera with one profile, at whatever size each call asks; a context manager.

    A renderer (GL context) is made per drawn size on first use and kept, so a runner that serves
    policies with different requests pays each context once.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        mjcf_camera: str,
        camera: CameraConfig,
        profile: RenderProfile,
        *,
        sensors: SensorEffects | None = None,
    ) -> None:
        """Remember what to draw; no GL resources are made until the first :meth:`render`.

        ``sensors``: the effects every frame gets (None or ideal: MuJoCo's images, untouched).
        """
        self._model = model
        self._mjcf_camera = mjcf_camera
        self.camera = camera
        self.profile = profile
        self.sensors = None if sensors is None or sensors.ideal else sensors
        self._renderers: dict[tuple[int, int], RgbdRenderer] = {}
        self._k: dict[tuple[int, int], np.ndarray] = {}
        self.d = np.asarray(camera.distortion, dtype=np.float64)
        self._lens: dict[tuple[int, int], tuple[tuple[int, int], np.ndarray, np.ndarray]] = {}
        self._sensor_states: dict[tuple[int, int], SensorState] = {}
        self._seed = 0
        self.renders = 0

    def start_episode(self, seed: int) -> None:
        """Start the sensor's episode ``seed``: its exposure, white balance and fixed depth pattern."""
        self._seed = int(seed)
        for state in self._sensor_states.values():
            state.start_episode(self._seed)

    def close(self) -> None:
        """Release the GL contexts."""
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers.clear()

    def _intrinsics(self, width: int, height: int) -> np.ndarray:
        k = self._k.get((width, height))
        if k is None:
            k = self._k[(width, height)] = camera_intrinsics(self._model, self._mjcf_camera, width, height)
        return k

    def _lens_maps(self, width: int, height: int) -> tuple[tuple[int, int], np.ndarray, np.ndarray] | None:
        """The render margin and remap tables that draw the lens distortion at this size (None: no lens)."""
        if not has_distortion(self.d):
            return None
        lens = self._lens.get((width, height))
        if lens is None:
            k = self._intrinsics(width, height)
            mx, my = pinhole_margin(k, self.d, width, height)
            render_k = k.copy()
            render_k[0, 2] += mx
            render_k[1, 2] += my
            lens = self._lens[(width, height)] = (
                (mx, my),
                *distortion_maps(k, self.d, width, height, render_k),
            )
        return lens

    def _renderer(self, width: int, height: int, supersample: int) -> RgbdRenderer:
        key = (width * supersample, height * supersample)
        renderer = self._renderers.get(key)
        if renderer is None:
            lens = self._lens_maps(width, height)
            mx, my = (0, 0) if lens is None else lens[0]
            renderer = RgbdRenderer(
                self._model, *key, profile=self.profile, margin=(mx * supersample, my * supersample)
            ).__enter__()
            self._renderers[key] = renderer
        return renderer

    def prepare(self, request: ImageSize | None = None) -> None:
        """Make the renderer of ``request``'s size now (on the rendering thread), so a bad size fails early.

        Raises:
            WorldError: the drawn size exceeds the model's offscreen buffer.
        """
        width, height = frame_size(self.camera, self.profile, request)
        self._renderer(width, height, 1 if request is None else request.supersample)

    def render(
        self,
        data: mujoco.MjData,
        request: ImageSize | None = None,
        *,
        episode: tuple[int, int] | None = None,
    ) -> Frame:
        """Draw the camera from ``data`` at the requested size (see :func:`frame_size`).

        With ``request.supersample`` = s > 1 the frame is drawn at s times the size; colour is
        area-downscaled and depth takes the nearest drawn pixel (averaging depth would invent surfaces
        at edges).  A camera with lens distortion is drawn as a wider pinhole view, then remapped through
        its ``(K, D)`` (:mod:`r2s2r_sim.render.lens`).  The sensor effects (if any) apply at the delivered
        size, with the noise of ``episode`` = (seed, frame index), or of the next frame of the episode
        :meth:`start_episode` began.

        Raises:
            WorldError: the drawn size exceeds the model's offscreen buffer.
        """
        width, height = frame_size(self.camera, self.profile, request)
        s = 1 if request is None else request.supersample
        rgb, depth = self._renderer(width, height, s).render(
            data, self._mjcf_camera, depth_range=self.camera.depth_range
        )
        if s > 1:
            drawn = (rgb.shape[1] // s, rgb.shape[0] // s)  # the size with any lens margin
            rgb = cv2.resize(rgb, drawn, interpolation=cv2.INTER_AREA)
            depth = np.ascontiguousarray(depth[s // 2 :: s, s // 2 :: s])
        lens = self._lens_maps(width, height)
        if lens is not None:
            rgb, depth = distort(rgb, depth, lens[1], lens[2])
        self.renders += 1
        k = self._intrinsics(width, height)
        if self.sensors is not None:
            state = self._sensor_states.get((width, height))
            if state is None:
                state = SensorState(self.sensors, (height, width), k[0, 0], k)
                self._sensor_states[(width, height)] = state
                state.start_episode(self._seed)
            rng = state.begin_frame(*episode) if episode is not None else state.next_frame()
            rgb, depth_m = state.apply(rgb, depth, rng)
            depth = depth_m.astype(np.float32)
        return Frame(rgb, depth, k, self.d)
