"""emulated_hardware_node: a STAND-IN for a real arm's ros2_control driver plus a realsense2_camera driver.

Not a robot.  It serves an :class:`~r2s2r_sim.hardware.emulated_arm.EmulatedArm` (a separate MuJoCo instance
of the world with a hardware profile applied) on exactly the driver topics of ``config/interface.yaml``:
``/joint_states``, the camera's colour and aligned-depth images and camera infos (``D`` = the profile's
plumb_bob coefficients), ``/robot_description``, ``/tf`` and ``/tf_static`` (every robot link and the
camera's calibrated tree, as robot_state_publisher and realsense2_camera publish them; see
:mod:`r2s2r_sim.ros.robot_state`), and it takes the same arm and gripper commands, and serves the same
trajectory and gripper controllers as the sim node (:mod:`r2s2r_sim.ros.controller_io`).  It runs on
WALL-CLOCK time: no ``/clock``, ``use_sim_time`` must be false, and every stamp
is the system time at which the state was sampled.

Threads (the serving core of :mod:`r2s2r_sim.serving.loop`): physics (steps paced to the wall clock, releases
commands after the profile's latency, publishes joint states and /tf), render (renders the camera at the
profile's rate with lens distortion; a frame that finds the renderer busy replaces the pending one, and the
dropped frame is counted) and the executor.

Stand-in services, which a real robot does not have (a real-mode evaluator hook may call them):

* ``/emulated_hardware/reset_episode`` (``r2s2r_msgs/srv/ResetEpisode``): the operator's reset — arm home,
  cube placed for the seed.  ``world_hash`` is the base world's hash (the task's identity).
* ``/emulated_hardware/judge`` (``std_srvs/srv/Trigger``): a stand-in for a human judge — ``success`` and a
  JSON ``message`` with the reason and the task metrics of the current state.

STAND-IN GROUND TRUTH, which real hardware cannot give, only with ``ground_truth: true`` (default false, so
the node's topics stay exactly the drivers'): ``/emulated_hardware/ground_truth/cube_pose``
(``geometry_msgs/msg/PoseStamped``, frame ``world``, reliable/volatile) — the task object's true pose at the
instant of each camera frame, stamped like that frame.  Recordings use it to check perception on replay.

STAND-IN PERSON, only with ``capture_board:=<mocap body>`` on the capture variant of a world: the read-write
parameter ``capture_board_pose`` moves the calibration board as the person does on a real cell
(:mod:`r2s2r_sim.ros.capture_board`).
"""

from __future__ import annotations

import r2s2r_sim.ros.interrupts  # noqa: F401 - first: a SIGINT during the imports below must stop us

# isort: split
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mujoco
import rclpy
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from std_srvs.srv import Trigger

from r2s2r_sim.controllers.arm_controllers import STATE_RATE_HZ, ArmControllers
from r2s2r_sim.hardware.emulated_arm import STAND_IN_BANNER, EmulatedArm
from r2s2r_sim.hardware.profile import HardwareProfileError, load_hardware_profile
from r2s2r_sim.hardware.shipped_profiles import DEFAULT_PROFILE, PROFILES, profile_path
from r2s2r_sim.ros import conversions as conv
from r2s2r_sim.ros.capture_board import CaptureBoardStandIn
from r2s2r_sim.ros.controller_io import ControllerServers, spin_serving_goals
from r2s2r_sim.ros.dds import use_large_data_transport
from r2s2r_sim.ros.diagnostics import DiagnosticsPublisher, serving_reading
from r2s2r_sim.ros.driver_io import (
    CameraPublishers,
    arm_command,
    camera_frame,
    gripper_command,
    interface_publisher,
    subscribe_topics,
)
from r2s2r_sim.ros.params import declare_driver_parameters, exit_logger, node_help, run_node
from r2s2r_sim.ros.qos import declare_interface, interface_class
from r2s2r_sim.ros.robot_state import RobotState, static_messages
from r2s2r_sim.serving.loop import (
    NS,
    RenderJob,
    RenderWorker,
    ServingThreads,
    Ticker,
    WallPacer,
    variation_hash,
)
from r2s2r_sim.world.robot_description import RobotDescriptionError

