"""RgbdRenderer and camera_intrinsics: projection and depth agree with SimWorld.camera_pose."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pytest
from conftest import BUNDLED
from r2s2r_sim.errors import RenderError, WorldError
from r2s2r_sim.render.renderer import RgbdRenderer, camera_intrinsics, depth_to_uint16_mm
from r2s2r_sim.world.sim_world import SimWorld

MARKER_RADIUS = 0.008


@pytest.fixture(scope="module")
def marker_world(tmp_path_factory: pytest.TempPathFactory) -> SimWorld:
    """The bundled world plus a small, unlit green sphere on a mocap body that the test moves around."""
    import shutil

    dst = tmp_path_factory.mktemp("marker") / "world"
    shutil.copytree(BUNDLED, dst)
    scene = dst / "scene.xml"
    marker = (
        '<body name="marker" mocap="true" pos="0.5 0 1.0">'
        f'<geom name="marker_geom" type="sphere" size="{MARKER_RADIUS}" material="marker_mat" '
        'contype="0" conaffinity="0"/></body>\n    <camera name="realsense"'
    )
    text = scene.read_text().replace('<camera name="realsense"', marker, 1)
    text = text.replace(
        "<asset>", '<asset>\n    <material name="marker_mat" rgba="0 1 0 1" emission="1" specular="0"/>'
    )
    scene.write_text(text)
    return SimWorld(dst)


def _green(rgb: np.ndarray) -> np.ndarray:
    r, g, b = (rgb[..., i].astype(int) for i in range(3))
    return (g > 180) & (r < 90) & (b < 90)


@pytest.mark.parametrize("point", [(0.45, -0.05, 0.85), (0.6, 0.25, 0.80), (0.3, -0.2, 1.0), (0.7, 0.0, 0.9)])
def test_projection_and_depth_match_camera_pose(
    marker_world: SimWorld, point: tuple[float, float, float]
) -> None:
    w = marker_world
    w.reset(0)
    w.data.mocap_pos[0] = point
    mujoco.mj_forward(w.model, w.data)
    cam = w.config.camera("camera")
    k = camera_intrinsics(w.model, cam.mjcf_camera, cam.width, cam.height)
    with RgbdRenderer(w.model, cam.width, cam.height) as renderer:
        rgb, depth = renderer.render(w.data, cam.mjcf_camera, depth_range=cam.depth_range)

    # point in the optical frame (z forward, x right, y down) from SimWorld.camera_pose
    pos, quat = w.camera_pose("camera")
    rot = np.empty(9)
    mujoco.mju_quat2Mat(rot, quat)
    p_cam = rot.reshape(3, 3).T @ (np.asarray(point) - pos)
    assert p_cam[2] > 0.5
    uvw = k @ p_cam
    u, v = uvw[:2] / uvw[2]

    mask = _green(rgb)
    assert mask.sum() > 20
    rows, cols = np.nonzero(mask)
    # A small sphere's image is symmetric to well under a pixel, so its centroid is its projected centre.
    assert abs(cols.mean() - u) < 1.0 and abs(rows.mean() - v) < 1.0, (cols.mean(), rows.mean(), u, v)

    # z-depth of the sphere's front surface at its centre pixel (RealSense reports z, not ray length)
    dist = np.linalg.norm(p_cam)
    expected = (dist - MARKER_RADIUS) * p_cam[2] / dist
    measured = float(depth[int(round(v)), int(round(u))])
    assert abs(measured - expected) < 2e-3, (measured, expected)


def test_outputs_and_cube_visible() -> None:
    w = SimWorld(BUNDLED)
    w.reset(4)
    cam = w.config.camera("camera")
    with RgbdRenderer(w.model, cam.width, cam.height) as renderer:
        rgb, depth = renderer.render(w.data, cam.mjcf_camera, depth_range=cam.depth_range)
        rgb2, depth2 = renderer.render(w.data, cam.mjcf_camera, depth_range=cam.depth_range)
    assert rgb.shape == (480, 640, 3) and rgb.dtype == np.uint8
    assert depth.shape == (480, 640) and depth.dtype == np.float32
    assert np.array_equal(rgb, rgb2) and np.array_equal(depth, depth2)
    valid = depth[depth > 0]
    assert valid.min() >= cam.depth_range[0] and valid.max() <= cam.depth_range[1]
    # the cube: project its centre and look for red pixels around it
    k = camera_intrinsics(w.model, cam.mjcf_camera, cam.width, cam.height)
    pos, quat = w.camera_pose("camera")
    rot = np.empty(9)
    mujoco.mju_quat2Mat(rot, quat)
    p_cam = rot.reshape(3, 3).T @ (w.body_pose("cube")[0] - pos)
    u, v = (k @ p_cam)[:2] / p_cam[2]
    r, g, b = (rgb[..., i].astype(int) for i in range(3))
    red = (r > 120) & (g < 60) & (b < 60)
    assert red.sum() > 100
    rows, cols = np.nonzero(red)
    # the cube spans ~27 px (4 cm at ~0.9 m); its lit faces bias the centroid, so allow half of that
    assert abs(cols.mean() - u) < 14 and abs(rows.mean() - v) < 14
    assert 0.7 < depth[int(v), int(u)] < 1.1


def test_intrinsics_values() -> None:
    w = SimWorld(BUNDLED)
    k = camera_intrinsics(w.model, "realsense", 640, 480)
    fy = 240 / np.tan(np.radians(42.5) / 2)
    np.testing.assert_allclose(k, [[fy, 0, 319.5], [0, fy, 239.5], [0, 0, 1]])
    with pytest.raises(WorldError, match="camera 'nope' not in the model"):
        camera_intrinsics(w.model, "nope", 640, 480)


@pytest.mark.parametrize("size", [(640, 480), (320, 240)])
def test_a_calibrated_camera_draws_its_own_principal_point(size: tuple[int, int]) -> None:
    """A camera written with sensor intrinsics (fx != fy, the principal point off centre, as real2sim
    writes a calibrated camera): the sphere lands where that K puts it, at any drawn size."""
    xml = """<mujoco><visual><global offwidth="640" offheight="480"/></visual><worldbody>
      <camera name="cal" pos="0 0 1" resolution="640 480" sensorsize="0.00192 0.00144"
              focalpixel="606.7 600.2" principalpixel="-12.3 8.4"/>
      <geom type="sphere" size="0.015" pos="0.12 0.07 0" material="m"/></worldbody>
      <asset><material name="m" rgba="0 1 0 1" emission="1" specular="0"/></asset></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    width, height = size
    k = camera_intrinsics(model, "cal", width, height)
    s = width / 640
    np.testing.assert_allclose(
        k, [[606.7 * s, 0, (width - 1) / 2 + 12.3 * s], [0, 600.2 * s, (height - 1) / 2 - 8.4 * s], [0, 0, 1]]
    )
    with RgbdRenderer(model, width, height) as renderer:
        rgb, _ = renderer.render(data, "cal")
    v, u = np.nonzero(_green(rgb))
    # The camera looks down -z from 1 m: the sphere's optical-frame point is (0.12, -0.07, 1).
    expected = k @ np.array([0.12, -0.07, 1.0])
    centroid = (u.mean(), v.mean())
    assert np.allclose(centroid, expected[:2], atol=0.5), (centroid, expected)


