"""The in-process runner draws what the policy asks for: its image size and rate, with the run's profile."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.policy import (
    Action,
    EpisodeInfo,
    ImageRequest,
    Observation,
    ObservationKind,
    Policy,
    PolicyError,
)
from r2s2r_sim.cells.camera_frames import CameraFrames
from r2s2r_sim.render.profile import FAST, FULL
from r2s2r_sim.render.renderer import RgbdRenderer, camera_intrinsics
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

WORLD = "tabletop-pick-v1"


class _Watcher(Policy):
    """Holds the arm still and records every observation's image."""

    requires = frozenset({ObservationKind.JOINT_STATE, ObservationKind.RGB, ObservationKind.DEPTH})
    request: ImageRequest | None = None

    def control_rate_hz(self) -> float:
        return 10.0

    def image_request(self) -> ImageRequest | None:
        return self.request

    def reset(self, info: EpisodeInfo) -> None:
        self.info = info
        self.seen: list[Observation] = []

    def act(self, observation: Observation) -> Action:
        self.seen.append(observation)
        return Action(
            arm_positions=observation.positions(self.info.arm_joint_names),
            gripper=self.info.gripper_command_range[0],
        )


def _run(policy: _Watcher, steps: int, **runner_kw: object) -> tuple[EpisodeRunner, list[Observation], int]:
    """The runner, the observations the policy saw and the frames drawn."""
    with EpisodeRunner(WORLD, **runner_kw) as runner:  # type: ignore[arg-type]
        runner.run(policy, seed=0, max_steps=steps)
        return runner, policy.seen, runner.renders


def test_policy_declared_size_and_rate_reach_the_renderer() -> None:
    policy = _Watcher()
    policy.request = ImageRequest(width=64, height=48, rate_hz=5.0)
    runner, seen, renders = _run(policy, 6)
    assert {o.rgb.shape for o in seen if o.rgb is not None} == {(48, 64, 3)}
    assert {o.depth.shape for o in seen if o.depth is not None} == {(48, 64)}
    mjcf = runner.world.model.camera(runner.world.camera_id("camera")).name
    np.testing.assert_allclose(seen[0].camera_k, camera_intrinsics(runner.world.model, mjcf, 64, 48))
    # 6 control steps at 10 Hz (t = 0 .. 0.5 s) and frames at 5 Hz: t = 0, 0.2, 0.4.
    assert renders == 3


def test_camera_mode_ignores_the_request() -> None:
    policy = _Watcher()
    policy.request = ImageRequest(width=64, height=48, rate_hz=5.0)
    _, seen, renders = _run(policy, 3, policy_images=False)
    assert seen[0].rgb is not None and seen[0].rgb.shape == (480, 640, 3)
    assert renders == 3  # 15 Hz camera: a new frame is due at every 10 Hz step


def test_no_request_draws_the_camera_size() -> None:
    policy = _Watcher()
    _, seen, _ = _run(policy, 1)
    assert seen[0].rgb is not None and seen[0].rgb.shape == (480, 640, 3)


def test_run_profile_is_used() -> None:
    with EpisodeRunner(WORLD) as runner:
        assert runner.profile == FULL
    with EpisodeRunner(WORLD, render_profile="fast") as runner:
        assert runner.profile == FAST


def test_supersampled_frame_is_the_area_downscale_of_the_larger_render() -> None:
    world = SimWorld(world_path(WORLD))
    world.reset(0)
    cam = world.config.cameras[0]
    mjcf = world.model.camera(world.camera_id(cam.name)).name
    with CameraFrames(world.model, mjcf, cam, FAST) as frames:
        frame = frames.render(world.data, ImageRequest(width=96, height=72, supersample=2))
    with RgbdRenderer(world.model, 192, 144, profile=FAST) as r:
        big, depth = r.render(world.data, mjcf, depth_range=cam.depth_range)
    assert frame.rgb.shape == (72, 96, 3) and frame.depth.shape == (72, 96)
    np.testing.assert_array_equal(frame.rgb, cv2.resize(big, (96, 72), interpolation=cv2.INTER_AREA))
    np.testing.assert_array_equal(frame.depth, depth[1::2, 1::2])


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"width": 0, "height": 10}, "ImageRequest.width: must be >= 1 px"),
        ({"width": 10, "height": 10, "rate_hz": 0.0}, "ImageRequest.rate_hz: must be > 0 Hz"),
        ({"width": 10, "height": 10, "supersample": 9}, r"ImageRequest.supersample: must be in \[1, 8\]"),
    ],
)
def test_bad_image_request_is_refused(kw: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(PolicyError, match=message):
        ImageRequest(**kw)
