"""In-process "real" episodes: the policy API driven through the emulated hardware's core; no rclpy.

The counterpart of :mod:`r2s2r_eval.runner` for the hardware side of the closed loop (issue 8).  The world is
an :class:`~r2s2r_sim.emulated_hardware.EmulatedArm` built from a hardware profile, so a policy meets what
the emulated hardware node would give it over ROS, at full speed:

* images from the profile's distorted camera (``DistortedRgbdCamera``), ``CameraInfo`` with the profile's
  ``K`` and plumb_bob ``D``, the camera's extrinsics and the base pose as the node's ``/tf_static``;
* noisy joint states (``EmulatedArm.joint_state``);
* commands through the latency FIFO (``submit_arm`` / ``submit_gripper``, released by ``advance``);
* the outcome from the stand-in judge (``EmulatedArm.judge``) when the policy says it is done, or at the
  task's timeout.  Nothing else ends an episode early, as on hardware.

An operator's per-episode changes of the cell are a :class:`~r2s2r_sim.variations.Variation` restricted to
:data:`OPERATOR_AXES`: lighting and clutter are spec edits composed after the profile's (``EmulatedArm``'s
``extra_spec_editor``), and the object is put at the variation's ``x, y, yaw`` after each reset (its height
stays the profile's), as a person placing it would.  Physics, robot start state and camera are the
profile's and cannot be varied here.
"""

from __future__ import annotations

import math
import time
from functools import partial
from pathlib import Path
from types import TracebackType

import mujoco
import numpy as np
from r2s2r_sim.emulated_hardware import (
    DistortedRgbdCamera,
    EmulatedArm,
    HardwareProfile,
    load_hardware_profile,
)
from r2s2r_sim.variations import Variation, VariationConfig, apply_variation

from r2s2r_eval.conversions import TfTree, observation_from_messages
from r2s2r_eval.policy import EpisodeInfo, Observation, ObservationKind, Policy
from r2s2r_eval.runner import DEFAULT_CONTROL_RATE_HZ, EpisodeResult, RunnerError, control_substeps
from r2s2r_sim import ros_conversions as rc

__all__ = ["OPERATOR_AXES", "EmulatedRunner", "check_operator_config"]

OPERATOR_AXES = ("appearance", "objects", "clutter")
"""Variation axes an operator changes between real episodes (lighting and colours, object pose, clutter)."""


def check_operator_config(config: VariationConfig) -> None:
    """Refuse a variation config that varies what an operator cannot (physics, robot state, camera).

    Raises:
        RunnerError: naming the axes at fault.
    """
    bad = [a for a in config.enabled_axes() if a not in OPERATOR_AXES]
    if bad:
        raise RunnerError(
            f"emulated hardware: variation axes {bad} cannot be varied by an operator between real "
            f"episodes (allowed: {list(OPERATOR_AXES)}); disable them in the variation config"
        )


