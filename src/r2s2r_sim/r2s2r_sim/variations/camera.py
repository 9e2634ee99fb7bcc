"""Camera viewpoint axis: position, orientation and vertical field-of-view jitter of one MJCF camera."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import mujoco
import numpy as np

from r2s2r_sim.variations.config import Axis, CameraJitterConfig, VariationError, not_found, symmetric

__all__ = ["CameraAxis"]


def _xyaxes_quat(xyaxes: np.ndarray) -> np.ndarray:
    x = xyaxes[:3] / np.linalg.norm(xyaxes[:3])
    y = xyaxes[3:] - np.dot(xyaxes[3:], x) * x
    y = y / np.linalg.norm(y)
    mat = np.column_stack([x, y, np.cross(x, y)])
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, mat.reshape(9))
    return quat


def _camera_quat(cam: mujoco.MjsCamera) -> np.ndarray:
    kind = cam.alt.type
    if kind == mujoco.mjtOrientation.mjORIENTATION_QUAT:
        quat = np.array(cam.quat, dtype=np.float64)
        return quat / np.linalg.norm(quat)
    if kind == mujoco.mjtOrientation.mjORIENTATION_XYAXES:
        return _xyaxes_quat(np.array(cam.alt.xyaxes, dtype=np.float64))
    raise VariationError(
        f"camera.camera: camera {cam.name!r} uses a {kind.name} orientation; only quat and xyaxes are "
        "supported"
    )


class CameraAxis(Axis):
    """The camera axis.

    Parameters: ``dx``, ``dy``, ``dz`` (m, world frame), ``rx``, ``ry``, ``rz`` (rad, about the camera's
    own axes, applied in that order) and ``dfovy`` (deg).
    """

    name = "camera"

    def dims(self, cfg: CameraJitterConfig) -> tuple[str, ...]:
        """See :meth:`Axis.dims`."""
        return ("dx", "dy", "dz", "rx", "ry", "rz", "dfovy")

    def realise(
        self, cfg: CameraJitterConfig, unit: tuple[float, ...], earlier: Mapping[str, float]
    ) -> dict[str, float]:
        """See :meth:`Axis.realise`."""
        widths = (cfg.position_jitter,) * 3 + (cfg.rotation_jitter,) * 3 + (cfg.fovy_jitter,)
        return {n: symmetric(w, u) for n, w, u in zip(self.dims(cfg), widths, unit, strict=True)}

    def apply(self, spec: mujoco.MjSpec, cfg: CameraJitterConfig, params: Mapping[str, float]) -> None:
        """See :meth:`Axis.apply`."""
        cam = spec.camera(cfg.camera)
        if cam is None:
            raise not_found("camera.camera", "camera", cfg.camera, [c.name for c in spec.cameras if c.name])
        quat = _camera_quat(cam)
        for axis, key in zip(np.eye(3), ("rx", "ry", "rz"), strict=True):
            step = np.empty(4)
            mujoco.mju_axisAngle2Quat(step, axis, params[key])
            out = np.empty(4)
            mujoco.mju_mulQuat(out, quat, step)  # local frame: right-multiply
            quat = out
        cam.alt.type = mujoco.mjtOrientation.mjORIENTATION_QUAT
        cam.quat = quat
        cam.pos = np.array(cam.pos, dtype=np.float64) + [params["dx"], params["dy"], params["dz"]]
        sensor = bool(np.any(np.asarray(cam.sensor_size) != 0))
        base = _sensor_fovy(cam) if sensor else float(cam.fovy)
        fovy = base + params["dfovy"]
        if not 0.0 < fovy < 180.0:
            raise VariationError(f"camera.fovy_jitter: fovy of {cam.name!r} would be {fovy} deg")
        if sensor:  # a calibrated camera: the same change of view as a focal length scale
            scale = math.tan(math.radians(base) / 2.0) / math.tan(math.radians(fovy) / 2.0)
            cam.focal_pixel = np.asarray(cam.focal_pixel, dtype=np.float64) * scale
            cam.focal_length = np.asarray(cam.focal_length, dtype=np.float64) * scale
        else:
            cam.fovy = fovy


def _sensor_fovy(cam: Any) -> float:
    """Vertical field of view (deg) of a camera given by sensor size and focal length (pixels or metres)."""
    if float(cam.focal_pixel[1]) > 0 and int(cam.resolution[1]) > 0:
        half = int(cam.resolution[1]) / 2.0 / float(cam.focal_pixel[1])
    else:
        half = float(cam.sensor_size[1]) / 2.0 / float(cam.focal_length[1])
    return math.degrees(2.0 * math.atan(half))
