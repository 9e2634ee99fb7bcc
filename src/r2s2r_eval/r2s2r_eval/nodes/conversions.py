"""ROS messages to :class:`Observation`, :class:`Action` to command messages; pure functions, no rclpy.node.

The policy node and the in-process runner both build observations through :func:`observation_from_messages`,
so a policy sees the same data, with the same units and invalid-pixel rules, in both.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Transform, TransformStamped
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from tf2_msgs.msg import TFMessage

from r2s2r_eval.episodes.sensor_arrays import depth_mm_to_metres, quaternion_matrix
from r2s2r_eval.policy import Action, Observation

__all__ = [
    "ConversionError",
    "TfTree",
    "action_to_messages",
    "camera_info_to_k",
    "depth_image_to_metres",
    "joint_state_arrays",
    "observation_from_messages",
    "rgb_image_to_array",
    "stamp_to_seconds",
    "transform_to_matrix",
]


class ConversionError(ValueError):
    """A message cannot be converted: wrong encoding, inconsistent sizes, or a missing TF frame."""


def stamp_to_seconds(stamp: Time) -> float:
    """Seconds of a ``builtin_interfaces/Time``."""
    return int(stamp.sec) + int(stamp.nanosec) * 1e-9


def joint_state_arrays(msg: JointState) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """Names, positions and velocities of a ``JointState`` (float64; missing velocities are zeros).

    Raises:
        ConversionError: position or velocity lengths differ from the names.
    """
    names = tuple(msg.name)
    pos = np.asarray(msg.position, dtype=np.float64)
    vel = np.asarray(msg.velocity, dtype=np.float64) if len(msg.velocity) else np.zeros(len(names))
    if pos.shape != (len(names),) or vel.shape != (len(names),):
        raise ConversionError(
            f"JointState: {len(names)} names but {pos.size} positions and {vel.size} velocities"
        )
    return names, pos, vel


def _pixels(msg: Image, dtype: np.dtype, channels: int) -> np.ndarray:
    dtype = dtype.newbyteorder(">" if msg.is_bigendian else "<")
    row = int(msg.width) * channels * dtype.itemsize
    if msg.step < row or len(msg.data) != msg.step * msg.height:
        raise ConversionError(
            f"Image ({msg.encoding}): {len(msg.data)} bytes do not match height {msg.height} "
            f"x step {msg.step} "
            f"(a row needs {row} bytes)"
        )
    raw = np.frombuffer(bytes(msg.data), dtype=np.uint8).reshape(msg.height, msg.step)[:, :row]
    pixels = np.ascontiguousarray(raw).view(dtype).reshape(msg.height, msg.width, channels)
    return pixels.astype(dtype.newbyteorder("="), copy=False)


def rgb_image_to_array(msg: Image) -> np.ndarray:
    """HxWx3 uint8 RGB pixels of an ``rgb8`` or ``bgr8`` image.

    Raises:
        ConversionError: another encoding, or a data size that does not match height and step.
    """
    if msg.encoding not in ("rgb8", "bgr8"):
        raise ConversionError(
            f"colour Image: encoding {msg.encoding!r} not supported (expected rgb8 or bgr8)"
        )
    pixels = _pixels(msg, np.dtype(np.uint8), 3)
    return np.ascontiguousarray(pixels[..., ::-1] if msg.encoding == "bgr8" else pixels)


def depth_image_to_metres(msg: Image) -> np.ndarray:
    """HxW float32 depth in metres of a ``16UC1`` (mm) or ``32FC1`` (m) image; no-data pixels (0) are NaN.

    Raises:
        ConversionError: another encoding, or a data size that does not match height and step.
    """
    if msg.encoding in ("16UC1", "mono16"):
        return depth_mm_to_metres(_pixels(msg, np.dtype(np.uint16), 1)[..., 0])
    if msg.encoding != "32FC1":
        raise ConversionError(
            f"depth Image: encoding {msg.encoding!r} not supported (expected 16UC1 or 32FC1)"
        )
    metres = _pixels(msg, np.dtype(np.float32), 1)[..., 0].copy()
    metres[~np.isfinite(metres) | (metres <= 0)] = np.nan
    return metres


def camera_info_to_k(msg: CameraInfo) -> np.ndarray:
    """The 3x3 intrinsics ``K`` of a ``CameraInfo`` (px).

    Raises:
        ConversionError: ``K`` is all zeros (an uncalibrated camera) or not finite.
    """
    k = np.asarray(msg.k, dtype=np.float64).reshape(3, 3)
    if not np.all(np.isfinite(k)) or k[0, 0] <= 0 or k[1, 1] <= 0:
        raise ConversionError(
            f"CameraInfo ({msg.header.frame_id!r}): K has no valid focal length: {k.tolist()}"
        )
    return k


def transform_to_matrix(transform: Transform | TransformStamped) -> np.ndarray:
    """4x4 homogeneous matrix of a ``Transform``: maps child-frame points to parent-frame points.

    Raises:
        ConversionError: a zero or non-finite rotation quaternion.
    """
    if isinstance(transform, TransformStamped):
        transform = transform.transform
    r, t = transform.rotation, transform.translation
    try:
        rotation = quaternion_matrix(r.w, r.x, r.y, r.z)
    except ValueError as err:
        raise ConversionError(f"Transform: {err}") from None
    mat = np.eye(4)
    mat[:3, :3] = rotation
    mat[:3, 3] = [t.x, t.y, t.z]
    return mat


class TfTree:
    """The latest transform of each child frame from ``/tf`` and ``/tf_static``, with chain look-ups.

    A minimal stand-in for ``tf2_ros.Buffer`` that keeps no history (the scene's frames are fixed or
    change at most once per observation) and needs no node.
    """

    _MAX_DEPTH = 64

    def __init__(self) -> None:
        """Start empty."""
        self._edges: dict[str, tuple[str, np.ndarray, float]] = {}

    def add(self, transforms: TFMessage | Iterable[TransformStamped]) -> None:
        """Record the transforms of a ``TFMessage`` (or of an iterable of ``TransformStamped``)."""
        items = transforms.transforms if isinstance(transforms, TFMessage) else transforms
        for tf in items:
            self._edges[tf.child_frame_id] = (
                tf.header.frame_id,
                transform_to_matrix(tf),
                stamp_to_seconds(tf.header.stamp),
            )

    @property
    def frames(self) -> list[str]:
        """Every frame seen, parents and children."""
        return sorted(set(self._edges) | {p for p, _, _ in self._edges.values()})

    def _to_root(self, frame: str) -> tuple[list[str], np.ndarray]:
        """Chain of frames from ``frame`` to its root and the pose of ``frame`` in that root."""
        chain = [frame]
        pose = np.eye(4)
        while chain[-1] in self._edges:
            parent, mat, _ = self._edges[chain[-1]]
            pose = mat @ pose
            chain.append(parent)
            if len(chain) > self._MAX_DEPTH:
                raise ConversionError(
                    f"TF: frame {frame!r} has a cycle or a chain over {self._MAX_DEPTH} frames"
                )
        return chain, pose

    def lookup(self, target: str, source: str) -> np.ndarray:
        """Pose of ``source`` in ``target`` (4x4, maps ``source`` points to ``target`` points).

        Raises:
            ConversionError: either frame is unknown or they are not connected; names the frames known.
        """
        if target == source:
            return np.eye(4)
        t_chain, t_pose = self._to_root(target)
        s_chain, s_pose = self._to_root(source)
        if t_chain[-1] != s_chain[-1]:
            raise ConversionError(f"TF: no chain between {target!r} and {source!r} (frames: {self.frames})")
        return np.linalg.inv(t_pose) @ s_pose

    def latest_stamp(self, target: str, source: str) -> float:
        """Oldest stamp (s) on the chain between two frames (``inf`` when they are the same frame)."""
        t_chain, _ = self._to_root(target)
        s_chain, _ = self._to_root(source)
        stamps = [self._edges[f][2] for f in set(t_chain[:-1]) ^ set(s_chain[:-1]) if f in self._edges]
        return min(stamps) if stamps else math.inf


def observation_from_messages(
    *,
    joint_state: JointState,
    color: Image | None = None,
    depth: Image | None = None,
    camera_info: CameraInfo | None = None,
    camera_pose: np.ndarray | None = None,
    base_pose: np.ndarray | None = None,
    stamp: float | None = None,
) -> Observation:
    """Build an :class:`Observation` from the latest messages.

    Args:
        joint_state: the robot's joints.
        color: ``rgb8``/``bgr8`` image.
        depth: ``16UC1``/``32FC1`` image aligned to ``color``.
        camera_info: intrinsics of ``color``.
        camera_pose: 4x4 pose of the colour optical frame in the world (e.g. ``TfTree.lookup``).
        base_pose: 4x4 pose of the robot base in the world.
        stamp: observation time (s); the joint state's stamp when None.

    Raises:
        ConversionError: a message cannot be converted.
        PolicyError: the result breaks the observation contract (e.g. depth not aligned to colour).
    """
    names, pos, vel = joint_state_arrays(joint_state)
    return Observation(
        stamp=stamp_to_seconds(joint_state.header.stamp) if stamp is None else float(stamp),
        joint_names=names,
        joint_positions=pos,
        joint_velocities=vel,
        rgb=None if color is None else rgb_image_to_array(color),
        depth=None if depth is None else depth_image_to_metres(depth),
        camera_k=None if camera_info is None else camera_info_to_k(camera_info),
        camera_d=None if camera_info is None else np.asarray(camera_info.d, dtype=np.float64),
        camera_pose=None if camera_pose is None else np.asarray(camera_pose, dtype=np.float64),
        base_pose=None if base_pose is None else np.asarray(base_pose, dtype=np.float64),
    )


def _array_msg(values: Iterable[float], label: str) -> Float64MultiArray:
    msg = Float64MultiArray()
    data = [float(v) for v in values]
    msg.layout.dim = [MultiArrayDimension(label=label, size=len(data), stride=len(data))]
    msg.data = data
    return msg


def action_to_messages(action: Action) -> tuple[Float64MultiArray, Float64MultiArray]:
    """The arm and gripper command messages of ``action`` (forward_command_controller layout)."""
    return _array_msg(action.arm_positions, "joints"), _array_msg([action.gripper], "gripper")
