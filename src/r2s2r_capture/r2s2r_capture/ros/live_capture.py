"""The capture phases run live over DDS: against a real cell, the emulated hardware node or the sim node.

:class:`RosCellIO` is the ROS implementation of :class:`~r2s2r_capture.procedures.phases.CellIO`, and
:func:`capture_live` runs :func:`~r2s2r_capture.procedures.phases.record_phases` on it into a bag that
``r2s2r real2sim`` reads like the in-process one (same topics, same phase markers):

* the driver topics of the interface profile (``/joint_states``, colour, aligned depth, camera info) are
  subscribed raw and written as they came off the wire; joint states all the time, camera frames only when
  a phase takes one (the first frame stamped after the board was placed, so a view never shows a board on
  its way);
* the arm is commanded through the controller the profile names (``command: forward``: the forward
  position controller's topic; ``command: trajectory``: one-point trajectories on the trajectory
  controller's ``joint_trajectory`` topic, as a streaming client does); the bag's ``arm_command`` holds the
  set-points sent, whichever controller took them, stamped when sent;
* the excitation is planned and checked inside a safety envelope before anything moves and watched by the
  stop-and-hold monitor while it runs (:mod:`r2s2r_capture.sysid`);
* the board is moved by a person (guided prompts on a terminal: [Enter] accept, r redo) or, on the emulated
  hardware started with ``capture_board:=...``, by its EMULATED-ONLY stand-in parameter
  ``capture_board_pose`` (:mod:`r2s2r_sim.ros.capture_board`).

Log times are the wall clock when a message was written (receipt for the driver topics), as ``ros2 bag
record`` writes them; header stamps are the drivers'.  Ctrl-C holds the arm where it was last measured and
closes the bag, which stays valid.
"""

from __future__ import annotations

import json
import shutil
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import rclpy
from builtin_interfaces.msg import Duration
from r2s2r_sim.interface import CommandPath, Interface, load_interface
from r2s2r_sim.ros.dds import use_large_data_transport
from r2s2r_sim.ros.interrupts import honour_sigint
from r2s2r_sim.ros.qos import interface_class, qos_profile
from r2s2r_sim.world.kinematics import KinematicArm
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from rclpy.serialization import deserialize_message
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import CameraInfo, JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from transforms3d.quaternions import quat2mat

from r2s2r_capture.bags.reader import BagReader
from r2s2r_capture.bags.writer import BagWriter
from r2s2r_capture.calibration.charuco import board_pose_in_plane_geom
from r2s2r_capture.errors import BagError, CaptureError, refuse_existing
from r2s2r_capture.procedures.capture_config import (
    PHASE_TOPIC,
    CaptureConfig,
    CaptureMessages,
    CaptureSummary,
)
from r2s2r_capture.procedures.emulated_board import BOARD_PARKED
from r2s2r_capture.procedures.hand_eye_phase import tool_site
from r2s2r_capture.procedures.phases import BoardFrame, ExcitationStopped, record_phases
from r2s2r_capture.sysid.envelope import ArmTemplate, SafetyEnvelope
from r2s2r_capture.sysid.excitation_monitor import ExcitationMonitor

__all__ = ["BOARD_STAND_IN_NODE", "LiveOptions", "RosCellIO", "capture_live", "check_world_phases"]

BOARD_STAND_IN_NODE = "/emulated_hardware"
_STAND_IN_PARAM = "capture_board_pose"
_NS = 1_000_000_000
_STARTUP_S = 60.0  # for the first joint state and camera info (a driver starting beside us)
_FRAME_S = 10.0  # for a camera frame stamped after a request
_SERVICE_S = 5.0  # for the board stand-in's parameter services
_AFTER_PLACE_S = 0.05  # a frame stamped this long after the board moved shows it where it was put
_KEEP_FRAMES = 8  # recent camera messages kept per topic to pair colour, depth and info by stamp


class LiveOptions:
    """How a live capture meets its operator.

    Args:
        yes: run unattended (no prompts); refused when a person would be needed.
        prompt: reads one answer (``input``); None: no terminal, so no person to ask.
        say: where progress lines go.
    """

    def __init__(
        self, *, yes: bool, prompt: Callable[[str], str] | None, say: Callable[[str], None] = print
    ) -> None:
        self.yes, self.prompt, self.say = yes, prompt, say

    def ask(self, text: str) -> str:
        """The person's answer (lower-case, stripped); '' when unattended."""
        if self.yes or self.prompt is None:
            return ""
        return self.prompt(text).strip().lower()


