"""The sim node's ROS-free core: the world it serves, the physics loop, lockstep and the episode services.

:class:`SimServer` steps the world on the physics thread, reads what is due at each step (a
:class:`StepOutput` of arrays) and hands it to a :class:`SimSink`, which the node implements by publishing
messages. Camera ticks become :class:`~r2s2r_sim.serving.loop.RenderJob` snapshots for the render worker. The
lockstep handshake, reset (with a variation), pause and step are methods the node's callbacks call; see
:mod:`r2s2r_sim.ros.sim_node` for the protocol as seen on the topics.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import mujoco
import numpy as np

from r2s2r_sim.controllers.arm_controllers import STATE_RATE_HZ, ArmControllers
from r2s2r_sim.controllers.joint_trajectory import ControllerState
from r2s2r_sim.render.profile import RenderProfile
from r2s2r_sim.render.renderer import camera_intrinsics
from r2s2r_sim.render.sensor_effects import SensorEffects
from r2s2r_sim.serving.liveness import Liveness
from r2s2r_sim.serving.loop import NS, Logger, RenderJob, ServingThreads, Ticker, WallPacer
from r2s2r_sim.serving.sim_server_config import SimNodeConfig, SimNodeError, parse_variation_config
from r2s2r_sim.tasks.registry import Outcome
from r2s2r_sim.variations import VariationError, for_world, make_world, sample_variation
from r2s2r_sim.world.config import CameraConfig
from r2s2r_sim.world.joint_noise import JointReadings
from r2s2r_sim.world.sim_world import SimWorld

__all__ = [
    "POLICY_LOST",
    "CameraSpec",
    "SimServer",
    "SimSink",
    "StepOutput",
    "camera_specs",
]

LOCKSTEP_REPUBLISH_S = 0.5
COMMAND_GRACE_S = 1.0
SERVICE_WAIT_S = 30.0
POLICY_LOST = "policy_lost"  # failure reason of an episode whose policy stopped acknowledging


@dataclass(frozen=True)
class CameraSpec:
    """A served camera: what it is drawn with and where its frames go (by ``name``)."""

    name: str
    mjcf_camera: str
    width: int
    height: int
    frame_id: str
    depth_range: tuple[float, float]
    k: np.ndarray
    static: bool  # fixed in the world: its mount goes on /tf_static, else on /tf
    profile: RenderProfile
    rate_hz: float
    camera: CameraConfig  # the world's camera (what ``CameraFrames`` draws)
    sensors: SensorEffects | None  # the world's sensor effects (``sensor`` variation axis); None: ideal


def camera_specs(world: SimWorld, cfg: SimNodeConfig) -> list[CameraSpec]:
    """The cameras of ``world`` as the node serves them (render profile, size, rate)."""
    specs = []
    model = world.model
    for cam in world.config.cameras:
        cid = world.camera_id(cam.name)
        mjcf_name = model.camera(cid).name
        profile = world.config.render_profile(cam, cfg.render_profile or None)
        width, height = profile.size(cam.width, cam.height)
        specs.append(
            CameraSpec(
                name=cam.name,
                mjcf_camera=mjcf_name,
                width=width,
                height=height,
                frame_id=cam.frame_id,
                depth_range=cam.depth_range,
                k=camera_intrinsics(model, mjcf_name, width, height),
                static=int(model.cam_bodyid[cid]) == 0
                and int(model.cam_mode[cid]) == int(mujoco.mjtCamLight.mjCAMLIGHT_FIXED),
                profile=profile,
                rate_hz=cfg.camera_rate_hz if cfg.camera_rate_hz > 0 else cam.rate_hz,
                camera=cam,
                sensors=world.sensors,
            )
        )
    return specs


@dataclass
class StepOutput:
    """What is due at one physics step, read under the lock and published after it."""

    stamp_ns: int
    joint_state: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    joint_names: Sequence[str] = ()
    link_qpos: np.ndarray | None = None  # qpos the robot's link transforms are computed from
    robot: Any = None  # the node's robot of that qpos (a reset may swap the world before publishing)
    dynamic_cameras: list[tuple[CameraSpec, np.ndarray, np.ndarray]] = dataclasses.field(default_factory=list)
    render: RenderJob | None = None  # payload: see SimServer._collect
    outcome: Outcome | None = None
    # The outcome's episode, (seed, start stamp in ns), read with it: a reset may come before it is published.
    episode: tuple[int, int] = (0, 0)
    controller_state: ControllerState | None = None  # the trajectory controller's, at STATE_RATE_HZ


class SimSink(Protocol):
    """The node side of the server: messages out, and what only the graph knows."""

    def publish(self, out: StepOutput) -> None:
        """Publish joint states (and /clock), /tf and the outcome of ``out``."""

    def resend_frames(self) -> None:
        """Re-send each camera's last frame as published (lockstep's pending observation)."""

    def heartbeat_publishers(self) -> int:
        """How many publishers the policy heartbeat topic has."""
        ...

    def world_swapped(self, world: SimWorld) -> Any:
        """A reset swapped the world (lock held); returns its robot state (opaque to the server)."""

    def publish_static(self) -> None:
        """Publish the world's static frames and robot description (lock held, after a swap and reset)."""


