"""The episode runner: one loop that drives a policy on any cell (simulated world or emulated hardware).

Observations carry what the driver topics would carry, built from the cell's arrays by the same functions
the policy node's message conversion uses (:mod:`r2s2r_eval.episodes.sensor_arrays`), so a policy sees
identical data in a sweep and through ROS.  No rclpy and no message packages are imported here.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import numpy as np
from r2s2r_sim.cells.sim_cell import Cell, CellError, SimCell
from r2s2r_sim.render.profile import RenderProfile
from r2s2r_sim.variations import Variation, make_world
from r2s2r_sim.world.config import CameraConfig
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import world_path

from r2s2r_eval.episodes.sensor_arrays import NS_PER_S, depth_mm_to_metres, episode_stamp, pose_matrix
from r2s2r_eval.policy import EpisodeInfo, Observation, ObservationKind, Policy

__all__ = [
    "DEFAULT_CONTROL_RATE_HZ",
    "EpisodeResult",
    "EpisodeRunner",
    "RunnerError",
    "control_substeps",
    "sim_cell",
]

DEFAULT_CONTROL_RATE_HZ = 10.0


class RunnerError(ValueError):
    """The runner cannot run the requested episode (bad rate, world without task or camera)."""


@dataclass(frozen=True, kw_only=True)
class EpisodeResult:
    """How one episode ended.

    Attributes:
        world_id: world id.
        world_hash: content hash of the compiled model.
        seed: the cell's reset seed.
        episode_index: index given to the policy.
        success: the task succeeded.
        reason: ``success``, a task's failure (``object_dropped``, what is missing, e.g. ``not_settled``),
            ``timeout`` or ``<missing> (timeout)``, ``<missing> (max_steps)``, or ``policy_error: ...``.
        duration_s: simulated episode length (s).
        wall_s: wall-clock time the episode took (s).
        steps: control steps taken.
        metrics: the task's named terms at the end.
    """

    world_id: str
    world_hash: str
    seed: int
    episode_index: int
    success: bool
    reason: str
    duration_s: float
    wall_s: float
    steps: int
    metrics: dict[str, float] = field(default_factory=dict)


def control_substeps(control_rate_hz: float, timestep: float) -> int:
    """Physics steps per control step.

    Raises:
        RunnerError: the control period is not an integer multiple of the physics timestep.
    """
    if not (math.isfinite(control_rate_hz) and control_rate_hz > 0):
        raise RunnerError(f"control_rate_hz must be > 0, got {control_rate_hz}")
    period = 1.0 / control_rate_hz
    n = round(period / timestep)
    if n < 1 or not math.isclose(n * timestep, period, rel_tol=1e-6, abs_tol=1e-9):
        raise RunnerError(
            f"control period must be an integer multiple of the physics timestep: got {period} s "
            f"(control_rate_hz={control_rate_hz}) and {timestep} s"
        )
    return n


def sim_cell(
    world: str | Path,
    *,
    camera: str | None = None,
    variation: Variation | None = None,
    render_profile: str | None = None,
) -> SimCell:
    """The simulated cell of a world (a bundled id or a folder), with ``variation`` applied if given.

    Raises:
        RunnerError: the world has no task or no camera.
        WorldError: the world folder is invalid or has no such camera.
        VariationError: the variation cannot be applied to the world.
    """
    path = world_path(world)
    built: SimWorld = SimWorld(path) if variation is None else make_world(path, variation)
    try:
        return SimCell(built, world_dir=path, camera=camera, render_profile=render_profile)
    except CellError as err:
        raise RunnerError(str(err)) from None


class EpisodeRunner:
    """Runs episodes of policies on one cell; a context manager that opens and closes the cell.

    Example:
        with EpisodeRunner("tabletop-pick-v1") as runner:
            result = runner.run(policy, seed=3)
        with EpisodeRunner(EmulatedCell("tabletop-pick-v1", profile)) as runner:
            result = runner.run(policy, seed=3)
    """

    def __init__(
        self,
        cell: Cell | str | Path,
        *,
        camera: str | None = None,
        variation: Variation | None = None,
        render_profile: str | None = None,
        policy_images: bool = True,
    ) -> None:
        """Run on ``cell``, or on the simulated cell of a world id or folder (see :func:`sim_cell`).

        ``render_profile``: the world's render profile to draw with (a world given by id or folder only);
        None: the camera's declared one.  ``policy_images``: draw at the size and rate a policy's
        ``image_request()`` asks for (False: the camera's, as the sim node publishes them).

        Raises:
            RunnerError: the world has no task or no camera; ``camera``/``variation``/``render_profile``
                given with a cell.
            WorldError: the world folder is invalid, or no such render profile.
            VariationError: the variation cannot be applied to the world.
        """
        if isinstance(cell, str | Path):
            self.cell: Cell = sim_cell(
                cell, camera=camera, variation=variation, render_profile=render_profile
            )
        elif camera is not None or variation is not None or render_profile is not None:
            raise RunnerError(
                "EpisodeRunner: camera, variation and render_profile apply to a world, not to a built cell"
            )
        else:
            self.cell = cell
        self.policy_images = policy_images
        self._open = False

    @property
    def world(self) -> SimWorld:
        """The cell's MuJoCo world."""
        return self.cell.world

    @property
    def camera(self) -> CameraConfig:
        """The camera the policy sees through."""
        return self.cell.camera

    def __enter__(self) -> EpisodeRunner:
        """Open the cell (its renderer)."""
        self.cell.open()
        self._open = True
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the cell."""
        self.cell.close()
        self._open = False

    @property
    def profile(self) -> RenderProfile | None:
        """The render profile a simulated cell draws with (None for hardware, which has its own camera)."""
        return getattr(self.cell, "profile", None)

    @property
    def renders(self) -> int:
        """Frames drawn since the runner opened."""
        return int(getattr(self.cell, "renders", 0))

    def episode_info(self, seed: int, control_period: float, episode_index: int = 0) -> EpisodeInfo:
        """The :class:`EpisodeInfo` a policy gets for ``seed`` on this cell."""
        w = self.cell.world
        gripper = w.config.robot.gripper
        return EpisodeInfo(
            episode_index=episode_index,
            seed=seed,
            world_id=self.cell.world_id,
            world_dir=self.cell.world_dir,
            arm_joint_names=w.arm_joint_names,
            gripper_command_range=(0.0, 0.0) if gripper is None else gripper.command_range,
            control_period=control_period,
        )

    def observation(self, images: tuple[np.ndarray, np.ndarray] | None) -> Observation:
        """What the driver topics carry now: joints, ``images`` (from ``render``), ``K``, the TF poses."""
        cell = self.cell
        pos, vel, _ = cell.joint_state()
        rgb, depth_mm = images if images is not None else (None, None)
        return Observation(
            stamp=episode_stamp(round(cell.time * NS_PER_S)),
            joint_names=tuple(cell.world.joint_names),
            joint_positions=np.asarray(pos, dtype=np.float64).copy(),
            joint_velocities=np.asarray(vel, dtype=np.float64).copy(),
            rgb=None if rgb is None else np.ascontiguousarray(rgb).copy(),
            depth=None if depth_mm is None else depth_mm_to_metres(depth_mm),
            camera_k=np.asarray(cell.camera_k, dtype=np.float64).reshape(3, 3).copy(),
            camera_d=np.asarray(cell.camera_d, dtype=np.float64).copy(),
            camera_pose=pose_matrix(*cell.camera_pose()),
            base_pose=pose_matrix(*cell.base_pose()),
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
        """Run one episode of ``policy`` from the cell reset with ``seed``.

        Every cell ends an episode by one rule (:class:`r2s2r_sim.tasks.registry.EpisodeJudge`): once the
        policy says ``done`` after an action, it is no longer called, the arm holds that last command for the
        task's settle period and the task judges then; before a done, a success held for that period ends
        it; otherwise the task's timeout judges (or the step limit, judged then).  A policy error or a refused
        command ends it as a failure (``policy_error: ...``).

        Args:
            policy: the policy; ``reset`` is called first.
            seed: the cell's reset seed (also seeds the policy's stream through ``EpisodeInfo``).
            episode_index: passed to the policy.
            control_rate_hz: policy call rate; the policy's own ``control_rate_hz()`` or 10 Hz when None.
            camera_rate_hz: image rate; when None, the policy's requested rate (see ``policy_images``),
                else the cell camera's rate.  The latest frame is repeated between frames, as from a real
                camera.  A frame is always taken at t = 0.
            max_steps: control steps before the episode ends at the step limit; None: no limit.

        Raises:
            RunnerError: the control period is not a multiple of the physics timestep, or the cell is
                not open (use the runner as a context manager).
        """
        if not self._open:
            raise RunnerError("EpisodeRunner.run called outside its with-block (the cell is closed)")
        cell = self.cell
        rate = control_rate_hz if control_rate_hz is not None else policy.control_rate_hz()
        rate = DEFAULT_CONTROL_RATE_HZ if rate is None else rate
        substeps = control_substeps(rate, cell.dt)
        request = policy.image_request() if self.policy_images else None
        if camera_rate_hz is None:
            camera_rate_hz = cell.camera_rate_hz
            if request is not None and request.rate_hz is not None:
                camera_rate_hz = request.rate_hz
        cam_period = 1.0 / camera_rate_hz
        wants_images = bool(policy.requires & {ObservationKind.RGB, ObservationKind.DEPTH})
        wall0 = time.perf_counter()
        cell.reset(seed)
        info = self.episode_info(seed, substeps * cell.dt, episode_index)
        steps = 0
        images = None
        next_frame = 0.0
        reason = ""
        outcome = None
        acting = True
        try:
            policy.reset(info)
        except Exception as err:  # any policy failure ends the episode as a failure
            reason = f"policy_error: {type(err).__name__}: {err}"
        while not reason:
            if acting:
                t = cell.time
                if wants_images and t >= next_frame - 1e-9:
                    images = cell.render(request)
                    next_frame += cam_period * max(1, math.floor((t - next_frame) / cam_period) + 1)
                try:
                    action = policy.act(self.observation(images))
                    action.check(info)
                    done = bool(policy.done)
                except Exception as err:
                    reason = f"policy_error: {type(err).__name__}: {err}"
                    break
                check = cell.submit(action.arm_positions, action.gripper)
                if not check.accepted:
                    reason = f"policy_error: command refused: {check.reason}"
                    break
                if done:  # the last command stands: the arm holds it while the task settles
                    cell.policy_done()
                    acting = False
            cell.advance(substeps)
            steps += 1
            outcome = cell.outcome(step_limit=max_steps is not None and steps >= max_steps)
            if outcome is not None:
                reason = outcome.reason
        metrics = outcome.metrics if outcome is not None else cell.metrics()
        # The episode ends when the verdict was reached, which may be inside the last control period.
        end = outcome.time_s if outcome is not None and outcome.time_s is not None else cell.time
        return EpisodeResult(
            world_id=cell.world_id,
            world_hash=cell.world_hash,
            seed=seed,
            episode_index=episode_index,
            success=outcome is not None and outcome.success,
            reason=reason,
            duration_s=end,
            wall_s=time.perf_counter() - wall0,
            steps=steps,
            metrics={k: float(v) for k, v in metrics.items()},
        )
