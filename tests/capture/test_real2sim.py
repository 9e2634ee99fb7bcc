"""End to end: emulated capture -> real2sim -> a world SimWorld loads, checked against the emulator's truth.

Small captures (8 board views, 1 RGB-D frame, 8 s excitation, 20 optimiser iterations) for the default
hardware profile and three random profiles; bad captures (no board views, no RGB-D frame, static arm) fail
before anything is written; resim on the produced world gives finite divergence.
"""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import dataclasses  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from r2s2r_capture.bench import random_profile as R  # noqa: E402
from r2s2r_capture.bench import real2sim as B  # noqa: E402
from r2s2r_capture.bench.appearance import REGIONS, measure_world  # noqa: E402
from r2s2r_capture.errors import CalibrationError, IdentificationError, ReconstructionError  # noqa: E402
from r2s2r_capture.procedures import phases  # noqa: E402
from r2s2r_capture.procedures import session as C  # noqa: E402
from r2s2r_capture.real2sim.capture_data import read_capture  # noqa: E402
from r2s2r_capture.real2sim.pipeline import Real2SimConfig, real2sim  # noqa: E402
from r2s2r_capture.real2sim.resim import resim  # noqa: E402
from r2s2r_capture.sysid.recording import ExcitationConfig  # noqa: E402
from r2s2r_sim.hardware.profile import load_hardware_profile  # noqa: E402
from r2s2r_sim.variations import (  # noqa: E402
    for_world,
    load_variation_config,
    make_world,
    sample_variation,
)
from r2s2r_sim.variations.config import SensorVariationConfig  # noqa: E402
from r2s2r_sim.world.sim_world import SimWorld  # noqa: E402

# Each module fixture runs a whole capture and identification (minutes of CPU); on a loaded machine that
# alone can pass the suite's default 300 s, which counts fixture set-up.
pytestmark = [pytest.mark.timeout(1800), pytest.mark.study]

EXC = ExcitationConfig(
    duration_s=8.0,
    rate_hz=500.0,
    base_freq_hz=0.2,
    n_harmonics=5,
    range_fraction=0.35,
    max_velocity=1.2,
    ramp_s=0.5,
)
SMALL = C.CaptureConfig(n_intrinsics_views=8, n_scene_frames=1, excitation=EXC)
CONFIG = Real2SimConfig(max_iters=20, report=False)
JOINTS = ("shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3")
# What the short 8 s excitation identifies within 10 % on any profile: gains and viscous friction (the
# efforts fix their scale and split kv from damping).  Armature and friction loss of the shoulder joints
# are small next to the link inertia and need the documented 30 s trajectory (checked on the default).
IDENTIFIABLE = [f"{j}/{k}" for j in JOINTS for k in ("kp", "kv", "viscous")]


def _run(
    profile: Path, root: Path, capture: C.CaptureConfig = SMALL, config: Real2SimConfig = CONFIG
) -> dict:
    cap = C.capture_emulated(root / "capture", profile=profile, config=capture)
    result = real2sim([cap.bag], root / "world", config=config)
    hardware = load_hardware_profile(profile)
    errors = B.compare(result, hardware, cap.truth)
    return {"cap": cap, "result": result, "errors": errors, "hardware": hardware}


