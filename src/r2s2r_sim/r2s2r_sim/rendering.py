"""Offscreen RGB-D rendering of MuJoCo cameras, RealSense-style (metric z-depth, 0 = no data)."""

from __future__ import annotations

import os

# MuJoCo picks its GL backend when first imported; headless EGL is the only one that works here.
os.environ.setdefault("MUJOCO_GL", "egl")

import math  # noqa: E402
from types import TracebackType  # noqa: E402

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from r2s2r_sim.errors import RenderError, WorldError  # noqa: E402

__all__ = ["RgbdRenderer", "camera_intrinsics", "depth_to_uint16_mm"]


def _camera_id(model: mujoco.MjModel, camera_name: str) -> int:
    cid = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera_name))
    if cid < 0:
        names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(model.ncam)]
        raise WorldError(f"camera {camera_name!r} not in the model (cameras: {names})")
    return cid


def camera_intrinsics(model: mujoco.MjModel, camera_name: str, width: int, height: int) -> np.ndarray:
    """Pinhole matrix K (3, 3) of a MuJoCo camera rendered at ``width`` x ``height``.

    MuJoCo's frustum is symmetric about the image centre with vertical field of view ``fovy`` and square
    pixels, so ``fy = fx = (H / 2) / tan(fovy / 2)``.  The principal point is the image centre in the OpenCV
    pixel convention (pixel centres at integer coordinates): ``cx = (W - 1) / 2``, ``cy = (H - 1) / 2``.
    K maps points in the optical frame (z forward, x right, y down; see ``SimWorld.camera_pose``) to pixels.

    Raises:
        WorldError: unknown camera, or a camera defined by sensor size/focal length or orthographic
            (not supported).
    """
    cid = _camera_id(model, camera_name)
    if int(model.cam_projection[cid]) != int(mujoco.mjtProjection.mjPROJ_PERSPECTIVE):
        raise WorldError(f"camera {camera_name!r} is orthographic; only perspective cameras are supported")
    if np.any(model.cam_sensorsize[cid] != 0):
        raise WorldError(
            f"camera {camera_name!r} uses sensorsize/focal intrinsics; only fovy cameras are supported"
        )
    fy = (height / 2.0) / math.tan(math.radians(float(model.cam_fovy[cid])) / 2.0)
    return np.array(
        [[fy, 0.0, (width - 1) / 2.0], [0.0, fy, (height - 1) / 2.0], [0.0, 0.0, 1.0]], dtype=np.float64
    )


