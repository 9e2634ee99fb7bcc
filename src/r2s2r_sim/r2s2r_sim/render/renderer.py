"""Offscreen RGB-D rendering of MuJoCo cameras, RealSense-style (metric z-depth, 0 = no data)."""

from __future__ import annotations

import atexit
import contextlib
import math
import threading
import weakref
from collections.abc import Iterator, Sequence
from types import TracebackType

import mujoco
import numpy as np

from r2s2r_sim.errors import RenderError, WorldError
from r2s2r_sim.render.profile import FULL, RenderProfile

__all__ = ["RgbdRenderer", "TiledRenderer", "View", "camera_intrinsics", "depth_to_uint16_mm", "tile_grid"]

View = tuple[mujoco.MjModel, mujoco.MjData, str]
"""What one tile shows: a model, its state (after ``mj_forward``) and an MJCF camera name."""


def _camera_id(model: mujoco.MjModel, camera_name: str) -> int:
    cid = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, camera_name))
    if cid < 0:
        names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(model.ncam)]
        raise WorldError(f"camera {camera_name!r} not in the model (cameras: {names})")
    return cid


def camera_intrinsics(model: mujoco.MjModel, camera_name: str, width: int, height: int) -> np.ndarray:
    """Pinhole matrix K (3, 3) of a MuJoCo camera rendered at ``width`` x ``height``.

    A ``fovy`` camera's frustum is symmetric about the image centre with square pixels, so
    ``fy = fx = (H / 2) / tan(fovy / 2)`` and the principal point is the image centre in the OpenCV pixel
    convention (pixel centres at integer coordinates): ``cx = (W - 1) / 2``, ``cy = (H - 1) / 2``.  A camera
    given by ``sensorsize`` with ``focal``/``focalpixel`` and ``principal``/``principalpixel`` (as a
    calibrated camera is written, so that the sim draws the calibrated fx, fy, cx, cy) maps its sensor onto
    the image: ``fx = focal_x W / sensor_w``, ``cx = (W - 1) / 2 - principal_x W / sensor_w`` (MuJoCo's
    principal offset points the other way from OpenCV's pixel axes), and likewise in y.  K maps points in
    the optical frame (z forward, x right, y down; see ``SimWorld.camera_pose``) to pixels.

    Raises:
        WorldError: unknown camera, or an orthographic one (not supported).
    """
    cid = _camera_id(model, camera_name)
    if int(model.cam_projection[cid]) != int(mujoco.mjtProjection.mjPROJ_PERSPECTIVE):
        raise WorldError(f"camera {camera_name!r} is orthographic; only perspective cameras are supported")
    if np.any(model.cam_sensorsize[cid] != 0):
        sensor_w, sensor_h = (float(v) for v in model.cam_sensorsize[cid])
        focal_x, focal_y, principal_x, principal_y = (float(v) for v in model.cam_intrinsic[cid])
        sx, sy = width / sensor_w, height / sensor_h
        return np.array(
            [
                [focal_x * sx, 0.0, (width - 1) / 2.0 - principal_x * sx],
                [0.0, focal_y * sy, (height - 1) / 2.0 - principal_y * sy],
                [0.0, 0.0, 1.0],
            ],
            dtype=np.float64,
        )
    fy = (height / 2.0) / math.tan(math.radians(float(model.cam_fovy[cid])) / 2.0)
    return np.array(
        [[fy, 0.0, (width - 1) / 2.0], [0.0, fy, (height - 1) / 2.0], [0.0, 0.0, 1.0]], dtype=np.float64
    )


