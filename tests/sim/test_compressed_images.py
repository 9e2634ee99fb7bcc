"""Compressed images as image_transport's compressed and compressedDepth plugins carry them: round trips.

Colour (JPEG) comes back within a tolerance, PNG colour and 16UC1 depth exactly, 32FC1 depth within its
inverse-depth quantisation; the compressedDepth payload's 12-byte ConfigHeader and the format strings are
checked byte for byte, since other ROS tools read them.
"""

from __future__ import annotations

import struct

import cv2
import numpy as np
import pytest
from r2s2r_sim.compressed_images import (
    ImageCodecError,
    check_transport,
    decode_color,
    decode_depth,
    encode_color,
    encode_depth,
    is_depth_format,
    transport_topic,
)


def _scene(h: int = 60, w: int = 80) -> np.ndarray:
    """A smooth colour image with a sharp-edged red block: what JPEG keeps well, and a colour-order check."""
    y, x = np.mgrid[0:h, 0:w]
    rgb = np.stack([x * 255 // w, y * 255 // h, np.full_like(x, 90)], axis=-1).astype(np.uint8)
    rgb[10:30, 10:40] = (220, 20, 20)
    return rgb


def test_jpeg_colour_round_trip_within_tolerance_and_in_rgb_order() -> None:
    rgb = _scene()
    fmt, data = encode_color(rgb)
    assert fmt == "rgb8; jpeg compressed bgr8"
    assert data[:2] == b"\xff\xd8"  # a JPEG stream
    out = decode_color(fmt, data)
    assert out.shape == rgb.shape and out.dtype == np.uint8
    err = np.abs(out.astype(int) - rgb.astype(int))
    # chroma subsampling smears the block's edges; elsewhere a few grey levels
    assert err.mean() < 3.0 and np.median(err) <= 3, (err.mean(), err.max())
    assert np.all(np.abs(out[20, 25].astype(int) - (220, 20, 20)) < 12), out[20, 25]  # red stays red


def test_png_colour_is_exact() -> None:
    rgb = np.random.default_rng(0).integers(0, 256, (17, 23, 3), dtype=np.uint8)
    fmt, data = encode_color(rgb, codec="png")
    assert fmt == "rgb8; png compressed bgr8"
    np.testing.assert_array_equal(decode_color(fmt, data), rgb)


def test_colour_of_other_publishers_formats() -> None:
    rgb = _scene()
    ok, bgr_jpeg = cv2.imencode(".jpg", np.ascontiguousarray(rgb[..., ::-1]), [cv2.IMWRITE_JPEG_QUALITY, 98])
    assert ok
    # A bare codec name (older publishers) is OpenCV's bgr8, as is "bgr8; jpeg compressed bgr8".
    for fmt in ("jpeg", "bgr8; jpeg compressed bgr8"):
        assert np.abs(decode_color(fmt, bgr_jpeg.tobytes()).astype(int) - rgb).mean() < 2.0
    # An encoder that kept rgb order says so in the target.
    ok, rgb_png = cv2.imencode(".png", rgb)
    np.testing.assert_array_equal(decode_color("rgb8; png compressed rgb8", rgb_png.tobytes()), rgb)


def test_16uc1_depth_is_exact_with_image_transports_header() -> None:
    depth = np.random.default_rng(1).integers(0, 65535, (31, 47), dtype=np.uint16)
    depth[0, 0] = 0  # no data stays 0
    fmt, data = encode_depth(depth)
    assert fmt == "16UC1; compressedDepth png"
    assert is_depth_format(fmt)
    fmt_enum, a, b = struct.unpack("<iff", data[:12])
    assert (fmt_enum, a, b) == (0, 0.0, 0.0)  # INV_DEPTH; the quantisation is for 32FC1 only
    assert data[12:20] == b"\x89PNG\r\n\x1a\n"
    out = decode_depth(fmt, data)
    assert out.dtype == np.uint16
    np.testing.assert_array_equal(out, depth)


def test_32fc1_depth_within_quantisation_and_nan_for_no_data() -> None:
    z = np.random.default_rng(2).uniform(0.2, 4.0, (20, 30)).astype(np.float32)
    z[0, 0], z[0, 1], z[0, 2] = np.nan, 0.0, 12.0  # no data, no data, beyond depth_max (10 m)
    fmt, data = encode_depth(z)
    assert fmt == "32FC1; compressedDepth png"
    _, a, b = struct.unpack("<iff", data[:12])
    # compressed_depth_image_transport's defaults: depth_quantization 100, depth_max 10 m
    assert a == pytest.approx(100.0 * 101.0) and b == pytest.approx(1.0 - 100.0 * 101.0 / 10.0)
    out = decode_depth(fmt, data)
    assert out.dtype == np.float32 and np.isnan(out[0, :3]).all()
    valid = np.isfinite(z) & (z > 0) & (z < 10.0)
    # one inverse-depth step at z is about z^2 / a: under 2 mm at 4 m
    np.testing.assert_allclose(out[valid], z[valid], atol=(4.0**2) / a + 1e-6)


def test_bad_payloads_and_formats_say_what_is_wrong() -> None:
    fmt, data = encode_depth(np.ones((4, 4), dtype=np.uint16))
    with pytest.raises(ImageCodecError, match="not even a ConfigHeader"):
        decode_depth(fmt, data[:12])
    with pytest.raises(ImageCodecError, match="only compressedDepth png"):
        decode_depth("16UC1; compressedDepth rvl", data)
    with pytest.raises(ImageCodecError, match="encoding 'bgr8' not supported"):
        decode_depth("bgr8; compressedDepth png", data)
    with pytest.raises(ImageCodecError, match="do not decode"):
        decode_color("rgb8; jpeg compressed bgr8", b"not a jpeg")
    with pytest.raises(ImageCodecError, match="is a compressedDepth one"):
        decode_color(fmt, data)
    with pytest.raises(ImageCodecError, match="codec 'webp' not supported"):
        encode_color(_scene(), codec="webp")


def test_topics_follow_image_transports_naming() -> None:
    raw = "/camera/color/image_raw"
    assert transport_topic(raw, "raw", depth=False) == raw
    assert transport_topic(raw, "compressed", depth=False) == raw + "/compressed"
    assert transport_topic("/d/image_raw", "compressed", depth=True) == "/d/image_raw/compressedDepth"
    with pytest.raises(ImageCodecError, match="image_transport: got 'theora'; allowed: raw, compressed"):
        check_transport("theora", "image_transport")