@pytest.fixture(scope="module")
def default_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The documented capture procedure (30 s excitation) on the ideal profile."""
    full = C.CaptureConfig(n_intrinsics_views=8, n_scene_frames=1)
    config = Real2SimConfig(report=False)  # the default 30 optimiser iterations
    return _run(R.IDEAL_PROFILE, tmp_path_factory.mktemp("default"), full, config)


@pytest.fixture(scope="module", params=[7, 11, 23])
def random_run(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> dict:
    """A parameter file the pipeline has never seen, drawn within the documented ranges (one per seed)."""
    root = tmp_path_factory.mktemp(f"random{request.param}")
    return _run(R.random_profile(request.param, root / "profile.yaml"), root)


def _check(run: dict) -> None:
    e = run["errors"]
    assert e["camera_position_mm"] <= 5.0 and e["camera_rotation_deg"] <= 0.5, e
    assert set(e["objects"]) == {"cube", "bin"}, e["objects"]
    for body, o in e["objects"].items():
        assert o["position_mm"] <= 10.0 and o["size_mm"] <= 10.0, (body, o)
    for name in [*IDENTIFIABLE, "command_delay_s"]:
        assert e["sysid"][name]["error_pct"] <= 10.0, (name, e["sysid"][name])
    s = run["result"].sysid
    assert s["rms_val_after"] * 5 <= s["rms_val_before"], s
    world = SimWorld(run["result"].world_dir)
    assert world.world_id == "real2sim-v1" and world.config.task is not None
    for rel in (
        "calibration/camera_info.yaml",
        "identification/sysid.yaml",
        "real2sim.yaml",
        "robot/arm6.xml",
        "variations.yaml",
    ):
        assert (run["result"].world_dir / rel).is_file(), rel
    _check_world_camera(run, world)
    _check_world_variations(run)
    # The joint readings' noise, measured from the capture, is what the sim reports its joints with.
    driver, noise = run["hardware"].driver, world.config.robot.joint_state_noise
    assert driver.position_noise_std_rad > 0 and driver.velocity_noise_std_rad_s > 0
    assert noise.position_std == pytest.approx(driver.position_noise_std_rad, rel=0.15), noise
    assert noise.velocity_std == pytest.approx(driver.velocity_noise_std_rad_s, rel=0.15), noise


def _check_world_camera(run: dict, world: SimWorld) -> None:
    """The sim draws the calibrated camera: its fx, fy, cx, cy, not a centred one of the same view."""
    import yaml
    from r2s2r_sim.render.renderer import camera_intrinsics

    info = yaml.safe_load((run["result"].world_dir / "calibration/camera_info.yaml").read_text())
    calibrated = np.asarray(info["camera_matrix"]["data"], dtype=np.float64).reshape(3, 3)
    cam = world.config.cameras[0]
    k = camera_intrinsics(world.model, cam.mjcf_camera, cam.width, cam.height)
    np.testing.assert_allclose(k, calibrated, rtol=1e-6, atol=1e-6)
    half = k[:2, 2] * 0.5 - 0.25  # the same camera drawn at half the size
    np.testing.assert_allclose(
        camera_intrinsics(world.model, cam.mjcf_camera, cam.width // 2, cam.height // 2)[:2, 2], half
    )
    # ... and its lens: the calibrated D, which the sim's images are drawn with and CameraInfo carries.
    calibrated_d = np.asarray(info["distortion_coefficients"]["data"], dtype=np.float64)
    assert np.any(calibrated_d != 0)
    np.testing.assert_allclose(cam.distortion, calibrated_d, rtol=1e-9)


def _check_world_variations(run: dict) -> None:
    """The world's variation defaults: every identified parameter over a range around its fit, seeded."""
    world_dir = run["result"].world_dir
    cfg = for_world(load_variation_config(world_dir / "variations.yaml"), world_dir)
    assert cfg.enabled_axes() == ("physics", "camera", "dynamics", "sensor")
    assert cfg.sensor == SensorVariationConfig(enabled=True)  # a camera's noise is not identified
    fitted, std = run["result"].sysid["fitted"], run["result"].sysid["std"]
    ranges = {p.name: p.range for p in cfg.dynamics.parameters}
    assert set(ranges) == set(fitted)
    for name, (lo, hi) in ranges.items():
        assert lo <= fitted[name] <= hi, (name, lo, fitted[name], hi)
        assert hi > lo, name  # nothing is known exactly
        if std[name] is not None:
            assert hi - lo <= 2 * 1.96 * std[name] * (1 + 1e-9), (name, lo, hi, std[name])
    assert 0 < cfg.camera.position_jitter < 0.005 and 0 < cfg.camera.rotation_jitter < 0.01
    a, again, b = (sample_variation(cfg, s) for s in (4, 4, 5))
    assert make_world(world_dir, a).world_hash == make_world(world_dir, again).world_hash
    assert make_world(world_dir, a).world_hash != make_world(world_dir, b).world_hash


def test_ideal_profile_within_targets(default_run: dict) -> None:
    _check(default_run)
    # The full procedure: every identified parameter within 10 %, except the armature of the three
    # proximal joints, which is small next to their link inertia: 3.9-13.9 % over capture noise draws
    # (bench_real2sim and this test), so held to 20 % here.
    proximal_armature = {f"{j}/armature" for j in JOINTS[:3]}
    misses = {
        k: v
        for k, v in default_run["errors"]["sysid"].items()
        if not v["error_pct"] <= (20.0 if k in proximal_armature else 10.0)
    }
    assert not misses, misses


def test_random_profile_within_targets(random_run: dict) -> None:
    _check(random_run)