__all__ = ["EmulatedHardwareConfig", "EmulatedHardwareNode", "main"]

_TF_RATE_HZ = 100.0  # robot_state_publisher's usual rate, as the sim node's tf_rate_hz
# The physics thread sleeps until each 2 ms step is due, then waits for the GIL; with Python's default 5 ms
# switch interval, a busy render or executor thread makes each of those waits outlast the step itself.
GIL_SWITCH_S = 0.0005


class EmulatedHardwareError(ValueError):
    """An invalid parameter of the emulated hardware node (names the parameter, value and what is allowed)."""


@dataclass(frozen=True, kw_only=True)
class EmulatedHardwareConfig:
    """The node's parameters (see ``config/emulated_hardware_node.yaml``)."""

    world: str = "tabletop-pick-v1"
    profile: str = ""
    seed: int = 0
    ground_truth: bool = False
    capture_board: str = ""
    compressed_images: bool = False


class EmulatedHardwareNode(Node):
    """The emulated cell behind the real drivers' topics; see the module docstring."""

    def __init__(self, **kwargs: Any) -> None:
        """Read parameters, build the emulated arm, create the interface and start the threads.

        Raises:
            EmulatedHardwareError: an invalid parameter.
            HardwareProfileError, WorldError: the profile or world cannot be loaded.
        """
        super().__init__("emulated_hardware", **kwargs)
        self.get_logger().warning(STAND_IN_BANNER)
        self.config = self._read_parameters()
        cfg = self.config
        path = profile_path(cfg.profile)
        self.profile = load_hardware_profile(path)
        try:
            self.arm = EmulatedArm(cfg.world, self.profile, seed=cfg.seed)
        except ValueError as err:
            if isinstance(err, HardwareProfileError):
                raise
            raise EmulatedHardwareError(f"parameter world: {err}") from None
        self.interface = declare_interface(self)
        self._lock = threading.Lock()
        self.threads = ServingThreads("emu", self.get_logger(), ok=lambda: rclpy.ok(context=self.context))
        cam = self.profile.camera
        self._k = cam.intrinsics.k()
        self._d = cam.distortion.d()
        self._frame_id = self.arm.camera_frame_id

        self._joint_pub = self._pub("joint_states")
        self._tf_pub = self._pub("tf")
        self._tf_static_pub = self._pub("tf_static")
        self._description_pub = self._pub("robot_description")
        try:
            self._robot: RobotState | None = RobotState(self.arm.world, self.interface)
        except RobotDescriptionError as err:
            self.get_logger().warning(f"no /robot_description or link transforms: {err}")
            self._robot = None
        self._camera_pubs = CameraPublishers(self, self.interface, cam.name, compressed=cfg.compressed_images)
        self._publish_static_tf()
        self.capture_board = (
            CaptureBoardStandIn(self, self.arm.world, cam.name, cfg.capture_board, self._lock)
            if cfg.capture_board
            else None
        )
        self._truth_pub = None
        task = self.arm.world.config.task
        if cfg.ground_truth and task is not None:
            model = self.arm.world.model
            self._truth_body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, task.object_body)
            self._truth_pub = self.create_publisher(PoseStamped, "~/ground_truth/cube_pose", 10)
            self.get_logger().warning(
                f"publishing STAND-IN ground truth {self._truth_pub.topic_name} (body {task.object_body!r}); "
                "real hardware has no such topic"
            )
        subs = MutuallyExclusiveCallbackGroup()
        subscribe_topics(
            self, self.interface, (("arm_command", self._on_arm), ("gripper_command", self._on_gripper)), subs
        )
        # joint_trajectory_controller and gripper_action_controller, timed by the wall clock as on the arm.
        self.controllers = ArmControllers.for_world(self.arm.world, lambda: self._now_ns() / NS)
        self._controller_servers = ControllerServers(self, self.interface, self.controllers)
        services = MutuallyExclusiveCallbackGroup()
        reset_type = interface_class(self.interface.service_spec("reset_episode").type)
        self.create_service(reset_type, "~/reset_episode", self._on_reset, callback_group=services)
        self.create_service(Trigger, "~/judge", self._on_judge, callback_group=services)

        self.joint_states_published = 0
        self.physics_time_s = 0.0  # the emulated arm's physics time; follows the wall clock
        self.resets = 0
        self._render = RenderWorker(
            model=self.arm.world.model,
            # A Bullet unit draws in its own process: pybullet holds the GIL for a whole frame.
            open_renderers=lambda model, payload: self.arm.camera_renderer(own_process=True).__enter__(),
            close_renderers=lambda camera: camera.__exit__(None, None, None),
            draw=self._draw,
            log=self.get_logger(),
        )
        try:
            self.threads.start_render(self._render)
            self.threads.start_physics(self._run_physics)
            self._diagnostics = DiagnosticsPublisher(
                self,
                self.interface,
                name="emulated hardware (stand-in)",
                hardware_id=self.profile.name,
                counters=lambda: {
                    "time_s": self.physics_time_s,
                    "frames": self.threads.frames_published,
                    "frames_dropped": self.threads.frames_dropped,
                },
                read=lambda rates: serving_reading(
                    rates,
                    running=self.threads.running,
                    cameras=1,
                    frames_dropped=self.threads.frames_dropped,
                    episodes=self.resets,
                    paced=True,
                    sim_time=False,
                ),
            )
            drv = self.profile.driver
            self.get_logger().warning(
                f"{STAND_IN_BANNER}: world {self.arm.world_id}, profile {self.profile.name!r} ({path}, "
                f"sha256 {self.profile.sha256[:12]}), seed {cfg.seed}; wall-clock time, no /clock; "
                f"joint states {drv.joint_state_rate_hz} Hz, latency {drv.command_latency_s * 1e3:.0f} ms, "
                f"camera {cam.name} {cam.width}x{cam.height} @ {cam.rate_hz} Hz "
                f"(plumb_bob D={self._d.tolist()})"
            )
        except BaseException:
            # Ctrl-C or an error while the render thread opens its GL context: join it before main() unwinds,
            # else it is force-unwound out of MuJoCo's renderer at interpreter exit (SIGSEGV).
            self.threads.stop()
            raise

    # ---------------------------------------------------------------------------------- configuration

    def _read_parameters(self) -> EmulatedHardwareConfig:
        specs = {
            "world": ("Bundled world id or world folder path the emulated cell is built from.", None),
            "profile": (
                f"Hardware profile: a shipped one by name ({', '.join(PROFILES)}) or a YAML path; empty: "
                f"{DEFAULT_PROFILE}.",
                None,
            ),
            "seed": ("Seed of the initial object placement and of the joint-state noise.", (0, 2**62)),
            "ground_truth": (
                "Also publish the STAND-IN ground truth ~/ground_truth/cube_pose at each camera frame "
                "(real hardware has no such topic; for recordings that test perception).",
                None,
            ),
            "capture_board": (
                "EMULATED-ONLY: the mocap board body a capture moves through the capture_board_pose "
                "parameter, the stand-in for the person who moves the board (r2s2r_sim.ros.capture_board); "
                "empty: none.",
                None,
            ),
            "compressed_images": (
                "Also publish each camera's images as image_transport's compressed topics "
                "(<image>/compressed, jpeg; <depth>/compressedDepth, png), encoded only while subscribed.",
                None,
            ),
        }
        values = declare_driver_parameters(
            self,
            vars(EmulatedHardwareConfig()),
            specs,
            error=EmulatedHardwareError,
            wall_clock_why="emulated hardware runs on wall-clock time like a real robot (no /clock)",
            param_error=_param_error,
        )
        return EmulatedHardwareConfig(**values)

    def _pub(self, key: str, camera: str | None = None) -> Any:
        return interface_publisher(self, self.interface, key, camera)

    def _now(self) -> Time:
        return self.get_clock().now().to_msg()

    def _now_ns(self) -> int:
        return int(self.get_clock().now().nanoseconds)

    def _control(self, refresh: bool) -> Any:
        """Step the controllers on the arm's true state (lock held); their state when ``refresh``."""
        controllers = self.controllers
        if refresh or controllers.busy:
            commands = controllers.step(self._now_ns() / NS, *self.arm.world.joint_state())
            if commands.arm is not None:
                self.arm.submit_arm(commands.arm)
            if commands.gripper is not None:
                self.arm.submit_gripper(commands.gripper)
        return controllers.state if refresh else None

    def _publish_static_tf(self) -> None:
        """Publish /robot_description and /tf_static: robot base, fixed links, the camera's tree."""
        camera = (self.profile.camera.name, self._frame_id, True)
        description, tf_static = static_messages(
            self._robot, self.arm.world, self.interface, [camera], self._now()
        )
        if description is not None:
            self._description_pub.publish(description)
        self._tf_static_pub.publish(tf_static)

    # -------------------------------------------------------------------------------------- callbacks

    def _on_arm(self, msg: Any) -> None:
        check = arm_command(msg, self.arm.submit_arm, self._lock)
        if not check.accepted:
            self.get_logger().warning(f"refused arm command: {check.reason}", throttle_duration_sec=1.0)

    def _on_gripper(self, msg: Any) -> None:
        check = gripper_command(msg, self.arm.submit_gripper, self._lock)
        if not check.accepted:
            self.get_logger().warning(f"refused gripper command: {check.reason}", throttle_duration_sec=1.0)

    def _on_reset(self, request: Any, response: Any) -> Any:
        response.world_id = self.arm.world_id
        response.world_hash = self.arm.base_world_hash
        if request.variation_config.strip():
            response.success = False
            response.message = "variation_config is not supported by the emulated hardware; send ''"
            return response
        with self._lock:
            self.arm.reset(int(request.variation_seed))
            self.controllers.reset()
            self.resets += 1
        response.success = True
        response.message = f"emulated hardware reset (stand-in for an operator), profile {self.profile.name}"
        response.variation_hash = variation_hash(self.arm.base_world_hash, "", int(request.variation_seed))
        self.get_logger().info(f"reset: seed {request.variation_seed}")
        return response

    def _on_judge(self, request: Any, response: Any) -> Any:
        del request
        with self._lock:
            outcome = self.arm.judge()
            response.message = self.arm.judge_json()
        response.success = bool(outcome.success)
        return response

    # ---------------------------------------------------------------------------------------- physics

    def _run_physics(self) -> None:
        """Step the arm on the wall clock; publish joint states and /tf, and snapshot camera frames."""
        arm = self.arm
        dt_ns = round(arm.dt * NS)
        js_tick = Ticker(self.profile.driver.joint_state_rate_hz)
        cam_tick = Ticker(self.profile.camera.rate_hz)
        tf_tick = Ticker(_TF_RATE_HZ)
        state_tick = Ticker(STATE_RATE_HZ)
        names = arm.world.joint_names
        steps = 0
        pacer = WallPacer()
        pacer.anchor(0)
        while self.threads.alive():
            lag = pacer.pace((steps + 1) * dt_ns)  # wait until the next step is due
            if lag is not None:
                self.get_logger().warning(
                    f"physics is {lag:.2f} s behind the wall clock; skipping ahead", throttle_duration_sec=5.0
                )
            # Steps that fell due meanwhile are taken at once (the wall clock does not wait for physics).
            due = 1 + int(pacer.behind_s((steps + 1) * dt_ns) * NS) // dt_ns
            with self._lock:
                arm.advance(due)
                if self.capture_board is not None:
                    self.capture_board.follow()  # a board mounted on the flange moves with it
                steps += due
                now = steps * dt_ns
                self.physics_time_s = now / NS
                js = arm.joint_state() if js_tick.due(now) else None
                state = self._control(refresh=state_tick.due(now))
                # The links' true pose (robot_state_publisher would use the reported joint states).
                tf = arm.world.data.qpos.copy() if tf_tick.due(now) else None
                job = (
                    RenderJob.of(None, arm.world.model, arm.world.data, arm.motion_start())
                    if cam_tick.due(now)
                    else None
                )
            stamp = self._now()
            if js is not None:
                self._joint_pub.publish(conv.joint_state_msg(stamp, names, *js))
                self.joint_states_published += 1
            if state is not None:
                self._controller_servers.publish_state(state, stamp)
            if tf is not None and self._robot is not None:
                self._tf_pub.publish(conv.tf_message(self._robot.moving_transforms(tf, stamp)))
            if job is not None:
                self._render.submit(_stamped(job, stamp), drop_when_busy=True)

    # -------------------------------------------------------------------------------------- rendering

    def _draw(self, camera: Any, data: mujoco.MjData, job: RenderJob) -> int:
        """Render the distorted frame (``job.payload``: the exposure's start pose) and publish it."""
        rgb, depth_mm = camera.render(data, motion_from=job.payload)
        if camera.dropped:  # the profile's driver loses this frame
            self._render.count_dropped()
            return 0
        stamp = _shifted(job.stamp, camera.stamp_offset_s)
        # distortion_model is plumb_bob, with the profile's D: the images are distorted
        self._camera_pubs.publish(camera_frame(rgb, depth_mm, self._k, stamp, self._frame_id, self._d))
        if self._truth_pub is not None:
            self._truth_pub.publish(self._truth_msg(data, job.stamp))
        return 1

    def _truth_msg(self, data: mujoco.MjData, stamp: Time) -> PoseStamped:
        """The task object's pose in ``data`` (after ``mj_kinematics``) as stand-in ground truth."""
        msg = PoseStamped()
        msg.header.stamp, msg.header.frame_id = stamp, self.interface.frame("world")
        pos, quat = data.xpos[self._truth_body], data.xquat[self._truth_body]  # quat is w, x, y, z
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in pos)
        o = msg.pose.orientation
        o.w, o.x, o.y, o.z = (float(v) for v in quat)
        return msg

    def destroy_node(self) -> None:
        """Stop and join the physics and render threads, log what it published, then destroy the node."""
        self.threads.stop(timeout_s=20.0)  # a frame under load can take seconds
        exit_logger(self).info(
            f"emulated hardware: {self.joint_states_published} joint states, "
            f"{self.threads.frames_published} camera frames published, {self.threads.frames_dropped} dropped"
        )
        super().destroy_node()


