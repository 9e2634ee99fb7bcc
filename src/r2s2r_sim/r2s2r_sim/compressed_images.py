"""Compressed camera images as image_transport's ``compressed`` and ``compressedDepth`` plugins carry them.

Real bags and remote links rarely hold raw images: a ``sensor_msgs/msg/CompressedImage`` goes on
``<image topic>/compressed`` (colour; ``format`` like ``"rgb8; jpeg compressed bgr8"``: the raw encoding,
then the codec and the channel order it was encoded in) and on ``<depth topic>/compressedDepth`` (depth;
``format`` like ``"16UC1; compressedDepth png"``).  A ``compressedDepth`` payload is a 12-byte
little-endian ``ConfigHeader`` (``int32`` compression format, 0 = inverse depth; two ``float32`` depth
quantisation parameters, used for ``32FC1`` only) followed by the PNG bytes.  A ``16UC1`` image is the
PNG of the millimetres themselves (lossless); a ``32FC1`` one is the PNG of its quantised inverse depth
``A / z + B``, decoded as ``A / (v - B)``, with ``v = 0`` for no data.

Pure functions over numpy arrays and bytes (no rclpy, no message types), so the policy node, the
recorder, real2sim's bag reading and the sim's publishers all encode and decode one way; OpenCV does the
image codecs.
"""

from __future__ import annotations

import struct

import cv2
import numpy as np

__all__ = [
    "COMPRESSED",
    "COMPRESSED_DEPTH_SUFFIX",
    "COMPRESSED_SUFFIX",
    "RAW",
    "TRANSPORTS",
    "ImageCodecError",
    "check_transport",
    "decode_color",
    "decode_depth",
    "encode_color",
    "encode_depth",
    "is_depth_format",
    "transport_topic",
]

RAW = "raw"
COMPRESSED = "compressed"
TRANSPORTS = (RAW, COMPRESSED)  # image_transport's names for the two ways an image topic is carried
COMPRESSED_SUFFIX = "/compressed"
COMPRESSED_DEPTH_SUFFIX = "/compressedDepth"

_HEADER = struct.Struct("<iff")  # compressed_depth_image_transport's ConfigHeader
_INV_DEPTH = 0
# compressed_depth_image_transport's defaults for a 32FC1 image: farthest depth (m) and quantisation.
DEPTH_MAX_M = 10.0
DEPTH_QUANTIZATION = 100.0


class ImageCodecError(ValueError):
    """Image bytes that cannot be encoded or decoded: an unknown format string, codec or encoding."""


def check_transport(value: str, what: str) -> str:
    """``value`` if it is ``raw`` or ``compressed``; else an error naming ``what`` and the allowed values."""
    if value not in TRANSPORTS:
        raise ImageCodecError(f"{what}: got {value!r}; allowed: {', '.join(TRANSPORTS)}")
    return value


def transport_topic(topic: str, transport: str, *, depth: bool) -> str:
    """The topic an image of raw topic ``topic`` is on under ``transport`` (image_transport's naming)."""
    if check_transport(transport, "image transport") == RAW:
        return topic
    return topic + (COMPRESSED_DEPTH_SUFFIX if depth else COMPRESSED_SUFFIX)


def is_depth_format(fmt: str) -> bool:
    """Whether a ``CompressedImage.format`` is the ``compressedDepth`` plugin's."""
    return "compressedDepth" in fmt


# ------------------------------------------------------------------------------------------- colour


def encode_color(rgb: np.ndarray, *, codec: str = "jpeg", quality: int = 95) -> tuple[str, bytes]:
    """``(format, data)`` of an H x W x 3 uint8 RGB image, as the ``compressed`` plugin publishes it.

    Encoded in bgr8 order (what OpenCV writes), so a decoder that follows the format string gets it back.
    """
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ImageCodecError(f"colour image: expected an HxWx3 uint8 array, got {rgb.dtype} {rgb.shape}")
    if codec == "jpeg":
        ext, params = ".jpg", [cv2.IMWRITE_JPEG_QUALITY, int(quality)]
    elif codec == "png":
        ext, params = ".png", [cv2.IMWRITE_PNG_COMPRESSION, 1]
    else:
        raise ImageCodecError(f"colour image: codec {codec!r} not supported (jpeg, png)")
    ok, buf = cv2.imencode(ext, np.ascontiguousarray(rgb[..., ::-1]), params)
    if not ok:
        raise ImageCodecError(f"colour image: cv2.imencode({ext}) failed")
    return f"rgb8; {codec} compressed bgr8", buf.tobytes()