def test_textured_world_looks_like_the_capture_where_the_flat_one_does_not(default_run: dict) -> None:
    """From the calibrated camera, the textured world is closer to the captured frame in every region."""
    world_dir = default_run["result"].world_dir
    scene = (world_dir / "scene.xml").read_text()
    textures = sorted(p.name for p in (world_dir / "textures").iterdir())
    assert {"appearance_table_top.png", "appearance_floor.png", "appearance_backdrop.png"} <= set(textures)
    assert any(t.startswith("appearance_cube_") for t in textures), textures  # the task object's faces
    for name in textures:
        assert f'file="{name}"' in scene, name
    frame = read_capture([default_run["cap"].bag], JOINTS).scene_frames[0][0]
    figures = measure_world(world_dir, frame)
    for region in REGIONS:
        flat, textured = figures["flat"][region], figures["textured"][region]
        assert textured["pixels"] > 1000, (region, textured)
        assert textured["psnr_db"] >= flat["psnr_db"] + 1.0, (region, flat, textured)
        assert textured["ssim"] > flat["ssim"], (region, flat, textured)


def test_resim_reports_finite_divergence(default_run: dict, tmp_path: Path) -> None:
    res = resim(default_run["cap"].bag, default_run["result"].world_dir)
    stats = res.stats()
    assert np.isfinite(stats["joint_rmse"]) and np.isfinite(stats["ee_rmse_m"])
    assert res.delay_s > 0.0  # the identified delay is applied
    assert stats["joint_rmse"] < 0.01, res.summary()
    assert res.write_csv(tmp_path / "d.csv").read_text().count("\n") == res.t.size + 1


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"n_intrinsics_views": 0}, CalibrationError, "board views.*record the board_intrinsics phase"),
        ({"n_scene_frames": 0}, ReconstructionError, "RGB-D scene frames.*record the scene phase"),
        ({"static": True}, IdentificationError, "static.*excitation trajectory"),
    ],
)
def test_bad_capture_is_refused_and_nothing_written(
    change: dict, error: type, match: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    short = dataclasses.replace(EXC, duration_s=1.0)
    if change.pop("static", False):
        monkeypatch.setattr(  # the capture phases plan the excitation
            phases,
            "excitation_trajectory",
            lambda model, names, cfg, *, seed, center: (np.arange(200) / 500.0, np.tile(center, (200, 1))),
        )
    cfg = dataclasses.replace(SMALL, excitation=short, **change)
    bag = C.capture_emulated(tmp_path / "bag", profile=B.DEFAULT_PROFILE, config=cfg).bag
    out = tmp_path / "out" / "world"
    out.parent.mkdir()
    with pytest.raises(error, match=match):
        real2sim([bag], out, config=CONFIG)
    assert list(out.parent.iterdir()) == []


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"min_board_views": 2}, r"min_board_views: must be >= 3, got 2"),
        ({"min_scene_frames": 0}, r"min_scene_frames: must be >= 1, got 0"),
        ({"sample_stride": 0}, r"sample_stride: must be >= 1, got 0"),
        ({"appearance": "glossy"}, r"appearance must be one of \['textured', 'flat'\], got 'glossy'"),
    ],
)
def test_config_refuses_too_few_views_frames_or_samples(change: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Real2SimConfig(**change)


def test_capture_bag_offers_the_driver_qos(tmp_path: Path) -> None:
    """A capture replays like a recording of the drivers: the QoS of config/interface.yaml is in the bag."""
    from r2s2r_capture.bags.playback import replay_qos
    from r2s2r_capture.bags.reader import BagReader

    cfg = dataclasses.replace(SMALL, excitation=dataclasses.replace(EXC, duration_s=1.0))
    bag = C.capture_emulated(tmp_path / "bag", profile=B.DEFAULT_PROFILE, config=cfg).bag
    with BagReader(bag) as reader:
        got = {t: replay_qos(i.offered_qos_profiles) for t, i in reader.topics.items()}
    from r2s2r_sim.interface import load_interface

    # realsense2_camera publishes images with the middleware default, which Fast DDS resolves to
    # reliable, transient local, keep last 1
    image = got[load_interface().topic("color_image", "camera")]
    assert (image.reliability, image.durability, image.depth) == ("reliable", "transient_local", 1)
    joints = got["/joint_states"]
    assert (joints.reliability, joints.durability, joints.depth) == ("reliable", "volatile", 10)
