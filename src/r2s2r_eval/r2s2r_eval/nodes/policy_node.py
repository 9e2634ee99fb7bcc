"""policy_node: runs a registered policy on the robot's topics (sim or real) at its control rate.

Subscribes the interface's joint states, colour/depth images and camera info of one camera, /tf and
/tf_static, and the episode outcome; sends the arm and gripper commands through the profile's ``command`` path
(forward command topics, or the trajectory controller's ``joint_trajectory`` topic and the gripper action:
:mod:`r2s2r_eval.nodes.command_senders`) and publishes the lockstep ack (``policy_heartbeat``: the stamp of
the observation just answered). Pacing follows the observations' clock:
the policy is called when the newest joint state is at least one control period newer than the last one
acted on, so it works on sim time (with or without lockstep) and on hardware alike. The policy's
``Observation.stamp`` is the time since the episode's first joint state, as the in-process runner gives it.

Episodes: the evaluator calls ``~/reset_episode`` (``r2s2r_msgs/srv/ResetEpisode``) after resetting the world;
the node then drops its cached observations, resets the policy and acts until an ``EpisodeOutcome`` for that
seed arrives. With ``autostart`` it starts episode 0 (seed ``seed``) on its own. Episodes are numbered as the
evaluator numbers them: a reset with seed ``seed + i`` starts episode ``i``. A policy exception ends the
episode: the node publishes a failed ``EpisodeOutcome`` with ``failure_reason = "policy_error: ..."``.
Done signal (the one end-of-episode rule, :class:`r2s2r_sim.tasks.registry.EpisodeJudge`): when the policy
reports that it has finished (a ``done`` attribute, property or no-argument method that is true), the node
publishes the episode's seed once on the interface's ``policy_done`` (``/policy_node/episode_done``,
``std_msgs/msg/UInt64``) and asks the policy no more: until the outcome arrives it re-sends the last arm and
gripper set-points (the arm holds) and acknowledges each observation, while the task settles and is judged (by
the sim node, or by the judge the evaluator asks in real mode). A policy without ``done`` never sends it (then
a success held for the task's settle period, the task's timeout, or the evaluator's, ends the episode).
Watchdog: if a required observation has not arrived, or one the policy needs fresh for its next step
(``Policy.fresh_required``) is older than ``max_observation_age_s``, the node holds (publishes nothing new)
and logs once until fresh data arrives.
"""

from __future__ import annotations

import r2s2r_sim.ros.interrupts  # noqa: F401 - first: a SIGINT during the imports below must stop us

# isort: split
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from builtin_interfaces.msg import Time
from r2s2r_sim.compressed_images import COMPRESSED, RAW, TRANSPORTS, transport_topic
from r2s2r_sim.ros import conversions as rc
from r2s2r_sim.ros.dds import use_large_data_transport
from r2s2r_sim.ros.params import parameter_error, read_node_config, run_node, spin_single
from r2s2r_sim.ros.qos import declare_interface, interface_class, qos_profile
from r2s2r_sim.tasks.config import reference_policy
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.worlds import world_path
from rclpy.node import Node
from std_msgs.msg import UInt64

from r2s2r_eval.episodes.sensor_arrays import NS_PER_S, episode_stamp
from r2s2r_eval.nodes.command_senders import command_sender
from r2s2r_eval.nodes.conversions import (
    ConversionError,
    TfTree,
    observation_from_messages,
    stamp_to_seconds,
)
from r2s2r_eval.policy import (
    Action,
    EpisodeInfo,
    ObservationKind,
    Policy,
    available_policies,
    check_policy_task,
    load_policy,
    policy_params_from_yaml,
)

__all__ = ["PolicyNode", "PolicyNodeConfig", "PolicyNodeError", "main"]


class PolicyNodeError(ValueError):
    """An invalid parameter of the policy node: names the parameter, the value and what is allowed."""


