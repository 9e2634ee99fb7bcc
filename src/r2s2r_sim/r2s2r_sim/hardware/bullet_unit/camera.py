"""Bullet's software renderer as the emulated camera's pinhole renderer (``ER_TINY_RENDERER``).

:class:`BulletPinholeRenderer` has the calls of ``render.renderer.RgbdRenderer`` that
:class:`~r2s2r_sim.hardware.emulated_camera.DistortedRgbdCamera` makes, so the profile's lens distortion,
motion blur and sensor sections are applied to Bullet's frames by the same code as to MuJoCo's.  It owns a
second, render-only Bullet client (as a MuJoCo renderer owns its GL context, on the thread that renders) and
poses it from the ``qpos`` it is given: a snapshot of the physics client's state, written back into the
world's MuJoCo data by :class:`~r2s2r_sim.hardware.bullet_unit.physics.BulletPhysics`.
:class:`ProcessPinholeRenderer` serves the same renderer from a child process, for the node.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import pybullet
from transforms3d import quaternions

from r2s2r_sim.errors import RenderError
from r2s2r_sim.hardware.bullet_unit.scene import BulletScene
from r2s2r_sim.world.sim_world import SimWorld

__all__ = ["BulletPinholeRenderer", "ProcessPinholeRenderer", "projection_matrix", "view_matrix"]

_ZNEAR_M, _ZFAR_M = 0.01, 20.0  # clip planes; depth is stored as float, so their ratio costs no precision
# The tiny renderer samples a pixel at its corner, not its centre, and counts rows from the bottom: drawn with
# OpenCV's convention, the scene lands half a pixel right and up.  The principal point moved by this much
# (px) puts it back: a ChArUco board's corners then scatter about their projection with no offset.
_TINY_SAMPLE_SHIFT_PX = np.array([-0.5, 0.5])


def projection_matrix(k: np.ndarray, width: int, height: int, znear: float, zfar: float) -> list[float]:
    """OpenGL projection (column-major, as Bullet takes it) drawing the pinhole ``k`` at ``width x height``.

    Pixel centres are at integer coordinates (OpenCV), so pixel ``u`` spans NDC ``2 (u + 0.5) / W - 1``.
    """
    fx, fy, cx, cy = float(k[0, 0]), float(k[1, 1]), float(k[0, 2]), float(k[1, 2])
    p = np.zeros((4, 4))
    p[0, 0] = 2.0 * fx / width
    p[0, 2] = 1.0 - 2.0 * (cx + 0.5) / width
    p[1, 1] = 2.0 * fy / height
    p[1, 2] = 2.0 * (cy + 0.5) / height - 1.0
    p[2, 2] = -(zfar + znear) / (zfar - znear)
    p[2, 3] = -2.0 * zfar * znear / (zfar - znear)
    p[3, 2] = -1.0
    return p.T.reshape(-1).tolist()


def view_matrix(position: np.ndarray, quat_wxyz: np.ndarray) -> list[float]:
    """OpenGL view matrix (column-major) of a camera at ``position`` with axes ``quat`` (-z forward, y up)."""
    rot = quaternions.quat2mat(quat_wxyz)
    view = np.eye(4)
    view[:3, :3] = rot.T
    view[:3, 3] = -rot.T @ np.asarray(position, dtype=np.float64)
    return view.T.reshape(-1).tolist()


class BulletPinholeRenderer:
    """Draws one world-fixed MJCF camera of ``world`` with Bullet at ``width x height``, intrinsics ``k``.

    Example:
        with BulletPinholeRenderer(world, 700, 540, k) as r:
            rgb, depth = r.render(world.data, "realsense", depth_range=(0.1, 4.0))
    """

    def __init__(self, world: SimWorld, width: int, height: int, k: np.ndarray) -> None:
        """Record the camera's geometry; the Bullet client is made in ``__enter__``."""
        self._world = world
        self.width, self.height = int(width), int(height)
        shifted = np.array(k, dtype=np.float64)
        shifted[:2, 2] += _TINY_SAMPLE_SHIFT_PX
        self._projection = projection_matrix(shifted, self.width, self.height, _ZNEAR_M, _ZFAR_M)
        self._client = -1
        self._scene: BulletScene | None = None
        model = world.model
        # The key light (the model's first) gives the renderer its one light's direction and colour.
        self._light: dict[str, object] = {}
        if model.nlight:
            self._light = {
                "lightDirection": (-model.light_dir[0]).tolist(),
                "lightColor": [float(v) for v in model.light_diffuse[0]],
            }

    def __enter__(self) -> BulletPinholeRenderer:
        """Connect a headless client and build the scene's visuals in it."""
        if self._client < 0:
            self._client = pybullet.connect(pybullet.DIRECT)
            self._scene = BulletScene(self._client, self._world, collisions=False)
        return self

    def __exit__(self, *exc: object) -> None:
        """Disconnect."""
        self.close()

    def close(self) -> None:
        """Disconnect the client; closing twice is harmless."""
        if self._client >= 0:
            assert self._scene is not None
            self._scene.close()
            pybullet.disconnect(physicsClientId=self._client)
            self._client, self._scene = -1, None

    def render(
        self, data: object, camera_name: str, *, depth_range: tuple[float, float] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``rgb`` (uint8 HxWx3) and metric z-depth (float32 HxW, m; none or out of range: 0) of ``data``.

        ``data``: the world's MuJoCo data (or a scratch copy); its ``qpos`` and mocap poses pose the scene.

        Raises:
            RenderError: outside the with-block.
        """
        if self._scene is None:
            raise RenderError("BulletPinholeRenderer.render called outside its with-block")
        model = self._world.model
        self._scene.set_state(data.qpos)  # type: ignore[attr-defined]
        if self._scene.mocap_bodies:
            self._scene.set_mocap(data.mocap_pos, data.mocap_quat)  # type: ignore[attr-defined]
        cam = self._world.camera_id(camera_name)
        view = view_matrix(model.cam_pos[cam], model.cam_quat[cam])
        _, _, rgba, zbuf, _ = pybullet.getCameraImage(
            self.width,
            self.height,
            viewMatrix=view,
            projectionMatrix=self._projection,
            renderer=pybullet.ER_TINY_RENDERER,
            shadow=0,
            flags=pybullet.ER_NO_SEGMENTATION_MASK,
            physicsClientId=self._client,
            **self._light,  # type: ignore[arg-type]
        )
        rgb = np.asarray(rgba, dtype=np.uint8).reshape(self.height, self.width, 4)[:, :, :3].copy()
        buf = np.asarray(zbuf, dtype=np.float64).reshape(self.height, self.width)
        depth = _ZFAR_M * _ZNEAR_M / (_ZFAR_M - (_ZFAR_M - _ZNEAR_M) * buf)
        depth[buf >= 1.0 - 1e-7] = 0.0  # nothing drawn: no depth
        if depth_range is not None:
            depth[(depth < depth_range[0]) | (depth > depth_range[1])] = 0.0
        return rgb, depth.astype(np.float32)


class _Pose:
    """What :meth:`BulletPinholeRenderer.render` reads of a MuJoCo data: ``qpos`` and the mocap poses."""

    def __init__(self, qpos: np.ndarray, mocap_pos: np.ndarray, mocap_quat: np.ndarray) -> None:
        self.qpos, self.mocap_pos, self.mocap_quat = qpos, mocap_pos, mocap_quat


class ProcessPinholeRenderer:
    """:class:`BulletPinholeRenderer` in a child process, for a node whose physics runs on another thread.

    pybullet holds the GIL for a whole frame (a few hundred ms with the tiny renderer), which would stop a
    node's physics thread as long; in a child process the frame is drawn while the parent only waits on a
    pipe.  ``build`` is called in the child (spawned, so it must be picklable, e.g. a module-level
    function with its arguments in a ``functools.partial``) and returns the renderer to serve.
    """

    def __init__(self, build: Callable[[], BulletPinholeRenderer], *, timeout_s: float = 120.0) -> None:
        """Record how to build the renderer; the child starts in ``__enter__``."""
        self._build = build
        self._timeout_s = timeout_s
        self._conn: Connection | None = None
        self._process: multiprocessing.process.BaseProcess | None = None

    def __enter__(self) -> ProcessPinholeRenderer:
        """Start the child and wait (bounded) until its renderer is built.

        Raises:
            RenderError: it did not report ready within the timeout, or failed to build.
        """
        if self._process is None:
            ctx = multiprocessing.get_context("spawn")
            parent, child = ctx.Pipe()
            self._process = ctx.Process(target=_serve, args=(child, self._build), daemon=True)
            self._process.start()
            child.close()
            self._conn = parent
            self._receive("the Bullet render process to build its scene")
        return self

    def _receive(self, what: str) -> Any:
        assert self._conn is not None
        if not self._conn.poll(self._timeout_s):
            self.close()
            raise RenderError(f"waited {self._timeout_s:.0f} s for {what}; no answer")
        try:
            reply = self._conn.recv()
        except EOFError:
            self.close()
            raise RenderError(f"the Bullet render process exited while waiting for {what}") from None
        if isinstance(reply, str):
            self.close()
            raise RenderError(f"Bullet render process: {reply}")
        return reply

    def __exit__(self, *exc: object) -> None:
        """Stop the child."""
        self.close()

    def close(self) -> None:
        """Ask the child to stop, wait for it (bounded), then end it; closing twice is harmless."""
        if self._process is None:
            return
        if self._conn is not None:
            try:
                self._conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            self._conn.close()
        self._process.join(timeout=10.0)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(timeout=5.0)
        self._process, self._conn = None, None

    def render(
        self, data: object, camera_name: str, *, depth_range: tuple[float, float] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """See :meth:`BulletPinholeRenderer.render` (drawn in the child).

        Raises:
            RenderError: outside the with-block, or the child did not answer within the timeout.
        """
        if self._conn is None:
            raise RenderError("ProcessPinholeRenderer.render called outside its with-block")
        pose = tuple(np.array(getattr(data, k)) for k in ("qpos", "mocap_pos", "mocap_quat"))
        self._conn.send((pose, camera_name, depth_range))
        rgb, depth = self._receive("a Bullet frame")
        return rgb, depth


def _serve(conn: Connection, build: Callable[[], BulletPinholeRenderer]) -> None:
    """The child's loop: build the renderer, then draw each ``(qpos, camera, depth_range)`` until None."""
    try:
        renderer = build().__enter__()
    except Exception as err:  # reported to the parent, which raises it as a RenderError
        conn.send(f"{type(err).__name__}: {err}")
        return
    conn.send(True)
    try:
        while (request := conn.recv()) is not None:
            pose, camera, depth_range = request
            conn.send(renderer.render(_Pose(*pose), camera, depth_range=depth_range))
    except EOFError:
        pass  # the parent went away
    finally:
        renderer.close()