def depth_to_uint16_mm(depth: np.ndarray) -> np.ndarray:
    """Metric depth (m, float) to RealSense-style ``uint16`` millimetres (0 = no data, saturates at 65535)."""
    mm = np.rint(np.nan_to_num(np.asarray(depth, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0) * 1000.0)
    return np.clip(mm, 0, np.iinfo(np.uint16).max).astype(np.uint16)


@contextlib.contextmanager
def _context_settings(
    model: mujoco.MjModel, profile: RenderProfile, width: int, height: int
) -> Iterator[None]:
    """Set the model's render-context fields (read only by ``MjrContext``) for the profile, then restore.

    The shadow map size, MSAA samples and offscreen buffer size are fixed when the context is made; they
    are visual settings only, so borrowing the model for that moment changes no physics.
    """
    q, g = model.vis.quality, model.vis.global_
    saved = (int(q.shadowsize), int(q.offsamples), int(g.offwidth), int(g.offheight))
    try:
        if profile.shadow_size is not None:
            q.shadowsize = profile.shadow_size
        if profile.multisamples is not None:
            q.offsamples = profile.multisamples
        g.offwidth, g.offheight = max(width, saved[2]), max(height, saved[3])
        yield
    finally:
        q.shadowsize, q.offsamples, g.offwidth, g.offheight = saved


# Renderers whose GL context is open, for the exit hook below.
_OPEN: weakref.WeakSet[_Renderer] = weakref.WeakSet()
_exit_hook_registered = False


def _close_at_exit() -> None:
    """Close the renderers the exiting thread still holds, while the EGL display is still initialised.

    Registered when the first GL context is made, which is after MuJoCo registers its own hook that
    terminates the EGL display (on its first context), so it runs before that one.  A renderer left to
    the garbage collector would otherwise free its contexts after that teardown, in whatever order the
    interpreter finalises objects.  Renderers of other threads are left alone: a context may only be
    made current, and freed, on the thread that owns it (their owners must close them before exiting).
    """
    me = threading.get_ident()
    for renderer in list(_OPEN):
        if renderer._owner == me:
            renderer.close()


class _Renderer:
    """A GL context, one MuJoCo render context and a scene, drawn with a render profile.

    The thread that enters the renderer owns its GL context: :meth:`render` and :meth:`close` refuse
    any other thread, since making a context current on a second thread (while the first still has it
    current) fails in EGL, and freeing it there leaves its GL objects behind.
    """

    def __init__(
        self, model: mujoco.MjModel, width: int, height: int, profile: RenderProfile | None, max_geom: int
    ) -> None:
        self._model = model
        self._width = width
        self._height = height
        self.profile = FULL if profile is None else profile
        self._gl: mujoco.GLContext | None = None
        self._ctx: mujoco.MjrContext | None = None
        self._closed = False
        self._owner: int | None = None  # ident of the thread that made the GL context
        self._scene = mujoco.MjvScene(model, maxgeom=max_geom)
        flags = self._scene.flags
        flags[mujoco.mjtRndFlag.mjRND_SHADOW] = self.profile.shadows
        flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = self.profile.reflections
        flags[mujoco.mjtRndFlag.mjRND_SKYBOX] = self.profile.skybox
        self._option = mujoco.MjvOption()
        self._camera = mujoco.MjvCamera()
        self._camera.type = mujoco.mjtCamera.mjCAMERA_FIXED
        # GL projection terms (float32, like glFrustum), see mujoco/rendering/classic/renderer.py.
        extent = float(model.stat.extent)
        self.znear = float(np.float32(model.vis.map.znear * extent))
        self.zfar = float(np.float32(model.vis.map.zfar * extent))

    @property
    def width(self) -> int:
        """Framebuffer width (px)."""
        return self._width

    @property
    def height(self) -> int:
        """Framebuffer height (px)."""
        return self._height

    def __enter__(self) -> _Renderer:
        """Create the GL context and the MuJoCo render context (with the profile's shadow map and samples)."""
        if self._closed or self._gl is not None:
            raise RenderError(f"{type(self).__name__} cannot be entered twice; make a new one")
        global _exit_hook_registered
        gl = mujoco.GLContext(self._width, self._height)
        if not _exit_hook_registered:  # after MuJoCo's display teardown hook, so it runs first
            atexit.register(_close_at_exit)
            _exit_hook_registered = True
        try:
            gl.make_current()
            with _context_settings(self._model, self.profile, self._width, self._height):
                self._ctx = mujoco.MjrContext(self._model, mujoco.mjtFontScale.mjFONTSCALE_150.value)
            mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN.value, self._ctx)
            # Reversed-Z depth: 1 at znear, 0 at zfar (what _metric_depth undoes).
            self._ctx.readDepthMap = mujoco.mjtDepthMap.mjDEPTH_ZEROFAR
        except BaseException:
            # Nothing half-made is left for the garbage collector (it could free it on another thread).
            if self._ctx is not None:
                self._ctx.free()
                self._ctx = None
            gl.free()
            self._closed = True
            raise
        self._gl = gl
        self._owner = threading.get_ident()
        _OPEN.add(self)
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
        """Release GL resources on the owning thread; the renderer cannot be used afterwards.

        Raises:
            RenderError: called on another thread than the one that entered it (nothing is freed).
        """
        if self._gl is not None:
            self._check_thread("close")
            try:
                self._gl.make_current()
                if self._ctx is not None:
                    self._ctx.free()
            finally:
                self._gl.free()  # the context goes even if the render context could not be freed
                self._ctx = None
                self._gl = None
                _OPEN.discard(self)
        self._closed = True

    def _check_thread(self, what: str) -> None:
        me = threading.get_ident()
        if self._owner is not None and self._owner != me:
            raise RenderError(
                f"{type(self).__name__}.{what} called on thread {me}, but its GL context belongs to thread "
                f"{self._owner}: a renderer is entered, used and closed on one thread"
            )

    def _check_open(self, what: str) -> None:
        if self._gl is None or self._ctx is None:
            state = "after close" if self._closed else "outside its with-block"
            raise RenderError(f"{type(self).__name__}.{what} called {state}")
        self._check_thread(what)

    def _draw(
        self,
        model: mujoco.MjModel,
        data: mujoco.MjData,
        camera_name: str,
        rect: mujoco.MjrRect,
        grow: tuple[float, float] = (1.0, 1.0),
    ) -> None:
        """Draw one camera's view into ``rect`` of the framebuffer.

        ``grow``: scale the frustum's width and height about its centre (a wider view at the same pixel
        size, drawn into a ``rect`` larger by the same factors).
        """
        self._camera.fixedcamid = _camera_id(model, camera_name)
        mujoco.mjv_updateScene(
            model, data, self._option, None, self._camera, mujoco.mjtCatBit.mjCAT_ALL.value, self._scene
        )
        if grow != (1.0, 1.0):
            for gl_camera in self._scene.camera:
                # frustum_width 0 means "from the viewport's aspect", which the larger rect already grows.
                gl_camera.frustum_width *= grow[0]
                mid = 0.5 * (gl_camera.frustum_top + gl_camera.frustum_bottom)
                half = 0.5 * (gl_camera.frustum_top - gl_camera.frustum_bottom) * grow[1]
                gl_camera.frustum_bottom, gl_camera.frustum_top = mid - half, mid + half
        if self.profile.max_lights is not None:
            self._scene.nlight = min(int(self._scene.nlight), self.profile.max_lights)
        mujoco.mjr_render(rect, self._scene, self._ctx)

    def _metric_depth(self, raw32: np.ndarray, depth_range: tuple[float, float] | None) -> np.ndarray:
        """Metric z-depth (m, float32) from reversed-Z buffer values; background and out-of-range are 0."""
        raw = raw32.astype(np.float64)
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
        return np.where(valid, metric, 0.0).astype(np.float32)


