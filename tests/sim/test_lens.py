"""The sim draws a camera's lens distortion: points land where ``cv2.projectPoints(P, K, D)`` puts them."""

from __future__ import annotations

import shutil
from pathlib import Path

import cv2
import mujoco
import numpy as np
import pytest
import yaml
from conftest import BUNDLED
from r2s2r_sim.cells.camera_frames import CameraFrames
from r2s2r_sim.cells.sim_cell import SimCell
from r2s2r_sim.errors import WorldError
from r2s2r_sim.render.lens import pinhole_margin
from r2s2r_sim.render.profile import FULL
from r2s2r_sim.world.config import CameraConfig, load_world_config
from r2s2r_sim.world.sim_world import SimWorld

# Stronger than a D435's colour lens, so that ignoring it would miss by tens of pixels at the corners.
D = (-0.21, 0.09, 0.0012, -0.0009, -0.02)

SENSOR_CAMERA = """<camera name="cal" pos="0 0 1" resolution="640 480" sensorsize="0.00192 0.00144"
    focalpixel="606.7 600.2" principalpixel="-12.3 8.4"/>"""
FOVY_CAMERA = '<camera name="cal" pos="0 0 1" fovy="45"/>'


def _scene(camera: str, sphere: tuple[float, float]) -> tuple[mujoco.MjModel, mujoco.MjData]:
    xml = f"""<mujoco><visual><global offwidth="640" offheight="480"/></visual><worldbody>{camera}
      <geom type="sphere" size="0.012" pos="{sphere[0]} {sphere[1]} 0" material="m"/></worldbody>
      <asset><material name="m" rgba="0 1 0 1" emission="1" specular="0"/></asset></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return model, data


def _green(rgb: np.ndarray) -> np.ndarray:
    r, g, b = (rgb[..., i].astype(int) for i in range(3))
    return (g > 150) & (r < 110) & (b < 110)


class _Request:
    def __init__(self, width: int, height: int, supersample: int) -> None:
        self.width, self.height, self.supersample = width, height, supersample


@pytest.mark.parametrize("camera", [SENSOR_CAMERA, FOVY_CAMERA], ids=["sensor", "fovy"])
@pytest.mark.parametrize(("width", "height", "supersample"), [(640, 480, 1), (320, 240, 1), (320, 240, 2)])
@pytest.mark.parametrize("sphere", [(0.0, 0.0), (0.3, 0.2), (-0.33, -0.21), (0.36, -0.05)])
def test_points_land_where_k_and_d_put_them(
    camera: str, width: int, height: int, supersample: int, sphere: tuple[float, float]
) -> None:
    model, data = _scene(camera, sphere)
    config = CameraConfig(name="cal", mjcf_camera="cal", width=640, height=480, rate_hz=15.0,
                          frame_id="cal_optical", distortion=D)  # fmt: skip
    with CameraFrames(model, "cal", config, FULL) as frames:
        frame = frames.render(data, _Request(width, height, supersample))
    assert frame.rgb.shape == (height, width, 3)
    np.testing.assert_array_equal(frame.d, D)
    # The camera looks down -z from 1 m: the sphere's optical-frame point is (x, -y, 1).
    point = np.array([[sphere[0], -sphere[1], 1.0]])
    expected, _ = cv2.projectPoints(point, np.zeros(3), np.zeros(3), frame.k, np.asarray(D))
    pinhole = frame.k @ point[0]
    v, u = np.nonzero(_green(frame.rgb))
    centroid = np.array([u.mean(), v.mean()])
    assert np.allclose(centroid, expected.ravel(), atol=0.6), (centroid, expected.ravel(), pinhole[:2])
    # Depth stays aligned to colour: the sphere's surface (1 m less up to its radius) under its pixels,
    # all but the rim, where bilinear colour is still green and nearest depth already background.
    on_sphere = np.abs(frame.depth[v, u] - 1.0) < 0.013
    assert on_sphere.mean() > 0.8, on_sphere.mean()


def test_a_distorted_image_has_no_black_border() -> None:
    """Barrel distortion pulls rays from outside the pinhole view into the corners: the render's margin
    covers them, so a plane filling the view fills every pixel."""
    xml = f"""<mujoco><visual><global offwidth="640" offheight="480"/></visual><worldbody>{SENSOR_CAMERA}
      <geom type="plane" size="5 5 0.1" material="m"/></worldbody>
      <asset><material name="m" rgba="0 1 0 1" emission="1" specular="0"/></asset></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    config = CameraConfig(name="cal", mjcf_camera="cal", width=640, height=480, rate_hz=15.0,
                          frame_id="cal_optical", distortion=D)  # fmt: skip
    with CameraFrames(model, "cal", config, FULL) as frames:
        frame = frames.render(data)
    assert _green(frame.rgb).all()
    assert np.all(frame.depth > 0.99)
    mx, my = pinhole_margin(frame.k, np.asarray(D), 640, 480)
    assert mx > 10 and my > 10  # this lens does reach outside the pinhole view


