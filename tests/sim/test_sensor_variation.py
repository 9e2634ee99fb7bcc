"""The ``sensor`` variation axis: its config, and the effects it gives the sim's camera frames; no ROS."""

from __future__ import annotations

import dataclasses

import cv2
import numpy as np
import pytest
from conftest import BUNDLED, REPO
from r2s2r_sim.cells.camera_frames import CameraFrames
from r2s2r_sim.cells.sim_cell import SimCell
from r2s2r_sim.render.sensor_effects import SensorEffects, edge_pixels
from r2s2r_sim.variations import (
    VariationConfig,
    VariationError,
    load_variation_config,
    make_world,
    parse_variation_text,
    sample_variation,
    sensor_effects,
)
from r2s2r_sim.variations.config import SensorVariationConfig
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import WORLD_VARIATIONS_FILE, WORLDS

OFF = VariationConfig().only()  # every axis off


def _sensor_only(**ranges: object) -> VariationConfig:
    return dataclasses.replace(OFF, sensor=SensorVariationConfig(enabled=True, **ranges))  # type: ignore[arg-type]


def _frames(world: SimWorld) -> CameraFrames:
    cam = world.config.cameras[0]
    mjcf = world.model.camera(world.camera_id(cam.name)).name
    return CameraFrames(world.model, mjcf, cam, world.config.render_profile(cam, None), sensors=world.sensors)


@pytest.fixture(scope="module")
def ideal() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bundled world's ideal frame at reset 0: rgb, depth (m) and K."""
    world = SimWorld(BUNDLED)
    world.reset(0)
    with _frames(world) as frames:
        f = frames.render(world.data)
    return f.rgb, f.depth, f.k


def _render(config: VariationConfig, seed: int, *, frames_seed: int = 0, n: int = 1) -> list:  # type: ignore[type-arg]
    world = make_world(BUNDLED, sample_variation(config, seed))
    world.reset(0)
    with _frames(world) as frames:
        frames.start_episode(frames_seed)
        return [frames.render(world.data) for _ in range(n)]


# ---------------------------------------------------------------------------------------------- config


def test_axis_is_off_by_default_and_in_the_bundled_files() -> None:
    assert not VariationConfig().sensor.enabled
    assert not load_variation_config(REPO / "config" / "variations.yaml").sensor.enabled
    for world_dir in WORLDS.values():
        path = world_dir / WORLD_VARIATIONS_FILE
        if path.is_file():
            assert not load_variation_config(path).sensor.enabled, path


def test_axis_parses_its_ranges_and_draws_within_them() -> None:
    cfg = parse_variation_text("sensor: {enabled: true, subpixel_px: [0.1, 0.2], color: false}")
    assert cfg.sensor.subpixel_px == (0.1, 0.2) and not cfg.sensor.color
    for seed in range(5):
        effects = sensor_effects(sample_variation(cfg, seed))
        assert effects is not None and effects.color is None and effects.depth is not None
        assert 0.1 <= effects.depth.subpixel_px <= 0.2
        assert 0.015 <= abs(effects.depth.projector_offset_m or 0.0) <= 0.03
    assert sensor_effects(sample_variation(OFF, 0)) is None


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("sensor: {subpixel_px: [0.2, 0.1]}", r"sensor\.subpixel_px: must be \[low, high\] with low <= high"),
        ("sensor: {vignetting: [0.1, 0.99]}", r"sensor\.vignetting: must lie in \[0\.0, 0\.95\]"),
        ("sensor: {baseline_m: [0.0, 0.05]}", r"sensor\.baseline_m: must lie in \(0\.0, 1\.0\]"),
        ("sensor: {read_noise_e: [-1, 2]}", r"sensor\.read_noise_e: must lie in"),
        ("sensor: {projector_offset_m: [-0.02, 0.03]}", r"sensor\.projector_offset_m: must lie in \[0\.0"),
        ("sensor: {min_range_m: [0.2, 12.0]}", r"sensor\.min_range_m: must stay below max_range_m"),
        ("sensor: {depth_unit_m: 0}", r"sensor\.depth_unit_m: must lie in \(0\.0, 0\.1\]"),
        ("sensor: {enabled: true, depth: false, color: false}", r"sensor\.depth: .*neither depth nor color"),
        ("sensor: {enabled: yes please}", r"sensor\.enabled: must be true or false"),
        ("sensor: {blur: 3}", r"sensor: unknown field\(s\) \['blur'\]"),
    ],
)
def test_bad_values_are_refused_naming_the_field(text: str, match: str) -> None:
    with pytest.raises(VariationError, match=match):
        parse_variation_text(text, "request")


# ---------------------------------------------------------------------------------------------- frames


def test_frames_with_the_axis_off_are_byte_identical_to_ideal_ones(ideal) -> None:  # type: ignore[no-untyped-def]
    rgb, depth, _ = ideal
    world = make_world(BUNDLED, sample_variation(OFF, 3))
    assert world.sensors is None
    with SimCell(world, world_dir=BUNDLED) as cell:
        cell.reset(0)
        got_rgb, got_depth_mm = cell.render()
    with SimCell(SimWorld(BUNDLED), world_dir=BUNDLED) as cell:
        cell.reset(0)
        base_rgb, base_depth_mm = cell.render()
    assert got_rgb.tobytes() == base_rgb.tobytes() == rgb.tobytes()
    assert got_depth_mm.tobytes() == base_depth_mm.tobytes()
    # Effects that are all off (an ideal sensor) leave the frames untouched too.
    world = SimWorld(BUNDLED)
    world.reset(0)
    world.sensors = SensorEffects()
    with _frames(world) as frames:
        f = frames.render(world.data)
    assert f.rgb.tobytes() == rgb.tobytes() and f.depth.tobytes() == depth.tobytes()