def decode_color(fmt: str, data: bytes) -> np.ndarray:
    """H x W x 3 uint8 RGB pixels of a ``compressed`` image (jpeg or png, colour).

    The channel order is the format string's target (``... compressed bgr8`` or ``rgb8``); a bare
    ``"jpeg"``/``"png"`` (older publishers) is OpenCV's bgr8.

    Raises:
        ImageCodecError: a depth format, an undecodable payload or not a 3-channel image.
    """
    if is_depth_format(fmt):
        raise ImageCodecError(f"colour image: format {fmt!r} is a compressedDepth one")
    target = fmt.split("compressed", 1)[1].strip() if "compressed" in fmt else "bgr8"
    img = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_UNCHANGED)
    if img is None:
        raise ImageCodecError(f"colour image ({fmt!r}): {len(data)} bytes do not decode")
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise ImageCodecError(f"colour image ({fmt!r}): decoded to {img.dtype} {img.shape}, not 8-bit colour")
    return np.ascontiguousarray(img if target.startswith("rgb") else img[..., ::-1])


# -------------------------------------------------------------------------------------------- depth


def encode_depth(depth: np.ndarray, *, png_level: int = 1) -> tuple[str, bytes]:
    """``(format, data)`` of a depth image as the ``compressedDepth`` plugin publishes it (png).

    ``depth``: H x W uint16 millimetres (``16UC1``, exact) or float32 metres (``32FC1``, quantised
    inverse depth; beyond :data:`DEPTH_MAX_M`, NaN or <= 0 is no data).
    """
    if depth.ndim != 2 or depth.dtype not in (np.uint16, np.float32):
        raise ImageCodecError(
            f"depth image: expected an HxW uint16 or float32 array, got {depth.dtype} {depth.shape}"
        )
    if depth.dtype == np.uint16:
        encoding, params, pixels = "16UC1", (0.0, 0.0), depth
    else:
        a = DEPTH_QUANTIZATION * (DEPTH_QUANTIZATION + 1.0)
        b = 1.0 - a / DEPTH_MAX_M
        valid = np.isfinite(depth) & (depth > 0) & (depth < DEPTH_MAX_M)
        inv = np.zeros(depth.shape, dtype=np.float64)
        inv[valid] = a / depth[valid] + b
        encoding, params = "32FC1", (float(np.float32(a)), float(np.float32(b)))
        pixels = np.clip(inv, 0, 65535).astype(np.uint16)  # truncation, as the plugin's C++ cast
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(pixels), [cv2.IMWRITE_PNG_COMPRESSION, png_level])
    if not ok:
        raise ImageCodecError("depth image: cv2.imencode(.png) failed")
    return f"{encoding}; compressedDepth png", _HEADER.pack(_INV_DEPTH, *params) + buf.tobytes()


def decode_depth(fmt: str, data: bytes) -> np.ndarray:
    """The depth image of a ``compressedDepth`` payload: uint16 mm (``16UC1``) or float32 m (``32FC1``).

    In a ``32FC1`` image no-data pixels are NaN; in a ``16UC1`` one they stay 0, as in a raw image.

    Raises:
        ImageCodecError: not a compressedDepth png format, a payload shorter than its header, an
            undecodable PNG, or an encoding other than 16UC1/mono16/32FC1.
    """
    encoding, _, rest = fmt.partition(";")
    encoding, rest = encoding.strip(), rest.strip()
    if rest and not (rest == "compressedDepth" or rest.startswith("compressedDepth png")):
        raise ImageCodecError(f"depth image: format {fmt!r} not supported (only compressedDepth png)")
    if len(data) <= _HEADER.size:
        raise ImageCodecError(
            f"depth image ({fmt!r}): {len(data)} bytes, not even a ConfigHeader and an image"
        )
    _, quant_a, quant_b = _HEADER.unpack_from(data)
    img = cv2.imdecode(np.frombuffer(data, dtype=np.uint8, offset=_HEADER.size), cv2.IMREAD_UNCHANGED)
    if img is None or img.ndim != 2 or img.dtype != np.uint16:
        got = "nothing" if img is None else f"{img.dtype} {img.shape}"
        raise ImageCodecError(f"depth image ({fmt!r}): the PNG decodes to {got}, not one 16-bit channel")
    if encoding in ("16UC1", "mono16"):
        return img
    if encoding != "32FC1":
        raise ImageCodecError(f"depth image ({fmt!r}): encoding {encoding!r} not supported (16UC1, 32FC1)")
    inv = img.astype(np.float32)
    out = np.full(img.shape, np.nan, dtype=np.float32)
    nz = img > 0
    out[nz] = np.float32(quant_a) / (inv[nz] - np.float32(quant_b))
    return out