def _param_error(name: str, default: Any, err: Exception) -> EmulatedHardwareError:
    kinds = {int: "an integer in [0, 2**62]", bool: "true or false"}
    allowed = kinds.get(type(default), "a string")
    return EmulatedHardwareError(f"parameter {name}: {err}; allowed: {allowed}")


def _shifted(stamp: Time, offset_s: float) -> Time:
    """``stamp`` moved by ``offset_s`` (the driver's timestamp jitter); ``stamp`` itself when 0."""
    if offset_s == 0.0:
        return stamp
    ns = max(0, stamp.sec * NS + stamp.nanosec + round(offset_s * 1e9))
    return Time(sec=ns // NS, nanosec=ns % NS)


def _stamped(job: RenderJob, stamp: Time) -> RenderJob:
    """``job`` with the wall-clock stamp taken when its state was sampled."""
    return RenderJob(stamp, job.qpos, job.mocap_pos, job.mocap_quat, job.model, job.payload)


def main(args: Sequence[str] | None = None) -> int:
    """Run the emulated hardware until interrupted; 1 on a configuration error."""
    use_large_data_transport()  # the same large shared-memory Fast DDS profile as the sim node
    sys.setswitchinterval(GIL_SWITCH_S)
    return run_node(
        EmulatedHardwareNode,
        args,
        "emulated_hardware",
        spin=spin_serving_goals,
        help_text=lambda: node_help("emulated_hardware_node"),
        quiet_sigint=True,
    )


if __name__ == "__main__":
    sys.exit(main())