class SimServer:
    """A world served on a fixed step, with lockstep, reset, pause and step; see the module docstring.

    Args:
        cfg: the node's parameters.
        folder: the world folder.
        variations_text: the ``variations`` file's text (the config of resets that give none; '' for none).
        log: the node's logger.
        threads: the node's physics and render threads (the render worker, if any, takes the camera jobs).

    Raises:
        SimNodeError: the variations cannot be applied with ``cfg.seed``, or a rate does not fit the world.
        WorldError: the world cannot be loaded.
    """

    def __init__(
        self, cfg: SimNodeConfig, folder: Path, variations_text: str, log: Logger, threads: ServingThreads
    ) -> None:
        self.cfg = cfg
        self._folder = folder
        self.variations_text = variations_text
        self.log = log
        self.threads = threads
        self.sink: SimSink | None = None
        self.heartbeat_topic = "the policy heartbeat"
        self._base_world: SimWorld | None = None
        self._world_key: tuple[str, int] | None = None  # (variation text, seed) of self.world, once built
        try:
            self.world, self._world_key = self.world_for(variations_text, cfg.seed)
        except VariationError as err:
            raise SimNodeError(f"parameter variations: {err} (with seed {cfg.seed})") from None
        cfg.check_rates(self.world)
        self.dt_ns = round(self.world.timestep * NS)
        self._control_steps = round(NS / cfg.control_rate_hz / self.dt_ns)
        self.lock = threading.Lock()
        self.cv = threading.Condition(self.lock)
        self.clock_ns = 0
        self.paused = False
        self._step_budget = 0
        self._steps_done = 0
        self._period_steps = 0
        self._reset_pending = True
        self._reset_done = 0
        self._obs_ns = -1
        # Lockstep: the stamp of the newest observation, set before it is published (``_obs_ns`` is set
        # after its images are out, when the policy may already have answered it).
        self._made_obs_ns = -1
        self._ack_ns = -1
        self._ack_wall = 0.0
        # Lockstep: commands and acks travel on different topics, which DDS does not order, and the
        # executor may run their callbacks in any order. Each ack follows one arm and one gripper command,
        # so physics also waits until as many commands as acks have arrived (see _commands_caught_up).
        self._acks = 0
        self._arm_commands = 0
        self._gripper_commands = 0
        # The command kinds a policy sends once per period on this interface: both forward topics, or only
        # the trajectory topic where the gripper is an action (a goal is sent only when its target changes).
        self.command_streams: tuple[str, ...] = ("arm", "gripper")
        # Lockstep applies commands when a period starts, not on arrival: a command for the previous
        # episode's last observation that arrives after a reset is then overwritten by the policy's
        # answer to the reset observation before it can act (the same writer keeps its order).
        self._pending_arm: Callable[[SimWorld], Any] | None = None
        self._pending_gripper: Callable[[SimWorld], Any] | None = None
        self.episode_seed = cfg.seed
        self.episode_start_ns = 0
        self.episodes_reported = 0
        self._outcome_sent = False
        self._waiting_logged = False
        self._ack_watch = Liveness(cfg.ack_timeout_s)  # armed at each lockstep observation
        self.lockstep_wait_s = 0.0  # wall time physics spent waiting for the policy's ack
        self.world.reset(cfg.seed)
        self._readings = JointReadings(self.world.config.robot.joint_state_noise)
        self._readings.start_episode(cfg.seed)
        self.robot: Any = None  # the node's robot state of self.world (set by the node)
        self.cameras = camera_specs(self.world, cfg) if cfg.cameras_enabled else []
        self.controllers = ArmControllers.for_world(self.world, lambda: self.clock_ns / NS)
        self._js_tick = Ticker(cfg.joint_state_rate_hz)
        self._tf_tick = Ticker(cfg.tf_rate_hz)
        self._state_tick = Ticker(STATE_RATE_HZ)
        self._cam_ticks = [Ticker(c.rate_hz) for c in self.cameras]

    # ------------------------------------------------------------------------------------------ worlds

    def world_for(self, text: str, seed: int) -> tuple[SimWorld, tuple[str, int]]:
        """The world of variation ``text`` (YAML; empty: the base world) and ``seed``, and its key.

        The current world is reused when it already is that world; the base world is built once. Slow
        (composes and compiles the model): call without the physics lock.

        Raises:
            VariationError: ``text`` is malformed or the variation cannot be applied to the world.
        """
        if not text.strip():
            key = ("", 0)
            if self._world_key == key:
                return self.world, key
            if self._base_world is None:
                self._base_world = SimWorld(self._folder)
            return self._base_world, key
        key = (text, int(seed))
        if self._world_key == key:
            return self.world, key
        config = parse_variation_config(text)
        try:
            config = for_world(config, self._folder, check=False)
            return make_world(self._folder, sample_variation(config, int(seed))), key
        except VariationError:
            raise
        except ValueError as err:  # WorldError: the edited model does not compile
            raise VariationError(f"variation_config: the varied world does not compile: {err}") from None

    # ---------------------------------------------------------------------------------------- commands

    def command(self, kind: str, apply: Callable[[SimWorld], Any]) -> None:
        """Lockstep: keep ``apply`` (an arm or gripper command) for the next period's start."""
        with self.cv:
            if kind == "arm":
                self._pending_arm = apply
                self._arm_commands += 1
            else:
                self._pending_gripper = apply
                self._gripper_commands += 1
            self.cv.notify_all()

    def _apply_pending_commands(self) -> None:
        """Lockstep: apply the latest arm and gripper commands at a period's start (lock held)."""
        arm, gripper = self._pending_arm, self._pending_gripper
        self._pending_arm = self._pending_gripper = None
        for apply in (arm, gripper):
            if apply is not None:
                apply(self.world)

    def note_command(self, kind: str) -> None:
        """Lockstep: count an ``"arm"`` command that a controller took on arrival (a trajectory message)."""
        with self.cv:
            if kind == "arm":
                self._arm_commands += 1
            else:
                self._gripper_commands += 1
            self.cv.notify_all()

    def acknowledge(self, stamp_ns: int) -> None:
        """The policy answered the observation at ``stamp_ns`` (older acks are ignored)."""
        with self.cv:
            if stamp_ns > self._ack_ns:
                self._ack_ns = stamp_ns
                self._acks += 1
                self._ack_wall = time.monotonic()
                self.cv.notify_all()

    def policy_done(self, seed: int) -> bool:
        """The policy said it is done with episode ``seed``: the world judges one settle period later.

        In lockstep the period counts from the newest observation made (the one the policy said done on:
        the policy node publishes the done before its ack, and physics makes the next observation only a
        whole control period after that ack), as the episode runner counts it from that action; otherwise
        from now.  A done for another seed, or after the outcome, is ignored.

        Returns:
            whether the done was taken.
        """
        with self.cv:
            if seed != self.episode_seed or self._outcome_sent:
                return False
            at = None
            if self.cfg.lockstep and self._made_obs_ns >= self.episode_start_ns:
                at = (self._made_obs_ns - self.episode_start_ns) / NS
            self.world.policy_done(at)
            return True

    def _commands_caught_up(self) -> bool:
        """True once the commands sent before the latest ack have arrived (call with the lock held).

        A sender that acks without commanding (a test, a holding policy) is let through after
        ``COMMAND_GRACE_S`` of wall time, so lockstep never deadlocks on it. The commands it waited for
        are then written off: one lost on the way (a killed policy's last, or a restarted policy's first
        before its publisher matched) costs one grace, not one in every period after it.
        """
        sent = {"arm": self._arm_commands, "gripper": self._gripper_commands}
        if all(sent[kind] >= self._acks for kind in self.command_streams):
            return True
        if time.monotonic() - self._ack_wall < COMMAND_GRACE_S:
            return False
        self._arm_commands = max(self._arm_commands, self._acks)
        self._gripper_commands = max(self._gripper_commands, self._acks)
        return True

    # ---------------------------------------------------------------------------------------- services

    def reset(self, text: str, seed: int) -> tuple[bool, bool]:
        """Reset to ``seed`` on the world of variation ``text``; waits for the reset observation.

        Returns:
            ``(published, swapped)``: whether the physics thread published the reset observation in time,
            and whether the world was swapped.

        Raises:
            VariationError: ``text`` cannot be applied; the old world and episode keep running.
        """
        world, key = self.world_for(text, seed)
        swapped = world is not self.world
        with self.cv:
            if swapped:
                self.world, self._world_key = world, key
                if self.cameras:
                    self.cameras = camera_specs(world, self.cfg)
                if self.sink is not None:
                    self.robot = self.sink.world_swapped(world)
            self.world.reset(seed)
            self.controllers.reset()
            self._readings = JointReadings(self.world.config.robot.joint_state_noise)
            self._readings.start_episode(seed)
            self.clock_ns += self.dt_ns  # the reset takes one step, so stamps stay strictly increasing
            if swapped and self.sink is not None:
                self.sink.publish_static()  # camera extrinsics may have changed; before the reset observation
            self.episode_seed = seed
            self._reset_pending = True
            target = self._reset_done + 1
            self.cv.notify_all()
            ok = self.cv.wait_for(
                lambda: self._reset_done >= target or not self.threads.running, SERVICE_WAIT_S
            )
        return bool(ok and self.threads.running), swapped

    def pause(self, paused: bool) -> None:
        """Stop (or resume) physics and /clock."""
        with self.cv:
            self.paused = paused
            self.cv.notify_all()

    def step(self) -> tuple[bool, int | None]:
        """While paused, advance one control period; ``(done, stamp of its observation)``.

        Returns:
            ``(False, None)`` if not paused; ``(done, stamp_ns)`` otherwise.
        """
        with self.cv:
            if not self.paused:
                return False, None
            target = self._steps_done + 1
            self._step_budget += 1
            self.cv.notify_all()
            ok = self.cv.wait_for(
                lambda: self._steps_done >= target or not self.threads.running, SERVICE_WAIT_S
            )
            now = self.clock_ns
        return bool(ok and self.threads.running), now

    # ----------------------------------------------------------------------------------------- physics

    def _joint_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The joint state as the world's driver reports it: true, plus the world's declared noise."""
        pos, vel, eff = self.world.joint_state()
        pos, vel = self._readings.measure(pos, vel)
        return pos, vel, eff

    def _collect(self, *, force: bool) -> StepOutput:
        """Read what is due at the current step (lock held)."""
        now = self.clock_ns
        out = StepOutput(stamp_ns=now)
        state_due = self._state_tick.due(now) or force
        self._control(refresh=state_due)
        if state_due:
            out.controller_state = self.controllers.state
        if self._js_tick.due(now) or force:
            out.joint_state, out.joint_names = self._joint_state(), self.world.joint_names
        if not self._outcome_sent and (verdict := self.world.verdict) is not None:
            # Published at the step the world judged it (not at a joint-state tick): the episode runner
            # reads the same verdict and time at the end of its control period.
            out.outcome, out.episode = verdict, (self.episode_seed, self.episode_start_ns)
            self._outcome_sent = True
        if self._tf_tick.due(now) or force:
            out.link_qpos, out.robot = self.world.data.qpos.copy(), self.robot
            for cam in self.cameras:
                if not cam.static:
                    out.dynamic_cameras.append((cam, *self.world.camera_pose(cam.name)))
        due = tuple(i for i, tick in enumerate(self._cam_ticks) if tick.due(now) or force)
        if due:
            # The due cameras, the cameras of that world, the episode seed and the time into the episode
            # (ns): a frame's sensor noise follows its episode and index, whatever frames were dropped.
            out.render = RenderJob.of(
                now,
                self.world.model,
                self.world.data,
                (due, tuple(self.cameras), self.episode_seed, now - self.episode_start_ns),
            )
        return out

    def _control(self, *, refresh: bool) -> None:
        """Step the controllers on the true state (lock held): at every step while a goal runs or waits.

        ``refresh`` steps them anyway, for the state the controller state topic publishes. Their commands
        go where the forward command topics' go, so they take the world's command delay too.
        """
        controllers = self.controllers
        if not (refresh or controllers.busy):
            return
        commands = controllers.step(self.clock_ns / NS, *self.world.joint_state())
        for kind, check in (
            ("arm", None if commands.arm is None else self.world.set_arm_command(commands.arm)),
            (
                "gripper",
                None if commands.gripper is None else self.world.set_gripper_command(commands.gripper),
            ),
        ):
            if check is not None and (check.clamped or not check.accepted):
                self.log.warning(f"{kind} controller command: {check.reason}", throttle_duration_sec=1.0)

    def run_physics(self) -> None:
        """The physics thread's loop (see the module docstring of :mod:`r2s2r_sim.ros.sim_node`)."""
        cfg = self.cfg
        sink = self.sink
        assert sink is not None, "SimServer.sink is set before the physics thread starts"
        pacer = WallPacer()
        last_republish = 0.0
        while self.threads.alive():
            out: StepOutput | None = None
            republish: StepOutput | None = None
            lost: StepOutput | None = None
            observation = False
            with self.cv:
                if self._reset_pending:
                    self._reset_pending = False
                    self._pending_arm = self._pending_gripper = None  # commands of the old episode
                    self.episode_start_ns = self.clock_ns
                    self._outcome_sent = False
                    self._period_steps = 0
                    for tick in (self._js_tick, self._tf_tick, self._state_tick, *self._cam_ticks):
                        tick.restart(self.clock_ns)
                    out = self._collect(force=True)
                    observation = True
                    self._made_obs_ns = out.stamp_ns
                    self._reset_done += 1
                    self.cv.notify_all()
                    pacer.restart()
                else:
                    stepping = self.paused and self._step_budget > 0
                    if self.paused and not stepping:
                        self.cv.wait(0.1)
                        pacer.restart()
                        continue
                    if (
                        cfg.lockstep
                        and not stepping
                        and (self._ack_ns < self._obs_ns or not self._commands_caught_up())
                    ):
                        if not self._waiting_logged and self._ack_watch.silence() >= LOCKSTEP_REPUBLISH_S:
                            # Said once per observation, and only when the policy is slow to answer.
                            self.log.info(
                                f"lockstep: waiting for the policy to acknowledge observation "
                                f"{self._obs_ns / NS:.3f} s on {self.heartbeat_topic}"
                            )
                            self._waiting_logged = True
                        waited = time.monotonic()
                        self.cv.wait(0.1)
                        self.lockstep_wait_s += time.monotonic() - waited
                        pacer.restart()
                        if (silent := self._ack_watch.expired()) is not None:
                            lost = self._policy_lost(silent)
                        if time.monotonic() - last_republish >= LOCKSTEP_REPUBLISH_S:
                            last_republish = time.monotonic()
                            republish = StepOutput(
                                stamp_ns=self._obs_ns,
                                joint_state=self._joint_state(),
                                joint_names=self.world.joint_names,
                            )
                        if lost is None and (
                            republish is None or (self._ack_ns >= self._obs_ns and self._commands_caught_up())
                        ):
                            continue
                    else:
                        if cfg.lockstep and self._period_steps == 0:
                            self._apply_pending_commands()
                        self.world.step(1)
                        self.clock_ns += self.dt_ns
                        self._period_steps += 1
                        period_end = self._period_steps >= self._control_steps
                        out = self._collect(force=period_end and (cfg.lockstep or stepping))
                        if period_end:
                            self._period_steps = 0
                            observation = True
                            self._made_obs_ns = out.stamp_ns
                            if stepping:
                                self._step_budget -= 1
                                self._steps_done += 1
                                self.cv.notify_all()
            if lost is not None:
                sink.publish(lost)
            if republish is not None:
                # Late-joining policies, and ones that missed a best-effort image, still get the pending
                # observation (same stamps): joint states and /clock, and each camera's last frame. The
                # renderer is idle here (lockstep waits for it before waiting for the ack).
                sink.publish(republish)
                sink.resend_frames()
                continue
            if out is None:  # only the lost policy's outcome to publish
                continue
            sink.publish(out)
            render = self.threads.render
            if out.render is not None and render is not None:
                render.submit(out.render, drop_when_busy=cfg.real_time and not cfg.lockstep)
            if observation and cfg.lockstep:
                if render is not None:
                    render.wait_idle()
                with self.cv:
                    self._obs_ns = out.stamp_ns
                    self._waiting_logged = False
                    self._ack_watch.arm()
                last_republish = time.monotonic()
            if cfg.real_time and (lag := pacer.pace(out.stamp_ns)) is not None:
                self.log.warning(
                    f"physics is {lag:.2f} s behind real time; re-anchoring (real-time factor < 1)",
                    throttle_duration_sec=5.0,
                )

    def _policy_lost(self, silent_s: float) -> StepOutput | None:
        """Lockstep: no acknowledgement for ``silent_s`` (lock held); the outcome to publish, if any.

        A policy that left the graph (no publisher on the heartbeat topic) ends the episode as policy_lost,
        once. One still connected (slow, or holding on stale observations) is only reported, again after
        each further ``ack_timeout_s``. Either way the node keeps serving and re-publishing the observation.
        """
        assert self.sink is not None
        heartbeat = self.heartbeat_topic
        publishers = self.sink.heartbeat_publishers()
        if publishers:
            self.log.warning(
                f"lockstep: no acknowledgement of observation {self._obs_ns / NS:.3f} s on {heartbeat} for "
                f"{silent_s:.1f} s; the policy is still connected ({publishers} publishers): waiting on"
            )
            self._ack_watch.arm()
            return None
        self.log.warning(
            f"lockstep: no acknowledgement of observation {self._obs_ns / NS:.3f} s on {heartbeat} for "
            f"{silent_s:.1f} s and no publisher left: the policy is lost; episode (seed "
            f"{self.episode_seed}) ends as {POLICY_LOST}"
        )
        if self._outcome_sent:
            return None
        self._outcome_sent = True
        return StepOutput(
            stamp_ns=self._obs_ns,
            outcome=Outcome(success=False, reason=POLICY_LOST),
            episode=(self.episode_seed, self.episode_start_ns),
        )
