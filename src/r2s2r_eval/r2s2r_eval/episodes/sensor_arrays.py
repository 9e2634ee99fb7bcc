"""Array forms of what the sensors report, shared by the message converter and the in-process runner.

Both paths go through these functions, so a policy gets bit-identical poses and depth in a sweep and
through ROS.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["depth_mm_to_metres", "episode_stamp", "pose_matrix", "quaternion_matrix"]

NS_PER_S = 1_000_000_000


def episode_stamp(ns: int) -> float:
    """Observation time (s) of a sample taken ``ns`` nanoseconds after the episode's first observation.

    Policies see time since the episode started, not a clock's absolute reading: the sim's clock runs on
    across resets and a hardware clock reads about 1.7e9 s, and float64 rounds the difference of two such
    stamps differently from one episode to the next (a phase timer then slips by a control period).  Both
    paths derive the stamp from integer nanoseconds here, so a policy gets the same stamps in process and
    through ROS.
    """
    return int(ns) / NS_PER_S


def quaternion_matrix(w: float, x: float, y: float, z: float) -> np.ndarray:
    """3x3 rotation of a quaternion (normalised here).

    Raises:
        ValueError: a zero or non-finite quaternion.
    """
    q = np.array([w, x, y, z], dtype=np.float64)
    norm = float(np.linalg.norm(q))
    if not math.isfinite(norm) or norm < 1e-12:
        raise ValueError(f"invalid rotation quaternion (xyzw) {[x, y, z, w]}")
    w, x, y, z = q / norm
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def pose_matrix(position: np.ndarray, quat_wxyz: np.ndarray) -> np.ndarray:
    """4x4 homogeneous pose of ``position`` (m) and a wxyz quaternion, as a ``TransformStamped`` carries it.

    The quaternion is normalised once when the transform is built and once when it is read, as on the
    ROS path (``transform_msg`` then ``transform_to_matrix``).

    Raises:
        ValueError: a zero or non-finite quaternion.
    """
    q = np.asarray(quat_wxyz, dtype=np.float64)
    norm = float(np.linalg.norm(q))
    if not math.isfinite(norm) or norm < 1e-12:
        raise ValueError(f"not a valid quaternion: {q.tolist()}")
    w, x, y, z = (float(v) for v in q / norm)
    mat = np.eye(4)
    mat[:3, :3] = quaternion_matrix(w, x, y, z)
    mat[:3, 3] = [float(v) for v in position]
    return mat


def depth_mm_to_metres(mm: np.ndarray) -> np.ndarray:
    """HxW float32 metres of HxW uint16 millimetres (realsense2_camera's ``16UC1``); 0 (no data) is NaN."""
    metres = mm.astype(np.float32) * np.float32(0.001)
    metres[~np.isfinite(metres) | (metres <= 0)] = np.nan
    return metres
