"""Message building from simulator state (and back): the one place that knows ROS message layouts.

Pure functions of their arguments, with no node state, so the sim node and the policy node share them.
Frames follow REP-103/REP-105: ``world`` (fixed), ``base_link`` (robot base), ``<camera>_link`` (x forward,
y left, z up) and the camera's optical frame (``<camera>_color_optical_frame``: z forward, x right, y down).
Quaternions from the core are wxyz (MuJoCo); ROS messages are xyzw.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import TransformStamped
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, JointState
from std_msgs.msg import Float64MultiArray, Header
from tf2_msgs.msg import TFMessage
from transforms3d import quaternions as tq

from r2s2r_msgs.msg import EpisodeOutcome, Metric
from r2s2r_sim import compressed_images as codec

__all__ = [
    "BASE_FRAME",
    "EE_FRAME",
    "LINK_TO_OPTICAL_WXYZ",
    "WORLD_FRAME",
    "CommandError",
    "camera_info_msg",
    "camera_info_to_k",
    "camera_link_frame",
    "camera_link_pose",
    "clock_msg",
    "command_array",
    "compressed_image_msgs",
    "depth_image_msg",
    "duration_msg",
    "episode_outcome_msg",
    "image_from_compressed",
    "image_to_numpy",
    "joint_state_msg",
    "relative_pose",
    "rgb_image_msg",
    "tf_message",
    "time_msg",
    "time_to_ns",
    "transform_msg",
]

WORLD_FRAME = "world"
BASE_FRAME = "base_link"
EE_FRAME = "ee_link"
# Rotation of the optical frame in the camera link frame (REP-103): optical z = link x, optical x = -link y,
# optical y = -link z; the usual rpy (-pi/2, 0, -pi/2) of realsense2_description.
LINK_TO_OPTICAL_WXYZ = np.array([0.5, -0.5, 0.5, -0.5])
_BIG_ENDIAN = int(sys.byteorder == "big")


class CommandError(ValueError):
    """A command message cannot be turned into a command array (wrong layout or dtype)."""


def time_msg(ns: int) -> Time:
    """Return a ``builtin_interfaces/Time`` for ``ns`` nanoseconds (>= 0)."""
    sec, nanosec = divmod(int(ns), 1_000_000_000)
    return Time(sec=sec, nanosec=nanosec)


def time_to_ns(stamp: Time) -> int:
    """Return the nanoseconds of a ``builtin_interfaces/Time``."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def duration_msg(seconds: float) -> Duration:
    """Return a ``builtin_interfaces/Duration`` of ``seconds`` (>= 0, rounded to ns)."""
    sec, nanosec = divmod(round(seconds * 1e9), 1_000_000_000)
    return Duration(sec=int(sec), nanosec=int(nanosec))


def _header(stamp: Time, frame_id: str) -> Header:
    return Header(stamp=stamp, frame_id=frame_id)


def clock_msg(stamp: Time) -> Clock:
    """Return a ``rosgraph_msgs/Clock`` holding ``stamp``."""
    return Clock(clock=stamp)


def joint_state_msg(
    stamp: Time, names: Sequence[str], position: np.ndarray, velocity: np.ndarray, effort: np.ndarray
) -> JointState:
    """Return a ``JointState`` (rad, m; rad/s, m/s; N m, N), arrays in ``names`` order.

    Raises:
        ValueError: an array's length differs from ``len(names)``.
    """
    n = len(names)
    for label, arr in (("position", position), ("velocity", velocity), ("effort", effort)):
        if len(arr) != n:
            raise ValueError(f"joint_state_msg: {label} has {len(arr)} values for {n} joint names")
    msg = JointState(header=_header(stamp, ""))
    msg.name = list(names)
    msg.position = np.asarray(position, dtype=np.float64).tolist()
    msg.velocity = np.asarray(velocity, dtype=np.float64).tolist()
    msg.effort = np.asarray(effort, dtype=np.float64).tolist()
    return msg


def rgb_image_msg(rgb: np.ndarray, stamp: Time, frame_id: str) -> Image:
    """Return an ``rgb8`` ``Image`` from an ``HxWx3 uint8`` array.

    Raises:
        ValueError: wrong shape or dtype.
    """
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"rgb_image_msg: expected an HxWx3 uint8 array, got {rgb.dtype} {rgb.shape}")
    height, width = rgb.shape[:2]
    msg = Image(header=_header(stamp, frame_id), height=height, width=width, encoding="rgb8")
    msg.is_bigendian = 0
    msg.step = width * 3
    msg.data = np.ascontiguousarray(rgb).tobytes()
    return msg


