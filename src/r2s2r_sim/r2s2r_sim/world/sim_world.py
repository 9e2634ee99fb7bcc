"""SimWorld: a composed MuJoCo world (scene + attached robot) with named accessors; no ROS."""

from __future__ import annotations

import collections
import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import mujoco
import numpy as np

from r2s2r_sim.errors import WorldError
from r2s2r_sim.render.sensor_effects import SensorEffects
from r2s2r_sim.tasks.registry import SETTLE_SAMPLE_S, EpisodeJudge, ObjectPose, Outcome, Task, make_task
from r2s2r_sim.world.compose import command_delay, compose_world
from r2s2r_sim.world.config import WorldConfig, load_world_config
from r2s2r_sim.world.kinematics import mat_to_quat
from r2s2r_sim.world.robot_binding import bind_robot, element_names

__all__ = ["CommandCheck", "SimWorld"]

_OPTICAL_FROM_MUJOCO_CAMERA = np.diag([1.0, -1.0, -1.0])  # 180 deg about x: -z/y-up -> z fwd/y down


@dataclass(frozen=True)
class CommandCheck:
    """Result of a command.

    Attributes:
        accepted: the command was applied (possibly clamped); if False the state is unchanged.
        clamped: at least one value was clamped to its limits.
        reason: why it was refused or clamped; empty when applied as given.
    """

    accepted: bool
    clamped: bool
    reason: str


