"""In-process episode runner: SimWorld, renderer and task driven at the policy's control rate; no rclpy.

Observations are built the way the ROS graph builds them: simulator state is turned into the sim node's
messages (``r2s2r_sim.ros_conversions``) and converted back with :mod:`r2s2r_eval.conversions`, so a policy
sees identical data in a sweep and through ROS.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from r2s2r_sim.rendering import camera_intrinsics, depth_to_uint16_mm
from r2s2r_sim.task import PickPlaceTask
from r2s2r_sim.variations import Variation, make_world
from r2s2r_sim.world import SimWorld
from r2s2r_sim.worlds import world_path

from r2s2r_eval.conversions import TfTree, observation_from_messages
from r2s2r_eval.frames import CameraFrames
from r2s2r_eval.policy import EpisodeInfo, ImageRequest, Observation, ObservationKind, Policy
from r2s2r_sim import ros_conversions as rc

__all__ = ["DEFAULT_CONTROL_RATE_HZ", "EpisodeResult", "EpisodeRunner", "RunnerError", "run_episode"]

DEFAULT_CONTROL_RATE_HZ = 10.0


class RunnerError(ValueError):
    """The runner cannot run the requested episode (bad rate, world without task or camera)."""


@dataclass(frozen=True, kw_only=True)
class EpisodeResult:
    """How one episode ended.

    Attributes:
        world_id: world id.
        world_hash: content hash of the compiled model.
        seed: variation seed.
        episode_index: index given to the policy.
        success: the task succeeded.
        reason: ``success``, ``timeout``, ``object_dropped``, ``max_steps`` or ``policy_error: ...``.
        duration_s: simulated episode length (s).
        wall_s: wall-clock time the episode took (s).
        steps: control steps taken.
        metrics: the task's named terms at the end.
    """

    world_id: str
    world_hash: str
    seed: int
    episode_index: int
    success: bool
    reason: str
    duration_s: float
    wall_s: float
    steps: int
    metrics: dict[str, float] = field(default_factory=dict)


def control_substeps(control_rate_hz: float, timestep: float) -> int:
    """Physics steps per control step.

    Raises:
        RunnerError: the control period is not an integer multiple of the physics timestep.
    """
    if not (math.isfinite(control_rate_hz) and control_rate_hz > 0):
        raise RunnerError(f"control_rate_hz must be > 0, got {control_rate_hz}")
    period = 1.0 / control_rate_hz
    n = round(period / timestep)
    if n < 1 or not math.isclose(n * timestep, period, rel_tol=1e-6, abs_tol=1e-9):
        raise RunnerError(
            f"control period must be an integer multiple of the physics timestep: got {period} s "
            f"(control_rate_hz={control_rate_hz}) and {timestep} s"
        )
    return n


class EpisodeRunner:
    """Runs episodes of one world in process; a context manager that owns the world and its renderer.

    Example:
        with EpisodeRunner("tabletop-pick-v1") as runner:
            result = runner.run(policy, seed=3)
    """

    def __init__(
        self,
        world: str | Path,
        *,
        camera: str | None = None,
        variation: Variation | None = None,
        render_profile: str | None = None,
        policy_images: bool = True,
    ) -> None:
        """Compose the world (a bundled id or a folder); the renderer opens in ``__enter__``.

        ``variation``: build the world through ``r2s2r_sim.variations.make_world`` with it applied.
        ``render_profile``: the world's render profile to draw with; None: the camera's declared one.
        ``policy_images``: draw at the size and rate a policy's ``image_request()`` asks for (False: the
        camera's, as the sim node publishes them).

        Raises:
            RunnerError: the world has no task or no such camera.
            WorldError: the world folder is invalid, or no such render profile.
            VariationError: the variation cannot be applied to the world.
        """
        path = world_path(world)
        self.world: SimWorld = SimWorld(path) if variation is None else make_world(path, variation)
        cfg = self.world.config
        if cfg.task is None:
            raise RunnerError(f"world {cfg.id!r} has no task to evaluate")
        if not cfg.cameras:
            raise RunnerError(f"world {cfg.id!r} has no camera")
        self.camera = cfg.cameras[0] if camera is None else cfg.camera(camera)
        self.task = PickPlaceTask(cfg.task)
        self._mjcf_camera = self.world.model.camera(self.world.camera_id(self.camera.name)).name
        self.profile = cfg.render_profile(self.camera, render_profile)
        self.policy_images = policy_images
        self._renderer: CameraFrames | None = None
        # Intrinsics and size of the latest frame (the camera's own until a frame is drawn).
        self._frame_k = (
            camera_intrinsics(self.world.model, self._mjcf_camera, self.camera.width, self.camera.height),
            self.camera.width,
            self.camera.height,
        )

    def __enter__(self) -> EpisodeRunner:
        """Open the renderer."""
        self._renderer = CameraFrames(self.world.model, self._mjcf_camera, self.camera, self.profile)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the renderer."""
        if self._renderer is not None:
            self._renderer.close()
        self._renderer = None

    @property
    def renders(self) -> int:
        """Frames drawn since the runner opened."""
        return 0 if self._renderer is None else self._renderer.renders

    def episode_info(self, seed: int, control_period: float, episode_index: int = 0) -> EpisodeInfo:
        """The :class:`EpisodeInfo` a policy gets for ``seed`` in this world."""
        gripper = self.world.config.robot.gripper
        return EpisodeInfo(
            episode_index=episode_index,
            seed=seed,
            world_id=self.world.world_id,
            arm_joint_names=self.world.arm_joint_names,
            gripper_command_range=(0.0, 0.0) if gripper is None else gripper.command_range,
            control_period=control_period,
        )

    def _observation(self, images: tuple[object, object] | None) -> Observation:
        """Observation of the current state via the sim node's messages; ``images`` = (color, depth) msgs."""
        w = self.world
        stamp = rc.time_msg(round(w.time * 1e9))
        pos, vel, eff = w.joint_state()
        joint_state = rc.joint_state_msg(stamp, w.joint_names, pos, vel, eff)
        tf = TfTree()
        base_pos, base_quat = w.base_pose()
        cam_pos, cam_quat = w.camera_pose(self.camera.name)
        tf.add(
            [
                rc.transform_msg(rc.WORLD_FRAME, rc.BASE_FRAME, base_pos, base_quat, stamp),
                rc.transform_msg(rc.WORLD_FRAME, self.camera.frame_id, cam_pos, cam_quat, stamp),
            ]
        )
        color, depth = images if images is not None else (None, None)
        k, width, height = self._frame_k
        info = rc.camera_info_msg(k, width, height, stamp, self.camera.frame_id)
        return observation_from_messages(
            joint_state=joint_state,
            color=color,  # type: ignore[arg-type]
            depth=depth,  # type: ignore[arg-type]
            camera_info=info,
            camera_pose=tf.lookup(rc.WORLD_FRAME, self.camera.frame_id),
            base_pose=tf.lookup(rc.WORLD_FRAME, rc.BASE_FRAME),
            stamp=w.time,
        )

    def _render(self, request: ImageRequest | None) -> tuple[object, object]:
        assert self._renderer is not None
        frame = self._renderer.render(self.world.data, request)
        self._frame_k = (frame.k, frame.width, frame.height)
        stamp = rc.time_msg(round(self.world.time * 1e9))
        return (
            rc.rgb_image_msg(frame.rgb, stamp, self.camera.frame_id),
            rc.depth_image_msg(depth_to_uint16_mm(frame.depth), stamp, self.camera.frame_id),
        )

    def run(
        self,
        policy: Policy,
        seed: int,
        *,
        episode_index: int = 0,
        control_rate_hz: float | None = None,
        camera_rate_hz: float | None = None,
        max_steps: int | None = None,
    ) -> EpisodeResult:
        """Run one episode of ``policy`` from the world reset with ``seed``.

        Args:
            policy: the policy; ``reset`` is called first.
            seed: variation seed (also seeds the policy's stream through ``EpisodeInfo``).
            episode_index: passed to the policy.
            control_rate_hz: policy call rate; the policy's own ``control_rate_hz()`` or 10 Hz when None.
            camera_rate_hz: image rate; when None, the policy's requested rate (see ``policy_images``),
                else the camera's configured rate.  The latest frame is
                repeated between frames, as from a real camera.  A frame is always taken at t = 0.
            max_steps: control steps before giving up with reason ``max_steps``; None: only the task's
                timeout ends the episode.

        Raises:
            RunnerError: the control period is not a multiple of the physics timestep, or the renderer is
                not open (use the runner as a context manager).
        """
        if self._renderer is None:
            raise RunnerError("EpisodeRunner.run called outside its with-block (the renderer is closed)")
        rate = control_rate_hz if control_rate_hz is not None else policy.control_rate_hz()
        rate = DEFAULT_CONTROL_RATE_HZ if rate is None else rate
        substeps = control_substeps(rate, self.world.timestep)
        request = policy.image_request() if self.policy_images else None
        if camera_rate_hz is None:
            camera_rate_hz = self.camera.rate_hz
            if request is not None and request.rate_hz is not None:
                camera_rate_hz = request.rate_hz
        cam_period = 1.0 / camera_rate_hz
        wants_images = bool(policy.requires & {ObservationKind.RGB, ObservationKind.DEPTH})
        w = self.world
        wall0 = time.perf_counter()
        w.reset(seed)
        info = self.episode_info(seed, substeps * w.timestep, episode_index)
        steps = 0
        images = None
        next_frame = 0.0
        reason = ""
        outcome = None
        try:
            policy.reset(info)
        except Exception as err:  # noqa: BLE001 - any policy failure ends the episode as a failure
            reason = f"policy_error: {type(err).__name__}: {err}"
        while not reason:
            if wants_images and w.time >= next_frame - 1e-9:
                images = self._render(request)
                next_frame += cam_period * max(1, math.floor((w.time - next_frame) / cam_period) + 1)
            obs = self._observation(images)
            try:
                action = policy.act(obs)
                action.check(info)
            except Exception as err:  # noqa: BLE001
                reason = f"policy_error: {type(err).__name__}: {err}"
                break
            arm = w.set_arm_command(action.arm_positions)
            grip = w.set_gripper_command(action.gripper) if w.gripper_command_range is not None else arm
            if not (arm.accepted and grip.accepted):
                reason = f"policy_error: command refused: {arm.reason or grip.reason}"
                break
            w.step(substeps)
            steps += 1
            outcome = self.task.evaluate(w)
            if outcome is not None:
                reason = outcome.reason
            elif max_steps is not None and steps >= max_steps:
                reason = "max_steps"
        metrics = outcome.metrics if outcome is not None else self.task.metrics(w)
        return EpisodeResult(
            world_id=w.world_id,
            world_hash=w.world_hash,
            seed=seed,
            episode_index=episode_index,
            success=outcome is not None and outcome.success,
            reason=reason,
            duration_s=w.time,
            wall_s=time.perf_counter() - wall0,
            steps=steps,
            metrics={k: float(v) for k, v in metrics.items()},
        )


def run_episode(
    world: str | Path,
    policy: Policy,
    seed: int,
    *,
    episode_index: int = 0,
    control_rate_hz: float | None = None,
    camera_rate_hz: float | None = None,
    max_steps: int | None = None,
) -> EpisodeResult:
    """Run one episode in a fresh :class:`EpisodeRunner` (see :meth:`EpisodeRunner.run`)."""
    with EpisodeRunner(world) as runner:
        return runner.run(
            policy,
            seed,
            episode_index=episode_index,
            control_rate_hz=control_rate_hz,
            camera_rate_hz=camera_rate_hz,
            max_steps=max_steps,
        )
