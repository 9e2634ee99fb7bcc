"""sim_node: serves a MuJoCo world on the real drivers' topic interface, with /clock.

Topic and service names, types and QoS come from ``config/interface.yaml`` (:mod:`r2s2r_sim.interface`);
messages are built by :mod:`r2s2r_sim.ros_conversions`. The node runs on wall time and *produces* sim time:
every stamp it publishes (joint states, images, camera info, /tf, outcomes) is sim time, and /clock is
monotonic across resets (a reset takes one physics step of sim time, so stamps are strictly increasing).

Threads:

* physics: fixed-step loop on the world timestep. It applies commands, steps, publishes /joint_states and
  /clock (at ``joint_state_rate_hz``), /tf (``tf_rate_hz``) and the episode outcome, and hands camera
  ticks to the render thread as snapshots (qpos, mocap). With ``real_time`` it sleeps to keep sim time on
  wall time; if it falls more than 0.25 s behind it re-anchors and warns (the real-time factor is then < 1).
* render (if cameras are on): owns the GL context, a private ``MjData`` and the renderer; renders colour and
  aligned depth of each due camera in one pass and publishes both images and their camera infos with the
  snapshot's stamp. In ``real_time`` mode a frame that finds the renderer busy with the previous one waits
  at most one frame (one pending slot); older pending frames are dropped and counted, so rendering never
  stalls physics. Otherwise (as fast as possible, or lockstep) physics waits for the renderer instead, so
  every camera tick is rendered at its sim time.
* executor (main thread): command subscriptions, the policy heartbeat and the services.

Lockstep handshake (``lockstep:=true``): physics advances in control periods of ``1 / control_rate_hz``
seconds. At the end of each period (and right after a reset) the node publishes the *observation*: the
period-end /joint_states, /clock and /tf, and, if a camera tick falls on that step, its images, all with the
same stamp ``t_obs`` — it waits until those images are published. It then stops physics and /clock until a
``builtin_interfaces/Time`` on ``policy_heartbeat`` (``/r2s2r/policy_ack``) arrives with a stamp
``>= t_obs`` and the commands sent before it have arrived (commands and acks are different topics,
which DDS does not order; each ack must follow one arm and one gripper command, and an ack without
commands is let through after 1 s): the policy echoes the stamp of the newest observation it has
answered (its /joint_states header stamp, equivalently the /clock it last saw) after publishing its
command for it. Older acks are
ignored. If no policy answers, the node does not deadlock and does not advance: it logs once that it is
waiting (after 0.5 s), after each ``ack_timeout_s`` it warns, and once no publisher of the heartbeat is left
it publishes the episode's outcome as failed with reason ``policy_lost`` (it keeps serving), and it re-
publishes the pending observation every 0.5 s: its /joint_states and /clock (same stamp) and each camera's
last frame (colour, depth and both camera_infos, as published: same stamp, not re-rendered), so a policy
that connects late, or missed a best-effort image, still receives it; services (reset, pause, step) keep
working. ``step`` while paused advances one control period without waiting for an ack.

Variation: the reset service's ``variation_config`` is YAML text of the variation axes (the schema of
``config/variations.yaml``); non-empty, the node rebuilds its world as
``make_world(world, sample_variation(config, variation_seed))`` (physics under the lock, the renderer on the
render thread at its next frame) and answers the varied model's ``world_hash``. Empty, it runs the config of
the ``variations`` parameter, or the base world if that is empty too. A malformed config or one that cannot
be applied is refused (``success=false``, the message names the field) and the old world keeps running.
"""

from __future__ import annotations

import r2s2r_sim.interrupts  # noqa: F401 - first: a SIGINT during the imports below must stop us

# isort: split
import contextlib
import dataclasses
import hashlib
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import rclpy
from builtin_interfaces.msg import Time
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.publisher import Publisher

from r2s2r_sim import ros_conversions as conv
from r2s2r_sim.dds import use_large_data_transport
from r2s2r_sim.diagnostics import DiagnosticsPublisher, serving_reading
from r2s2r_sim.driver_io import arm_command, gripper_command, interface_publisher, subscribe_topics
from r2s2r_sim.interface import Interface
from r2s2r_sim.liveness import Liveness
from r2s2r_sim.robot_description import RobotDescriptionError
from r2s2r_sim.robot_state import RobotState, camera_transforms
from r2s2r_sim.ros_params import declare_parameters, run_node
from r2s2r_sim.ros_qos import declare_interface, interface_class
from r2s2r_sim.task import Outcome
from r2s2r_sim.variations import (
    VariationConfig,
    VariationError,
    load_variation_config,
    make_world,
    sample_variation,
)
from r2s2r_sim.world import CommandCheck, SimWorld
from r2s2r_sim.worlds import world_path

__all__ = [
    "SimNode",
    "SimNodeConfig",
    "SimNodeError",
    "main",
    "parse_variation_config",
    "variation_hash",
]

_NS = 1_000_000_000
_LOCKSTEP_REPUBLISH_S = 0.5
_COMMAND_GRACE_S = 1.0
_MAX_LAG_S = 0.25
_SERVICE_WAIT_S = 30.0
POLICY_LOST = "policy_lost"  # failure reason of an episode whose policy stopped acknowledging


class SimNodeError(ValueError):
    """An invalid sim node parameter; the message names the parameter, the value and what is allowed."""