def _stamp_ns(data: bytes) -> int:
    """The header stamp (ns) of a serialized message whose first field is a ``std_msgs/Header``."""
    little = data[1] == 1  # CDR encapsulation: 0x0001 little-endian, 0x0000 big-endian
    sec, nanosec = struct.unpack_from("<iI" if little else ">iI", data, 4)
    return sec * _NS + nanosec


class RosCellIO:
    """The capture phases' cell I/O over DDS; see the module docstring.

    Args:
        node: this client's node (spun by the caller's executor on another thread).
        iface: the interface profile (topic names, QoS, command path).
        camera: ROS camera name.
        world: the template world (joint names and ranges of the arm).
        msgs: the open bag's topics.
        options: prompts and progress.
    """

    def __init__(
        self,
        node: Node,
        iface: Interface,
        camera: str,
        world: SimWorld,
        msgs: CaptureMessages,
        options: LiveOptions,
    ) -> None:
        self.node, self.iface, self.msgs, self.options = node, iface, msgs, options
        self.model, self._world = world.model, world
        self.arm_joint_names = tuple(world.arm_joint_names)
        self.camera_period_s = 1.0 / 30.0
        self._lock = threading.Lock()
        self._state: tuple[float, dict[str, tuple[float, float]]] | None = None
        self._monitor: ExcitationMonitor | None = None
        self._frames: dict[str, deque[tuple[int, bytes]]] = {}
        self._info: CameraInfo | None = None
        self._fresh_after_ns = 0
        self._last_command: np.ndarray | None = None
        self._recording = True
        self._topics = {}
        self._trajectory = iface.command is CommandPath.TRAJECTORY
        # The trajectory controller's state is written as it comes, like the joint states: its reference,
        # on the driver's clock, is what identification reads.
        recorded = ("joint_states", "controller_state") if self._trajectory else ("joint_states",)
        for key in (*recorded, "color_image", "depth_image", "color_info"):
            spec = iface.topic_spec(key)
            name = iface.topic(key, camera if spec.per_camera else None)
            self._topics[key] = name
            self._frames[key] = deque(maxlen=_KEEP_FRAMES)
            node.create_subscription(
                interface_class(spec.type),
                name,
                lambda data, key=key: self._on_message(key, data),
                qos_profile(spec.subscription_qos),
                raw=True,
            )
        key = "joint_trajectory" if self._trajectory else "arm_command"
        spec = iface.topic_spec(key)
        self._command_topic = iface.topic(key)
        self._command_pub = node.create_publisher(
            interface_class(spec.type), self._command_topic, qos_profile(spec.qos)
        )
        self._stand_in: AsyncParameterClient | None = None

    # ----------------------------------------------------------------------------------- subscriptions

    def _on_message(self, key: str, data: bytes) -> None:
        now = time.time_ns()
        if key == "controller_state":
            with self._lock:
                if self._recording:
                    self.msgs.raw(key, now, data)
            return
        if key == "joint_states":
            msg = deserialize_message(data, JointState)
            velocity = _padded(msg.velocity, msg.name)
            state = {n: (p, v) for n, p, v in zip(msg.name, msg.position, velocity, strict=False)}
            stamp_s = _stamp_ns(data) / _NS
            with self._lock:
                if self._recording:
                    self.msgs.raw(key, now, data)
                self._state = (stamp_s, state)
                monitor = self._monitor
            if monitor is not None and all(n in state for n in self.arm_joint_names):
                q = np.array([state[n][0] for n in self.arm_joint_names])
                qd = np.array([state[n][1] for n in self.arm_joint_names])
                monitor.joint_state(stamp_s, q, qd)
            return
        stamp = _stamp_ns(data)
        with self._lock:
            frames = self._frames[key]
            if key == "color_image" and frames and stamp > frames[-1][0]:
                self.camera_period_s = (stamp - frames[-1][0]) / _NS
            frames.append((stamp, data))
            if key == "color_info" and self._info is None:
                self._info = deserialize_message(data, CameraInfo)

    def stop_recording(self) -> None:
        """Write nothing more (the bag is about to close; the subscriptions may still deliver)."""
        with self._lock:
            self._recording = False

    def wait_ready(self) -> None:
        """Wait for the first joint state with every arm joint and the first camera info.

        Raises:
            CaptureError: naming the topic that stayed silent for the timeout.
        """
        _wait(lambda: self._state is not None, _STARTUP_S, f"a joint state on {self._topics['joint_states']}")
        missing = [n for n in self.arm_joint_names if n not in self._state[1]]  # type: ignore[index]
        if missing:
            raise CaptureError(
                f"{self._topics['joint_states']}: no position for arm joints {missing} of the template world"
            )
        _wait(lambda: self._info is not None, _STARTUP_S, f"a camera info on {self._topics['color_info']}")

    # -------------------------------------------------------------------------------------- CellIO

    def now_s(self) -> float:
        """The wall clock (s): the one the drivers stamp their joint states on."""
        return time.time()

    def camera_model(self) -> tuple[np.ndarray, tuple[int, int]]:
        """The camera info's ``K`` and size (the driver's nominal intrinsics)."""
        info = self._info
        if info is None:
            raise CaptureError(f"no camera info on {self._topics['color_info']} yet")
        return np.asarray(info.k, dtype=np.float64).reshape(3, 3), (int(info.width), int(info.height))

    def marker(self, phase: str, event: str, **extra: Any) -> None:
        """A phase marker at the wall clock."""
        with self._lock:
            self.msgs.phase(time.time_ns(), phase, event, **extra)

    def arm_positions(self) -> np.ndarray:
        """The last measured positions of the arm joints."""
        with self._lock:
            state = self._state
        if state is None:
            raise CaptureError(f"no joint state on {self._topics['joint_states']} yet")
        return np.array([state[1][n][0] for n in self.arm_joint_names])

    def hold(self, seconds: float) -> None:
        """Wait while the controller holds the last command (joint states are recorded meanwhile)."""
        time.sleep(max(0.0, seconds))

    def stream(self, commands: np.ndarray, rate_hz: float, monitor: ExcitationMonitor | None = None) -> None:
        """Send ``commands`` at ``rate_hz`` (wall clock); stop and hold if ``monitor`` says so.

        Forward controller: one command per tick.  Trajectory controller: the whole stretch as one
        trajectory (positions and velocities at every tick), which the controller runs in its own time;
        streaming one-point trajectories instead would make it interpolate a rest-to-rest segment per tick,
        half again as fast as the plan.  Either way each tick's set-point is written to the bag when due.
        """
        q = np.asarray(commands, dtype=np.float64)
        if not len(q):
            return
        with self._lock:
            self._monitor = monitor
        period = 1.0 / rate_hz
        whole = self._trajectory and len(q) > 1
        if whole:
            self._publish_trajectory(q, period)
        start = time.monotonic()
        try:
            for k, target in enumerate(q):
                delay = start + (k + whole) * period - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                if monitor is not None:
                    verdict = monitor.check(time.time(), target)
                    if verdict.stop:
                        self.send(verdict.hold, period)
                        raise ExcitationStopped(
                            f"excitation stopped ({verdict.reason.value if verdict.reason else 'stop'}): "
                            f"{verdict.detail}; the arm holds where it was last measured"
                        )
                if whole:
                    self._record_command(target)
                else:
                    self.send(target, period)
        finally:
            with self._lock:
                self._monitor = None

    def _publish_trajectory(self, q: np.ndarray, period: float) -> None:
        """``q`` as one trajectory: a point per tick from one tick after receipt, with the velocities."""
        qd = np.gradient(q, period, axis=0)
        qd[-1] = 0.0
        msg = JointTrajectory()  # header stamp zero: the controller starts it on receipt
        msg.joint_names = list(self.arm_joint_names)
        msg.points = [
            JointTrajectoryPoint(
                positions=[float(v) for v in q[k]],
                velocities=[float(v) for v in qd[k]],
                time_from_start=_duration((k + 1) * period),
            )
            for k in range(len(q))
        ]
        with self._lock:
            self._command_pub.publish(msg)

    def _record_command(self, q: np.ndarray) -> None:
        with self._lock:
            self.msgs.array("arm_command", time.time_ns(), np.asarray(q, dtype=np.float64))
            self._last_command = np.asarray(q, dtype=np.float64)

    def send(self, q: np.ndarray, period: float) -> None:
        """One set-point through the profile's controller, written to the bag's ``arm_command``."""
        values = [float(v) for v in q]
        if self._trajectory:
            msg = JointTrajectory()  # header stamp zero: the controller starts it on receipt
            msg.joint_names = list(self.arm_joint_names)
            msg.points = [JointTrajectoryPoint(positions=values, time_from_start=_duration(period))]
        else:
            msg = Float64MultiArray(data=values)
        with self._lock:
            self._command_pub.publish(msg)
        self._record_command(np.asarray(values))

    def hold_here(self) -> None:
        """Command the arm to stay where it was last measured (Ctrl-C, a fault)."""
        if self._state is not None:
            self.send(self.arm_positions(), 0.1)

    def place_board(self, T: np.ndarray | None, *, frame: BoardFrame, what: str) -> None:
        """The stand-in puts the board there, or the person is asked to; frames after this show it."""
        if self._stand_in is None:
            self.options.ask(f"board: {what}; [Enter] when it is there ")
        else:
            if T is None:
                geom, frame = np.eye(4), "world"
                geom[:3, 3] = BOARD_PARKED
            else:  # on the flange T is the plane's pose already
                geom = T if frame == "flange" else T @ np.linalg.inv(board_pose_in_plane_geom(self._board))
            value = json.dumps({"frame": frame, "pose": geom.tolist()})
            self._set_stand_in(value)
        self._fresh_after_ns = time.time_ns() + int(_AFTER_PLACE_S * _NS)

    def nominal_camera(self) -> np.ndarray:
        """The camera's optical frame where the template world has it."""
        pos, quat = self._world.camera_pose(self._world.config.cameras[0].name)
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = quat2mat(quat), pos
        return T

    def tool_kinematics(self) -> KinematicArm:
        """The template arm's kinematics to its tool site."""
        return KinematicArm(self.model, self.arm_joint_names, tool_site(self._world))

    def frame(self, depth_too: bool) -> None:
        """The first frame stamped from now on, and after the board was placed; a person may redo it.

        A frame buffered before the call may show the arm still on its way (the hand-eye poses).
        """
        self._fresh_after_ns = max(self._fresh_after_ns, time.time_ns())
        while True:
            taken = self._take_frame(depth_too)
            answer = "" if self._stand_in is not None else self.options.ask("[Enter] accept, r redo ")
            if answer != "r":
                break
            self._fresh_after_ns = time.time_ns()
        with self._lock:
            now = time.time_ns()
            for key, data in taken:
                self.msgs.raw(key, now, data)

    def _take_frame(self, depth_too: bool) -> list[tuple[str, bytes]]:
        keys = ["color_info", "color_image"] + (["depth_image"] if depth_too else [])
        after = self._fresh_after_ns
        found: list[tuple[str, bytes]] = []

        def complete() -> bool:
            with self._lock:
                colour = [s for s, _ in self._frames["color_image"] if s >= after]
                for stamp in colour:
                    match = [next((d for s, d in self._frames[k] if s == stamp), None) for k in keys]
                    if all(m is not None for m in match):
                        found[:] = list(zip(keys, match, strict=True))  # type: ignore[arg-type]
                        return True
            return False

        what = " and ".join(self._topics[k] for k in keys)
        _wait(complete, _FRAME_S, f"a frame on {what} stamped after {after / _NS:.3f} s")
        self._fresh_after_ns = max(self._fresh_after_ns, _stamp_ns(found[0][1]) + 1)
        return found

    # ------------------------------------------------------------------------------ board stand-in

    def use_board(self, board: Any) -> None:
        """The board the stand-in moves (its plane body's offset from the OpenCV board frame)."""
        self._board = board

    def find_stand_in(self) -> None:
        """Use the emulated hardware's board stand-in if this cell has one (a real cell has not).

        Called once the driver publishes: its node's parameter services are up by then.
        """
        client = AsyncParameterClient(self.node, BOARD_STAND_IN_NODE)
        if not client.wait_for_services(timeout_sec=_SERVICE_S):
            return
        names = _result(client.list_parameters([_STAND_IN_PARAM], 1), "list parameters").result.names
        self._stand_in = client if _STAND_IN_PARAM in names else None

    def _set_stand_in(self, value: str) -> None:
        assert self._stand_in is not None
        future = self._stand_in.set_parameters([Parameter(_STAND_IN_PARAM, value=value)])
        result = _result(future, f"{BOARD_STAND_IN_NODE} {_STAND_IN_PARAM}").results[0]
        if not result.successful:
            raise CaptureError(f"{BOARD_STAND_IN_NODE} refused {_STAND_IN_PARAM}: {result.reason}")

    @property
    def has_stand_in(self) -> bool:
        """Whether the emulated board stand-in moves the board (no person needed)."""
        return self._stand_in is not None