def test_renderer_errors() -> None:
    w = SimWorld(BUNDLED)
    with pytest.raises(WorldError, match="1280x480 exceeds the model's offscreen buffer 640x480"):
        RgbdRenderer(w.model, 1280, 480)
    renderer = RgbdRenderer(w.model, 64, 48)
    with pytest.raises(RenderError, match="outside its with-block"):
        renderer.render(w.data, "realsense")
    with renderer:
        with pytest.raises(WorldError, match="camera 'nope'"):
            renderer.render(w.data, "nope")
        rgb, depth = renderer.render(w.data, "realsense")
        assert rgb.shape == (48, 64, 3) and depth.shape == (48, 64)
    with pytest.raises(RenderError, match="after close"):
        renderer.render(w.data, "realsense")
    with pytest.raises(RenderError, match="entered twice"):
        renderer.__enter__()


def test_renderer_refuses_another_thread() -> None:
    """A GL context is made current, used and freed on the thread that entered the renderer."""
    w = SimWorld(BUNDLED)
    errors: list[BaseException] = []

    def elsewhere(call: Any) -> None:
        try:
            call()
        except BaseException as err:  # noqa: BLE001 - handed back to the test thread
            errors.append(err)

    with RgbdRenderer(w.model, 64, 48) as renderer:
        for call in (lambda: renderer.render(w.data, "realsense"), renderer.close):
            thread = threading.Thread(target=elsewhere, args=(call,))
            thread.start()
            thread.join(timeout=30)
            assert not thread.is_alive(), "the other thread did not return within 30 s"
        rgb, _ = renderer.render(w.data, "realsense")  # still open and usable on its own thread
        assert rgb.shape == (48, 64, 3)
    assert len(errors) == 2
    for err in errors:
        assert isinstance(err, RenderError)
        assert re.search(r"called on thread \d+, but its GL context belongs to thread \d+", str(err))
    with pytest.raises(RenderError, match="after close"):
        renderer.render(w.data, "realsense")


