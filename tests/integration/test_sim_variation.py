"""Variation at reset: the sim node rebuilds its world from the reset's variation_config and seed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

pytest.importorskip("rclpy", reason="rclpy (ROS 2) is not installed; run `make setup`")

from r2s2r_sim.cells.camera_frames import CameraFrames  # noqa: E402
from r2s2r_sim.render.renderer import depth_to_uint16_mm  # noqa: E402
from r2s2r_sim.ros import conversions as conv  # noqa: E402
from r2s2r_sim.ros.sim_node import variation_hash  # noqa: E402
from r2s2r_sim.variations import (  # noqa: E402
    AXES,
    load_variation_config,
    make_world,
    parse_variation_text,
    sample_variation,
)
from r2s2r_sim.world.sim_world import SimWorld  # noqa: E402
from r2s2r_sim.worlds import world_path  # noqa: E402
from test_sim_interface import (  # noqa: E402
    CAMERA,
    REPO,
    STARTUP_S,
    Probe,
    probe,  # noqa: F401 - the fixture
    stamp_ns,
    start_sim,
    stop,
    wait_for,
)

pytestmark = pytest.mark.integration

WORLD = "tabletop-pick-v1"
VARIATIONS = REPO / "config" / "variations.yaml"


def only(axis: str) -> str:
    """config/variations.yaml as YAML text with every axis but ``axis`` disabled."""
    data = yaml.safe_load(VARIATIONS.read_text(encoding="utf-8"))
    for name in AXES:
        if name in data:  # an axis the file leaves out is off
            data[name]["enabled"] = name == axis
    return yaml.safe_dump(data, sort_keys=False)


def in_process_hash(text: str, seed: int, tmp_path: Path) -> str:
    """world_hash of the same variation built in this process, from a file (the public loader)."""
    path = tmp_path / f"variation_{seed}.yaml"
    path.write_text(text, encoding="utf-8")
    return make_world(world_path(WORLD), sample_variation(load_variation_config(path), seed)).world_hash


def test_reset_rebuilds_the_varied_world(processes: Any, probe: Probe, tmp_path: Path) -> None:  # noqa: F811
    from r2s2r_msgs.srv import ResetEpisode

    # Lockstep without a policy: the node holds each observation (cheap), services keep working.
    out = start_sim(processes, f"world:={WORLD}", "lockstep:=true", "control_rate_hz:=10.0")
    color = probe.subscribe("color_image", CAMERA, keep=2)
    depth = probe.subscribe("depth_image", CAMERA, keep=2)
    info = probe.subscribe("color_info", CAMERA)
    wait_for(lambda: probe.count(info), STARTUP_S, "the first camera info")

    def reset(seed: int, config: str = "") -> tuple[Any, Any]:
        """The response, and the camera info of the reset observation (rendered by the current renderer)."""
        before = max(stamp_ns(m) for _, m in probe.msgs(info))
        resp = probe.call("reset_episode", ResetEpisode.Request(variation_seed=seed, variation_config=config))
        if not resp.success:
            return resp, None
        first = wait_for(
            lambda: next((m for _, m in probe.msgs(info) if stamp_ns(m) > before), None),
            20,
            "the reset frame",
        )
        wait_for(lambda: any(stamp_ns(m) == stamp_ns(first) for _, m in probe.msgs(color)), 10, "its image")
        return resp, first

    def depth_mm(cam_info: Any) -> np.ndarray:
        stamp = stamp_ns(cam_info)
        msg = wait_for(
            lambda: next((m for _, m in probe.msgs(depth) if stamp_ns(m) == stamp), None),
            10,
            "its depth image",
        )
        return conv.image_to_numpy(msg)

    base_hash = SimWorld(world_path(WORLD)).world_hash
    base, base_info = reset(3)
    assert base.success, base.message
    assert base.world_hash == base_hash
    assert base.variation_hash == variation_hash(base_hash, "", 3)
    ideal = depth_mm(base_info)

    # The sensor axis keeps the model and gives the frames D4xx depth effects, drawn as in process: the
    # node renders through the runner's CameraFrames (the reset observation is frame 0 of episode 3).
    sensed, sensed_info = reset(3, only("sensor"))
    assert sensed.success and sensed.world_hash == base_hash, sensed.message
    noisy = depth_mm(sensed_info)
    assert np.count_nonzero(noisy == 0) > np.count_nonzero(ideal == 0)
    world = make_world(world_path(WORLD), sample_variation(parse_variation_text(only("sensor")), 3))
    world.reset(3)
    cam = world.config.cameras[0]
    mjcf = world.model.camera(world.camera_id(cam.name)).name
    profile = world.config.render_profile(cam, None)
    with CameraFrames(world.model, mjcf, cam, profile, sensors=world.sensors) as frames:
        expected = depth_to_uint16_mm(frames.render(world.data, episode=(3, 0)).depth)
    assert np.mean(noisy == expected) > 0.99

    for axis, seed in (("physics", 3), ("camera", 5)):
        text = only(axis)
        resp, cam_info = reset(seed, text)
        assert resp.success, resp.message
        assert resp.world_id == WORLD
        assert resp.world_hash != base_hash, f"{axis}: the varied world has the base hash"
        assert resp.world_hash == in_process_hash(text, seed, tmp_path), axis
        assert resp.variation_hash == variation_hash(resp.world_hash, text, seed)
        if axis == "camera":  # fovy jitter: the published intrinsics follow the varied camera
            assert cam_info.k[0] != pytest.approx(base_info.k[0], abs=1e-9)
        else:
            assert list(cam_info.k) == list(base_info.k)
    varied_hash = resp.world_hash

    # Malformed configs are refused, naming the field, and the node keeps the varied world running.
    for config, names in (
        ("physics: {enabled: true, mass_scale: [1.3, 0.7]}", "physics.mass_scale"),
        ("gravity: {enabled: true}", "gravity"),
        ("physics: [unclosed", "not valid YAML"),
    ):
        refused, _ = reset(1, config)
        assert not refused.success, config
        assert "variation_config" in refused.message and names in refused.message, refused.message
    out.wait_for(r"reset refused: variation_config: physics\.mass_scale")
    assert out.proc.poll() is None
    again, _ = reset(5, only("camera"))
    assert again.success and again.world_hash == varied_hash, "the same (config, seed) gives the same world"

    # An empty config restores the base world.
    restored, restored_info = reset(3)
    assert restored.success, restored.message
    assert restored.world_hash == base_hash
    assert list(restored_info.k) == list(base_info.k)
    assert stop(out) == 0


def test_variations_parameter_applies_when_the_reset_gives_none(
    processes: Any,
    probe: Probe,  # noqa: F811
    tmp_path: Path,
) -> None:
    from r2s2r_msgs.srv import ResetEpisode

    text = only("physics")
    path = tmp_path / "physics_only.yaml"
    path.write_text(text, encoding="utf-8")
    out = start_sim(
        processes, f"world:={WORLD}", "lockstep:=true", "cameras_enabled:=false", f"variations:={path}"
    )
    resp = probe.call("reset_episode", ResetEpisode.Request(variation_seed=4), timeout=STARTUP_S)
    assert resp.success, resp.message
    assert resp.world_hash == in_process_hash(text, 4, tmp_path)
    assert resp.variation_hash == variation_hash(resp.world_hash, text, 4)
    assert stop(out) == 0

    bad = tmp_path / "bad.yaml"
    bad.write_text("physics: {mass_scale: [0.0, 1.0]}\n", encoding="utf-8")
    out = start_sim(processes, f"world:={WORLD}", f"variations:={bad}")
    assert out.proc.wait(timeout=60) == 1
    out._thread.join(timeout=5.0)
    assert "parameter variations:" in out.text() and "physics.mass_scale" in out.text(), out.text()