def test_depth_holes_appear_at_discontinuities_and_only_there(ideal) -> None:  # type: ignore[no-untyped-def]
    _, z, _ = ideal
    cfg = _sensor_only(edge_jump=(0.04, 0.04), color=False)
    (frame,) = _render(cfg, 1)
    noisy = frame.depth
    edges = edge_pixels(z, 0.04)
    assert edges.sum() > 200  # the scene has discontinuities (cube, bin, table edge, arm)
    assert np.all(noisy[edges] == 0)
    new_holes = (z > 0) & (noisy == 0)
    assert new_holes.sum() > edges.sum()  # and the shadows the second imager and the projector cast
    # Every hole region touches a depth step (of 1 % or more; a shadow can fall behind a step smaller
    # than edge_jump): smooth surfaces in range have none.
    n, labels = cv2.connectedComponents(new_holes.astype(np.uint8), connectivity=8)
    steps = edge_pixels(z, 0.01)
    at_edge = cv2.dilate(steps.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    touching = set(np.unique(labels[at_edge & new_holes]))
    assert n > 1 and touching == set(range(1, n))


def test_depth_noise_grows_with_the_square_of_range(ideal) -> None:  # type: ignore[no-untyped-def]
    _, z, k = ideal
    cfg = _sensor_only(subpixel_px=(0.1, 0.1), baseline_m=(0.05, 0.05), color=False)
    (frame,) = _render(cfg, 2)
    effects = sensor_effects(sample_variation(cfg, 2))
    assert effects is not None and effects.depth is not None
    ok = (z > 0) & (frame.depth > 0)
    err = (frame.depth - z)[ok]
    zz = z[ok]
    lo, hi = np.quantile(zz, [0.2, 0.8])
    rms = {}
    for name, sel in (("near", zz < lo), ("far", zz > hi)):
        assert sel.sum() > 2000
        measured = float(np.sqrt(np.mean(err[sel] ** 2)))
        # The model's RMS at each pixel's range plus the 1 mm quantisation (unit^2 / 12).
        model = float(np.sqrt(np.mean(effects.depth.rms_error(zz[sel], k[0, 0]) ** 2) + 0.001**2 / 12))
        assert measured == pytest.approx(model, rel=0.2), name
        rms[name] = measured
    assert rms["far"] > 1.5 * rms["near"]


def test_colour_gets_noise_and_vignetting(ideal) -> None:  # type: ignore[no-untyped-def]
    rgb, _, _ = ideal
    cfg = _sensor_only(
        depth=False, vignetting=(0.3, 0.3), exposure_drift=(0.0, 0.0), white_balance_drift=(0.0, 0.0)
    )
    (frame,) = _render(cfg, 4)
    a, b = rgb.astype(np.float64), frame.rgb.astype(np.float64)
    h, w = a.shape[:2]
    centre = (slice(h // 2 - 30, h // 2 + 30), slice(w // 2 - 30, w // 2 + 30))
    corners = [
        (rows, cols) for rows in (slice(0, 30), slice(h - 30, h)) for cols in (slice(0, 30), slice(w - 30, w))
    ]
    corner = max(corners, key=lambda c: a[c].mean())  # the brightest (the background renders black)
    assert a[corner].mean() > 20
    ratio_centre = b[centre].mean() / a[centre].mean()
    ratio_corner = b[corner].mean() / a[corner].mean()
    assert ratio_centre == pytest.approx(1.0, abs=0.05)
    assert ratio_corner == pytest.approx(0.72, abs=0.06)  # 1 - 0.3 r^2, r^2 from 0.9 to 1 in the patch
    assert np.abs(b[centre] - a[centre]).mean() > 0.3  # shot and read noise


def test_seeds_reproduce_frames_and_episodes_differ() -> None:
    cfg = _sensor_only()
    first = _render(cfg, 5, frames_seed=11, n=2)
    again = _render(cfg, 5, frames_seed=11, n=2)
    other_episode = _render(cfg, 5, frames_seed=12)
    for f, g in zip(first, again, strict=True):
        assert f.rgb.tobytes() == g.rgb.tobytes() and f.depth.tobytes() == g.depth.tobytes()
    assert first[0].depth.tobytes() != first[1].depth.tobytes()  # temporal noise, frame to frame
    assert first[0].depth.tobytes() != other_episode[0].depth.tobytes()
    assert first[0].rgb.tobytes() != other_episode[0].rgb.tobytes()
    # A frame given by index (as the sim node draws them) is that frame whatever came before it.
    world = make_world(BUNDLED, sample_variation(cfg, 5))
    world.reset(0)
    with _frames(world) as frames:
        by_index = frames.render(world.data, episode=(11, 2))
    assert by_index.depth.tobytes() == first[1].depth.tobytes()


def test_cell_reset_restarts_the_sensor_episode() -> None:
    world = make_world(BUNDLED, sample_variation(_sensor_only(), 6))
    with SimCell(world, world_dir=BUNDLED) as cell:
        cell.reset(3)
        a = cell.render()
        cell.render()
        cell.reset(3)
        b = cell.render()
    assert a[0].tobytes() == b[0].tobytes() and a[1].tobytes() == b[1].tobytes()
