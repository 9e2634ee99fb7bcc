"""The emulated sensor effects have the statistics their models and datasheets say."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from r2s2r_sim.hardware.emulated_arm import EmulatedArm
from r2s2r_sim.hardware.profile import HardwareProfileError, load_hardware_profile
from r2s2r_sim.paths import config_dir
from r2s2r_sim.render.sensor_effects import (
    ColorSensor,
    DepthSensor,
    FrameTiming,
    SensorEffects,
    SensorState,
    stereo_hidden,
)

F = 600.0
H, W = 120, 400
K = np.array([[F, 0, (W - 1) / 2], [0, F, (H - 1) / 2], [0, 0, 1]])
PROFILES = config_dir() / "emulated_hardware"


def _state(**effects: object) -> SensorState:
    state = SensorState(SensorEffects(**effects), (H, W), F, K)  # type: ignore[arg-type]
    state.start_episode(3)
    return state


@pytest.mark.parametrize("z", [0.5, 1.0, 2.0])
def test_depth_rms_grows_with_the_square_of_range(z: float) -> None:
    sensor = DepthSensor(edge_jump=10.0)
    state = _state(depth=sensor)
    out = state.depth(np.full((H, W), z), state.next_frame())
    valid = out > 0
    assert valid.mean() > 0.99
    rms = float(np.sqrt(np.mean((out[valid] - z) ** 2)))
    expected = float(sensor.rms_error(z, F))
    assert rms == pytest.approx(expected, rel=0.2)


def test_depth_is_quantised_to_the_unit_and_limited_in_range() -> None:
    state = _state(depth=DepthSensor(depth_unit_m=0.005, min_range_m=0.3, max_range_m=3.0))
    depth = np.full((H, W), 1.0)
    depth[:, :50] = 0.2  # too near
    depth[:, -50:] = 4.0  # too far
    out = state.depth(depth, state.next_frame())
    assert np.all(out[:, :50] == 0) and np.all(out[:, -50:] == 0)
    mid = out[:, 120:280]
    np.testing.assert_allclose(mid / 0.005, np.rint(mid / 0.005), atol=1e-9)


def test_temporal_part_changes_between_frames_and_the_pattern_does_not() -> None:
    state = _state(depth=DepthSensor(temporal_fraction=0.0, edge_jump=10.0))
    a = state.depth(np.full((H, W), 1.5), state.next_frame())
    b = state.depth(np.full((H, W), 1.5), state.next_frame())
    np.testing.assert_array_equal(a, b)  # all fixed pattern
    state = _state(depth=DepthSensor(temporal_fraction=1.0, edge_jump=10.0))
    a = state.depth(np.full((H, W), 1.5), state.next_frame())
    b = state.depth(np.full((H, W), 1.5), state.next_frame())
    assert np.mean(a != b) > 0.5


def _step_scene() -> np.ndarray:
    depth = np.full((H, W), 1.0)
    depth[:, 200:240] = 0.5  # a block in front of a wall
    return depth


def test_second_imager_shadow_is_as_wide_as_the_disparity_step() -> None:
    depth = _step_scene()
    hidden = stereo_hidden(depth, F, 0.05)
    width = F * 0.05 * (1 / 0.5 - 1 / 1.0)  # 30 px of the wall hidden from the second imager
    per_row = hidden.sum(axis=1)
    assert np.all(np.abs(per_row - width) <= 1.5)
    assert hidden[:, 200 - int(width) + 1 : 200].all()  # on the block's left, against its edge
    assert not hidden[:, 240:].any()
    # the projector on the other side shadows the other edge
    shadow = stereo_hidden(depth, F, -0.026)
    assert shadow[:, 241 : 241 + int(F * 0.026) - 1].all()
    assert not shadow[:, :200].any()


def test_depth_holes_at_edges_and_shadows_in_the_published_image() -> None:
    state = _state(depth=DepthSensor(subpixel_px=0.0, projector_offset_m=-0.026))
    out = state.depth(_step_scene(), state.next_frame())
    assert np.all(out[:, 172:199] == 0)  # second imager's shadow
    assert np.all(out[:, 241:255] == 0)  # projector's shadow
    assert np.all(out[:, 205:235] == pytest.approx(0.5))  # the block itself is measured
    assert np.all(out[:, 20:150] == pytest.approx(1.0))


def test_colour_noise_follows_photon_transfer() -> None:
    sensor = ColorSensor(
        full_well_e=4000.0, read_noise_e=3.0, exposure_drift=0.0, white_balance_drift=0.0, vignetting=0.0
    )
    state = _state(color=sensor)
    for level in (40, 200):
        out = state.color(np.full((H, W, 3), level, np.uint8), state.next_frame()).astype(float)
        electrons = level * 4000.0 / 255
        expected = np.sqrt(electrons + 9.0) * 255 / 4000.0
        assert out.std() == pytest.approx(expected, rel=0.1)
        assert out.mean() == pytest.approx(level, abs=0.2)


def test_exposure_and_white_balance_drift_per_episode_and_repeat_per_seed() -> None:
    sensor = ColorSensor(read_noise_e=0.0, full_well_e=1e7, vignetting=0.0)
    grey = np.full((H, W, 3), 120, np.uint8)
    means = []
    for seed in (1, 2, 1):
        state = SensorState(SensorEffects(color=sensor), (H, W), F, K)
        state.start_episode(seed)
        means.append(state.color(grey, state.next_frame()).reshape(-1, 3).mean(axis=0))
    np.testing.assert_allclose(means[0], means[2])
    assert np.abs(means[0] - means[1]).max() > 0.5


def test_vignetting_darkens_the_corners() -> None:
    sensor = ColorSensor(
        full_well_e=1e7, read_noise_e=0.0, exposure_drift=0.0, white_balance_drift=0.0, vignetting=0.3
    )
    state = _state(color=sensor)
    out = state.color(np.full((H, W, 3), 200, np.uint8), state.next_frame()).astype(float)
    centre = out[H // 2, W // 2].mean()
    corner = out[0, 0].mean()
    assert centre == pytest.approx(200, abs=1)
    assert corner == pytest.approx(200 * 0.7, abs=1.5)


def test_frame_drops_and_stamp_jitter() -> None:
    state = _state(timing=FrameTiming(stamp_jitter_std_s=0.002, drop_probability=0.1))
    drops, offsets = [], []
    for _ in range(3000):
        rng = state.next_frame()
        drops.append(state.drop(rng))
        offsets.append(state.stamp_offset(rng))
    assert np.mean(drops) == pytest.approx(0.1, abs=0.02)
    assert np.std(offsets) == pytest.approx(0.002, rel=0.1)


def _profile_with(tmp_path: Path, text: str) -> Path:
    base = (PROFILES / "ideal_profile.yaml").read_text()
    path = tmp_path / "profile.yaml"
    path.write_text(base + "\n" + text)
    return path


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("depth_sensor: {subpixel_px: -0.1}", r"depth_sensor\.subpixel_px: must be in"),
        ("color_sensor: {read_noise_e: -1}", r"color_sensor\.read_noise_e: must be in"),
        ("depth_sensor: {min_range_m: 2.0, max_range_m: 1.0}", r"depth_sensor: min_range_m must be below"),
        ("depth_sensor: {baseline: 0.05}", r"depth_sensor: unknown key\(s\) \['baseline'\]"),
        ("frame_timing: {drop_probability: 1.5}", r"frame_timing\.drop_probability"),
        ("lens_flare: {}", r"unknown key\(s\) \['lens_flare'\]"),
    ],
)
def test_bad_sensor_values_are_refused_naming_the_field(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(HardwareProfileError, match=match):
        load_hardware_profile(_profile_with(tmp_path, text))


def test_shipped_profiles() -> None:
    assert load_hardware_profile(PROFILES / "ideal_profile.yaml").sensors.ideal
    realistic = load_hardware_profile(PROFILES / "realistic_profile.yaml").sensors
    assert realistic.depth is not None and realistic.color is not None and realistic.timing is not None


def _frames(profile: Path, seed: int) -> tuple[np.ndarray, np.ndarray]:
    arm = EmulatedArm("tabletop-pick-v1", load_hardware_profile(profile), seed=seed)
    arm.advance(10)
    with arm.camera_renderer() as cam:
        return cam.render(arm.world.data)


def test_ideal_profile_is_untouched_and_realistic_differs(
    tmp_path: Path,
) -> None:
    ideal = _frames(PROFILES / "ideal_profile.yaml", 4)
    empty = _profile_with(tmp_path, "depth_sensor:\ncolor_sensor:\nframe_timing:\n")
    again = _frames(empty, 4)
    np.testing.assert_array_equal(ideal[0], again[0])
    np.testing.assert_array_equal(ideal[1], again[1])
    rgb, depth = _frames(PROFILES / "realistic_profile.yaml", 4)
    assert np.abs(rgb.astype(int) - ideal[0].astype(int)).mean() > 1.0
    holes = (depth == 0) & (ideal[1] > 0)
    assert holes.sum() > 100  # stereo shadows and edges behind the arm and objects
    both = (depth > 0) & (ideal[1] > 0)
    err = depth[both].astype(float) - ideal[1][both].astype(float)
    assert 0.5 < np.sqrt(np.mean(err**2)) < 30  # mm: noisy but the same scene


def test_motion_blur_length_is_proportional_to_speed(tmp_path: Path) -> None:
    profile = _profile_with(
        tmp_path,
        "color_sensor: {full_well_e: 10000000.0, read_noise_e: 0, exposure_drift: 0, white_balance_drift: 0, "
        "vignetting: 0, exposure_s: 0.02, motion_blur_samples: 9}",
    )
    arm = EmulatedArm("tabletop-pick-v1", load_hardware_profile(profile), seed=1)
    model, data = arm.world.model, arm.world.data
    cube = int(model.jnt_qposadr[list(model.jnt_type).index(0)])  # the free joint of the task object
    with arm.camera_renderer() as cam:
        sharp, depth = cam.render(data)
        red = (sharp[..., 0].astype(int) - sharp[..., 1]) > 80
        ys, xs = np.nonzero(red)
        z = float(np.median(depth[red])) / 1000.0
        y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min() - 40, xs.max() + 40

        def variance(img: np.ndarray) -> float:  # horizontal spread of the cube's redness
            r = img[y0:y1, x0:x1, 0].astype(float) - img[y0:y1, x0:x1, 1]
            w = np.clip(r - np.median(r[:, :10]), 0, None).sum(axis=0)
            x = np.arange(w.size)
            mean = (w * x).sum() / w.sum()
            return float((w * (x - mean) ** 2).sum() / w.sum())

        sharp_var = variance(sharp)
        for dy in (0.01, 0.02):  # the cube moved dy (m) sideways during the exposure
            start = data.qpos.copy()
            start[cube + 1] -= dy
            rgb, _ = cam.render(data, motion_from=start)
            length = np.sqrt(12 * (variance(rgb) - sharp_var))  # a box blur of length L adds L^2 / 12
            assert length == pytest.approx(cam.camera.intrinsics.fx * dy / z, rel=0.2)
        still, _ = cam.render(data, motion_from=data.qpos.copy())
        np.testing.assert_array_equal(still, sharp)
