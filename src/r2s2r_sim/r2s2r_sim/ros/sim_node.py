"""sim_node: serves a MuJoCo world on the real drivers' topic interface, with /clock.

Topic and service names, types and QoS come from ``config/interface.yaml`` (:mod:`r2s2r_sim.interface`);
messages are built by :mod:`r2s2r_sim.ros.conversions`. The node runs on wall time and *produces* sim time:
every stamp it publishes (joint states, images, camera info, /tf, outcomes) is sim time, and /clock is
monotonic across resets (a reset takes one physics step of sim time, so stamps are strictly increasing).

Threads (the loops are :mod:`r2s2r_sim.serving.sim_server` over the serving core
:mod:`r2s2r_sim.serving.loop`; this module only translates parameters, messages and services):

* physics: fixed-step loop on the world timestep. It applies commands, steps, publishes /joint_states and
  /clock (at ``joint_state_rate_hz``), /tf (``tf_rate_hz``) and the episode outcome, and hands camera
  ticks to the render thread as snapshots (qpos, mocap). With ``real_time`` it sleeps to keep sim time on
  wall time; if it falls more than 0.25 s behind it re-anchors and warns (the real-time factor is then < 1).
* render (if cameras are on): owns the GL contexts, a private ``MjData`` and each camera's
  :class:`~r2s2r_sim.cells.camera_frames.CameraFrames` (the in-process runner's frames, with the world's
  sensor effects if its variation has them); renders colour and aligned depth of each due camera and publishes
  both images and their camera infos with the snapshot's stamp. In ``real_time`` mode a frame that finds
  the renderer busy with the previous one waits at most one frame (one pending slot); older pending frames
  are dropped and counted, so rendering never stalls physics. Otherwise (as fast as possible, or lockstep)
  physics waits for the renderer instead, so every camera tick is rendered at its sim time.
* executor (main thread): command subscriptions, the policy heartbeat and the services, and the controllers'
  action servers (:mod:`r2s2r_sim.ros.controller_io`): a trajectory or gripper goal runs on the physics
  thread's controllers (:mod:`r2s2r_sim.controllers`), which command the arm each physics step in sim
  time, where the forward command topics' commands go.

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

import r2s2r_sim.ros.interrupts  # noqa: F401 - first: a SIGINT during the imports below must stop us

# isort: split
import contextlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import rclpy
from builtin_interfaces.msg import Time
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.publisher import Publisher

from r2s2r_sim.cells.camera_frames import CameraFrames
from r2s2r_sim.interface import CommandPath, Interface
from r2s2r_sim.render.renderer import depth_to_uint16_mm
from r2s2r_sim.ros import conversions as conv
from r2s2r_sim.ros.controller_io import ControllerServers, spin_serving_goals
from r2s2r_sim.ros.dds import use_large_data_transport
from r2s2r_sim.ros.diagnostics import DiagnosticsPublisher, serving_reading
from r2s2r_sim.ros.driver_io import (
    CameraFrame,
    CameraPublishers,
    arm_command,
    camera_frame,
    gripper_command,
    interface_publisher,
    subscribe_topics,
)
from r2s2r_sim.ros.params import declare_driver_parameters, exit_logger, node_help, run_node
from r2s2r_sim.ros.qos import declare_interface, interface_class
from r2s2r_sim.ros.robot_state import RobotState, camera_transforms, static_messages
from r2s2r_sim.serving.loop import NS, RenderJob, RenderWorker, ServingThreads, variation_hash
from r2s2r_sim.serving.sim_server import POLICY_LOST, CameraSpec, SimServer, StepOutput
from r2s2r_sim.serving.sim_server_config import (
    PARAMS,
    SimNodeConfig,
    SimNodeError,
    param_error,
    parse_variation_config,
)
from r2s2r_sim.variations import VariationError, for_world, load_variation_config
from r2s2r_sim.world.robot_description import RobotDescriptionError
from r2s2r_sim.world.sim_world import CommandCheck, SimWorld
from r2s2r_sim.worlds import world_path

__all__ = [
    "POLICY_LOST",
    "SimNode",
    "SimNodeConfig",
    "SimNodeError",
    "main",
    "parse_variation_config",
    "variation_hash",
]


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
            folder = world_path(cfg.world)
        except ValueError as err:
            raise SimNodeError(f"parameter world: {err}") from None
        variations_text = ""  # the ``variations`` file's text: the config of resets that give none
        if cfg.variations:
            try:
                for_world(load_variation_config(cfg.variations), folder)
                variations_text = Path(cfg.variations).read_text(encoding="utf-8")
            except (VariationError, OSError) as err:
                raise SimNodeError(
                    f"parameter variations: {err}; allowed: '' or a variations YAML file"
                ) from None
        self.threads = ServingThreads("sim", self.get_logger(), ok=lambda: rclpy.ok(context=self.context))
        self.server = SimServer(cfg, folder, variations_text, self.get_logger(), self.threads)
        server = self.server
        self.interface: Interface = declare_interface(self)
        server.heartbeat_topic = self.interface.topic("policy_heartbeat")
        server.robot = self._robot_state(server.world)
        self._camera_pubs: dict[str, CameraPublishers] = {}
        self._make_publishers()
        self._last_frames: dict[str, CameraFrame] = {}  # camera name -> last frame published
        self._publish_static_tf()
        self._make_subscriptions_and_services()
        server.sink = self
        try:
            if server.cameras:
                self.threads.start_render(
                    RenderWorker(
                        model=server.world.model,
                        open_renderers=self._open_renderers,
                        close_renderers=_close_renderers,
                        draw=self._draw,
                        log=self.get_logger(),
                    )
                )
            self.threads.start_physics(server.run_physics, wakeups=(server.cv,))
            self._diagnostics = DiagnosticsPublisher(
                self,
                self.interface,
                name="simulation",
                hardware_id=server.world.world_id,
                counters=lambda: {
                    "time_s": server.clock_ns / NS,
                    "frames": self.threads.frames_published,
                    "frames_dropped": self.threads.frames_dropped,
                    "lockstep_wait_s": server.lockstep_wait_s,
                },
                read=lambda rates: serving_reading(
                    rates,
                    running=self.threads.running,
                    cameras=len(server.cameras),
                    frames_dropped=self.threads.frames_dropped,
                    episodes=server.episodes_reported,
                    sim_time=True,
                    paced=cfg.real_time and not cfg.lockstep and not server.paused,
                ),
            )
            mode = "lockstep" if cfg.lockstep else ("real time" if cfg.real_time else "as fast as possible")
            world = server.world
            self.get_logger().info(
                f"world {world.world_id} ({world.world_hash[:12]}), seed {cfg.seed}, "
                f"dt {world.timestep} s, "
                f"{mode}, joint states {cfg.joint_state_rate_hz} Hz, cameras "
                f"{[c.name for c in server.cameras] if server.cameras else 'off'}"
            )
        except BaseException:
            # A Ctrl-C (KeyboardInterrupt) or an error once the threads run: stop and join them before the
            # exception unwinds main(). Left running, the interpreter finalises around the render thread,
            # which is force-unwound (pthread_exit) out of MuJoCo's renderer when it next takes the GIL,
            # and the process dies with SIGSEGV on its way out.
            self.threads.stop()
            raise

    @property
    def world(self) -> SimWorld:
        """The world served now (a reset with a variation swaps it)."""
        return self.server.world

    # ---------------------------------------------------------------------------------- configuration

    def _read_parameters(self) -> SimNodeConfig:
        values = declare_driver_parameters(
            self,
            vars(SimNodeConfig()),
            PARAMS,
            error=SimNodeError,
            wall_clock_why="the sim node produces /clock and runs on wall time; set use_sim_time only on the "
            "other nodes",
            param_error=param_error,
            state_range=True,
        )
        return SimNodeConfig(**values)

    def _pub(self, key: str, camera: str | None = None) -> Publisher:
        return interface_publisher(self, self.interface, key, camera)

    def _make_publishers(self) -> None:
        self._joint_pub = self._pub("joint_states")
        self._tf_pub = self._pub("tf")
        self._tf_static_pub = self._pub("tf_static")
        self._description_pub = self._pub("robot_description")
        self._clock_pub = self._pub("clock") if self.config.publish_clock else None
        self._outcome_pub = self._pub("episode_outcome")
        for cam in self.server.cameras:
            self._camera(cam.name)

    def _camera(self, name: str) -> CameraPublishers:
        """The publishers of camera ``name`` (created on first use; a varied world keeps its cameras')."""
        pubs = self._camera_pubs.get(name)
        if pubs is None:
            pubs = self._camera_pubs[name] = CameraPublishers(
                self, self.interface, name, compressed=self.config.compressed_images
            )
        return pubs

    def _robot_state(self, world: SimWorld) -> RobotState | None:
        """The robot's URDF and link transforms; ``None`` (with a warning) if it has no URDF form."""
        try:
            return RobotState(world, self.interface)
        except RobotDescriptionError as err:
            self.get_logger().warning(f"no /robot_description or link transforms: {err}")
            return None

    def _publish_static_tf(self) -> None:
        """Publish /robot_description and /tf_static (robot base, fixed links, camera trees)."""
        server = self.server
        cameras = [(c.name, c.frame_id, c.static) for c in server.cameras]
        description, tf_static = static_messages(
            server.robot, server.world, self.interface, cameras, conv.time_msg(server.clock_ns)
        )
        if description is not None:
            self._description_pub.publish(description)
        self._tf_static_pub.publish(tf_static)

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
                ("policy_done", self._on_policy_done),
            ),
            subs,
        )
        # joint_trajectory_controller's and gripper_action_controller's endpoints, beside the forward topics.
        self._controller_servers = ControllerServers(
            self, iface, self.server.controllers, on_streamed=lambda: self.server.note_command("arm")
        )
        if iface.command is CommandPath.TRAJECTORY:
            self.server.command_streams = ("arm",)
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
        self._command(
            "arm",
            lambda world, lock: self._warn_arm(arm_command(msg, lambda v: world().set_arm_command(v), lock)),
        )

    def _on_gripper_command(self, msg: Any) -> None:
        self._command(
            "gripper",
            lambda world, lock: self._warn_gripper(
                gripper_command(msg, lambda v: world().set_gripper_command(v), lock)
            ),
        )

    def _command(self, kind: str, apply: Callable[[Callable[[], SimWorld], Any], None]) -> None:
        """Apply a command now, under the physics lock; in lockstep, at the next control period's start.

        ``apply(world, lock)`` reads the world through ``world()`` inside ``lock`` (a reset may swap it).
        """
        if self.config.lockstep:
            held = contextlib.nullcontext()
            self.server.command(kind, lambda world: apply(lambda: world, held))
        else:
            apply(lambda: self.world, self.server.lock)

    def _warn_arm(self, check: CommandCheck) -> None:
        if not check.accepted:
            self.get_logger().warning(f"refused arm command: {check.reason}", throttle_duration_sec=1.0)
        elif check.clamped:
            self.get_logger().warning(f"clamped arm command: {check.reason}", throttle_duration_sec=1.0)

    def _warn_gripper(self, check: CommandCheck) -> None:
        if not check.accepted:
            self.get_logger().warning(f"refused gripper command: {check.reason}", throttle_duration_sec=1.0)
        elif check.clamped:
            self.get_logger().warning(f"clamped gripper command: {check.reason}", throttle_duration_sec=1.0)

    def _on_heartbeat(self, msg: Time) -> None:
        self.server.acknowledge(conv.time_to_ns(msg))

    def _on_policy_done(self, msg: Any) -> None:
        if not self.server.policy_done(int(msg.data)):
            self.get_logger().info(f"ignored a policy done for seed {msg.data} (not the running episode's)")

    def _on_reset(self, request: Any, response: Any) -> Any:
        server = self.server
        seed = int(request.variation_seed)
        text = request.variation_config if request.variation_config.strip() else server.variations_text
        response.world_id = server.world.world_id
        response.world_hash = server.world.world_hash
        try:
            published, swapped = server.reset(text, seed)
        except VariationError as err:
            # Refused: the node keeps running the old world and episode.
            response.success = False
            response.message = f"reset refused: {err}"
            response.variation_hash = ""
            self.get_logger().warning(response.message)
            return response
        world = server.world
        response.success = published
        response.message = "" if published else "the physics thread did not publish the reset observation"
        response.world_hash = world.world_hash
        response.variation_hash = variation_hash(world.world_hash, text, seed)
        if published and swapped:
            self.get_logger().info(
                f"reset: world {world.world_id} ({world.world_hash[:12]}), "
                + (f"variation seed {seed}" if text.strip() else "base (no variation)")
            )
        return response

    def world_swapped(self, world: SimWorld) -> RobotState | None:
        """A reset swapped the world (lock held): its cameras get publishers, its robot a description."""
        for cam in self.server.cameras:
            self._camera(cam.name)
        return self._robot_state(world)

    def publish_static(self) -> None:
        """Publish the (new) world's /robot_description and /tf_static (lock held)."""
        self._publish_static_tf()

    def _on_pause(self, request: Any, response: Any) -> Any:
        self.server.pause(bool(request.data))
        response.success = True
        response.message = "paused" if request.data else "running"
        return response

    def _on_step(self, request: Any, response: Any) -> Any:
        done, now = self.server.step()
        if now is None:
            response.success = False
            response.message = "not paused: call the pause service with data=true first"
            return response
        response.success = done
        # The exact stamp of the period-end observation, so clients can wait for that message.
        response.message = f"stamp {now // NS}.{now % NS:09d}" if done else "step did not complete"
        return response

    # ---------------------------------------------------------------------------------------- output

    def heartbeat_publishers(self) -> int:
        """How many publishers the policy heartbeat topic has (lockstep asks when the policy is silent)."""
        return self.count_publishers(self.server.heartbeat_topic)

    def publish(self, out: StepOutput) -> None:
        """Publish joint states and /clock, /tf and the outcome of one physics step."""
        stamp = conv.time_msg(out.stamp_ns)
        if out.joint_state is not None:
            self._joint_pub.publish(conv.joint_state_msg(stamp, out.joint_names, *out.joint_state))
            if self._clock_pub is not None:
                self._clock_pub.publish(conv.clock_msg(stamp))
        if out.link_qpos is not None:
            robot = out.robot
            transforms = robot.moving_transforms(out.link_qpos, stamp) if robot is not None else []
            for cam, pos, quat in out.dynamic_cameras:
                mount, _ = camera_transforms(self.interface, cam.name, cam.frame_id, (pos, quat), stamp)
                transforms.append(mount)
            if transforms:
                self._tf_pub.publish(conv.tf_message(transforms))
        if out.controller_state is not None:
            self._controller_servers.publish_state(out.controller_state, stamp)
        if out.outcome is not None:
            self._publish_outcome(out.outcome, out.episode, stamp)

    def _publish_outcome(self, outcome: Any, episode: tuple[int, int], stamp: Time) -> None:
        server = self.server
        seed, start_ns = episode
        msg = conv.episode_outcome_msg(
            stamp=stamp,
            episode_index=server.episodes_reported,
            policy_id=self.config.policy_id,
            world_id=server.world.world_id,
            variation_seed=seed,
            world_hash=server.world.world_hash,
            success=outcome.success,
            failure_reason=outcome.reason,
            duration_s=(stamp.sec * NS + stamp.nanosec - start_ns) / NS,
            metrics=outcome.metrics,
        )
        server.episodes_reported += 1
        self._outcome_pub.publish(msg)
        self.get_logger().info(
            f"episode {msg.episode_index} (seed {msg.variation_seed}): "
            f"{'success' if msg.success else msg.failure_reason} after "
            f"{msg.duration.sec + msg.duration.nanosec / 1e9:.3f} s"
        )

    # ------------------------------------------------------------------------------------- rendering

    def _open_renderers(self, model: Any, payload: Any) -> dict[str, Any]:
        """A :class:`CameraFrames` per camera (the job's, or the served ones at start), renderers made now."""
        cameras: Sequence[CameraSpec] = payload[1] if payload is not None else self.server.cameras
        frames: dict[str, Any] = {}
        try:
            for cam in cameras:
                frames[cam.name] = CameraFrames(
                    model, cam.mjcf_camera, cam.camera, cam.profile, sensors=cam.sensors
                )
                frames[cam.name].prepare()
        except BaseException:
            _close_renderers(frames)
            raise
        return frames

    def _draw(self, frames: dict[str, Any], data: Any, job: RenderJob) -> int:
        """Render colour and aligned depth of each due camera and publish them with the job's stamp."""
        due, cameras, seed, since_start_ns = job.payload
        stamp = conv.time_msg(job.stamp)
        for index in due:
            cam = cameras[index]
            frame = frames[cam.name].render(data, episode=(seed, round(since_start_ns * cam.rate_hz / NS)))
            self._publish_frame(cam, frame.rgb, depth_to_uint16_mm(frame.depth), stamp)
        return len(due)

    def _publish_frame(self, cam: CameraSpec, rgb: Any, depth_mm: Any, stamp: Time) -> None:
        frame = camera_frame(rgb, depth_mm, cam.k, stamp, cam.frame_id, cam.camera.distortion)
        self._camera(cam.name).publish(frame)
        self._last_frames[cam.name] = frame

    def resend_frames(self) -> None:
        """Re-send each camera's last frame, as published (same stamp); lockstep's pending observation."""
        frames = [(cam.name, self._last_frames.get(cam.name)) for cam in self.server.cameras]
        for name, frame in frames:
            if frame is not None:
                self._camera(name).publish(frame)

    # -------------------------------------------------------------------------------------- shutdown

    def destroy_node(self) -> None:
        """Stop and join the physics and render threads, log the frame counts, then destroy the node."""
        self.threads.stop(timeout_s=20.0)  # a frame under load can take seconds
        render = self.threads.render
        if render is not None and render.frames_published:
            exit_logger(self).info(
                f"camera frames: {render.frames_published} published, {render.frames_dropped} dropped, "
                f"{1e3 * render.render_seconds / render.frames_published:.1f} ms per frame (render + publish)"
            )
        super().destroy_node()


def _close_renderers(renderers: dict[Any, Any]) -> None:
    for r in renderers.values():
        r.close()


def main(args: Sequence[str] | None = None) -> int:
    """Run the sim node until interrupted; returns the process exit code (1 on a configuration error)."""
    use_large_data_transport()  # read by Fast DDS when the participant is created, so before init
    return run_node(
        SimNode,
        args,
        "sim_node",
        errors=(SimNodeError, ValueError, RuntimeError),
        spin=spin_serving_goals,
        help_text=lambda: node_help("sim_node", PARAMS, vars(SimNodeConfig())),
        quiet_sigint=True,
    )


if __name__ == "__main__":
    sys.exit(main())
