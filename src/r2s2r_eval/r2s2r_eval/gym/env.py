"""``CellEnv``: a Gymnasium environment over the simulated cell, driven through the one episode runner."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium.error import ResetNeeded
from r2s2r_sim.tasks.registry import ObjectPose, Outcome
from r2s2r_sim.variations import (
    Variation,
    VariationConfig,
    for_world,
    load_variation_config,
    sample_variation,
)
from r2s2r_sim.worlds import world_path

from r2s2r_eval.episodes.runner import DEFAULT_CONTROL_RATE_HZ, EpisodeRunner, control_substeps
from r2s2r_eval.gym.spaces import ActionLayout, observation_dict, observation_space
from r2s2r_eval.policy import EpisodeInfo, ImageRequest

__all__ = ["CellEnv", "CellEnvError"]

# Episode seeds drawn for a reset without one: what numpy's SeedSequence and the results store take.
_SEED_BOUND = 2**31 - 1
_RESET_OPTIONS = ("object_pose",)


class CellEnvError(ValueError):
    """The environment cannot be built or reset as asked (a world without a task, a bad option)."""


def _object_pose(value: Any) -> ObjectPose:
    """``options["object_pose"]``: an :class:`ObjectPose` or ``(x, y, yaw)`` in m and rad."""
    if isinstance(value, ObjectPose):
        return value
    try:
        x, y, yaw = (float(v) for v in value)
    except (TypeError, ValueError):
        raise CellEnvError(f"options['object_pose']: must be (x, y, yaw) (m, rad), got {value!r}") from None
    if not all(math.isfinite(v) for v in (x, y, yaw)):
        raise CellEnvError(f"options['object_pose']: must be finite, got {(x, y, yaw)}")
    return ObjectPose(x, y, yaw)


class CellEnv(gymnasium.Env[dict[str, np.ndarray], np.ndarray]):
    """A world's simulated cell as a Gymnasium environment: what a policy meets through the driver topics.

    Observations are what the policy node assembles (:mod:`r2s2r_eval.gym.spaces`), one frame drawn per
    step; an action is the arm's joint position targets and the gripper command, held for one control
    period.  :meth:`reset` draws the world's variation for the seed with the variation engine
    (``sample_variation``, as demonstrations do) and rebuilds the cell when the variation changes.

    The episode ends by the cell's one rule (``EpisodeJudge``): ``terminated`` when the task's judge ends
    it (a success held for the task's settle period), ``truncated`` when the task's timeout does, its
    verdict then in ``info``; ``gymnasium.make(..., max_episode_steps=N)`` truncates earlier (Gymnasium's
    ``TimeLimit``, no verdict).  The reward is sparse, 1.0 on the step that ends the episode in success: the
    tasks expose named diagnostic terms (``info["metrics"]``), not a shaped reward.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["rgb_array"],
        "render_fps": DEFAULT_CONTROL_RATE_HZ,
    }

    def __init__(
        self,
        world: str | Path,
        *,
        variations: str | Path | None = None,
        render_mode: str | None = None,
        camera: str | None = None,
        render_profile: str | None = None,
        image_size: tuple[int, int] | None = None,
        control_rate_hz: float = DEFAULT_CONTROL_RATE_HZ,
    ) -> None:
        """The environment of ``world`` (a bundled id or a world folder, a reconstructed one included).

        Args:
            world: bundled world id or world folder.
            variations: a variations YAML file drawn from at each reset; None: the world as authored (the
                task object's pose still drawn from the seed).
            render_mode: ``"rgb_array"`` or None.
            camera: the configured camera to observe through; None: the world's first.
            render_profile: the world's render profile to draw with (e.g. ``fast``); None: the camera's.
            image_size: ``(width, height)`` px of the observed images; None: the camera's own.
            control_rate_hz: steps per second of sim time; its period is a whole number of physics steps.

        Raises:
            CellEnvError: an unknown render mode or a world without a task.
            ValueError: a bad image size or control rate (``PolicyError``, ``RunnerError``), a world that
                does not load or has no such camera (``WorldError``), or variations that do not fit it
                (``VariationError``).
        """
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise CellEnvError(
                f"render_mode: {render_mode!r} (render modes: {self.metadata['render_modes']})"
            )
        self.render_mode = render_mode
        folder = world_path(world)
        self._variations: VariationConfig | None = (
            None if variations is None else for_world(load_variation_config(variations), folder)
        )
        self._make = {"camera": camera, "render_profile": render_profile}
        self._runner = EpisodeRunner(folder, **self._make)
        self._variation: Variation | None = None
        cell = self._runner.cell
        w = cell.world
        task = w.config.task
        if task is None:
            raise CellEnvError(f"world {cell.world_id!r} has no task")
        self._timeout_s = float(task.timeout)
        self._substeps = control_substeps(control_rate_hz, cell.dt)
        self.control_period = self._substeps * cell.dt
        width, height = (cell.camera.width, cell.camera.height) if image_size is None else image_size
        self._request = ImageRequest(width=int(width), height=int(height))
        self.joint_names: tuple[str, ...] = tuple(w.joint_names)
        gripper = w.config.robot.gripper
        gripper_joints = () if gripper is None else tuple(w.config.robot.prefix + j for j in gripper.joints)
        self._gripper_index = [self.joint_names.index(j) for j in gripper_joints if j in self.joint_names]
        self.observation_space = observation_space(
            width=self._request.width,
            height=self._request.height,
            joints=len(self.joint_names),
            gripper_joints=len(self._gripper_index),
            distortion=len(cell.camera_d),
        )
        info = self._runner.episode_info(0, self.control_period)
        self._actions = ActionLayout(info.arm_joint_names, w.arm_limits, info.gripper_command_range)
        self.action_space = self._actions.space
        self.metadata = {**self.metadata, "render_fps": 1.0 / self.control_period}
        self._opened = False
        self._info: EpisodeInfo | None = None
        self._over = False
        self._frame: np.ndarray | None = None

    @property
    def episode_info(self) -> EpisodeInfo:
        """What an r2s2r policy is told at the start of the current episode (``Policy.reset``).

        Raises:
            ResetNeeded: before the first reset.
        """
        if self._info is None:
            raise ResetNeeded("CellEnv.episode_info: call reset() first")
        return self._info

    @property
    def runner(self) -> EpisodeRunner:
        """The episode runner over the current episode's cell."""
        return self._runner

    def _cell_for(self, variation: Variation | None) -> None:
        """Rebuild the runner's cell for ``variation`` unless it is the current one's world."""
        current = self._variation
        if current is variation or (variation and current and variation.params == current.params):
            return
        self._close_runner()
        folder = self._runner.cell.world_dir
        self._runner = EpisodeRunner(folder, variation=variation, **self._make)
        self._variation = variation

    def _close_runner(self) -> None:
        if self._opened:
            self._runner.__exit__(None, None, None)
            self._opened = False

    def _observe(self) -> dict[str, np.ndarray]:
        images = self._runner.cell.render(self._request)
        obs = observation_dict(self._runner.observation(images), self._gripper_index)
        self._frame = obs["rgb"]
        return obs

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode: the world's variation for the episode seed, the cell reset with that seed.

        The episode seed is ``seed``, or drawn from the environment's generator when None.
        ``options["object_pose"]``: ``(x, y, yaw)`` (m, rad) where the task object starts instead of the
        variation's or the seed's pose.

        Returns:
            The first observation and ``info``: ``seed``, ``world_id``, ``world_hash`` and ``variation``
            (the realised parameters, ``"<axis>.<name>" -> value``; empty without variations).

        Raises:
            CellEnvError: an unknown option or a bad object pose.
        """
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = sorted(set(options) - set(_RESET_OPTIONS))
        if unknown:
            raise CellEnvError(f"reset options: unknown {unknown} (options: {list(_RESET_OPTIONS)})")
        pose = None if options.get("object_pose") is None else _object_pose(options["object_pose"])
        episode_seed = int(seed) if seed is not None else int(self.np_random.integers(_SEED_BOUND))
        variation = None if self._variations is None else sample_variation(self._variations, episode_seed)
        self._cell_for(variation)
        if not self._opened:
            self._runner.__enter__()
            self._opened = True
        cell = self._runner.cell
        cell.reset(episode_seed, object_pose=pose)
        self._info = self._runner.episode_info(episode_seed, self.control_period)
        self._over = False
        info = {
            "seed": episode_seed,
            "world_id": cell.world_id,
            "world_hash": cell.world_hash,
            "variation": {} if variation is None else {k: float(v) for k, v in variation.params.items()},
        }
        return self._observe(), info

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Command ``action`` and advance one control period.

        Returns:
            observation, reward (1.0 on the step that ends the episode in success, else 0.0), terminated,
            truncated and ``info``: ``time_s`` (sim time since the reset), ``success``, ``reason`` (the
            verdict, ``""`` while the episode runs), ``metrics`` (the task's named terms) and ``clamped``
            (the world clamped the command).

        Raises:
            ResetNeeded: before a reset, or after the episode ended.
            ValueError: an action outside the action space (see :class:`ActionLayout`).
        """
        if self._info is None or self._over:
            raise ResetNeeded("CellEnv.step: the episode has ended or not started; call reset()")
        command = self._actions.action(action)
        command.check(self._info)
        cell = self._runner.cell
        check = cell.submit(command.arm_positions, command.gripper)
        if not check.accepted:
            raise CellEnvError(f"action refused by the cell: {check.reason}")
        cell.advance(self._substeps)
        outcome: Outcome | None = cell.outcome(step_limit=False)
        success = outcome is not None and outcome.success
        # With no policy saying done, only the task's timeout ends an episode without a success.
        timed_out = cell.time >= self._timeout_s - 0.5 * self.control_period
        truncated = outcome is not None and not success and timed_out
        terminated = outcome is not None and not truncated
        self._over = outcome is not None
        info = {
            "time_s": float(cell.time),
            "success": success,
            "reason": "" if outcome is None else outcome.reason,
            "metrics": dict(outcome.metrics if outcome is not None else cell.metrics()),
            "clamped": bool(check.clamped),
        }
        return self._observe(), 1.0 if success else 0.0, terminated, truncated, info

    def render(self) -> np.ndarray | None:  # type: ignore[override]
        """The camera frame of the last observation (``rgb_array``); None without a render mode.

        Raises:
            ResetNeeded: before the first reset.
        """
        if self.render_mode is None:
            return None
        if self._frame is None:
            raise ResetNeeded("CellEnv.render: call reset() first")
        return self._frame.copy()

    def close(self) -> None:
        """Free the renderer (its GL contexts); closing twice is harmless."""
        self._close_runner()
        self._frame = None