@dataclass(frozen=True, kw_only=True)
class PolicyNodeConfig:
    """The policy node's parameters (see ``config/policy_node.yaml``)."""

    policy: str = "reference"
    policy_params: str = "{}"
    world: str = "tabletop-pick-v1"
    camera: str = ""
    control_rate_hz: float = 0.0
    max_observation_age_s: float = 1.0
    autostart: bool = True
    seed: int = 0
    gripper_max_effort: float = 20.0
    image_transport: str = RAW

    def __post_init__(self) -> None:
        if self.image_transport not in TRANSPORTS:
            raise PolicyNodeError(
                f"parameter image_transport: got {self.image_transport!r}; allowed: {', '.join(TRANSPORTS)}"
            )
        if not (self.control_rate_hz == 0.0 or 0.1 <= self.control_rate_hz <= 1000.0):
            raise PolicyNodeError(
                f"parameter control_rate_hz: got {self.control_rate_hz}; "
                "allowed: 0 (the policy's own) or [0.1, 1000]"
            )
        if not (0.01 <= self.max_observation_age_s <= 3600.0):
            raise PolicyNodeError(
                f"parameter max_observation_age_s: got {self.max_observation_age_s}; allowed: [0.01, 3600] s"
            )


_DESCRIPTIONS: dict[str, tuple[str, tuple[float, float] | None]] = {
    "policy": (
        "Registered policy name (entry-point group r2s2r.policies) or 'package.module:Class'; auto: the "
        "scripted reference policy of the world's task. A policy for another task stops the node.",
        None,
    ),
    "policy_params": ("YAML mapping of the policy's parameters, e.g. '{speed: 2.0}'.", None),
    "world": (
        "World id or folder: the robot's joints, gripper and camera names come from its world.yaml.",
        None,
    ),
    "camera": ("Camera name (topics /<camera>/...); empty: the world's first camera.", None),
    "control_rate_hz": (
        "Policy call rate (Hz, observation clock); 0 uses the policy's own rate or 10 Hz.",
        (0.0, 1000.0),
    ),
    "max_observation_age_s": (
        "Watchdog: hold when a required observation is older than this (s).",
        (0.01, 3600.0),
    ),
    "autostart": ("Start episode 0 with seed 'seed' without waiting for ~/reset_episode.", None),
    "seed": (
        "Seed of episode 0 (the autostarted one); episode i has seed seed + i, as the evaluator's seed0.",
        (0, 2**62),
    ),
    "gripper_max_effort": (
        "max_effort (N) of the gripper action's goals, on a profile with command: trajectory.",
        (0.0, 1000.0),
    ),
    "image_transport": (
        "How the images arrive, as image_transport names it: raw (sensor_msgs/Image on the interface's "
        "topics) or compressed (sensor_msgs/CompressedImage on <image>/compressed and "
        "<depth>/compressedDepth), decoded here.",
        None,
    ),
}