class RgbdRenderer(_Renderer):
    """Offscreen RGB-D renderer of one view at a time, with its own GL context; use as a context manager.

    Example:
        with RgbdRenderer(world.model, 640, 480, profile=FAST) as renderer:
            rgb, depth = renderer.render(world.data, "realsense", depth_range=(0.1, 4.0))
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        width: int,
        height: int,
        *,
        profile: RenderProfile | None = None,
        max_geom: int = 10000,
        margin: tuple[int, int] = (0, 0),
    ) -> None:
        """Check the size against the model's offscreen buffer; the GL context is made in ``__enter__``.

        ``profile``: how to draw (None: :data:`~r2s2r_sim.render.profile.FULL`, everything the MJCF asks).
        ``margin``: ``(mx, my)`` pixels of view added on each side of the ``width x height`` image at the
        same pixel size (what a lens-distortion remap needs, see :mod:`r2s2r_sim.render.lens`); the renders
        are then ``width + 2 mx`` by ``height + 2 my``, with the camera's principal point moved by ``(mx,
        my)``.

        Raises:
            WorldError: if ``width``/``height`` exceed ``<visual><global offwidth/offheight>``.
        """
        off_w, off_h = int(model.vis.global_.offwidth), int(model.vis.global_.offheight)
        if not (0 < width <= off_w and 0 < height <= off_h):
            raise WorldError(
                f"render size {width}x{height} exceeds the model's offscreen buffer {off_w}x{off_h}; "
                'set <visual><global offwidth=".." offheight=".."/> in the scene MJCF'
            )
        mx, my = (int(v) for v in margin)
        if mx < 0 or my < 0:
            raise RenderError(f"margin must be >= 0 px, got {margin}")
        self._grow = ((width + 2 * mx) / width, (height + 2 * my) / height)
        width, height = width + 2 * mx, height + 2 * my
        super().__init__(model, width, height, profile, max_geom)
        self._rect = mujoco.MjrRect(0, 0, width, height)
        self._rgb = np.empty((height, width, 3), dtype=np.uint8)
        self._depth = np.empty((height, width), dtype=np.float32)

    def __enter__(self) -> RgbdRenderer:
        """Create the GL context, scene and MuJoCo render context."""
        super().__enter__()
        return self

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
        self._check_open("render")
        assert self._gl is not None
        self._gl.make_current()
        self._draw(self._model, data, camera_name, self._rect, self._grow)
        # Colour and depth from the same frame, in one read.
        mujoco.mjr_readPixels(self._rgb, self._depth, self._rect, self._ctx)
        rgb = np.flipud(self._rgb).copy()
        return rgb, self._metric_depth(np.flipud(self._depth), depth_range)


def tile_grid(tiles: int, width: int, height: int) -> tuple[int, int]:
    """Columns and rows of the most nearly square grid holding ``tiles`` tiles of ``width`` x ``height``."""
    if tiles < 1:
        raise RenderError(f"tiles: must be >= 1, got {tiles}")
    cols = min(tiles, max(1, math.ceil(math.sqrt(tiles * height / width))))
    return cols, math.ceil(tiles / cols)


class TiledRenderer(_Renderer):
    """Draws up to ``tiles`` views of one size into one framebuffer and reads them in one pass.

    On a CPU rasteriser the cost of a render is mostly per pass (clears, shadow maps, the read-back), not
    per pixel, so small views drawn side by side cost little more than one.  The views share the render
    context, so they must come from models with the same uploaded assets (meshes, textures, height
    fields) as the one given here: the same model, or copies compiled from the same world.

    Example:
        with TiledRenderer(model, 96, 72, tiles=16, profile=FAST) as tiled:
            frames = tiled.render([(model, data_a, "realsense"), (model, data_b, "realsense")])
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        width: int,
        height: int,
        *,
        tiles: int,
        profile: RenderProfile | None = None,
        max_geom: int = 10000,
    ) -> None:
        """Lay out the grid; the GL context, sized to hold it, is made in ``__enter__``.

        Raises:
            RenderError: ``tiles`` < 1 or a tile size < 1 px.
        """
        if width < 1 or height < 1:
            raise RenderError(f"tile size must be >= 1 px, got {width}x{height}")
        self.cols, self.rows = tile_grid(tiles, width, height)
        self.tiles = tiles
        self.tile_width, self.tile_height = width, height
        super().__init__(model, self.cols * width, self.rows * height, profile, max_geom)
        self._rgb = np.empty((self._height, self._width, 3), dtype=np.uint8)
        self._depth = np.empty((self._height, self._width), dtype=np.float32)

    def __enter__(self) -> TiledRenderer:
        """Create the GL context, scene and MuJoCo render context."""
        super().__enter__()
        return self

    def _tile_origin(self, index: int) -> tuple[int, int]:
        """Bottom-left pixel (GL convention) of tile ``index``, filled row by row from the top."""
        row, col = divmod(index, self.cols)
        return col * self.tile_width, self._height - (row + 1) * self.tile_height

    def render(
        self, views: Sequence[View], *, depth_range: tuple[float, float] | None = None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Render colour and depth of each view (at most ``tiles``) and read the framebuffer once.

        Returns:
            One ``(rgb, depth)`` per view, as :meth:`RgbdRenderer.render` returns them.

        Raises:
            RenderError: more views than tiles, or the renderer is not open.
        """
        self._check_open("render")
        if len(views) > self.tiles:
            raise RenderError(f"TiledRenderer.render: {len(views)} views for {self.tiles} tiles")
        assert self._gl is not None
        self._gl.make_current()
        w, h = self.tile_width, self.tile_height
        for i, (model, data, camera_name) in enumerate(views):
            x, y = self._tile_origin(i)
            self._draw(model, data, camera_name, mujoco.MjrRect(x, y, w, h))
        full = mujoco.MjrRect(0, 0, self._width, self._height)
        mujoco.mjr_readPixels(self._rgb, self._depth, full, self._ctx)
        rgb_all = np.flipud(self._rgb)
        depth_all = self._metric_depth(np.flipud(self._depth), depth_range)
        out = []
        for i in range(len(views)):
            row, col = divmod(i, self.cols)
            rows, cols = slice(row * h, (row + 1) * h), slice(col * w, (col + 1) * w)
            out.append((rgb_all[rows, cols].copy(), depth_all[rows, cols].copy()))
        return out