@dataclass(frozen=True, kw_only=True)
class SimNodeConfig:
    """The sim node's parameters, read once at start-up (see ``config/sim_node.yaml``)."""

    world: str = "tabletop-pick-v1"
    seed: int = 0
    real_time: bool = False
    joint_state_rate_hz: float = 500.0
    camera_rate_hz: float = 0.0
    cameras_enabled: bool = True
    lockstep: bool = False
    control_rate_hz: float = 10.0
    tf_rate_hz: float = 100.0
    publish_clock: bool = True
    policy_id: str = ""
    variations: str = ""
    ack_timeout_s: float = 10.0
    render_profile: str = ""


_PARAMS: dict[str, tuple[str, tuple[float, float] | None]] = {
    "world": (
        "Bundled world id (e.g. tabletop-pick-v1) or path of a world folder (world.yaml + MJCF).",
        None,
    ),
    "seed": ("Variation seed of the initial reset (the reset service takes its own).", (0, 2**62)),
    "real_time": ("Pace physics to the wall clock (true) or run as fast as possible (false).", None),
    "joint_state_rate_hz": (
        "Rate (Hz, sim time) of /joint_states and /clock; at most the physics rate 1/timestep.",
        (1.0, 1000.0),
    ),
    "camera_rate_hz": (
        "Rate (Hz, sim time) of every camera's images and camera_info; 0 uses world.yaml's rate_hz.",
        (0.0, 120.0),
    ),
    "cameras_enabled": ("Render and publish the world's RGB-D cameras.", None),
    "lockstep": (
        "Advance physics one control period only after the policy acknowledged the observation.",
        None,
    ),
    "control_rate_hz": (
        "Policy control rate (Hz): the period that lockstep waits at and that the step service advances; "
        "its period must be a whole number of physics timesteps.",
        (0.1, 1000.0),
    ),
    "tf_rate_hz": ("Rate (Hz, sim time) of the dynamic /tf (the robot's moving links).", (1.0, 1000.0)),
    "publish_clock": ("Publish /clock (sim time); other nodes then run with use_sim_time:=true.", None),
    "policy_id": ("Policy id echoed in every EpisodeOutcome (free text).", None),
    "variations": (
        "Variations YAML (schema of config/variations.yaml) applied, with the reset's seed, when a reset "
        "gives an empty variation_config (and at start-up); empty: the base world.",
        None,
    ),
    "ack_timeout_s": (
        "Lockstep: wall time (s) without the policy's acknowledgement after which the node warns and, if no "
        "publisher of the heartbeat is left, ends the episode as failed with reason policy_lost (it keeps "
        "serving); 0: never.",
        (0.0, 3600.0),
    ),
    "render_profile": (
        "Render profile (world.yaml render_profiles, e.g. full or fast) every camera is drawn with; "
        "empty: each camera's declared render_profile.",
        None,
    ),
}


def _allowed(name: str, default: Any) -> str:
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, str):
        return "a string"
    low, high = _PARAMS[name][1] or (0, 0)
    if isinstance(default, int):
        return f"an integer in [{int(low)}, {int(high)}]"
    return f"a floating-point number in [{low}, {high}] (write 15.0, not 15)"


def _param_error(name: str, default: Any, err: Exception) -> SimNodeError:
    return SimNodeError(f"parameter {name}: invalid value ({err}); allowed: {_allowed(name, default)}")


def variation_hash(world_hash: str, variation_config: str, seed: int) -> str:
    """Return an initial state's identity: sha256 of ``world_hash``, ``variation_config`` and ``seed``."""
    return hashlib.sha256(f"{world_hash}\n{variation_config}\n{int(seed)}".encode()).hexdigest()


def parse_variation_config(text: str) -> VariationConfig:
    """Parse and validate variation axes given as YAML text (the schema of ``config/variations.yaml``).

    Raises:
        VariationError: "variation_config: <field>: ..." naming the field at fault, or the YAML error.
    """
    with tempfile.TemporaryDirectory(prefix="r2s2r_variation_") as tmp:
        path = Path(tmp) / "variation_config.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            config = load_variation_config(path)
        except VariationError as err:
            raise VariationError(str(err).replace(str(path), "variation_config")) from None
    return dataclasses.replace(config, source=None)


def _period_steps(rate_hz: float, dt_ns: int) -> float:
    return _NS / rate_hz / dt_ns


class _Ticker:
    """A fixed-rate schedule in integer sim-time nanoseconds, restarted at every episode."""

    def __init__(self, rate_hz: float) -> None:
        self.period_ns = round(_NS / rate_hz)
        self.next_ns = 0

    def restart(self, now_ns: int) -> None:
        self.next_ns = now_ns + self.period_ns

    def due(self, now_ns: int) -> bool:
        if now_ns < self.next_ns:
            return False
        while self.next_ns <= now_ns:
            self.next_ns += self.period_ns
        return True


@dataclass(frozen=True)
class _CameraOut:
    name: str
    mjcf_camera: str
    width: int
    height: int
    frame_id: str
    depth_range: tuple[float, float]
    k: np.ndarray
    static: bool
    color_pub: Publisher
    color_info_pub: Publisher
    depth_pub: Publisher
    depth_info_pub: Publisher
    profile: Any = None  # RenderProfile the camera is drawn with


@dataclass(frozen=True)
class _RenderJob:
    stamp_ns: int
    qpos: np.ndarray
    mocap_pos: np.ndarray
    mocap_quat: np.ndarray
    cameras: tuple[int, ...]
    model: mujoco.MjModel  # the world's model when the job was made (a reset may swap the world)
    outs: tuple[_CameraOut, ...]  # the cameras (intrinsics) of that world


@dataclass(frozen=True)
class _Frame:
    """A camera's last published messages, kept so lockstep can re-send them without re-rendering."""

    color: Any
    depth: Any
    info: Any