def _duration(seconds: float) -> Duration:
    sec = int(seconds)
    return Duration(sec=sec, nanosec=round((seconds - sec) * 1e9))


def _padded(values: Any, names: Any) -> list[float]:
    return list(values) if len(values) == len(names) else [0.0] * len(names)


def _wait(done: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll ``done`` until true; CaptureError naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise CaptureError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.005)


def _result(future: Any, what: str) -> Any:
    _wait(future.done, _SERVICE_S, what)
    return future.result()


def capture_live(
    output: str | Path,
    *,
    world: str | Path = "tabletop-pick-v1",
    config: CaptureConfig | None = None,
    envelope: SafetyEnvelope | None = None,
    options: LiveOptions | None = None,
) -> CaptureSummary:
    """Run the capture phases over DDS against whatever serves the interface; write them as a bag.

    Args:
        output: bag folder to create (must not exist).
        world: the template world (the arm's joints and ranges, the excitation's safety check).
        config: what to record; its ``interface`` picks the topics and the command path.
        envelope: the excitation's safety envelope (default :class:`SafetyEnvelope`).
        options: prompts and progress (default: unattended).

    Raises:
        CaptureError: the output exists, a topic stays silent, nobody can move the board, or the
            excitation was stopped.
        EnvelopeViolation: the excitation plan leaves the envelope (nothing moved).
        KeyboardInterrupt: Ctrl-C; the arm holds and the bag is closed before it propagates.
    """
    honour_sigint()  # Ctrl-C must reach us even when started from a background job
    cfg = config or CaptureConfig()
    opts = options or LiveOptions(yes=True, prompt=None)
    out = refuse_existing(output, CaptureError)
    iface = load_interface(cfg.interface)
    template_world = SimWorld(world_path(world))
    template = ArmTemplate.from_world(template_world)
    camera = template_world.config.cameras[0].name
    use_large_data_transport()
    context = rclpy.Context()
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    node = Node("r2s2r_capture", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, name="capture-executor", daemon=True)
    spinner.start()
    try:
        with BagWriter(out) as bag:
            msgs = CaptureMessages(bag, camera, cfg.interface)
            io = RosCellIO(node, iface, camera, template_world, msgs, opts)
            try:
                io.use_board(cfg.board)
                io.wait_ready()
                io.find_stand_in()
                _check_operator(io, opts)
                check_world_phases(template_world, cfg, opts)
                opts.ask(
                    "the board phases come first, then the arm moves through the excitation: [Enter] start "
                )
                record_phases(io, cfg, opts.say, envelope=envelope or SafetyEnvelope(), template=template)
            except (KeyboardInterrupt, ExcitationStopped):
                io.hold_here()
                raise
            finally:
                io.stop_recording()
            counts = dict(msgs.counts)
    except Exception:
        if not _has_phases(out):
            shutil.rmtree(out, ignore_errors=True)  # refused before the first phase: nothing to keep
        raise
    finally:
        executor.shutdown(timeout_sec=2.0)
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        spinner.join(timeout=5.0)
    return CaptureSummary(bag=out, counts=counts, truth={})