class EmulatedRunner:
    """Runs real-side episodes on one emulated cell; a context manager that owns the arm and its camera.

    Example:
        with EmulatedRunner("tabletop-pick-v1", "config/emulated_hardware/default_profile.yaml") as runner:
            result = runner.run(policy, seed=3)
    """

    def __init__(
        self,
        world: str | Path,
        profile: HardwareProfile | str | Path,
        *,
        variation: Variation | None = None,
    ) -> None:
        """Build the cell (the profile, then the variation's operator edits); the camera opens on entry.

        Raises:
            RunnerError: the variation varies a non-operator axis, or the world has no task.
            HardwareProfileError: the profile does not fit the world.
            VariationError: the variation cannot be applied.
        """
        self.profile = profile if isinstance(profile, HardwareProfile) else load_hardware_profile(profile)
        self.variation = variation
        editor = None
        if variation is not None:
            check_operator_config(variation.config)
            editor = partial(apply_variation, variation=variation)
        self.arm = EmulatedArm(world, self.profile, extra_spec_editor=editor)
        w = self.arm.world
        if w.config.task is None:
            raise RunnerError(f"world {w.world_id!r} has no task to evaluate")
        self.timeout_s: float = float(w.config.task.timeout)
        self._object_qadr = -1
        obj = variation.axis_params("objects") if variation is not None else {}
        if obj:
            body = w.model.body(variation.config.objects.body)  # type: ignore[union-attr]
            jnt = int(w.model.body_jntadr[body.id])
            if jnt < 0 or w.model.jnt_type[jnt] != mujoco.mjtJoint.mjJNT_FREE:
                raise RunnerError(f"objects.body {body.name!r} is not a free body of {w.world_id!r}")
            self._object_qadr = int(w.model.jnt_qposadr[jnt])
        self._object_pose = obj
        cam = self.profile.camera
        self._k = cam.intrinsics.k()
        self._d = np.asarray(cam.distortion.d(), dtype=np.float64).reshape(-1)
        self._size = (cam.width, cam.height)
        self.camera_rate_hz: float = float(cam.rate_hz)
        self._camera: DistortedRgbdCamera | None = None

    @property
    def world_id(self) -> str:
        """The cell's world id (the profile's world)."""
        return self.arm.world_id

    @property
    def world_hash(self) -> str:
        """Hash of the unprofiled base world, the same for every variation (what results rows record)."""
        return self.arm.base_world_hash

    def __enter__(self) -> EmulatedRunner:
        """Open the distorted camera."""
        self._camera = self.arm.camera_renderer().__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the camera."""
        if self._camera is not None:
            self._camera.__exit__(exc_type, exc, tb)
        self._camera = None

    # ------------------------------------------------------------------------------------------ episode

    def _reset(self, seed: int) -> None:
        """Operator reset: the arm home, the object where the variation puts it (else the seed's pose)."""
        self.arm.reset(seed)
        if self._object_qadr < 0:
            return
        w, adr, p = self.arm.world, self._object_qadr, self._object_pose
        w.data.qpos[adr : adr + 2] = (p["x"], p["y"])
        w.data.qpos[adr + 3 : adr + 7] = (math.cos(p["yaw"] / 2), 0.0, 0.0, math.sin(p["yaw"] / 2))
        w.data.qvel[:] = 0.0
        mujoco.mj_forward(w.model, w.data)

    def _stamp(self) -> float:
        return self.arm.clock - self.arm.episode_start

    def _observation(self, images: tuple[object, object] | None) -> Observation:
        """What the emulated hardware node would publish now, converted as the policy node converts it."""
        w, t = self.arm.world, self._stamp()
        stamp = rc.time_msg(round(t * 1e9))
        pos, vel, eff = self.arm.joint_state()
        joint_state = rc.joint_state_msg(stamp, w.joint_names, pos, vel, eff)
        frame = self.arm.camera_frame_id
        tf = TfTree()
        cam_pos, cam_quat = w.camera_pose(self.profile.camera.name)
        tf.add(
            [
                rc.transform_msg(rc.WORLD_FRAME, rc.BASE_FRAME, *w.base_pose(), stamp),
                rc.transform_msg(rc.WORLD_FRAME, frame, cam_pos, cam_quat, stamp),
            ]
        )
        info = rc.camera_info_msg(self._k, self._size[0], self._size[1], stamp, frame)
        info.d = self._d.tolist()  # the driver's factory D: the images are distorted
        color, depth = images if images is not None else (None, None)
        return observation_from_messages(
            joint_state=joint_state,
            color=color,  # type: ignore[arg-type]
            depth=depth,  # type: ignore[arg-type]
            camera_info=info,
            camera_pose=tf.lookup(rc.WORLD_FRAME, frame),
            base_pose=tf.lookup(rc.WORLD_FRAME, rc.BASE_FRAME),
            stamp=t,
        )

    def _render(self) -> tuple[object, object]:
        assert self._camera is not None
        rgb, depth_mm = self._camera.render(self.arm.world.data)
        stamp = rc.time_msg(round(self._stamp() * 1e9))
        frame = self.arm.camera_frame_id
        return rc.rgb_image_msg(rgb, stamp, frame), rc.depth_image_msg(depth_mm, stamp, frame)

    def episode_info(self, seed: int, control_period: float, episode_index: int = 0) -> EpisodeInfo:
        """The :class:`EpisodeInfo` a policy gets for ``seed`` on this cell."""
        w = self.arm.world
        gripper = w.config.robot.gripper
        return EpisodeInfo(
            episode_index=episode_index,
            seed=seed,
            world_id=w.world_id,
            arm_joint_names=w.arm_joint_names,
            gripper_command_range=(0.0, 0.0) if gripper is None else gripper.command_range,
            control_period=control_period,
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
        """Run one real-side episode of ``policy`` after an operator reset with ``seed``.

        The episode ends when ``policy.done`` turns true, at the task's timeout (emulator time since the
        reset), after ``max_steps`` control steps, or on a policy error; then the judge gives the outcome
        (reason ``success``, ``object_dropped`` or ``not_achieved``, with ``timeout`` / ``max_steps``
        appended when that ended it).  Arguments as :meth:`r2s2r_eval.runner.EpisodeRunner.run`; the
        default camera rate is the profile's.

        Raises:
            RunnerError: a bad control rate, or the camera is not open (use the runner as a context manager).
        """
        if self._camera is None:
            raise RunnerError("EmulatedRunner.run called outside its with-block (the camera is closed)")
        rate = control_rate_hz if control_rate_hz is not None else policy.control_rate_hz()
        rate = DEFAULT_CONTROL_RATE_HZ if rate is None else rate
        substeps = control_substeps(rate, self.arm.dt)
        cam_period = 1.0 / (camera_rate_hz if camera_rate_hz is not None else self.camera_rate_hz)
        wants_images = bool(policy.requires & {ObservationKind.RGB, ObservationKind.DEPTH})
        arm = self.arm
        wall0 = time.perf_counter()
        self._reset(seed)
        info = self.episode_info(seed, substeps * arm.dt, episode_index)
        steps = 0
        images = None
        next_frame = 0.0
        ended = ""
        try:
            policy.reset(info)
        except Exception as err:  # noqa: BLE001 - any policy failure ends the episode as a failure
            ended = f"policy_error: {type(err).__name__}: {err}"
        while not ended:
            t = self._stamp()
            if wants_images and t >= next_frame - 1e-9:
                images = self._render()
                next_frame += cam_period * max(1, math.floor((t - next_frame) / cam_period) + 1)
            try:
                action = policy.act(self._observation(images))
                action.check(info)
            except Exception as err:  # noqa: BLE001
                ended = f"policy_error: {type(err).__name__}: {err}"
                break
            a = arm.submit_arm(action.arm_positions)
            g = arm.submit_gripper(action.gripper) if arm.world.gripper_command_range is not None else a
            if not (a.accepted and g.accepted):
                ended = f"policy_error: command refused: {a.reason or g.reason}"
                break
            arm.advance(substeps)
            steps += 1
            if policy.done:
                ended = "done"
            elif self._stamp() >= self.timeout_s - 1e-9:
                ended = "timeout"
            elif max_steps is not None and steps >= max_steps:
                ended = "max_steps"
        outcome = arm.judge()
        if ended.startswith("policy_error"):
            reason, success = ended, False
        else:
            success = outcome.success
            reason = outcome.reason if ended == "done" or success else f"{outcome.reason} ({ended})"
        return EpisodeResult(
            world_id=arm.world_id,
            world_hash=self.world_hash,
            seed=seed,
            episode_index=episode_index,
            success=success,
            reason=reason,
            duration_s=self._stamp(),
            wall_s=time.perf_counter() - wall0,
            steps=steps,
            metrics={k: float(v) for k, v in outcome.metrics.items()},
        )