@dataclass
class _StepOutput:
    stamp_ns: int
    joint_state: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    link_qpos: np.ndarray | None = None  # qpos the robot's link transforms are computed from
    robot: RobotState | None = None  # the robot of that qpos (a reset may swap the world before publishing)
    dynamic_cameras: list[tuple[str, np.ndarray, np.ndarray]] = dataclasses.field(default_factory=list)
    render: _RenderJob | None = None
    outcome: Any = None


class SimNode(Node):
    """The MuJoCo world behind the real drivers' topics; see the module docstring."""

    def __init__(self, **kwargs: Any) -> None:
        """Declare and validate parameters, load the world, create the interface and start the threads.

        Raises:
            SimNodeError: an invalid parameter (naming it, its value and the allowed values).
            WorldError: the world cannot be loaded.
        """
        super().__init__("sim_node", **kwargs)
        self.config = self._read_parameters()
        cfg = self.config
        try:
            self._folder = world_path(cfg.world)
        except ValueError as err:
            raise SimNodeError(f"parameter world: {err}") from None
        self._variations_text = ""  # the ``variations`` file's text: the config of resets that give none
        if cfg.variations:
            try:
                load_variation_config(cfg.variations)
                self._variations_text = Path(cfg.variations).read_text(encoding="utf-8")
            except (VariationError, OSError) as err:
                raise SimNodeError(
                    f"parameter variations: {err}; allowed: '' or a variations YAML file"
                ) from None
        self._base_world: SimWorld | None = None
        self._world_key: tuple[str, int] | None = None  # (variation text, seed) of self.world, once built
        try:
            self.world, self._world_key = self._world_for(self._variations_text, cfg.seed)
        except VariationError as err:
            raise SimNodeError(f"parameter variations: {err} (with seed {cfg.seed})") from None
        self._check_rates()
        profiles = self.world.config.render_profiles
        if cfg.render_profile and cfg.render_profile not in profiles:
            raise SimNodeError(
                f"parameter render_profile: got {cfg.render_profile!r}, allowed: '' or one of the world's "
                f"profiles {sorted(profiles)}"
            )
        self.interface: Interface = declare_interface(self)
        self._task = self._make_task()

        self._dt_ns = round(self.world.timestep * _NS)
        self._control_steps = round(_period_steps(cfg.control_rate_hz, self._dt_ns))
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self._running = True
        self._clock_ns = 0
        self._paused = False
        self._step_budget = 0
        self._steps_done = 0
        self._period_steps = 0
        self._reset_pending = True
        self._reset_done = 0
        self._obs_ns = -1
        self._ack_ns = -1
        self._ack_wall = 0.0
        # Lockstep: commands and acks travel on different topics, which DDS does not order, and the
        # executor may run their callbacks in any order. Each ack follows one arm and one gripper command,
        # so physics also waits until as many commands as acks have arrived (see _commands_caught_up).
        self._acks = 0
        self._arm_commands = 0
        self._gripper_commands = 0
        # Lockstep applies commands when a period starts, not on arrival: a command for the previous
        # episode's last observation that arrives after a reset is then overwritten by the policy's
        # answer to the reset observation before it can act (the same writer keeps its order).
        self._pending_arm: Any = None
        self._pending_gripper: Any = None
        self._episode_seed = cfg.seed
        self._episode_start_ns = 0
        self._episodes_reported = 0
        self._outcome_sent = False
        self._waiting_logged = False
        self._ack_watch = Liveness(cfg.ack_timeout_s)  # armed at each lockstep observation
        self.world.reset(cfg.seed)

        self._robot = self._robot_state(self.world)
        self._make_publishers()
        self._cameras = self._make_cameras(self.world) if cfg.cameras_enabled else []
        self._js_tick = _Ticker(cfg.joint_state_rate_hz)
        self._tf_tick = _Ticker(cfg.tf_rate_hz)
        self._cam_ticks = (
            [
                _Ticker(cfg.camera_rate_hz if cfg.camera_rate_hz > 0 else c.rate_hz)
                for c in self.world.config.cameras
            ]
            if self._cameras
            else []
        )
        self._publish_static_tf()
        self._make_subscriptions_and_services()

        # Render thread state: one pending job slot, guarded by _render_cv.
        self._render_cv = threading.Condition()
        self._render_job: _RenderJob | None = None
        self._render_busy = False
        self._render_error: BaseException | None = None
        self._render_ready = threading.Event()
        self._last_frames: dict[str, _Frame] = {}  # camera name -> last frame published (under _render_cv)
        self.frames_published = 0
        self.frames_dropped = 0
        self.render_seconds = 0.0  # wall time spent rendering and publishing frames
        self.lockstep_wait_s = 0.0  # wall time physics spent waiting for the policy's ack
        self._render_thread: threading.Thread | None = None
        if self._cameras:
            self._render_thread = threading.Thread(target=self._render_loop, name="sim_render", daemon=True)
            self._render_thread.start()
        try:
            if self._render_thread is not None and (
                not self._render_ready.wait(timeout=30.0) or self._render_error is not None
            ):
                raise RuntimeError(f"camera renderer failed to start: {self._render_error}")
            self._physics_thread = threading.Thread(
                target=self._physics_loop, name="sim_physics", daemon=True
            )
            self._physics_thread.start()
            self._diagnostics = DiagnosticsPublisher(
                self, self.interface, name="simulation", hardware_id=self.world.world_id,
                counters=lambda: {"time_s": self._clock_ns / _NS, "frames": self.frames_published,
                                  "frames_dropped": self.frames_dropped,
                                  "lockstep_wait_s": self.lockstep_wait_s},
                read=lambda rates: serving_reading(
                    rates, running=self._running, cameras=len(self._cameras),
                    frames_dropped=self.frames_dropped, episodes=self._episodes_reported, sim_time=True,
                    paced=cfg.real_time and not cfg.lockstep and not self._paused,
                ),
            )
            mode = "lockstep" if cfg.lockstep else ("real time" if cfg.real_time else "as fast as possible")
            self.get_logger().info(
                f"world {self.world.world_id} ({self.world.world_hash[:12]}), seed {cfg.seed}, "
                f"dt {self.world.timestep} s, "
                f"{mode}, joint states {cfg.joint_state_rate_hz} Hz, cameras "
                f"{[c.name for c in self._cameras] if self._cameras else 'off'}"
            )
        except BaseException:
            # A Ctrl-C (KeyboardInterrupt) or an error once the threads run: stop and join them before the
            # exception unwinds main(). Left running, the interpreter finalises around the render thread,
            # which is force-unwound (pthread_exit) out of MuJoCo's renderer when it next takes the GIL,
            # and the process dies with SIGSEGV on its way out.
            self._stop_threads()
            raise

    # ---------------------------------------------------------------------------------- configuration

    def _read_parameters(self) -> SimNodeConfig:
        defaults = SimNodeConfig()
        if self.get_parameter("use_sim_time").value:
            raise SimNodeError(
                "parameter use_sim_time: got true, allowed: false — the sim node produces /clock and runs on "
                "wall time; set use_sim_time only on the other nodes"
            )
        values = declare_parameters(self, vars(defaults), _PARAMS, error=_param_error, state_range=True)
        if not values["world"]:
            raise SimNodeError("parameter world: got '', allowed: a bundled world id or a world folder path")
        return SimNodeConfig(**values)

    def _check_rates(self) -> None:
        cfg = self.config
        dt = self.world.timestep
        physics_hz = 1.0 / dt
        rates: list[tuple[str, float]] = [
            ("joint_state_rate_hz", cfg.joint_state_rate_hz),
            ("tf_rate_hz", cfg.tf_rate_hz),
            ("control_rate_hz", cfg.control_rate_hz),
        ]
        if cfg.cameras_enabled:
            for cam in self.world.config.cameras:
                rate = cfg.camera_rate_hz if cfg.camera_rate_hz > 0 else cam.rate_hz
                rates.append(
                    ("camera_rate_hz" if cfg.camera_rate_hz > 0 else f"cameras[{cam.name}].rate_hz", rate)
                )
        for name, rate in rates:
            if rate > physics_hz * (1 + 1e-9):
                raise SimNodeError(
                    f"parameter {name}: got {rate} Hz, allowed: at most the physics rate {physics_hz:g} Hz "
                    f"(world timestep {dt} s)"
                )
        steps = _period_steps(cfg.control_rate_hz, round(dt * _NS))
        if abs(steps - round(steps)) > 1e-6:
            raise SimNodeError(
                f"parameter control_rate_hz: control period 1/{cfg.control_rate_hz} s must be an "
                "integer multiple "
                f"of the world timestep {dt} s: got {steps:.4f} timesteps"
            )

    def _world_for(self, text: str, seed: int) -> tuple[SimWorld, tuple[str, int]]:
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
            return make_world(self._folder, sample_variation(config, int(seed))), key
        except VariationError:
            raise
        except ValueError as err:  # WorldError: the edited model does not compile
            raise VariationError(f"variation_config: the varied world does not compile: {err}") from None

    def _make_task(self) -> Any:
        """The world's own task: the one the world shows its state to as it steps (the settle rule)."""
        return self.world.task

    def _pub(self, key: str, camera: str | None = None) -> Publisher:
        return interface_publisher(self, self.interface, key, camera)

    def _make_publishers(self) -> None:
        self._joint_pub = self._pub("joint_states")
        self._tf_pub = self._pub("tf")
        self._tf_static_pub = self._pub("tf_static")
        self._description_pub = self._pub("robot_description")
        self._clock_pub = self._pub("clock") if self.config.publish_clock else None
        self._outcome_pub = self._pub("episode_outcome")

    def _make_cameras(self, world: SimWorld, reuse: Sequence[_CameraOut] = ()) -> list[_CameraOut]:
        """The cameras of ``world``; publishers are taken from ``reuse`` (same names) or created."""
        from r2s2r_sim.rendering import camera_intrinsics

        cams = []
        model = world.model
        old = {c.name: c for c in reuse}
        for cam in world.config.cameras:
            cid = world.camera_id(cam.name)
            mjcf_name = model.camera(cid).name
            profile = world.config.render_profile(cam, self.config.render_profile or None)
            width, height = profile.size(cam.width, cam.height)
            if cam.name in old:
                cams.append(
                    dataclasses.replace(
                        old[cam.name],
                        mjcf_camera=mjcf_name,
                        k=camera_intrinsics(model, mjcf_name, width, height),
                        profile=profile,
                    )
                )
                continue
            cams.append(
                _CameraOut(
                    name=cam.name,
                    mjcf_camera=mjcf_name,
                    width=width,
                    height=height,
                    frame_id=cam.frame_id,
                    depth_range=cam.depth_range,
                    k=camera_intrinsics(model, mjcf_name, width, height),
                    static=int(model.cam_bodyid[cid]) == 0
                    and int(model.cam_mode[cid]) == int(mujoco.mjtCamLight.mjCAMLIGHT_FIXED),
                    color_pub=self._pub("color_image", cam.name),
                    color_info_pub=self._pub("color_info", cam.name),
                    depth_pub=self._pub("depth_image", cam.name),
                    depth_info_pub=self._pub("depth_info", cam.name),
                    profile=profile,
                )
            )
        return cams

    def _robot_state(self, world: SimWorld) -> RobotState | None:
        """The robot's URDF and link transforms; ``None`` (with a warning) if it has no URDF form."""
        try:
            return RobotState(world, self.interface)
        except RobotDescriptionError as err:
            self.get_logger().warning(f"no /robot_description or link transforms: {err}")
            return None

    def _publish_static_tf(self) -> None:
        """Publish /robot_description and /tf_static (robot base, fixed links, camera trees)."""
        stamp = conv.time_msg(self._clock_ns)
        if self._robot is not None:
            self._description_pub.publish(self._robot.description_msg())
            transforms = self._robot.static_transforms(self.world.data, stamp)
        else:
            world, base = self.interface.frame("world"), self.interface.frame("base")
            transforms = [conv.transform_msg(world, base, *self.world.base_pose(), stamp)]
        for cam in self._cameras:
            mount, tree = camera_transforms(
                self.interface, cam.name, cam.frame_id, self.world.camera_pose(cam.name), stamp
            )
            # A moving camera's world -> camera_link goes on /tf instead.
            transforms += [mount, *tree] if cam.static else tree
        self._tf_static_pub.publish(conv.tf_message(transforms))

    def _make_subscriptions_and_services(self) -> None:
        iface = self.interface
        subs = MutuallyExclusiveCallbackGroup()
        services = MutuallyExclusiveCallbackGroup()
        subscribe_topics(
            self,
            iface,
            (
                ("arm_command", self._on_arm_command),
                ("gripper_command", self._on_gripper_command),
                ("policy_heartbeat", self._on_heartbeat),
            ),
            subs,
        )
        for key, callback in (
            ("reset_episode", self._on_reset),
            ("pause", self._on_pause),
            ("step", self._on_step),
        ):
            spec = iface.service_spec(key)
            self.create_service(interface_class(spec.type), spec.name, callback, callback_group=services)

    # ------------------------------------------------------------------------------------- callbacks

    # rclpy throttles per call site, so arm and gripper each have their own warning lines.
    def _on_arm_command(self, msg: Any) -> None:
        if self.config.lockstep:
            with self._cv:
                self._pending_arm = msg
                self._arm_commands += 1
                self._cv.notify_all()
            return
        # Lambdas: self.world is read under the lock (a reset may swap the world).
        check = arm_command(msg, lambda values: self.world.set_arm_command(values), self._lock)
        self._warn_arm(check)

    def _warn_arm(self, check: CommandCheck) -> None:
        if not check.accepted:
            self.get_logger().warning(f"refused arm command: {check.reason}", throttle_duration_sec=1.0)
        elif check.clamped:
            self.get_logger().warning(f"clamped arm command: {check.reason}", throttle_duration_sec=1.0)

    def _on_gripper_command(self, msg: Any) -> None:
        if self.config.lockstep:
            with self._cv:
                self._pending_gripper = msg
                self._gripper_commands += 1
                self._cv.notify_all()
            return
        check = gripper_command(msg, lambda value: self.world.set_gripper_command(value), self._lock)
        self._warn_gripper(check)

    def _warn_gripper(self, check: CommandCheck) -> None:
        if not check.accepted:
            self.get_logger().warning(f"refused gripper command: {check.reason}", throttle_duration_sec=1.0)
        elif check.clamped:
            self.get_logger().warning(f"clamped gripper command: {check.reason}", throttle_duration_sec=1.0)

    def _apply_pending_commands(self) -> None:
        """Lockstep: apply the latest arm and gripper commands at a period's start (lock held)."""
        arm, gripper = self._pending_arm, self._pending_gripper
        self._pending_arm = self._pending_gripper = None
        held = contextlib.nullcontext()
        if arm is not None:
            self._warn_arm(arm_command(arm, self.world.set_arm_command, held))
        if gripper is not None:
            self._warn_gripper(gripper_command(gripper, self.world.set_gripper_command, held))

    def _on_heartbeat(self, msg: Time) -> None:
        stamp = conv.time_to_ns(msg)
        with self._cv:
            if stamp > self._ack_ns:
                self._ack_ns = stamp
                self._acks += 1
                self._ack_wall = time.monotonic()
                self._cv.notify_all()

    def _commands_caught_up(self) -> bool:
        """True once the commands sent before the latest ack have arrived (call with the lock held).

        A sender that acks without commanding (a test, a holding policy) is let through after
        ``_COMMAND_GRACE_S`` of wall time, so lockstep never deadlocks on it.
        """
        if self._arm_commands >= self._acks and self._gripper_commands >= self._acks:
            return True
        return time.monotonic() - self._ack_wall >= _COMMAND_GRACE_S

    def _on_reset(self, request: Any, response: Any) -> Any:
        seed = int(request.variation_seed)
        text = request.variation_config if request.variation_config.strip() else self._variations_text
        response.world_id = self.world.world_id
        response.world_hash = self.world.world_hash
        try:
            world, key = self._world_for(text, seed)
        except VariationError as err:
            # Refused: the node keeps running the old world and episode.
            response.success = False
            response.message = f"reset refused: {err}"
            response.variation_hash = ""
            self.get_logger().warning(response.message)
            return response
        swapped = world is not self.world
        with self._cv:
            if swapped:
                self._swap_world(world, key)
            self.world.reset(seed)
            self._clock_ns += self._dt_ns  # the reset takes one step, so stamps stay strictly increasing
            if swapped:
                self._publish_static_tf()  # camera extrinsics may have changed; before the reset observation
            self._episode_seed = seed
            self._reset_pending = True
            target = self._reset_done + 1
            self._cv.notify_all()
            ok = self._cv.wait_for(lambda: self._reset_done >= target or not self._running, _SERVICE_WAIT_S)
        response.success = bool(ok and self._running)
        response.message = (
            "" if response.success else "the physics thread did not publish the reset observation"
        )
        response.world_hash = self.world.world_hash
        response.variation_hash = variation_hash(self.world.world_hash, text, seed)
        if response.success and swapped:
            self.get_logger().info(
                f"reset: world {self.world.world_id} ({self.world.world_hash[:12]}), "
                + (f"variation seed {seed}" if text.strip() else "base (no variation)")
            )
        return response

    def _swap_world(self, world: SimWorld, key: tuple[str, int]) -> None:
        """Run ``world`` from now on (lock held); the render thread rebuilds its renderers on its next job."""
        self.world, self._world_key = world, key
        self._task = self._make_task()
        self._robot = self._robot_state(world)
        if self._cameras:
            self._cameras = self._make_cameras(world, reuse=self._cameras)

    def _on_pause(self, request: Any, response: Any) -> Any:
        with self._cv:
            self._paused = bool(request.data)
            self._cv.notify_all()
        response.success = True
        response.message = "paused" if request.data else "running"
        return response

    def _on_step(self, request: Any, response: Any) -> Any:
        with self._cv:
            if not self._paused:
                response.success = False
                response.message = "not paused: call the pause service with data=true first"
                return response
            target = self._steps_done + 1
            self._step_budget += 1
            self._cv.notify_all()
            ok = self._cv.wait_for(lambda: self._steps_done >= target or not self._running, _SERVICE_WAIT_S)
            now = self._clock_ns
        response.success = bool(ok and self._running)
        # The exact stamp of the period-end observation, so clients can wait for that message.
        response.message = (
            f"stamp {now // _NS}.{now % _NS:09d}" if response.success else "step did not complete"
        )
        return response

    # --------------------------------------------------------------------------------------- physics

    def _collect(self, *, force: bool) -> _StepOutput:
        """Read what is due at the current step (lock held)."""
        now = self._clock_ns
        out = _StepOutput(stamp_ns=now)
        if self._js_tick.due(now) or force:
            out.joint_state = self.world.joint_state()
            if self._task is not None and not self._outcome_sent:
                out.outcome = self._task.evaluate(self.world)
                if out.outcome is not None:
                    self._outcome_sent = True
        if self._tf_tick.due(now) or force:
            out.link_qpos, out.robot = self.world.data.qpos.copy(), self._robot
            for cam in self._cameras:
                if not cam.static:
                    out.dynamic_cameras.append((cam.name, *self.world.camera_pose(cam.name)))
        due = tuple(i for i, tick in enumerate(self._cam_ticks) if tick.due(now) or force)
        if due:
            d = self.world.data
            out.render = _RenderJob(
                now,
                d.qpos.copy(),
                d.mocap_pos.copy(),
                d.mocap_quat.copy(),
                due,
                self.world.model,
                tuple(self._cameras),
            )
        return out

    def _publish(self, out: _StepOutput) -> None:
        stamp = conv.time_msg(out.stamp_ns)
        if out.joint_state is not None:
            self._joint_pub.publish(conv.joint_state_msg(stamp, self.world.joint_names, *out.joint_state))
            if self._clock_pub is not None:
                self._clock_pub.publish(conv.clock_msg(stamp))
        if out.link_qpos is not None:
            robot = out.robot
            transforms = robot.moving_transforms(out.link_qpos, stamp) if robot is not None else []
            for name, pos, quat in out.dynamic_cameras:
                cam = next(c for c in self._cameras if c.name == name)
                mount, _ = camera_transforms(self.interface, name, cam.frame_id, (pos, quat), stamp)
                transforms.append(mount)
            if transforms:
                self._tf_pub.publish(conv.tf_message(transforms))
        if out.outcome is not None:
            self._publish_outcome(out.outcome, stamp)
        if out.render is not None:
            self._submit_render(out.render)

    def _publish_outcome(self, outcome: Any, stamp: Time) -> None:
        msg = conv.episode_outcome_msg(
            stamp=stamp,
            episode_index=self._episodes_reported,
            policy_id=self.config.policy_id,
            world_id=self.world.world_id,
            variation_seed=self._episode_seed,
            world_hash=self.world.world_hash,
            success=outcome.success,
            failure_reason=outcome.reason,
            duration_s=(stamp.sec * _NS + stamp.nanosec - self._episode_start_ns) / _NS,
            metrics=outcome.metrics,
        )
        self._episodes_reported += 1
        self._outcome_pub.publish(msg)
        self.get_logger().info(
            f"episode {msg.episode_index} (seed {msg.variation_seed}): "
            f"{'success' if msg.success else msg.failure_reason} after "
            f"{msg.duration.sec + msg.duration.nanosec / 1e9:.3f} s"
        )

    def _physics_loop(self) -> None:
        try:
            self._run_physics()
        except Exception as err:  # reported, then the node stops
            if self._running and rclpy.ok(context=self.context):
                self.get_logger().fatal(f"physics thread failed: {err!r}")
                self._running = False
                raise

    def _run_physics(self) -> None:
        cfg = self.config
        anchor: tuple[float, int] | None = None  # (wall time, sim ns) that real-time pacing follows
        last_republish = 0.0
        while self._running and rclpy.ok(context=self.context):
            out: _StepOutput | None = None
            republish: _StepOutput | None = None
            lost: _StepOutput | None = None
            observation = False
            with self._cv:
                if self._reset_pending:
                    self._reset_pending = False
                    self._pending_arm = self._pending_gripper = None  # commands of the old episode
                    self._episode_start_ns = self._clock_ns
                    self._outcome_sent = False
                    self._period_steps = 0
                    for tick in (self._js_tick, self._tf_tick, *self._cam_ticks):
                        tick.restart(self._clock_ns)
                    out = self._collect(force=True)
                    observation = True
                    self._reset_done += 1
                    self._cv.notify_all()
                    anchor = None
                else:
                    stepping = self._paused and self._step_budget > 0
                    if self._paused and not stepping:
                        self._cv.wait(0.1)
                        anchor = None
                        continue
                    if cfg.lockstep and not stepping and (
                        self._ack_ns < self._obs_ns or not self._commands_caught_up()
                    ):
                        if not self._waiting_logged and self._ack_watch.silence() >= _LOCKSTEP_REPUBLISH_S:
                            # Said once per observation, and only when the policy is slow to answer.
                            self.get_logger().info(
                                f"lockstep: waiting for the policy to acknowledge observation "
                                f"{self._obs_ns / _NS:.3f} s on {self.interface.topic('policy_heartbeat')}"
                            )
                            self._waiting_logged = True
                        waited = time.monotonic()
                        self._cv.wait(0.1)
                        self.lockstep_wait_s += time.monotonic() - waited
                        anchor = None
                        if (silent := self._ack_watch.expired()) is not None:
                            lost = self._policy_lost(silent)
                        if time.monotonic() - last_republish >= _LOCKSTEP_REPUBLISH_S:
                            last_republish = time.monotonic()
                            republish = _StepOutput(
                                stamp_ns=self._obs_ns, joint_state=self.world.joint_state()
                            )
                        if lost is None and (
                            republish is None or (self._ack_ns >= self._obs_ns and self._commands_caught_up())
                        ):
                            continue
                    else:
                        if cfg.lockstep and self._period_steps == 0:
                            self._apply_pending_commands()
                        self.world.step(1)
                        self._clock_ns += self._dt_ns
                        self._period_steps += 1
                        period_end = self._period_steps >= self._control_steps
                        out = self._collect(force=period_end and (cfg.lockstep or stepping))
                        if period_end:
                            self._period_steps = 0
                            observation = True
                            if stepping:
                                self._step_budget -= 1
                                self._steps_done += 1
                                self._cv.notify_all()
            if lost is not None:
                self._publish(lost)
            if republish is not None:
                # Late-joining policies, and ones that missed a best-effort image, still get the pending
                # observation (same stamps): joint states and /clock, and each camera's last frame. The
                # renderer is idle here (lockstep waits for it before waiting for the ack).
                self._publish(republish)
                self._resend_frames()
                continue
            if out is None:  # only the lost policy's outcome to publish
                continue
            self._publish(out)
            if observation and cfg.lockstep:
                self._wait_render_idle()
                with self._cv:
                    self._obs_ns = out.stamp_ns
                    self._waiting_logged = False
                    self._ack_watch.arm()
                last_republish = time.monotonic()
            if cfg.real_time:
                anchor = self._pace(anchor, out.stamp_ns)

    def _policy_lost(self, silent_s: float) -> _StepOutput | None:
        """Lockstep: no acknowledgement for ``silent_s`` (lock held); the outcome to publish, if any.

        A policy that left the graph (no publisher on the heartbeat topic) ends the episode as policy_lost,
        once. One still connected (slow, or holding on stale observations) is only reported, again after
        each further ``ack_timeout_s``. Either way the node keeps serving and re-publishing the observation.
        """
        heartbeat = self.interface.topic("policy_heartbeat")
        publishers = self.count_publishers(heartbeat)
        if publishers:
            self.get_logger().warning(
                f"lockstep: no acknowledgement of observation {self._obs_ns / _NS:.3f} s on {heartbeat} for "
                f"{silent_s:.1f} s; the policy is still connected ({publishers} publishers): waiting on"
            )
            self._ack_watch.arm()
            return None
        self.get_logger().warning(
            f"lockstep: no acknowledgement of observation {self._obs_ns / _NS:.3f} s on {heartbeat} for "
            f"{silent_s:.1f} s and no publisher left: the policy is lost; episode (seed "
            f"{self._episode_seed}) ends as {POLICY_LOST}"
        )
        if self._outcome_sent:
            return None
        self._outcome_sent = True
        return _StepOutput(stamp_ns=self._obs_ns, outcome=Outcome(success=False, reason=POLICY_LOST))

    def _pace(self, anchor: tuple[float, int] | None, sim_ns: int) -> tuple[float, int]:
        now = time.monotonic()
        if anchor is None:
            return (now, sim_ns)
        target = anchor[0] + (sim_ns - anchor[1]) / _NS
        ahead = target - now
        if ahead > 0:
            time.sleep(ahead)
        elif ahead < -_MAX_LAG_S:
            self.get_logger().warning(
                f"physics is {-ahead:.2f} s behind real time; re-anchoring (real-time factor < 1)",
                throttle_duration_sec=5.0,
            )
            return (now, sim_ns)
        return anchor

    # ------------------------------------------------------------------------------------- rendering

    def _submit_render(self, job: _RenderJob) -> None:
        drop_ok = self.config.real_time and not self.config.lockstep
        with self._render_cv:
            if not drop_ok:
                self._render_cv.wait_for(lambda: self._render_job is None or not self._running)
            elif self._render_job is not None:
                self.frames_dropped += 1
                self.get_logger().warning(
                    f"renderer busy: dropped camera frame ({self.frames_dropped} so far)",
                    throttle_duration_sec=5.0,
                )
            self._render_job = job
            self._render_cv.notify_all()

    def _wait_render_idle(self) -> None:
        with self._render_cv:
            self._render_cv.wait_for(
                lambda: (self._render_job is None and not self._render_busy) or not self._running
            )

    def _render_loop(self) -> None:
        from r2s2r_sim.rendering import RgbdRenderer, depth_to_uint16_mm

        model = self.world.model
        data = mujoco.MjData(model)
        renderers: dict[tuple[int, int, str], RgbdRenderer] = {}

        def open_renderers(outs: Sequence[_CameraOut]) -> None:
            # GL contexts are made current on this thread only, so (re)building them happens here.
            for r in renderers.values():
                r.close()
            renderers.clear()
            for cam in outs:
                key = (cam.width, cam.height, cam.profile.name)
                if key not in renderers:
                    renderers[key] = RgbdRenderer(
                        model, cam.width, cam.height, profile=cam.profile
                    ).__enter__()

        try:
            open_renderers(self._cameras)
        except BaseException as err:  # reported to the constructor
            self._render_error = err
            self._render_ready.set()
            for r in renderers.values():
                r.close()
            return
        self._render_ready.set()
        try:
            while self._running:
                with self._render_cv:
                    self._render_cv.wait_for(lambda: self._render_job is not None or not self._running, 0.5)
                    job = self._render_job
                    if job is None:
                        continue
                    self._render_job = None
                    self._render_busy = True
                    self._render_cv.notify_all()
                try:
                    if job.model is not model:
                        # A reset swapped the world (variation): new model, new GL resources.
                        model = job.model
                        data = mujoco.MjData(model)
                        open_renderers(job.outs)
                    data.qpos[:] = job.qpos
                    data.mocap_pos[:] = job.mocap_pos
                    data.mocap_quat[:] = job.mocap_quat
                    mujoco.mj_kinematics(model, data)
                    mujoco.mj_camlight(model, data)
                    stamp = conv.time_msg(job.stamp_ns)
                    started = time.perf_counter()
                    for index in job.cameras:
                        cam = job.outs[index]
                        rgb, depth = renderers[(cam.width, cam.height, cam.profile.name)].render(
                            data, cam.mjcf_camera, depth_range=cam.depth_range
                        )
                        self._publish_frame(cam, rgb, depth_to_uint16_mm(depth), stamp)
                    self.render_seconds += time.perf_counter() - started
                finally:
                    with self._render_cv:
                        self._render_busy = False
                        self._render_cv.notify_all()
        except Exception as err:  # reported, then the node stops
            if self._running and rclpy.ok(context=self.context):
                self.get_logger().fatal(f"render thread failed: {err!r}")
                self._running = False
        finally:
            for r in renderers.values():
                r.close()

    def _publish_frame(self, cam: _CameraOut, rgb: np.ndarray, depth_mm: np.ndarray, stamp: Time) -> None:
        # Aligned depth shares the colour frame and intrinsics (realsense2_camera align_depth).
        frame = _Frame(
            color=conv.rgb_image_msg(rgb, stamp, cam.frame_id),
            depth=conv.depth_image_msg(depth_mm, stamp, cam.frame_id),
            info=conv.camera_info_msg(cam.k, cam.width, cam.height, stamp, cam.frame_id),
        )
        self._send_frame(cam, frame)
        with self._render_cv:
            self._last_frames[cam.name] = frame
        self.frames_published += 1

    @staticmethod
    def _send_frame(cam: _CameraOut, frame: _Frame) -> None:
        cam.color_pub.publish(frame.color)
        cam.depth_pub.publish(frame.depth)
        cam.color_info_pub.publish(frame.info)
        cam.depth_info_pub.publish(frame.info)

    def _resend_frames(self) -> None:
        """Re-send each camera's last frame, as published (same stamp); lockstep's pending observation."""
        with self._render_cv:
            frames = [(cam, self._last_frames.get(cam.name)) for cam in self._cameras]
        for cam, frame in frames:
            if frame is not None:
                self._send_frame(cam, frame)

    # -------------------------------------------------------------------------------------- shutdown

    def destroy_node(self) -> None:
        """Stop and join the physics and render threads, then destroy the node."""
        if self._cameras and self.frames_published:
            self.get_logger().info(
                f"camera frames: {self.frames_published} published, {self.frames_dropped} dropped, "
                f"{1e3 * self.render_seconds / self.frames_published:.1f} ms per frame (render + publish)"
            )
        self._stop_threads(timeout=5.0)
        super().destroy_node()

    def _stop_threads(self, timeout: float = 30.0) -> None:
        """Stop the physics and render threads and join them (each at most ``timeout`` s)."""
        self._running = False
        with self._cv:
            self._cv.notify_all()
        with self._render_cv:
            self._render_cv.notify_all()
        for thread in (getattr(self, "_physics_thread", None), getattr(self, "_render_thread", None)):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=timeout)


def main(args: Sequence[str] | None = None) -> int:
    """Run the sim node until interrupted; returns the process exit code (1 on a configuration error)."""
    use_large_data_transport()  # read by Fast DDS when the participant is created, so before init
    return run_node(SimNode, args, "sim_node", errors=(SimNodeError, ValueError, RuntimeError))

if __name__ == "__main__":
    sys.exit(main())