def test_renderer_left_open_is_closed_before_the_display_goes(tmp_path: Path) -> None:
    """A renderer never closed is freed at exit on its thread, before MuJoCo terminates the EGL display."""
    script = tmp_path / "leak.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import atexit
            state = {{}}
            # Registered first, so it runs last: after the renderers' exit hook and MuJoCo's display teardown.
            atexit.register(lambda: print("closed at exit:", state["r"]._gl is None, flush=True))
            from r2s2r_sim.render.renderer import RgbdRenderer
            from r2s2r_sim.world.sim_world import SimWorld
            w = SimWorld({str(BUNDLED)!r})
            state["r"] = RgbdRenderer(w.model, 64, 48).__enter__()
            state["r"].render(w.data, "realsense")
            """
        ),
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-X", "faulthandler", str(script)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "closed at exit: True" in proc.stdout, proc.stdout + proc.stderr
    assert "Exception ignored" not in proc.stderr, proc.stderr


def test_depth_to_uint16_mm() -> None:
    depth = np.array([[0.0, 0.0014, 1.2345], [70.0, np.nan, np.inf]], dtype=np.float32)
    mm = depth_to_uint16_mm(depth)
    assert mm.dtype == np.uint16
    assert mm.tolist() == [[0, 1, 1234 if np.float32(1.2345) * 1000 < 1234.5 else 1235], [65535, 0, 0]]


def test_depth_range_zeroes_far_pixels() -> None:
    w = SimWorld(BUNDLED)
    with RgbdRenderer(w.model, 64, 48) as renderer:
        _, full = renderer.render(w.data, "realsense")
        _, clipped = renderer.render(w.data, "realsense", depth_range=(0.1, 1.0))
    assert (full > 1.0).any()
    assert np.all(clipped[full > 1.0] == 0)
    keep = (full > 0.1) & (full <= 1.0)
    np.testing.assert_array_equal(clipped[keep], full[keep])


def test_missing_offscreen_size(tmp_path: Path) -> None:
    model = mujoco.MjModel.from_xml_string("<mujoco><worldbody><camera name='c'/></worldbody></mujoco>")
    assert model.vis.global_.offwidth == 640  # MuJoCo's default buffer
    with pytest.raises(WorldError, match="exceeds"):
        RgbdRenderer(model, 641, 480)
