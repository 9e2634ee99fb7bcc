"""The camera frames of a capture as arrays: decoded from their bag messages, undistorted for fusion.

real2sim's reading of the scene, the drawer's articulation phase and the slide phase all take their RGB-D
frames this one way, so a frame means the same thing to each of them.  A bag may hold the images raw
(``sensor_msgs/Image``) or as image_transport publishes them compressed (``sensor_msgs/CompressedImage`` on
``<image>/compressed`` and ``<depth>/compressedDepth``, :mod:`r2s2r_sim.compressed_images`): each bag is
read on the topics it has, raw ones first.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import cv2
import numpy as np
from r2s2r_sim.compressed_images import (
    COMPRESSED,
    RAW,
    ImageCodecError,
    decode_color,
    decode_depth,
    is_depth_format,
    transport_topic,
)

from r2s2r_capture.errors import BagError

__all__ = ["camera_topics", "depth_m", "image_array", "undistort"]


def camera_topics(bag_topics: Collection[str], color: str, depth: str) -> tuple[str, str]:
    """The colour and depth topics to read from a bag with ``bag_topics``: raw if it has any, else compressed.

    ``color`` and ``depth`` are the raw image topics (the interface's); a bag with neither form gets the
    raw names (and then no frames).
    """
    for transport in (RAW, COMPRESSED):
        pair = (transport_topic(color, transport, depth=False), transport_topic(depth, transport, depth=True))
        if any(t in bag_topics for t in pair):
            return pair
    return color, depth


def image_array(msg: Any, what: str) -> np.ndarray:
    """A ``sensor_msgs/Image`` or ``CompressedImage`` as an array: RGB (H, W, 3) uint8, or depth (H, W).

    Depth is as encoded: uint16 millimetres or float32 metres (a compressed ``32FC1`` has NaN for no data).

    Raises:
        BagError: an encoding other than rgb8, bgr8, 16UC1, mono16 or 32FC1, or a compressed image that does
            not decode (``what`` names the message).
    """
    if hasattr(msg, "format"):  # sensor_msgs/CompressedImage
        try:
            data = bytes(msg.data)
            return (
                decode_depth(msg.format, data)
                if is_depth_format(msg.format)
                else decode_color(msg.format, data)
            )
        except ImageCodecError as err:
            raise BagError(f"{what}: {err}") from None
    h, w = int(msg.height), int(msg.width)
    buf = np.asarray(msg.data, dtype=np.uint8)
    if msg.encoding in ("rgb8", "bgr8"):
        img = buf.reshape(h, int(msg.step))[:, : w * 3].reshape(h, w, 3)
        return img[..., ::-1].copy() if msg.encoding == "bgr8" else img.copy()
    if msg.encoding in ("16UC1", "mono16"):
        return buf.reshape(h, int(msg.step)).view(np.uint16)[:, :w].copy()
    if msg.encoding == "32FC1":
        return buf.reshape(h, int(msg.step)).view(np.float32)[:, :w].copy()
    raise BagError(f"{what}: unsupported image encoding {msg.encoding!r}")


def depth_m(img: np.ndarray) -> np.ndarray:
    """Depth in metres: 16-bit images are millimetres (the RealSense convention), float ones metres."""
    return img.astype(np.float64) / 1000.0 if img.dtype == np.uint16 else img.astype(np.float64)


def undistort(frames: Sequence[tuple[np.ndarray, np.ndarray]], K: np.ndarray, D: np.ndarray) -> list:
    """RGB-D ``frames`` undistorted with the calibrated ``D``, keeping ``K``: what the TSDF's pinhole expects.

    Colour is resampled bilinearly; depth takes the nearest pixel, so no depth is blended across an edge.
    """
    h, w = frames[0][1].shape
    mx, my = cv2.initUndistortRectifyMap(K, D, None, K, (w, h), cv2.CV_32FC1)
    out = []
    for rgb, depth in frames:
        out.append(
            (
                cv2.remap(rgb, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0),
                cv2.remap(depth, mx, my, cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT, borderValue=0),
            )
        )
    return out