def test_an_ideal_camera_draws_mujocos_image_untouched() -> None:
    model, data = _scene(SENSOR_CAMERA, (0.1, 0.05))
    ideal = CameraConfig(name="cal", mjcf_camera="cal", width=640, height=480, rate_hz=15.0, frame_id="f")
    lens = CameraConfig(name="cal", mjcf_camera="cal", width=640, height=480, rate_hz=15.0, frame_id="f",
                        distortion=D)  # fmt: skip
    from r2s2r_sim.render.renderer import RgbdRenderer

    with CameraFrames(model, "cal", ideal, FULL) as frames:
        frame = frames.render(data)
    with RgbdRenderer(model, 640, 480, profile=FULL) as renderer:
        rgb, depth = renderer.render(data, "cal", depth_range=ideal.depth_range)
    np.testing.assert_array_equal(frame.rgb, rgb)
    np.testing.assert_array_equal(frame.depth, depth)
    np.testing.assert_array_equal(frame.d, np.zeros(5))
    with CameraFrames(model, "cal", lens, FULL) as frames:
        assert not np.array_equal(frames.render(data).rgb, rgb)


def _world_with_lens(tmp_path: Path, distortion: object) -> Path:
    dst = tmp_path / "world"
    shutil.copytree(BUNDLED, dst)
    raw = yaml.safe_load((dst / "world.yaml").read_text())
    raw["cameras"][0]["distortion"] = distortion
    (dst / "world.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return dst


def test_world_yaml_carries_the_lens_to_the_cell(tmp_path: Path) -> None:
    coefficients = dict(zip(("k1", "k2", "p1", "p2", "k3"), D, strict=True))
    folder = _world_with_lens(tmp_path, {"model": "plumb_bob", **coefficients})
    world = SimWorld(folder)
    assert world.config.cameras[0].distortion == D
    cell = SimCell(world, world_dir=folder)
    np.testing.assert_array_equal(cell.camera_d, D)


@pytest.mark.parametrize(
    ("distortion", "message"),
    [
        ({"model": "equidistant", "k1": 0, "k2": 0, "p1": 0, "p2": 0, "k3": 0}, r"distortion\.model"),
        ({"model": "plumb_bob", "k1": 0.1, "k2": 0, "p1": 0, "p2": 0}, r"distortion\.k3"),
        ({"model": "plumb_bob", "k1": 0, "k2": 0, "p1": 0, "p2": 0, "k3": 0, "k4": 1}, r"k4"),
        ({"model": "plumb_bob", "k1": 50.0, "k2": 0, "p1": 0, "p2": 0, "k3": 0}, r"distortion"),
        ({"model": "plumb_bob", "k1": "big", "k2": 0, "p1": 0, "p2": 0, "k3": 0}, r"distortion\.k1"),
    ],
)
def test_bad_lens_is_refused_naming_the_field(tmp_path: Path, distortion: object, message: str) -> None:
    folder = _world_with_lens(tmp_path, distortion)
    with pytest.raises(WorldError, match=message) as err:
        load_world_config(folder)
    assert "world.yaml" in str(err.value) and "cameras[0]" in str(err.value)
