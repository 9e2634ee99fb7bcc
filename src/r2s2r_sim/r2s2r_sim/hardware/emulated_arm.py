"""Emulated hardware: a STAND-IN for a real arm driver plus a RealSense camera, built from a hardware profile.

Nothing here is a robot.  :class:`EmulatedArm` is a second, separate MuJoCo instance of a world whose
physics, camera and scene are edited (through ``SimWorld``'s ``spec_editor``) to the values of a
:class:`HardwareProfile` YAML file, so that the sim side (which never reads that file) and the "hardware"
side differ the way a real cell differs from its simulation.  On top of the physics it emulates what a
driver adds: command latency (``SimWorld``'s command delay set to the profile's), joint-state noise
(seeded) and a camera with lens distortion (plumb_bob) whose ``CameraInfo`` carries the profile's ``K``
and ``D``.

The profile is read by :mod:`r2s2r_sim.hardware.profile`; the camera with lens distortion is
:mod:`r2s2r_sim.hardware.emulated_camera`.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from r2s2r_sim.hardware.arm_effects import ArmEffectsState, edit_spec
from r2s2r_sim.hardware.bullet_unit import check_profile as check_bullet_profile
from r2s2r_sim.hardware.bullet_unit.camera import BulletPinholeRenderer, ProcessPinholeRenderer
from r2s2r_sim.hardware.bullet_unit.physics import BulletPhysics
from r2s2r_sim.hardware.contact_effects import apply_contacts
from r2s2r_sim.hardware.emulated_camera import DistortedRgbdCamera, PinholeRenderer, render_geometry
from r2s2r_sim.hardware.profile import (
    HardwareProfile,
    HardwareProfileError,
    load_hardware_profile,
)
from r2s2r_sim.hardware.profile_elements import set_servo_gains, spec_servo_scale
from r2s2r_sim.render.renderer import camera_intrinsics
from r2s2r_sim.tasks.registry import ObjectPose, Outcome, judge_now
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.world.geom_keys import find_geom
from r2s2r_sim.world.kinematics import mat_to_quat
from r2s2r_sim.world.robot_binding import UNNAMED_ACTUATOR
from r2s2r_sim.world.sim_world import CommandCheck, SimWorld
from r2s2r_sim.worlds import world_path

__all__ = [
    "STAND_IN_BANNER",
    "EmulatedArm",
]

STAND_IN_BANNER = "EMULATED HARDWARE (stand-in for a real arm driver + RealSense; not a robot)"

# Rotation of the optical frame (z forward, x right, y down) in the camera link frame (x fwd, y left, z up).
_LINK_TO_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
# MuJoCo cameras look along -z with y up: the optical frame rotated 180 deg about x.
_OPTICAL_TO_MJCAM = np.diag([1.0, -1.0, -1.0])


# ---------------------------------------------------------------------------------------- the arm


class _ProfileEditor:
    """The ``spec_editor`` that applies a profile to a composed ``MjSpec`` (robot names unprefixed)."""

    def __init__(
        self,
        profile: HardwareProfile,
        prefix: str,
        base_masses: Mapping[str, float],
        mjcf_camera: str,
        render: tuple[int, int, float],
    ) -> None:
        self.p = profile
        self.prefix = prefix
        self.base_masses = base_masses
        self.mjcf_camera = mjcf_camera
        self.render = render

    def _fail(self, fld: str, kind: str, name: str, have: Sequence[Any]) -> HardwareProfileError:
        names = sorted({getattr(h, "name", "") for h in have} - {""})
        return HardwareProfileError(
            f"{self.p.source}: {fld}: no {kind} {name!r} in world {self.p.world!r} ({kind}s: {names})"
        )

    def _get(self, getter: Callable[[str], Any], name: str) -> Any:
        spec = getattr(getter, "__self__", None)
        if isinstance(spec, mujoco.MjSpec) and getter == spec.geom:  # geoms may be addressed by body
            return find_geom(spec, name, self.prefix)
        found = getter(name)
        if found is None and self.prefix:
            found = getter(self.prefix + name)
        return found

    def _actuator(self, spec: mujoco.MjSpec, ref: str) -> Any:
        """The actuator ``ref`` addresses: its name, ``#i`` / ``<unnamed #i>``, or the one joint it drives.

        The same three ways ``world.yaml`` and the flags address actuators, so that a profile of an arm
        whose file names no actuators can set its servos without editing that file.
        """
        unnamed = UNNAMED_ACTUATOR.match(ref.strip())
        found = self._get(spec.actuator, f"#{unnamed.group(1)}" if unnamed else ref)
        if found is not None or unnamed:
            return found
        targets = {ref, self.prefix + ref}
        driving = [
            a
            for a in spec.actuators
            if a.target in targets and a.trntype in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_TENDON)
        ]
        return driving[0] if len(driving) == 1 else None

    def __call__(self, spec: mujoco.MjSpec) -> None:
        phys = self.p.physics
        edit_spec(
            spec,
            self.p.arm,
            lambda n: self._get(spec.joint, n),
            lambda fld, msg: HardwareProfileError(f"{self.p.source}: {fld}: {msg}"),
        )
        for name, mass in phys.body_masses_kg.items():
            body = self._get(spec.body, name)
            if body is None:
                raise self._fail(f"physics.body_masses_kg.{name}", "body", name, spec.bodies)
            scale = mass / self.base_masses[name]
            if body.explicitinertial:
                body.mass = mass
                body.inertia = np.array(body.inertia, dtype=np.float64) * scale
            for geom in body.geoms:  # the same rule as the variation engine's mass axis
                if math.isnan(geom.mass):
                    geom.density = geom.density * scale
                else:
                    geom.mass = geom.mass * scale
        for name, friction in phys.geom_friction.items():
            geom = self._get(spec.geom, name)
            if geom is None:
                raise self._fail(f"physics.geom_friction.{name}", "geom", name, spec.geoms)
            geom.friction = np.array(friction, dtype=np.float64)
        for name, dyn in phys.joints.items():
            joint = self._get(spec.joint, name)
            if joint is None:
                raise self._fail(f"physics.joints.{name}", "joint", name, spec.joints)
            if dyn.damping is not None:
                damping = np.array(joint.damping, dtype=np.float64).reshape(-1)
                damping[0] = dyn.damping
                joint.damping = damping if damping.size > 1 else float(damping[0])
            if dyn.armature is not None:
                joint.armature = dyn.armature
            if dyn.frictionloss is not None:
                joint.frictionloss = dyn.frictionloss
        for name, gains in phys.servos.items():
            act = self._actuator(spec, name)
            if act is None or not set_servo_gains(act, gains.kp, gains.kv):
                servos = [a for a in spec.actuators if spec_servo_scale(a) is not None]
                raise self._fail(f"physics.servos.{name}", "position actuator", name, servos)
        for name, obj in self.p.objects.items():
            body = self._get(spec.body, name)
            if body is None:
                raise self._fail(f"objects.{name}", "body", name, spec.bodies)
            if obj.pose is not None:
                body.pos = np.array(obj.pose.position, dtype=np.float64)
                body.alt.type = mujoco.mjtOrientation.mjORIENTATION_QUAT
                body.quat = obj.pose.quat()
            for gname, size in obj.geom_sizes.items():
                geom = next((g for g in body.geoms if g.name in (gname, self.prefix + gname)), None)
                if geom is None:
                    raise self._fail(f"objects.{name}.geom_sizes.{gname}", "geom", gname, body.geoms)
                new = np.array(geom.size, dtype=np.float64)
                new[: len(size)] = size
                geom.size = new
        apply_contacts(
            spec,
            self.p.contacts,
            self._get,
            lambda fld, msg: HardwareProfileError(f"{self.p.source}: {fld}: {msg}"),
        )
        for name, light in self.p.lights.items():
            spec_light = self._get(spec.light, name)
            if spec_light is None:
                raise self._fail(f"lights.{name}", "light", name, spec.lights)
            if light.position is not None:
                spec_light.pos = np.array(light.position, dtype=np.float64)
            if light.direction is not None:
                spec_light.dir = np.array(light.direction, dtype=np.float64)
            if light.diffuse is not None:
                spec_light.diffuse = np.array(light.diffuse, dtype=np.float64)
        self._camera(spec)

    def _camera(self, spec: mujoco.MjSpec) -> None:
        cam = self._get(spec.camera, self.mjcf_camera)
        if cam is None:
            raise self._fail("camera.name", "camera", self.mjcf_camera, spec.cameras)
        pose = self.p.camera.pose
        # MuJoCo camera axes in the world: link -> optical -> MuJoCo (-z forward, y up).
        rot = pose.matrix() @ _LINK_TO_OPTICAL @ _OPTICAL_TO_MJCAM
        cam.pos = np.array(pose.position, dtype=np.float64)
        cam.alt.type = mujoco.mjtOrientation.mjORIENTATION_QUAT
        cam.quat = mat_to_quat(rot)
        if cam.parent is not None and cam.parent.name not in ("world", ""):
            raise HardwareProfileError(
                f"{self.p.source}: camera.pose: camera {self.mjcf_camera!r} is mounted on body "
                f"{cam.parent.name!r}; only fixed world cameras are supported"
            )
        width, height, f = self.render
        cam.fovy = math.degrees(2.0 * math.atan((height / 2.0) / f))
        cam.sensor_size = [0.0, 0.0]  # a camera written with sensor intrinsics renders by fovy here
        glob = spec.visual.global_
        glob.offwidth = max(int(glob.offwidth), width)
        glob.offheight = max(int(glob.offheight), height)


class EmulatedArm:
    """STAND-IN for a real arm + RealSense: a separate MuJoCo world with a hardware profile applied.

    Not thread safe: the node serialises calls with one lock.  Time (``clock``, s) is the emulator's own
    physics time since construction; it never goes back, not even at :meth:`reset`.  Commands are validated
    and clamped when submitted, and become servo setpoints ``command_latency_s`` later (at the first physics
    step at or after that time), through the world's command delay.

    Raises (constructor):
        HardwareProfileError: the profile names something the world lacks, or was written for another world.
        WorldError: the world cannot be loaded.
    """

    def __init__(
        self,
        world: str | Path,
        profile: HardwareProfile,
        *,
        seed: int = 0,
        extra_spec_editor: Callable[[mujoco.MjSpec], None] | None = None,
    ) -> None:
        """Build the base world (for its hash and masses), then the profiled world; reset with ``seed``.

        ``extra_spec_editor``: a further spec edit applied after the profile's (e.g. an operator's
        lighting and clutter as a variation, ``r2s2r_sim.cells.emulated_cell``); ``base_world_hash`` and the
        profile checks are unaffected by it.
        """
        folder = world_path(world)
        config = load_world_config(folder)
        base = SimWorld(folder, config=config)
        profile = profile.for_world(base.world_id)
        if profile.engine == "pybullet":
            check_bullet_profile(profile)
        if profile.world not in (base.world_id, str(world)):
            written_for = " or ".join(map(repr, profile.worlds))
            raise HardwareProfileError(
                f"{profile.source}: world: the profile is for {written_for}, not for {base.world_id!r}"
            )
        self.profile = profile
        self.base_world_hash: str = base.world_hash
        cam_cfg = next((c for c in base.config.cameras if c.name == profile.camera.name), None)
        if cam_cfg is None:
            raise HardwareProfileError(
                f"{profile.source}: camera.name: no camera {profile.camera.name!r} in world "
                f"{base.world_id!r} "
                f"(cameras: {[c.name for c in base.config.cameras]})"
            )
        mjcf_camera = base.model.camera(base.camera_id(cam_cfg.name)).name
        masses: dict[str, float] = {}
        for name in profile.physics.body_masses_kg:
            for candidate in (name, base.config.robot.prefix + name):
                bid = mujoco.mj_name2id(base.model, mujoco.mjtObj.mjOBJ_BODY, candidate)
                if bid >= 0:
                    masses[name] = float(base.model.body_mass[bid])
                    break
            else:
                raise HardwareProfileError(
                    f"{profile.source}: physics.body_masses_kg.{name}: no body {name!r} in world "
                    f"{base.world_id!r}"
                )
            if masses[name] <= 0:
                raise HardwareProfileError(
                    f"{profile.source}: physics.body_masses_kg.{name}: body {name!r} has no mass to scale"
                )
        del base
        render = render_geometry(profile.camera)
        profile_editor = _ProfileEditor(profile, config.robot.prefix, masses, mjcf_camera, render)

        def editor(spec: mujoco.MjSpec) -> None:
            profile_editor(spec)
            if extra_spec_editor is not None:
                extra_spec_editor(spec)

        self.world = SimWorld(folder, config=config, spec_editor=editor)
        self._extra_editor = extra_spec_editor
        # The profile's driver latency is the only delay here (a real2sim world's identified one is not).
        self.world.command_delay_s = profile.driver.command_latency_s
        self.world_id: str = self.world.world_id
        self.mjcf_camera = self.world.model.camera(self.world.camera_id(cam_cfg.name)).name
        self.camera_frame_id: str = cam_cfg.frame_id
        self.depth_range: tuple[float, float] = cam_cfg.depth_range
        self.dt: float = self.world.timestep
        self.clock: float = 0.0
        self._rng = np.random.default_rng(seed)
        self.seed = seed
        color = profile.sensors.color
        blur_steps = math.ceil(color.exposure_s / self.dt) + 1 if color is not None and color.blurs else 0
        self._history: deque[tuple[float, np.ndarray]] = deque(maxlen=max(blur_steps, 1))
        self._arm_fx = (
            None if profile.arm.rigid else ArmEffectsState(self.world.model, profile.arm, config.robot.prefix)
        )
        # An ``engine: pybullet`` unit: Bullet takes every physics step; the world keeps the rest.
        self._bullet = BulletPhysics(self.world) if profile.engine == "pybullet" else None
        self.world.step_hook = self._bullet if self._bullet is not None else self._arm_fx
        self._task = self.world.task
        self.reset(seed)

    # ---------------------------------------------------------------------------------- episodes

    def reset(self, seed: int, *, object_pose: ObjectPose | None = None) -> None:
        """Put the cell in its initial state for ``seed`` (a stand-in for an operator resetting it).

        The arm goes home, the task object is placed at ``object_pose`` or, without one, like the sim places
        it for ``seed`` (x, y, yaw from the world's ``object_pose_range``); its height and every other
        object pose are the profile's.  Pending commands are dropped.  ``clock`` keeps running.
        """
        self.world.reset(int(seed), object_pose=object_pose)
        self._history.clear()
        if self._arm_fx is not None:
            self._arm_fx.reset(self.world.data)
        if self._bullet is not None:
            self._bullet.reset(self.world.data)
        self.episode_seed = int(seed)
        self.episode_start = self.clock

    # ---------------------------------------------------------------------------------- commands

    def submit_arm(self, positions: Sequence[float]) -> CommandCheck:
        """Queue an arm position command (rad or m, ``arm_joint_names`` order), applied after the latency.

        Refuses now (nothing queued) a wrong length or non-finite values; limits are clamped.
        """
        return self.world.set_arm_command(positions)

    def submit_gripper(self, value: float) -> CommandCheck:
        """Queue a gripper command (``gripper.command_range`` units), applied after the latency."""
        return self.world.set_gripper_command(value)

    @property
    def pending_commands(self) -> int:
        """Commands received and not yet applied."""
        return self.world.pending_commands

    # ---------------------------------------------------------------------------------- physics

    def advance(self, n: int = 1) -> None:
        """Advance ``n`` physics steps, releasing due commands before each step."""
        if n < 1:
            raise ValueError(f"step count must be >= 1, got {n}")
        if not (self._history.maxlen and self._history.maxlen > 1):
            self.world.step(n)
            for _ in range(n):  # the clock sums steps one by one, as the physics time does
                self.clock += self.dt
        else:
            for _ in range(n):  # keep every step's state for the camera's exposure
                self.world.step(1)
                self.clock += self.dt
                self._history.append((self.clock, self.world.data.qpos.copy()))

    def joint_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Measured positions, velocities (true + seeded white noise) and efforts (``joint_names`` order)."""
        pos, vel, eff = self.world.joint_state()
        drv = self.profile.driver
        pos = pos + self._rng.normal(0.0, drv.position_noise_std_rad, pos.shape)
        if self._arm_fx is not None:
            pos = self._arm_fx.measure(pos, self.world.state_qpos_addresses)
        vel = vel + self._rng.normal(0.0, drv.velocity_noise_std_rad_s, vel.shape)
        return pos, vel, eff

    # ---------------------------------------------------------------------------------- camera

    def camera_renderer(self, *, own_process: bool = False) -> DistortedRgbdCamera:
        """A distorted RGB-D renderer of the profile's camera (enter it on the thread that renders).

        ``own_process``: a Bullet unit draws its frames in a child process (a node, whose physics thread
        pybullet would stop for a whole frame); the MuJoCo unit ignores it.

        Raises:
            ValueError: ``own_process`` for a unit built with an extra spec edit (a child cannot rebuild it).
        """
        pinhole: PinholeRenderer | None = None
        if self._bullet is not None:
            width, height, _ = render_geometry(self.profile.camera)
            k = camera_intrinsics(self.world.model, self.mjcf_camera, width, height)
            if not own_process:
                pinhole = BulletPinholeRenderer(self.world, width, height, k)
            elif self._extra_editor is not None:
                raise ValueError("a Bullet unit with an extra spec edit cannot render in its own process")
            else:
                build = partial(
                    _bullet_pinhole, self.world.config.world_dir, self.profile.source, width, height, k
                )
                pinhole = ProcessPinholeRenderer(build)
        return DistortedRgbdCamera(
            self.world.model,
            self.mjcf_camera,
            self.profile.camera,
            self.depth_range,
            sensors=self.profile.sensors,
            episode_seed=lambda: self.episode_seed,
            history=lambda data: self.motion_start() if data is self.world.data else None,
            renderer=pinhole,
        )

    def motion_start(self) -> np.ndarray | None:
        """``qpos`` at the start of the current camera exposure (``None``: no motion blur, or no history)."""
        color = self.profile.sensors.color
        if color is None or not color.blurs or not self._history:
            return None
        t = self.clock - color.exposure_s
        for when, qpos in reversed(self._history):
            if when <= t + 1e-12:
                return qpos
        return self._history[0][1]

    # ---------------------------------------------------------------------------------- judging

    def judge(self) -> Outcome:
        """STAND-IN for a human judge: the task's verdict on the current state (no timeout applies).

        ``reason`` is ``"success"``, a failure the task ends episodes on (``"object_dropped"``,
        ``"support_toppled"``), else what the task says is missing (its ``shortfall``, e.g.
        ``"drawer_not_opened"``) or ``"not_achieved"``; ``metrics`` are the task's named terms
        (:func:`r2s2r_sim.tasks.registry.judge_now`, as every cell judges).  Holds are timed from the judge's
        watching: the world shows the task its state as it steps.  Without a task: ``Outcome(False, "no_task",
        {})``.
        """
        if self._task is None:
            return Outcome(False, "no_task", {})
        return judge_now(self._task, self.world)

    def judge_json(self) -> str:
        """:meth:`judge` as the JSON message of the ``judge`` service (see the node)."""
        outcome = self.judge()
        return json.dumps(
            {
                "judge": "emulated (stand-in for a human judge; real hardware has no such service)",
                "success": outcome.success,
                "reason": outcome.reason,
                "seed": self.episode_seed,
                "episode_time_s": round(self.clock - self.episode_start, 6),
                "metrics": outcome.metrics,
            },
            sort_keys=True,
        )


def _bullet_pinhole(
    world: Path, profile: Path, width: int, height: int, k: np.ndarray
) -> BulletPinholeRenderer:
    """The Bullet unit's pinhole renderer of ``world`` and the profile at ``profile`` (a render process's)."""
    return BulletPinholeRenderer(EmulatedArm(world, load_hardware_profile(profile)).world, width, height, k)