def depth_image_msg(depth_mm: np.ndarray, stamp: Time, frame_id: str) -> Image:
    """Return a ``16UC1`` ``Image`` (millimetres, 0 = no data; realsense2_camera's format).

    Raises:
        ValueError: not an ``HxW uint16`` array.
    """
    if depth_mm.dtype != np.uint16 or depth_mm.ndim != 2:
        raise ValueError(
            f"depth_image_msg: expected an HxW uint16 array (mm), got {depth_mm.dtype} {depth_mm.shape}"
        )
    height, width = depth_mm.shape
    msg = Image(header=_header(stamp, frame_id), height=height, width=width, encoding="16UC1")
    msg.is_bigendian = _BIG_ENDIAN
    msg.step = width * 2
    msg.data = np.ascontiguousarray(depth_mm).tobytes()
    return msg


def image_to_numpy(msg: Image) -> np.ndarray:
    """Return the pixels of an ``rgb8``/``bgr8`` (HxWx3 uint8), ``mono8`` or ``16UC1`` (HxW) image.

    Raises:
        ValueError: other encodings, or a data size that does not match height/step.
    """
    layouts: Mapping[str, tuple[np.dtype, int]] = {
        "rgb8": (np.dtype(np.uint8), 3),
        "bgr8": (np.dtype(np.uint8), 3),
        "mono8": (np.dtype(np.uint8), 1),
        "16UC1": (np.dtype(np.uint16), 1),
        "mono16": (np.dtype(np.uint16), 1),
    }
    if msg.encoding not in layouts:
        raise ValueError(
            f"image_to_numpy: unsupported encoding {msg.encoding!r} (supported: {sorted(layouts)})"
        )
    dtype, channels = layouts[msg.encoding]
    dtype = dtype.newbyteorder(">" if msg.is_bigendian else "<")
    row = msg.width * channels * dtype.itemsize
    if msg.step < row or len(msg.data) != msg.step * msg.height:
        raise ValueError(
            f"image_to_numpy: {len(msg.data)} bytes do not match height {msg.height} x step {msg.step} "
            f"(row needs {row} bytes)"
        )
    raw = np.frombuffer(msg.data, dtype=np.uint8).reshape(msg.height, msg.step)[:, :row]
    pixels = np.ascontiguousarray(raw).view(dtype).reshape(msg.height, msg.width, channels)
    pixels = pixels.astype(dtype.newbyteorder("="), copy=False)
    return pixels[..., 0] if channels == 1 else pixels


def compressed_image_msgs(color: Image, depth: Image) -> tuple[CompressedImage, CompressedImage]:
    """A frame's colour (jpeg) and depth (compressedDepth png) images as image_transport publishes them.

    Raises:
        ValueError: an image of an encoding :func:`image_to_numpy` does not read, or not rgb8 / 16UC1.
    """
    rgb = image_to_numpy(color)
    if color.encoding == "bgr8":
        rgb = np.ascontiguousarray(rgb[..., ::-1])
    out = []
    for raw, (fmt, data) in (
        (color, codec.encode_color(rgb)),
        (depth, codec.encode_depth(image_to_numpy(depth))),
    ):
        msg = CompressedImage(header=_header(raw.header.stamp, raw.header.frame_id), format=fmt)
        msg.data = data
        out.append(msg)
    return out[0], out[1]


def image_from_compressed(msg: CompressedImage) -> Image:
    """The raw ``Image`` a ``CompressedImage`` (``compressed`` or ``compressedDepth``) carries, same header.

    Colour comes back as ``rgb8``, depth as ``16UC1`` (mm) or ``32FC1`` (m) as it was encoded.

    Raises:
        ValueError: (:class:`~r2s2r_sim.compressed_images.ImageCodecError`) a format or payload that
            does not decode.
    """
    fmt, data = str(msg.format), bytes(msg.data)
    if codec.is_depth_format(fmt):
        pixels = codec.decode_depth(fmt, data)
        encoding, channels = ("16UC1" if pixels.dtype == np.uint16 else "32FC1"), 1
    else:
        pixels, encoding, channels = codec.decode_color(fmt, data), "rgb8", 3
    height, width = pixels.shape[:2]
    out = Image(header=msg.header, height=height, width=width, encoding=encoding)
    out.is_bigendian = _BIG_ENDIAN
    out.step = width * channels * pixels.dtype.itemsize
    out.data = np.ascontiguousarray(pixels).tobytes()
    return out