def check_world_phases(world: SimWorld, cfg: CaptureConfig, opts: LiveOptions) -> None:
    """Before anything moves: the world's own phase that is not run live yet, and what it means for real2sim.

    Raises:
        CaptureError: a drawer world, whose joint real2sim measures from the articulation phase only.
    """
    task = world.config.task
    kind = None if task is None else task.type.value
    if kind == "drawer":
        raise CaptureError(
            f"world {world.world_id!r}: a drawer world's articulation phase runs in-process only "
            "(`r2s2r capture --emulated`), and real2sim measures the drawer's joint from it"
        )
    if kind == "push" and cfg.slide is not None:
        opts.say("slide: not run live (in-process only); real2sim keeps the template's sliding friction")


def _has_phases(bag: Path) -> bool:
    """Whether the bag at ``bag`` got as far as a phase marker (it is worth keeping)."""
    try:
        with BagReader(bag) as reader:
            return any(True for _ in reader.messages([PHASE_TOPIC]))
    except BagError:
        return False


def _check_operator(io: RosCellIO, opts: LiveOptions) -> None:
    """Refuse before anything moves when the board needs a person and none can be asked."""
    if io.has_stand_in:
        opts.say(f"board: moved by the EMULATED-ONLY stand-in of {BOARD_STAND_IN_NODE} ({_STAND_IN_PARAM})")
        return
    if opts.yes or opts.prompt is None:
        raise CaptureError(
            "nobody to move the board: no board stand-in answers on "
            f"{BOARD_STAND_IN_NODE} ({_STAND_IN_PARAM}), and "
            + ("--yes runs unattended" if opts.yes else "stdin is not a terminal")
            + "; run it in a terminal without --yes and move the board when asked"
        )


def main_prompt() -> Callable[[str], str] | None:
    """``input`` when stdin is a terminal, else None (no person to ask)."""
    return input if sys.stdin.isatty() else None