def depth_to_uint16_mm(depth: np.ndarray) -> np.ndarray:
    """Metric depth (m, float) to RealSense-style ``uint16`` millimetres (0 = no data, saturates at 65535)."""
    mm = np.rint(np.nan_to_num(np.asarray(depth, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0) * 1000.0)
    return np.clip(mm, 0, np.iinfo(np.uint16).max).astype(np.uint16)


class RgbdRenderer:
    """Offscreen RGB-D renderer with its own GL context; use as a context manager.

    Example:
        with RgbdRenderer(world.model, 640, 480) as renderer:
            rgb, depth = renderer.render(world.data, "realsense", depth_range=(0.1, 4.0))
    """

    def __init__(self, model: mujoco.MjModel, width: int, height: int, *, max_geom: int = 10000) -> None:
        """Check the size against the model's offscreen buffer; the GL context is made in ``__enter__``.

        Raises:
            WorldError: if ``width``/``height`` exceed ``<visual><global offwidth/offheight>``.
        """
        off_w, off_h = int(model.vis.global_.offwidth), int(model.vis.global_.offheight)
        if not (0 < width <= off_w and 0 < height <= off_h):
            raise WorldError(
                f"render size {width}x{height} exceeds the model's offscreen buffer {off_w}x{off_h}; "
                'set <visual><global offwidth=".." offheight=".."/> in the scene MJCF'
            )
        self._model = model
        self._width = width
        self._height = height
        self._gl: mujoco.GLContext | None = None
        self._ctx: mujoco.MjrContext | None = None
        self._closed = False
        self._rect = mujoco.MjrRect(0, 0, width, height)
        self._scene = mujoco.MjvScene(model, maxgeom=max_geom)
        self._option = mujoco.MjvOption()
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        self._rgb = np.empty((height, width, 3), dtype=np.uint8)
        self._depth = np.empty((height, width), dtype=np.float32)
        # GL projection terms (float32, like glFrustum), see mujoco/rendering/classic/renderer.py.
        extent = float(model.stat.extent)
        self.znear = float(np.float32(model.vis.map.znear * extent))
        self.zfar = float(np.float32(model.vis.map.zfar * extent))

    @property
    def width(self) -> int:
        """Image width (px)."""
        return self._width

    @property
    def height(self) -> int:
        """Image height (px)."""
        return self._height

    def __enter__(self) -> RgbdRenderer:
        """Create the GL context, scene and MuJoCo render context."""
        if self._closed or self._gl is not None:
            raise RenderError("RgbdRenderer cannot be entered twice; make a new one")
        gl = mujoco.GLContext(self._width, self._height)
        gl.make_current()
        try:
            self._ctx = mujoco.MjrContext(self._model, mujoco.mjtFontScale.mjFONTSCALE_150.value)
            mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN.value, self._ctx)
            # Reversed-Z depth: 1 at znear, 0 at zfar (what the conversion below undoes).
            self._ctx.readDepthMap = mujoco.mjtDepthMap.mjDEPTH_ZEROFAR
        except Exception:
            gl.free()
            raise
        self._gl = gl
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Free the render context, then the GL context."""
        self.close()

    def close(self) -> None:
        """Release GL resources; the renderer cannot be used afterwards."""
        if self._gl is not None:
            self._gl.make_current()
            if self._ctx is not None:
                self._ctx.free()
            self._gl.free()
        self._ctx = None
        self._gl = None
        self._closed = True

    def render(
        self,
        data: mujoco.MjData,
        camera_name: str,
        *,
        depth_range: tuple[float, float] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Render colour and depth of one MJCF camera from the current ``data`` (call ``mj_forward`` first).

        Args:
            data: simulation state of the model given at construction.
            camera_name: MJCF camera name (as compiled, i.e. with any prefix).
            depth_range: ``(min, max)`` valid depth (m); pixels outside, and background, are 0.

        Returns:
            ``rgb`` uint8 (H, W, 3) and ``depth`` float32 (H, W): metric distance along the optical axis (m).
        """
        if self._gl is None or self._ctx is None:
            state = "after close" if self._closed else "outside its with-block"
            raise RenderError(f"RgbdRenderer.render called {state}")
        self._camera.fixedcamid = _camera_id(self._model, camera_name)
        self._gl.make_current()
        mujoco.mjv_updateScene(
            self._model, data, self._option, None, self._camera, mujoco.mjtCatBit.mjCAT_ALL.value, self._scene
        )
        mujoco.mjr_render(self._rect, self._scene, self._ctx)
        # Colour and depth from the same frame, in one read.
        mujoco.mjr_readPixels(self._rgb, self._depth, self._rect, self._ctx)
        rgb = np.flipud(self._rgb).copy()
        raw = np.flipud(self._depth).astype(np.float64)
        # Undo the reversed-Z perspective projection (same float32 coefficients as glFrustum).
        znear, zfar = np.float32(self.znear), np.float32(self.zfar)
        c_coef = -(zfar + znear) / (zfar - znear)
        d_coef = -(np.float32(2) * zfar * znear) / (zfar - znear)
        c_coef = np.float32(-0.5) * c_coef - np.float32(0.5)
        d_coef = np.float32(-0.5) * d_coef
        with np.errstate(divide="ignore"):
            metric = d_coef / (raw + c_coef)
        lo, hi = depth_range if depth_range is not None else (0.0, math.inf)
        # Background (far plane) has raw depth 0; no data is 0 like a RealSense.
        valid = (raw > 0) & (metric >= lo) & (metric <= hi) & (metric < 0.999 * self.zfar)
        depth = np.where(valid, metric, 0.0).astype(np.float32)
        return rgb, depth