class PolicyNode(Node):
    """Thin adapter: messages in, :class:`Policy` called at the control rate, commands out."""

    def __init__(self, **kwargs: Any) -> None:
        """Read parameters, load the policy and the robot's interface, create the topics.

        Raises:
            PolicyNodeError: an invalid parameter (unknown policy, bad YAML, bad rate, unknown world/camera).
        """
        super().__init__("policy_node", **kwargs)
        cfg = self.config = read_node_config(
            self,
            PolicyNodeConfig,
            _DESCRIPTIONS,
            error=parameter_error(PolicyNodeError),
            constraints={"image_transport": f"one of: {', '.join(TRANSPORTS)}"},
        )
        params = policy_params_from_yaml(cfg.policy_params, PolicyNodeError)
        try:
            self.world_dir = world_path(cfg.world)
            world = load_world_config(self.world_dir)
            self.camera = world.camera(cfg.camera) if cfg.camera else world.cameras[0]
        except (ValueError, IndexError) as err:
            raise PolicyNodeError(f"parameter world/camera: {err}") from None
        self.policy_name = cfg.policy
        try:
            if world.task is not None:  # auto, and a policy for another task, are settled before episode 0
                self.policy_name = reference_policy(cfg.policy, world.task.type)
                check_policy_task(self.policy_name, world.task.type, cfg.world)
            self.policy: Policy = load_policy(self.policy_name, params)
        except ValueError as err:
            raise PolicyNodeError(
                f"parameter policy/policy_params: {err} (registered: {sorted(available_policies())})"
            ) from None
        rate = cfg.control_rate_hz or self.policy.control_rate_hz() or 10.0
        self.period = 1.0 / rate
        self.world_id = world.id
        self.arm_joints = world.robot.arm_joints
        gripper = world.robot.gripper
        self.gripper_range = gripper.command_range if gripper is not None else (0.0, 0.0)
        self._need = self.policy.requires
        self._lock = threading.Lock()
        self._js: Any = None
        self._color: Any = None
        self._depth: Any = None
        self._info: Any = None
        self._tf = TfTree()
        self._active = False
        self._episode = -1
        self._seed = 0
        self._last_act = -math.inf
        self._acked = -math.inf
        self._last_js_stamp = -math.inf
        self._holding = False
        self._start_stamp = None
        self._done_sent = False

        iface = declare_interface(self)
        cam = self.camera.name
        self._world_frame, self._base_frame = iface.frame("world"), iface.frame("base")

        def sub(key: str, cb: Any, camera: str | None = None) -> None:
            spec = iface.topic_spec(key)
            self.create_subscription(
                interface_class(spec.type), iface.topic(key, camera), cb, qos_profile(spec.subscription_qos)
            )

        def pub(key: str) -> Any:
            spec = iface.topic_spec(key)
            return self.create_publisher(interface_class(spec.type), iface.topic(key), qos_profile(spec.qos))

        sub("joint_states", self._on_joint_state)
        if cfg.image_transport == RAW:
            sub("color_image", lambda m: self._store("_color", m), cam)
            sub("depth_image", lambda m: self._store("_depth", m), cam)
        else:
            for key, attr in (("color_image", "_color"), ("depth_image", "_depth")):
                self.create_subscription(
                    interface_class("sensor_msgs/msg/CompressedImage"),
                    transport_topic(iface.topic(key, cam), COMPRESSED, depth=key == "depth_image"),
                    lambda m, a=attr: self._store_compressed(a, m),
                    qos_profile(iface.topic_spec(key).subscription_qos),
                )
        sub("color_info", lambda m: self._store("_info", m), cam)
        sub("tf", self._on_tf)
        sub("tf_static", self._on_tf)
        sub("episode_outcome", self._on_outcome)
        self._commands = command_sender(
            self,
            iface,
            arm_joints=tuple(self.arm_joints),
            period=self.period,
            gripper_range=self.gripper_range,
            gripper_max_effort=cfg.gripper_max_effort,
            gripper_joint=gripper.joints[0] if gripper is not None else "",
        )
        self._ack_pub = pub("policy_heartbeat")
        self._outcome_pub = pub("episode_outcome")
        self._done_pub = pub("policy_done")
        reset_type = interface_class(iface.service_spec("reset_episode").type)
        self.create_service(reset_type, "~/reset_episode", self._on_reset)
        self.get_logger().info(
            f"policy {self.policy_name!r} at {rate:g} Hz on world {self.world_id!r}, camera {cam!r}"
            + (f"; autostart seed {cfg.seed}" if cfg.autostart else "; waiting for ~/reset_episode")
        )
        if cfg.autostart:
            self._start(cfg.seed)

    # --------------------------------------------------------------------------------------- episodes

    def _episode_info(self) -> EpisodeInfo:
        """What the policy is told about the current episode."""
        return EpisodeInfo(
            episode_index=self._episode,
            seed=self._seed,
            world_id=self.world_id,
            world_dir=self.world_dir,
            arm_joint_names=self.arm_joints,
            gripper_command_range=self.gripper_range,
            control_period=self.period,
        )

    def _start(self, seed: int) -> None:
        with self._lock:
            # Numbered as the evaluator numbers them: episode i has seed ``seed + i`` (its seed0 is ours).
            first = self.config.seed
            self._episode = seed - first if seed >= first else self._episode + 1
            self._seed = seed
            # Cached images stay: in lockstep they are not re-sent. Only images stamped at or after the
            # episode's first joint state are used (sim time is monotonic across resets).
            self._js = None
            self._start_stamp: float | None = None
            self._start_ns = 0  # the episode's first joint-state stamp (ns); the policy's time is since then
            self._last_act = -math.inf
            self._acked = -math.inf  # the stamp of the last observation answered (acknowledged)
            self._holding = False
            self._done_sent = False
            self._held: Action | None = None  # the last action sent
            info = self._episode_info()
            self._active = True
        try:
            self.policy.reset(info)
        except Exception as err:  # a policy failure ends the episode
            self._fail(err, 0.0)

    def _on_reset(self, request: Any, response: Any) -> Any:
        self._start(int(request.variation_seed))
        response.success = True
        response.world_id = self.world_id
        response.message = f"episode {self._episode} started with seed {request.variation_seed}"
        return response

    def _on_outcome(self, msg: Any) -> None:
        with self._lock:
            if self._active and int(msg.variation_seed) == self._seed:
                self._active = False
                self.get_logger().info(
                    f"episode {self._episode} ended: {'success' if msg.success else msg.failure_reason}"
                )

    def _fail(self, err: BaseException, stamp: float) -> None:
        reason = f"policy_error: {type(err).__name__}: {err}"
        self.get_logger().error(f"episode {self._episode}: {reason}")
        with self._lock:
            self._active = False
        msg = rc.episode_outcome_msg(
            stamp=rc.time_msg(round(stamp * 1e9)),
            episode_index=self._episode,
            policy_id=self.policy_name,
            world_id=self.world_id,
            variation_seed=self._seed,
            world_hash="",
            success=False,
            failure_reason=reason,
            duration_s=0.0,
            metrics={},
        )
        self._outcome_pub.publish(msg)

    # ------------------------------------------------------------------------------------ observations

    def _store(self, attr: str, msg: Any) -> None:
        with self._lock:
            setattr(self, attr, msg)

    def _store_compressed(self, attr: str, msg: Any) -> None:
        """Decode a compressed image into the raw ``Image`` the policy's observation is built from."""
        try:
            image = rc.image_from_compressed(msg)
        except ValueError as err:
            self.get_logger().warning(f"dropping a compressed image: {err}", throttle_duration_sec=5.0)
            return
        self._store(attr, image)

    def _on_tf(self, msg: Any) -> None:
        with self._lock:
            self._tf.add(msg)

    def _stale(self, now: float) -> list[str]:
        """Required parts missing, or parts the policy needs fresh now older than the watchdog age."""
        parts = {
            ObservationKind.JOINT_STATE: self._js,
            ObservationKind.RGB: self._color,
            ObservationKind.DEPTH: self._depth,
            ObservationKind.CAMERA_INFO: self._info,
        }
        stale = []
        fresh = self.policy.fresh_required()
        for kind, msg in parts.items():
            if kind not in self._need:
                continue
            if msg is None:
                stale.append(f"{kind.value} (none yet)")
            elif kind not in fresh:
                continue
            elif (
                kind in (ObservationKind.RGB, ObservationKind.DEPTH)
                and self._start_stamp is not None
                and stamp_to_seconds(msg.header.stamp) < self._start_stamp - 1e-3
            ):
                stale.append(f"{kind.value} (from before the episode)")
            elif kind is not ObservationKind.CAMERA_INFO:
                age = now - stamp_to_seconds(msg.header.stamp)
                if age > self.config.max_observation_age_s:
                    stale.append(f"{kind.value} ({age:.2f} s old)")
        return stale

    def _on_joint_state(self, msg: Any) -> None:
        with self._lock:
            self._js = msg
            stamp = stamp_to_seconds(msg.header.stamp)
            # A lockstep sim re-sends the observation it waits on, same stamp: that one is always due.
            # (Else a stale joint state queued across a reset, answered first, would make the reset
            # observation, less than a period newer, look early, and sim and policy would wait on each other.)
            repeated, self._last_js_stamp = stamp == self._last_js_stamp, stamp
            if not self._active:
                return
            stamp_ns = int(msg.header.stamp.sec) * NS_PER_S + int(msg.header.stamp.nanosec)
            if self._start_stamp is None:
                self._start_stamp, self._start_ns = stamp, stamp_ns
            if repeated and stamp == self._acked:
                # Answered, and still re-sent: the sim got neither the ack nor, likely, the command (a
                # volatile topic drops what a restarted policy publishes before the sim has matched it).
                # Both again: the sim ignores an ack it has, and a set-point it has is the same set-point.
                if self._held is not None:
                    self._commands.send(self._held, first=False)
                self._ack(msg)
                return
            if stamp < self._last_act + self.period - 1e-6 and not (repeated and stamp > self._last_act):
                return
            if self._done_sent:  # done: the policy is not asked again; the arm holds while the task settles
                self._last_act = stamp
                if self._held is not None:
                    self._commands.send(self._held, first=False)
                self._ack(msg)
                return
            now = self.get_clock().now().nanoseconds * 1e-9
            stale = self._stale(max(now, stamp))
            if stale:
                # Waiting for the first images of an episode is normal; only real staleness is reported.
                if not self._holding:
                    # One call site per severity: rclpy refuses a call site that changes severity.
                    text = f"watchdog: holding, stale or missing observations: {stale}"
                    if self._last_act > -math.inf:
                        self.get_logger().warning(text)
                    else:
                        self.get_logger().info(text)
                    self._holding = True
                return
            if self._holding:
                self.get_logger().info("watchdog: observations fresh again, acting")
                self._holding = False
            try:
                camera_pose = base_pose = None
                if ObservationKind.CAMERA_POSE in self._need or self._tf.frames:
                    camera_pose = self._lookup(self.camera.frame_id, ObservationKind.CAMERA_POSE)
                    base_pose = self._lookup(self._base_frame, ObservationKind.BASE_POSE)
                obs = observation_from_messages(
                    joint_state=msg,
                    color=self._color,
                    depth=self._depth,
                    camera_info=self._info,
                    camera_pose=camera_pose,
                    base_pose=base_pose,
                    stamp=episode_stamp(stamp_ns - self._start_ns),  # as the episode runner gives it
                )
            except ConversionError as err:
                if not self._holding:
                    self.get_logger().warning(f"watchdog: holding, observation not convertible: {err}")
                    self._holding = True
                return
            self._last_act = stamp
            policy = self.policy
        try:
            action = policy.act(obs)
            action.check(self._episode_info())
        except Exception as err:  # a policy failure ends the episode as a failure
            self._fail(err, stamp)
            return
        self._commands.send(action, first=self._held is None)
        self._held = action
        if not self._done_sent and _policy_done(policy):
            # Before the ack: a lockstep sim counts the settle period from the observation just answered.
            self._done_sent = True
            self.get_logger().info(f"episode {self._episode} (seed {self._seed}): policy done")
            self._done_pub.publish(UInt64(data=self._seed))
        self._ack(msg)

    def _ack(self, msg: Any) -> None:
        """Tell a lockstep sim that the observation ``msg`` (a joint state) is answered."""
        self._acked = stamp_to_seconds(msg.header.stamp)
        self._ack_pub.publish(Time(sec=msg.header.stamp.sec, nanosec=msg.header.stamp.nanosec))

    def _lookup(self, frame: str, kind: ObservationKind) -> Any:
        try:
            return self._tf.lookup(self._world_frame, frame)
        except ConversionError:
            if kind in self._need:
                raise
            return None


def _policy_done(policy: Policy) -> bool:
    """The policy's :attr:`Policy.done`; a broken ``done`` reads as False rather than stop the commands."""
    try:
        return bool(policy.done)
    except Exception:  # a broken done must not stop the robot's commands
        return False


def main(args: Sequence[str] | None = None) -> int:
    """Run the policy node until interrupted; returns 1 on a configuration error."""
    use_large_data_transport()  # before init: Fast DDS reads the profile at participant creation
    return run_node(
        PolicyNode,
        args,
        "policy_node",
        spin=spin_single,
        errors=(PolicyNodeError, ValueError),
        quiet_sigint=True,
    )
