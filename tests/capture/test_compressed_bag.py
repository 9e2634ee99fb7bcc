"""real2sim reads a capture whose camera images are image_transport's compressed topics.

A bag is written by hand the way a real cell's recording with ``image_transport: compressed`` holds it:
the phase markers, ``CameraInfo``, and ``sensor_msgs/CompressedImage`` on ``<image>/compressed`` (JPEG) and
``<depth>/compressedDepth`` (PNG) only.  The frames real2sim reads must be the pixels that went in.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from r2s2r_capture.bags.messages import BagMessages
from r2s2r_capture.bags.reader import BagReader
from r2s2r_capture.bags.writer import BagWriter
from r2s2r_capture.procedures.session import PHASE_TOPIC, topic_names
from r2s2r_capture.real2sim.capture_data import read_capture
from r2s2r_capture.real2sim.frames import camera_topics, image_array
from r2s2r_sim.compressed_images import encode_color, encode_depth

H, W = 48, 64


def _frame(k: int) -> tuple[np.ndarray, np.ndarray]:
    y, x = np.mgrid[0:H, 0:W]
    rgb = np.stack([x * 4, y * 5, np.full_like(x, 40 * k)], axis=-1).astype(np.uint8)
    depth = (800 + 10 * x + 3 * y + 100 * k).astype(np.uint16)
    depth[:4, :4] = 0  # no data
    return rgb, depth


def _write_bag(path: Path, *, raw_too: bool = False) -> list[tuple[np.ndarray, np.ndarray]]:
    names = topic_names("camera")
    color, depth = names["color_image"][0], names["depth_image"][0]
    frames = [_frame(k) for k in range(2)]
    with BagWriter(path) as bag:
        msgs = BagMessages(bag)
        msgs.add_topic("phase", PHASE_TOPIC, "std_msgs/msg/String")
        msgs.add_topic("color_info", names["color_info"][0], "sensor_msgs/msg/CameraInfo")
        msgs.add_topic("color_c", color + "/compressed", "sensor_msgs/msg/CompressedImage")
        msgs.add_topic("depth_c", depth + "/compressedDepth", "sensor_msgs/msg/CompressedImage")
        if raw_too:
            msgs.add_topic("color", color, "sensor_msgs/msg/Image")
            msgs.add_topic("depth", depth, "sensor_msgs/msg/Image")
        t = 1_000_000_000
        msgs.string("phase", t, json.dumps({"phase": "scene", "event": "start"}))
        for rgb, d in frames:
            t += 100_000_000
            msgs.camera_info(t, "camera_color_optical_frame", W, H, np.diag([50.0, 50.0, 1.0]), np.zeros(5))
            msgs.compressed_image("color_c", t, "camera_color_optical_frame", *encode_color(rgb, quality=98))
            msgs.compressed_image("depth_c", t, "camera_color_optical_frame", *encode_depth(d))
            if raw_too:  # the raw image differs, so which one was read shows
                msgs.image("color", t, "camera_color_optical_frame", 255 - rgb, "rgb8")
                msgs.image("depth", t, "camera_color_optical_frame", d + 1, "16UC1")
        msgs.string("phase", t + 1, json.dumps({"phase": "scene", "event": "end"}))
    return frames


def test_read_capture_takes_the_scene_from_compressed_topics(tmp_path: Path) -> None:
    frames = _write_bag(tmp_path / "bag")
    data = read_capture([tmp_path / "bag"], ("shoulder_pan",))
    assert data.image_size == (W, H)
    assert len(data.scene_frames) == len(frames)
    for (rgb, depth_m), (rgb0, depth_mm) in zip(data.scene_frames, frames, strict=True):
        assert rgb.shape == (H, W, 3) and rgb.dtype == np.uint8
        assert np.abs(rgb.astype(int) - rgb0).mean() < 2.0  # JPEG
        np.testing.assert_array_equal(depth_m, depth_mm / 1000.0)  # PNG depth: exact millimetres


def test_a_bag_with_both_reads_the_raw_images(tmp_path: Path) -> None:
    frames = _write_bag(tmp_path / "bag", raw_too=True)
    names = topic_names("camera")
    color, depth = names["color_image"][0], names["depth_image"][0]
    with BagReader(tmp_path / "bag") as reader:
        assert camera_topics(reader.topics, color, depth) == (color, depth)
        first = next(m for m in reader.messages([depth + "/compressedDepth"]))
        np.testing.assert_array_equal(image_array(reader.deserialize(first), "depth"), frames[0][1])
    data = read_capture([tmp_path / "bag"], ("shoulder_pan",))
    np.testing.assert_array_equal(data.scene_frames[0][1], (frames[0][1] + 1) / 1000.0)
    assert camera_topics({"/other"}, color, depth) == (color, depth)
