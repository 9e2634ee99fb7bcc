"""The cell an episode runs in: the ``Cell`` protocol and the simulated world's cell; no ROS.

A cell is what a policy meets through the driver topics, reduced to calls: reset it for an episode, read
the joints, submit a command, advance the physics, render the camera, and ask whether the episode is over.
One episode runner (``r2s2r_eval.episodes.runner``) drives every cell; the simulated world (:class:`SimCell`)
and the emulated hardware (:class:`r2s2r_sim.cells.emulated_cell.EmulatedCell`) differ only behind these
calls.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Protocol, Self, runtime_checkable

import numpy as np

from r2s2r_sim.cells.camera_frames import CameraFrames, ImageSize
from r2s2r_sim.closing import Closing
from r2s2r_sim.errors import RenderError
from r2s2r_sim.render.profile import RenderProfile
from r2s2r_sim.render.renderer import camera_intrinsics, depth_to_uint16_mm
from r2s2r_sim.tasks.registry import ObjectPose, Outcome, Task, judge_now
from r2s2r_sim.world.config import CameraConfig
from r2s2r_sim.world.joint_noise import JointReadings
from r2s2r_sim.world.sim_world import CommandCheck, SimWorld

__all__ = ["Cell", "CellBase", "CellError", "Pose", "SimCell", "combine_checks"]

Pose = tuple[np.ndarray, np.ndarray]
"""A position (3,) in metres and a wxyz quaternion (4,), in the world frame."""


class CellError(ValueError):
    """A cell cannot be built for the requested episode (a world without a task or a camera)."""


@runtime_checkable
class Cell(Protocol):
    """A robot cell an episode runs in: a simulated world or an emulated (or real) hardware unit.

    Attributes:
        world: the MuJoCo world behind the cell (for tools that read the scene, e.g. an expert).
        world_id: id of the cell's world.
        world_hash: the hash results rows record for this cell.
        world_dir: the world folder that describes the cell's scene (what a policy may model).
        camera: the camera the policy sees through (its name, frame and depth range).
        camera_k: 3x3 intrinsics of the images :meth:`render` returns (px).
        camera_d: plumb_bob lens distortion ``(k1, k2, p1, p2, k3)`` those images are drawn with.
        camera_rate_hz: the camera's frame rate (Hz).
        dt: physics timestep (s); a control period is a whole number of them.
    """

    world: SimWorld
    world_id: str
    world_hash: str
    world_dir: Path
    camera: CameraConfig
    camera_k: np.ndarray
    camera_d: np.ndarray
    camera_rate_hz: float
    dt: float

    def open(self) -> None:
        """Acquire what rendering needs (a GL context); call on the thread that renders."""

    def close(self) -> None:
        """Release what :meth:`open` acquired; closing twice is harmless."""

    def reset(self, seed: int) -> None:
        """Start an episode from ``seed``: the arm home, the task's initial state, no pending commands."""

    @property
    def time(self) -> float:
        """Time since the episode started (s)."""

    def joint_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Measured positions, velocities and efforts in ``world.joint_names`` order."""

    def camera_pose(self) -> Pose:
        """Pose of the camera's optical frame (REP-103: z forward, x right, y down) in the world."""

    def base_pose(self) -> Pose:
        """Pose of the robot base in the world."""

    def submit(self, arm: np.ndarray, gripper: float) -> CommandCheck:
        """Command arm joint positions (rad or m) and the gripper (command units)."""

    def advance(self, n: int) -> None:
        """Advance the physics by ``n`` timesteps."""

    def render(self, request: ImageSize | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The camera's ``rgb`` (HxWx3 uint8) and aligned ``depth`` (HxW uint16 mm, 0 = no data) now.

        ``request``: the size the consumer reads; a simulated cell draws that, hardware delivers its own
        (``camera_k`` always describes the last frame returned).
        """

    def policy_done(self) -> None:
        """The policy says it has finished, now: the task judges one settle period later (the arm holds)."""

    def outcome(self, *, step_limit: bool) -> Outcome | None:
        """The outcome if the episode is over now, else None.

        The rule is :class:`r2s2r_sim.tasks.registry.EpisodeJudge`.

        Args:
            step_limit: the runner's step limit has been reached (judged now, ``(max_steps)`` appended).
        """

    def metrics(self) -> dict[str, float]:
        """The task's named terms now (for an episode that ended without an outcome)."""


def combine_checks(arm: CommandCheck, gripper: CommandCheck) -> CommandCheck:
    """One check for an arm and a gripper command: accepted when both are; the first reason given."""
    return CommandCheck(
        arm.accepted and gripper.accepted, arm.clamped or gripper.clamped, arm.reason or gripper.reason
    )


class CellBase(Closing):
    """What every cell shares: a context manager over :meth:`open` and :meth:`close`, and the base pose."""

    world: SimWorld

    def open(self) -> None:
        """Acquire what rendering needs; see :meth:`Cell.open`."""
        raise NotImplementedError

    def close(self) -> None:
        """Release it; see :meth:`Cell.close`."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        """Open the cell."""
        self.open()
        return self

    def base_pose(self) -> Pose:
        """See :meth:`Cell.base_pose`."""
        return self.world.base_pose()

    def submit(self, arm: np.ndarray, gripper: float) -> CommandCheck:
        """Set the arm and (if any) gripper commands; they apply after the world's command delay.

        The emulated hardware's driver latency is that delay too (``EmulatedArm``), so every cell
        submits the same way.
        """
        w = self.world
        a = w.set_arm_command(arm)
        g = w.set_gripper_command(gripper) if w.gripper_command_range is not None else a
        return combine_checks(a, g)

    def policy_done(self) -> None:
        """See :meth:`Cell.policy_done`."""
        self.world.policy_done()

    def outcome(self, *, step_limit: bool) -> Outcome | None:
        """The world's verdict (with its time); at the step limit without one, the task judged now.

        Every cell ends an episode by the world's one rule
        (:class:`r2s2r_sim.tasks.registry.EpisodeJudge`): the emulated hardware's world is judged like the
        simulated one, only its physics and sensors differ.
        """
        verdict = self.world.verdict
        if verdict is not None:
            return verdict
        task = self.world.task
        if step_limit and task is not None:
            return dataclasses.replace(judge_now(task, self.world, ended="max_steps"), time_s=self.world.time)
        return None

    def metrics(self) -> dict[str, float]:
        """See :meth:`Cell.metrics`."""
        task = self.world.task
        return {} if task is None else task.metrics(self.world)


class SimCell(CellBase):
    """The simulated world as a cell: a :class:`SimWorld`, its task and an RGB-D renderer.

    Its frames are ideal MuJoCo renders unless the world carries sensor effects (a world varied with the
    ``sensor`` axis): then each episode's noise, exposure and white balance follow the reset seed.

    The episode ends by the world's one rule (the policy's done and a settle period, a success held before
    any done, or the timeout), or at the runner's step limit, as on the emulated hardware.
    """

    def __init__(
        self,
        world: SimWorld,
        *,
        world_dir: Path,
        camera: str | None = None,
        render_profile: str | None = None,
    ) -> None:
        """Wrap ``world`` (built from ``world_dir``); ``camera``: a configured camera name, the first if None.

        ``render_profile``: the world's render profile to draw with; None: the camera's declared one.

        Raises:
            CellError: the world has no task or no camera.
            WorldError: no such camera.
        """
        cfg = world.config
        if world.task is None:
            raise CellError(f"world {cfg.id!r} has no task to evaluate")
        if not cfg.cameras:
            raise CellError(f"world {cfg.id!r} has no camera")
        self.world = world
        self.task: Task = world.task
        self.world_id: str = world.world_id
        self.world_hash: str = world.world_hash
        self.world_dir = Path(world_dir)
        self.camera: CameraConfig = cfg.cameras[0] if camera is None else cfg.camera(camera)
        self.camera_rate_hz: float = float(self.camera.rate_hz)
        self.dt: float = world.timestep
        self._mjcf_camera = world.model.camera(world.camera_id(self.camera.name)).name
        self.camera_k: np.ndarray = camera_intrinsics(
            world.model, self._mjcf_camera, self.camera.width, self.camera.height
        )
        self.camera_d: np.ndarray = np.asarray(self.camera.distortion, dtype=np.float64)
        self._readings = JointReadings(cfg.robot.joint_state_noise)
        self.profile: RenderProfile = cfg.render_profile(self.camera, render_profile)
        self._frames: CameraFrames | None = None
        self._seed = 0

    def open(self) -> None:
        """Prepare the renderers (their GL contexts open on first use, one per drawn size).

        The frames get the world's sensor effects (the ``sensor`` variation axis), if any.
        """
        if self._frames is None:
            self._frames = CameraFrames(
                self.world.model, self._mjcf_camera, self.camera, self.profile, sensors=self.world.sensors
            )
            self._frames.start_episode(self._seed)

    def close(self) -> None:
        """Free the renderers."""
        if self._frames is not None:
            self._frames.close()
        self._frames = None

    @property
    def renders(self) -> int:
        """Frames drawn since the cell opened."""
        return 0 if self._frames is None else self._frames.renders

    def reset(self, seed: int, *, object_pose: ObjectPose | None = None) -> None:
        """See :meth:`Cell.reset`; the camera's sensor noise starts that episode too.

        ``object_pose``: where the task object starts (None: the variation's pose, else drawn from the seed).
        """
        self.world.reset(seed, object_pose=object_pose)
        self._seed = int(seed)
        self._readings.start_episode(self._seed)
        if self._frames is not None:
            self._frames.start_episode(self._seed)

    @property
    def time(self) -> float:
        """Simulation time since the reset (s)."""
        return self.world.time

    def joint_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The joint state as the world's driver reports it (true, plus its declared noise, if any)."""
        pos, vel, eff = self.world.joint_state()
        pos, vel = self._readings.measure(pos, vel)
        return pos, vel, eff

    def camera_pose(self) -> Pose:
        """See :meth:`Cell.camera_pose`."""
        return self.world.camera_pose(self.camera.name)

    def advance(self, n: int) -> None:
        """See :meth:`Cell.advance`."""
        self.world.step(n)

    def render(self, request: ImageSize | None = None) -> tuple[np.ndarray, np.ndarray]:
        """See :meth:`Cell.render`: drawn with the cell's render profile, at ``request``'s size if given.

        Raises:
            RenderError: the cell is not open.
        """
        if self._frames is None:
            raise RenderError("SimCell.render called before open()")
        frame = self._frames.render(self.world.data, request)
        self.camera_k = frame.k
        return frame.rgb, depth_to_uint16_mm(frame.depth)