def camera_info_msg(k: np.ndarray, width: int, height: int, stamp: Time, frame_id: str) -> CameraInfo:
    """Return a distortion-free pinhole ``CameraInfo``.

    ``K`` as given, ``R`` identity, ``P = [K | 0]`` (monocular), ``D`` five zeros with ``plumb_bob``
    (what realsense2_camera publishes for its rectified colour stream).

    Raises:
        ValueError: ``k`` is not a finite 3x3 matrix.
    """
    k = np.asarray(k, dtype=np.float64)
    if k.shape != (3, 3) or not np.all(np.isfinite(k)):
        raise ValueError(f"camera_info_msg: K must be a finite 3x3 matrix, got shape {k.shape}")
    msg = CameraInfo(header=_header(stamp, frame_id), width=int(width), height=int(height))
    msg.distortion_model = "plumb_bob"
    msg.d = [0.0] * 5
    msg.k = k.reshape(-1).tolist()
    msg.r = np.eye(3).reshape(-1).tolist()
    msg.p = np.hstack([k, np.zeros((3, 1))]).reshape(-1).tolist()
    return msg


def camera_info_to_k(msg: CameraInfo) -> np.ndarray:
    """Return ``K`` of a ``CameraInfo`` as a 3x3 array."""
    return np.asarray(msg.k, dtype=np.float64).reshape(3, 3)


def camera_link_frame(camera: str) -> str:
    """Return the body frame id of camera ``camera`` (``<camera>_link``)."""
    return f"{camera}_link"


def _normalized(quat_wxyz: np.ndarray) -> np.ndarray:
    q = np.asarray(quat_wxyz, dtype=np.float64)
    norm = float(np.linalg.norm(q))
    if not math.isfinite(norm) or norm < 1e-12:
        raise ValueError(f"not a valid quaternion: {q.tolist()}")
    return q / norm


def relative_pose(
    parent_pos: np.ndarray, parent_quat: np.ndarray, child_pos: np.ndarray, child_quat: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Return the pose of ``child`` in ``parent``, both given in a common frame (wxyz quaternions)."""
    q_parent_inv = tq.qinverse(_normalized(parent_quat))
    pos = tq.rotate_vector(np.asarray(child_pos, float) - np.asarray(parent_pos, float), q_parent_inv)
    quat = _normalized(tq.qmult(q_parent_inv, _normalized(child_quat)))
    return pos, quat


def camera_link_pose(optical_pos: np.ndarray, optical_quat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return the ``<camera>_link`` pose (REP-103 body axes) from the optical-frame pose (same parent)."""
    quat = _normalized(tq.qmult(_normalized(optical_quat), tq.qinverse(LINK_TO_OPTICAL_WXYZ)))
    return np.asarray(optical_pos, dtype=np.float64), quat


def transform_msg(
    parent: str, child: str, pos: np.ndarray, quat_wxyz: np.ndarray, stamp: Time
) -> TransformStamped:
    """Return the ``TransformStamped`` placing ``child`` at ``pos`` (m), ``quat_wxyz`` in ``parent``."""
    q = _normalized(quat_wxyz)
    msg = TransformStamped(header=_header(stamp, parent), child_frame_id=child)
    t = msg.transform.translation
    t.x, t.y, t.z = (float(v) for v in pos)
    r = msg.transform.rotation
    r.w, r.x, r.y, r.z = (float(v) for v in q)
    return msg


def tf_message(transforms: Sequence[TransformStamped]) -> TFMessage:
    """Return a ``TFMessage`` of ``transforms``."""
    return TFMessage(transforms=list(transforms))


def command_array(msg: Float64MultiArray) -> np.ndarray:
    """Return the data of a command message as a float64 vector (not checked for finiteness or length).

    ``layout`` is ignored unless it declares more than one dimension, which a position command never has.

    Raises:
        CommandError: a multi-dimensional layout.
    """
    if len(msg.layout.dim) > 1:
        raise CommandError(f"command has a {len(msg.layout.dim)}-dimensional layout; expected a flat vector")
    return np.asarray(msg.data, dtype=np.float64).copy()


def episode_outcome_msg(
    *,
    stamp: Time,
    episode_index: int,
    policy_id: str,
    world_id: str,
    variation_seed: int,
    world_hash: str,
    success: bool,
    failure_reason: str,
    duration_s: float,
    metrics: Mapping[str, float],
) -> EpisodeOutcome:
    """Return an ``EpisodeOutcome``; metrics are sorted by name, ``failure_reason`` empty on success."""
    msg = EpisodeOutcome(header=_header(stamp, ""))
    msg.episode_index = int(episode_index)
    msg.policy_id = policy_id
    msg.world_id = world_id
    msg.variation_seed = int(variation_seed)
    msg.world_hash = world_hash
    msg.success = bool(success)
    msg.failure_reason = "" if success else failure_reason
    msg.duration = duration_msg(max(0.0, duration_s))
    msg.metrics = [Metric(name=name, value=float(metrics[name])) for name in sorted(metrics)]
    return msg