class SimWorld:
    """A world folder composed into one MuJoCo model, addressed by name.

    The scene MJCF and the robot MJCF are loaded from their own folders (so mesh paths resolve there), the
    robot is attached at ``robot.attach``, the robot's physics options are copied in, and every name the
    interface uses is resolved to an id once, here.  All names given to and returned by this class are
    unprefixed (as in ``world.yaml``).

    Arm commands are joint positions (rad or m) in ``arm_joint_names`` order, written to the ctrl of the
    position actuator that drives each joint (found through ``actuator_trnid``, never by name).  The
    gripper command is mapped linearly from ``gripper.command_range`` onto each actuator's ``ctrl_range``.
    """

    def __init__(
        self,
        world_dir: str | Path,
        *,
        config: WorldConfig | None = None,
        spec_editor: Callable[[mujoco.MjSpec], None] | None = None,
    ) -> None:
        """Load, compose and compile a world.

        Args:
            world_dir: the world folder (holding ``world.yaml``).
            config: an already parsed config (e.g. a variant made with ``dataclasses.replace``); read from
                ``world_dir`` when None.
            spec_editor: called once with the composed ``MjSpec`` (scene + attached robot, physics options
                set) just before it is compiled, e.g. to apply a variation; ``None`` compiles it as is.
                Its own exceptions propagate unchanged.

        Raises:
            WorldError: naming the file and field at fault.
        """
        self.config: WorldConfig = config if config is not None else load_world_config(world_dir)
        cfg = self.config
        self._src = str(cfg.source)
        self._robot_rel = self._rel(cfg.robot.mjcf)
        self._scene_rel = self._rel(cfg.scene)
        self._prefix = cfg.robot.prefix
        self._robot_field = "robot.urdf" if cfg.robot.is_urdf else "robot.mjcf"

        self._spec, self.model, self._robot_root_name = compose_world(cfg, spec_editor)
        self.data: mujoco.MjData = mujoco.MjData(self.model)
        self.world_id: str = cfg.id
        self.timestep: float = float(self.model.opt.timestep)

        self._resolve_robot()
        self._resolve_cameras()
        self._resolve_task()
        self.world_hash: str = self._content_hash()
        self._gripper_command: float | None = None
        # Identified command delay (s) of a ``r2s2r real2sim`` world, 0 otherwise: commands take effect
        # this long after set_*_command(), like the real driver's latency they were identified from.
        self.command_delay_s: float = command_delay(self.model)
        # What a hardware stand-in adds around every physics step (``r2s2r_sim.hardware.arm_effects``): it
        # gates when queued commands reach the actuators and edits the state before each step.  ``None`` in
        # the sim.
        self.step_hook: StepHook | None = None
        # Sensor effects of its rendered camera frames (the ``sensor`` variation axis); None: ideal images.
        self.sensors: SensorEffects | None = None
        self._pending: collections.deque[tuple[float, str, np.ndarray, float | None]] = collections.deque()
        self._judge = EpisodeJudge()
        # The next judge sample (see step()): its due time, the time at which it is taken, and the span of
        # step-start times for which that due time stands (empty: work it out on the next step).
        self._sample_due = self._sample_at = 0.0
        self._sample_from, self._sample_until = math.inf, -math.inf
        self._sample_quiet = -math.inf
        self.reset(0)

    # ------------------------------------------------------------------------------------------ loading

    def _rel(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.config.world_dir))
        except ValueError:
            return str(path)

    def _full(self, name: str) -> str:
        return self._prefix + name

    def _resolve_robot(self) -> None:
        b = bind_robot(
            self.model, self.config, self._robot_root_name, src=self._src, robot_rel=self._robot_rel
        )
        self.arm_joint_names: tuple[str, ...] = b.arm_joint_names
        self._arm_jnt, self._arm_act = b.arm_jnt, b.arm_act
        self.arm_limits: np.ndarray = b.arm_limits
        self.gripper_joint_names: tuple[str, ...] = b.gripper_joint_names
        self.gripper_command_range: tuple[float, float] | None = b.gripper_command_range
        self._grip_jnt, self._grip_act = b.grip_jnt, b.grip_act
        self.joint_names: tuple[str, ...] = b.joint_names
        self._state_qadr, self._state_dadr = b.state_qadr, b.state_dadr
        self._ee_site, self._ee_body, self._base_body = b.ee_site, b.ee_body, b.base_body
        # Every body in the robot's subtree, for contact checks (e.g. "is the object held"), and the same as a
        # read-only mask over body ids, for vectorised contact checks.
        self.robot_body_ids: frozenset[int] = b.robot_body_ids
        self.robot_body_mask: np.ndarray = b.robot_body_mask
        self._home_key = b.home_key
        self._home_qpos: np.ndarray | None = b.home_qpos

    def _resolve_cameras(self) -> None:
        self._cam_ids: dict[str, int] = {}
        for i, cam in enumerate(self.config.cameras):
            self._cam_ids[cam.name] = self._camera_id(cam.mjcf_camera, f"cameras[{i}].mjcf_camera")

    def _camera_id(self, name: str, field: str) -> int:
        ct = mujoco.mjtObj.mjOBJ_CAMERA
        idx = self._find(ct, name)
        if idx >= 0:
            return idx
        raise WorldError(
            f"{self._src}: {field}: camera {name!r} not in {self._scene_rel} or {self._robot_rel} "
            f"(cameras: {element_names(self.model, ct, self.model.ncam)})"
        )

    def _resolve_task(self) -> None:
        task = self.config.task
        self._obj_body = -1
        self._obj_qadr = -1
        self.task: Task | None = None
        if task is None:
            return
        self.task = make_task(task)
        model = self.model
        self._obj_body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, task.object_body)
        if self._obj_body < 0:
            raise WorldError(
                f"{self._src}: task.object_body: body {task.object_body!r} not in {self._scene_rel} "
                f"(bodies: {element_names(model, mujoco.mjtObj.mjOBJ_BODY, model.nbody)})"
            )
        if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, task.target_site) < 0:
            raise WorldError(
                f"{self._src}: task.target_site: site {task.target_site!r} not in {self._scene_rel} "
                f"(sites: {element_names(model, mujoco.mjtObj.mjOBJ_SITE, model.nsite)})"
            )
        jnt = int(model.body_jntadr[self._obj_body])
        if jnt >= 0 and int(model.jnt_type[jnt]) == int(mujoco.mjtJoint.mjJNT_FREE):
            self._obj_qadr = int(model.jnt_qposadr[jnt])
        elif task.object_pose_range is not None:
            raise WorldError(
                f"{self._src}: task.object_pose_range: body {task.object_body!r} has no free joint "
                "to randomize"
            )

    def _content_hash(self) -> str:
        # The compiled binary model: independent of where the files live, identical for identical content.
        size = mujoco.mj_sizeModel(self.model)
        buffer = np.zeros(size, dtype=np.uint8)
        mujoco.mj_saveModel(self.model, None, buffer)
        return hashlib.sha256(buffer.tobytes()).hexdigest()

    # ---------------------------------------------------------------------------------------- episodes

    def reset(self, seed: int, *, object_pose: ObjectPose | None = None) -> None:
        """Reset to home, then let the task start its episode from ``seed``.

        Home is the keyframe (or ``home_qpos``); arm ctrl is set to the home positions; the task places its
        object (:meth:`Task.initialize_episode` with ``np.random.default_rng(seed)``): at
        ``object_pose`` when given, else drawn from ``task.object_pose_range``.
        """
        model, data = self.model, self.data
        self._pending.clear()
        self._judge.clear()
        if self._home_key >= 0:
            mujoco.mj_resetDataKeyframe(model, data, self._home_key)
        else:
            mujoco.mj_resetData(model, data)
        assert self._home_qpos is not None
        data.qpos[model.jnt_qposadr[self._arm_jnt]] = self._home_qpos
        data.ctrl[self._arm_act] = self._home_qpos
        cfg = self.config.robot.gripper
        if cfg is not None:
            if self._home_key >= 0:
                # Keep the keyframe's gripper ctrl; report it in command units.
                self._gripper_command = self._ctrl_to_command(float(data.ctrl[self._grip_act[0]]))
            else:
                self.set_gripper_command(cfg.open_command, immediate=True)
        if self.task is not None:
            self.task.initialize_episode(self, np.random.default_rng(seed), object_pose)
        mujoco.mj_forward(model, data)

    @property
    def task_object_is_free(self) -> bool:
        """The task object has a free joint (it can be placed)."""
        return self._obj_qadr >= 0

    def place_task_object(self, x: float, y: float, yaw: float) -> None:
        """Put the task object at ``x, y`` (m, world frame) and ``yaw`` (rad), at its current height.

        Writes ``qpos`` only; call ``mj_forward`` (as :meth:`reset` does) before reading poses.

        Raises:
            WorldError: the world has no task object with a free joint.
        """
        if self._obj_qadr < 0:
            raise WorldError(f"world {self.world_id!r}: the task object has no free joint to place")
        adr = self._obj_qadr
        self.data.qpos[adr : adr + 2] = (x, y)
        self.data.qpos[adr + 3 : adr + 7] = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))

    def _ctrl_to_command(self, ctrl: float) -> float:
        g = self.config.robot.gripper
        assert g is not None
        (c0, c1), (u0, u1) = g.command_range, g.ctrl_range
        return c0 + (ctrl - u0) * (c1 - c0) / (u1 - u0)

    def set_arm_command(
        self, positions: Sequence[float] | np.ndarray, *, immediate: bool = False
    ) -> CommandCheck:
        """Command arm joint positions (rad or m), in ``arm_joint_names`` order.

        Refuses (state unchanged) a wrong length or any NaN/inf; clamps to ``arm_limits``.  The command
        takes effect after ``command_delay_s`` of simulated time unless ``immediate`` (a start state).
        """
        try:
            target = np.array(positions, dtype=np.float64)
        except (TypeError, ValueError) as err:
            return CommandCheck(False, False, f"arm command is not a list of numbers: {err}")
        n = len(self.arm_joint_names)
        if target.shape != (n,):
            return CommandCheck(False, False, f"arm command must have {n} values, got shape {target.shape}")
        if not np.all(np.isfinite(target)):
            bad = [name for name, v in zip(self.arm_joint_names, target, strict=True) if not math.isfinite(v)]
            return CommandCheck(False, False, f"arm command has non-finite values for joints {bad}")
        clamped = np.clip(target, self.arm_limits[:, 0], self.arm_limits[:, 1])
        changed = clamped != target
        self._command("arm", clamped, None, immediate)
        if np.any(changed):
            names = [name for name, c in zip(self.arm_joint_names, changed, strict=True) if c]
            return CommandCheck(True, True, f"clamped to joint limits: {names}")
        return CommandCheck(True, False, "")

    def set_gripper_command(self, value: float, *, immediate: bool = False) -> CommandCheck:
        """Command the gripper in ``gripper.command_range`` units; refuses NaN/inf, clamps to the range.

        Takes effect after ``command_delay_s`` unless ``immediate``.
        """
        g = self.config.robot.gripper
        if g is None or self.gripper_command_range is None:
            return CommandCheck(False, False, f"world {self.world_id!r} has no gripper")
        try:
            v = float(value)
        except (TypeError, ValueError) as err:
            return CommandCheck(False, False, f"gripper command is not a number: {err}")
        if not math.isfinite(v):
            return CommandCheck(False, False, f"gripper command must be finite, got {v}")
        lo, hi = self.gripper_command_range
        c = min(max(v, lo), hi)
        self._command("gripper", np.array(g.ctrl(c)), c, immediate)
        if c != v:
            return CommandCheck(True, True, f"clamped to the gripper command range [{lo}, {hi}]")
        return CommandCheck(True, False, "")

    @property
    def gripper_command(self) -> float | None:
        """Last applied gripper command (command units), None without a gripper."""
        return self._gripper_command

    @property
    def gripper_open_fraction(self) -> float | None:
        """How open the last gripper command is: 1 fully open, 0 fully closed; None without a gripper."""
        g = self.config.robot.gripper
        if g is None or self._gripper_command is None:
            return None
        return (self._gripper_command - g.closed_command) / (g.open_command - g.closed_command)

    def _command(self, kind: str, ctrl: np.ndarray, gripper: float | None, immediate: bool) -> None:
        if immediate or (self.command_delay_s <= 0.0 and self.step_hook is None):
            self._apply(kind, ctrl, gripper)
        else:
            self._pending.append((self.data.time + self.command_delay_s, kind, ctrl, gripper))

    def _apply(self, kind: str, ctrl: np.ndarray, gripper: float | None) -> None:
        if kind == "arm":
            self.data.ctrl[self._arm_act] = ctrl
        else:
            self.data.ctrl[self._grip_act] = ctrl
            self._gripper_command = gripper

    def step(self, n: int = 1) -> None:
        """Advance the physics by ``n`` timesteps, applying delayed commands as they fall due.

        The task (if any) observes and judges the state every ``SETTLE_SAMPLE_S`` of simulated time, at the
        same instants however the ``n`` steps are split across calls (see :attr:`verdict`).
        """
        if n == 1:  # the sim node's (and the benchmark's) one step at a time: as little as can be per step
            data = self.data
            t = data.time
            plain = not self._pending and self.step_hook is None  # nothing queued, no hook
            # A task's schedule is set (the span is empty without a task).
            if self._sample_from <= t <= self._sample_quiet and plain:
                mujoco.mj_step(self.model, data)  # ends short of the next sample: nothing else to do
                return
            task = self.task
            if task is not None and self._sample_from <= t <= self._sample_until and plain:
                mujoco.mj_step(self.model, data)  # may end at the sample
                t = data.time
                if t >= self._sample_at:
                    self._judge.sample(task, self)
                    self._schedule_sample(t)  # the next step starts here, unless time is set meanwhile
                return
        elif n < 1:
            raise ValueError(f"step count must be >= 1, got {n}")
        task = self.task
        if task is None:
            self._physics_steps(n)
            return
        data = self.data
        dt = self.timestep
        while n > 0:
            t = data.time
            if not self._sample_from <= t <= self._sample_until:
                self._schedule_sample(t)
            k = 1 if n == 1 else min(n, max(1, math.ceil((self._sample_due - t) / dt - 1e-6)))
            self._physics_steps(k)
            n -= k
            t = data.time
            if t >= self._sample_at:
                self._judge.sample(task, self)
                self._schedule_sample(t)  # the next step starts here, unless time is set meanwhile

    def _schedule_sample(self, t: float) -> None:
        """Work out the next judge sample from a step starting at time ``t`` (s).

        The sample is due at the first multiple of ``SETTLE_SAMPLE_S`` after ``t`` (``t`` itself counts as
        past a multiple it misses by less than a millionth of a period), and taken after the first step that
        ends within 1 ns of it.  That due time is the same for every step start from ``t`` up to
        ``_sample_until`` (two millionths of a period short of it): within that span :meth:`step` reuses it
        and only compares times; a step starting outside it (a sample was taken, time was set back by a
        reset or by hand, or forward past the span) works it out again here.  A step starting at or before
        ``_sample_quiet`` (half a physics step more than one step before the sample) cannot end at the
        sample: a physics step advances the time by the model's timestep.
        """
        due = (math.floor(t / SETTLE_SAMPLE_S + 1e-6) + 1) * SETTLE_SAMPLE_S
        at = due - 1e-9
        until = due - 2e-6 * SETTLE_SAMPLE_S
        quiet = at - 1.5 * self.timestep
        self._sample_due = due
        self._sample_at = at
        self._sample_from = t
        self._sample_until = until
        self._sample_quiet = quiet if quiet < until else until

    @property
    def verdict(self) -> Outcome | None:
        """The episode's verdict once it has ended, with its time (see :class:`EpisodeJudge`)."""
        return self._judge.outcome

    def policy_done(self, at: float | None = None) -> None:
        """The policy said it is done at ``at`` (s since the reset; None: now): judge a settle period later.

        See :class:`EpisodeJudge`.  Without a task, there is nothing to judge.
        """
        if self.task is not None:
            self._judge.policy_done(self.task, self.time if at is None else at)

    def _physics_steps(self, n: int) -> None:
        hook = self.step_hook
        if hook is not None:
            for _ in range(n):
                if self._pending and hook.control_tick(float(self.data.time)):
                    while self._pending and self._pending[0][0] <= self.data.time + 1e-9:
                        _, kind, ctrl, gripper = self._pending.popleft()
                        self._apply(kind, ctrl, gripper)
                hook.before_step(self.data)
                hook.physics_step(self.model, self.data)
            hook.after_steps(self.data)
            return
        while n > 0 and self._pending:
            while self._pending and self._pending[0][0] <= self.data.time + 1e-9:
                _, kind, ctrl, gripper = self._pending.popleft()
                self._apply(kind, ctrl, gripper)
            mujoco.mj_step(self.model, self.data)
            n -= 1
        if n > 0:
            mujoco.mj_step(self.model, self.data, n)  # positional: a keyword costs a microsecond a call

    @property
    def pending_commands(self) -> int:
        """Commands given and not yet applied (waiting out ``command_delay_s``)."""
        return len(self._pending)

    @property
    def time(self) -> float:
        """Simulation time (s) since reset."""
        return self.data.time  # already a Python float

    # ------------------------------------------------------------------------------------------ state

    @property
    def state_qpos_addresses(self) -> np.ndarray:
        """``qpos`` address of each joint of :meth:`joint_state`, in ``joint_names`` order."""
        return np.asarray(self._state_qadr).copy()

    def joint_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, velocities and efforts in ``joint_names`` order.

        Efforts are the actuator generalized force on each joint (N·m or N; 0 for unactuated joints).
        """
        d = self.data
        return (
            d.qpos[self._state_qadr].copy(),
            d.qvel[self._state_dadr].copy(),
            d.qfrc_actuator[self._state_dadr].copy(),
        )

    def _find(self, objtype: mujoco.mjtObj, name: str) -> int:
        """The id of ``name`` as written, else with the robot's prefix; -1 when neither is in the model."""
        for candidate in (name, self._full(name)):
            idx = int(mujoco.mj_name2id(self.model, objtype, candidate))
            if idx >= 0:
                return idx
        return -1

    def _lookup(self, objtype: mujoco.mjtObj, name: str, what: str, count: int) -> int:
        idx = self._find(objtype, name)
        if idx >= 0:
            return idx
        raise WorldError(
            f"world {self.world_id!r}: no {what} {name!r} (have: {element_names(self.model, objtype, count)})"
        )

    def body_id(self, name: str) -> int:
        """MuJoCo id of a body (scene or unprefixed robot name), as :meth:`body_pose` finds it.

        Raises:
            WorldError: no such body (the message lists them).
        """
        return self._lookup(mujoco.mjtObj.mjOBJ_BODY, name, "body", self.model.nbody)

    def site_id(self, name: str) -> int:
        """MuJoCo id of a site (scene or unprefixed robot name), as :meth:`site_pose` finds it.

        Raises:
            WorldError: no such site (the message lists them).
        """
        return self._lookup(mujoco.mjtObj.mjOBJ_SITE, name, "site", self.model.nsite)

    def body_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """World-frame position (3,) and wxyz quaternion (4,) of a body (scene or unprefixed robot name)."""
        bid = self._lookup(mujoco.mjtObj.mjOBJ_BODY, name, "body", self.model.nbody)
        return self.data.xpos[bid].copy(), self.data.xquat[bid].copy()

    def site_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """World-frame position and wxyz quaternion of a site."""
        sid = self._lookup(mujoco.mjtObj.mjOBJ_SITE, name, "site", self.model.nsite)
        return self._site_pose(sid)

    def _site_pose(self, sid: int) -> tuple[np.ndarray, np.ndarray]:
        return self.data.site_xpos[sid].copy(), mat_to_quat(self.data.site_xmat[sid])

    def ee_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """End-effector pose: ``robot.ee_site``, or the body of the last arm joint if none is given."""
        if self._ee_site >= 0:
            return self._site_pose(self._ee_site)
        return self.data.xpos[self._ee_body].copy(), self.data.xquat[self._ee_body].copy()

    def camera_id(self, camera: str) -> int:
        """MuJoCo camera id of a configured ROS camera name, or of an MJCF camera name."""
        if camera in self._cam_ids:
            return self._cam_ids[camera]
        return self._lookup(mujoco.mjtObj.mjOBJ_CAMERA, camera, "camera", self.model.ncam)

    def camera_pose(self, camera: str) -> tuple[np.ndarray, np.ndarray]:
        """Pose of the camera's optical frame (REP-103: z forward, x right, y down) in the world frame.

        ``camera`` is a ROS camera name from ``cameras`` or an MJCF camera name.
        """
        cid = self.camera_id(camera)
        rot = self.data.cam_xmat[cid].reshape(3, 3) @ _OPTICAL_FROM_MUJOCO_CAMERA
        return self.data.cam_xpos[cid].copy(), mat_to_quat(rot)

    def base_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """World pose of the robot's root body."""
        b = self._base_body
        return self.data.xpos[b].copy(), self.data.xquat[b].copy()

    def state_vector(self) -> np.ndarray:
        """``qpos, qvel, act, ctrl`` concatenated (for determinism checks)."""
        d = self.data
        return np.concatenate([d.qpos, d.qvel, d.act, d.ctrl])


class StepHook(Protocol):
    """Called by :meth:`SimWorld.step` around every physics step when set (hardware stand-ins only)."""

    def control_tick(self, time: float) -> bool:
        """Whether queued commands may reach the actuators at physics ``time`` (s)."""
        ...

    def before_step(self, data: mujoco.MjData) -> None:
        """Edit ``data`` (controls, applied forces) just before the step."""
        ...

    def physics_step(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        """Take the step: ``mj_step``, or another engine's step written back into ``data`` (a Bullet unit)."""
        ...

    def after_steps(self, data: mujoco.MjData) -> None:
        """A run of steps is over and the state may be read: finish writing it into ``data``."""
        ...
