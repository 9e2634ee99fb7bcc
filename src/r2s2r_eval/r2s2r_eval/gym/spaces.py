"""The Gymnasium spaces of a cell, and their conversions to and from the policy API's types."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from gymnasium import spaces

from r2s2r_eval.policy import Action, Observation

__all__ = [
    "OBSERVATION_KEYS",
    "ActionLayout",
    "action_array",
    "observation_dict",
    "observation_space",
    "to_observation",
]

# The dictionary an observation is: what the policy node assembles from the driver topics.
OBSERVATION_KEYS = (
    "rgb",
    "depth",
    "joint_positions",
    "joint_velocities",
    "gripper",
    "camera_k",
    "camera_d",
    "camera_pose",
    "base_pose",
    "time",
)

# The deepest depth a 16UC1 image holds, in the arithmetic that turns its millimetres into metres.
_MAX_DEPTH_M = np.float32(np.iinfo(np.uint16).max) * np.float32(0.001)


def _unbounded(shape: tuple[int, ...]) -> spaces.Box:
    return spaces.Box(-np.inf, np.inf, shape=shape, dtype=np.float64)


def observation_space(
    *, width: int, height: int, joints: int, gripper_joints: int, distortion: int
) -> spaces.Dict:
    """The observation space of a cell whose camera draws ``width`` x ``height`` px.

    Args:
        width: image width (px).
        height: image height (px).
        joints: joints on ``/joint_states`` (arm and gripper).
        gripper_joints: the gripper's joints among them.
        distortion: coefficients of the camera's lens distortion.
    """
    return spaces.Dict(
        {
            "rgb": spaces.Box(0, 255, shape=(height, width, 3), dtype=np.uint8),
            "depth": spaces.Box(np.float32(0.0), _MAX_DEPTH_M, shape=(height, width), dtype=np.float32),
            "joint_positions": _unbounded((joints,)),
            "joint_velocities": _unbounded((joints,)),
            "gripper": _unbounded((gripper_joints,)),
            "camera_k": _unbounded((3, 3)),
            "camera_d": _unbounded((distortion,)),
            "camera_pose": _unbounded((4, 4)),
            "base_pose": _unbounded((4, 4)),
            "time": spaces.Box(0.0, np.inf, shape=(1,), dtype=np.float64),
        }
    )


def observation_dict(observation: Observation, gripper_index: Sequence[int]) -> dict[str, np.ndarray]:
    """``observation`` (with images, camera info and poses) as a dictionary of :func:`observation_space`.

    Depth pixels without data are NaN in an :class:`Observation` and 0 here (as in the camera's ``16UC1``
    image): a NaN is outside every ``Box`` and poisons a network's input.

    Raises:
        ValueError: the observation lacks a part the space holds.
    """
    parts = ("rgb", "depth", "camera_k", "camera_d", "camera_pose", "base_pose")
    missing = [name for name in parts if getattr(observation, name) is None]
    if missing:
        raise ValueError(f"observation_dict: the observation has no {missing}")
    positions = observation.joint_positions
    return {
        "rgb": np.array(observation.rgb, dtype=np.uint8),
        "depth": np.nan_to_num(np.asarray(observation.depth, dtype=np.float32), nan=0.0),
        "joint_positions": np.array(positions, dtype=np.float64),
        "joint_velocities": np.array(observation.joint_velocities, dtype=np.float64),
        "gripper": np.array(positions[list(gripper_index)], dtype=np.float64),
        "camera_k": np.array(observation.camera_k, dtype=np.float64),
        "camera_d": np.array(observation.camera_d, dtype=np.float64),
        "camera_pose": np.array(observation.camera_pose, dtype=np.float64),
        "base_pose": np.array(observation.base_pose, dtype=np.float64),
        "time": np.array([observation.stamp], dtype=np.float64),
    }


def to_observation(obs: Mapping[str, np.ndarray], joint_names: Sequence[str]) -> Observation:
    """The :class:`Observation` a policy plug-in reads, from a dictionary of :func:`observation_space`.

    Depth 0 (no data) becomes NaN again, so an r2s2r policy driven through the environment sees what the
    policy node would give it.

    Raises:
        PolicyError: the dictionary does not make a valid observation (shapes, dtypes).
    """
    depth = np.array(obs["depth"], dtype=np.float32)
    depth[depth <= 0] = np.nan
    return Observation(
        stamp=float(obs["time"][0]),
        joint_names=tuple(joint_names),
        joint_positions=np.array(obs["joint_positions"], dtype=np.float64),
        joint_velocities=np.array(obs["joint_velocities"], dtype=np.float64),
        rgb=np.array(obs["rgb"], dtype=np.uint8),
        depth=depth,
        camera_k=np.array(obs["camera_k"], dtype=np.float64),
        camera_d=np.array(obs["camera_d"], dtype=np.float64),
        camera_pose=np.array(obs["camera_pose"], dtype=np.float64),
        base_pose=np.array(obs["base_pose"], dtype=np.float64),
    )


def action_array(action: Action) -> np.ndarray:
    """A policy's :class:`Action` as the environment's action: arm positions, then the gripper command."""
    return np.append(action.arm_positions, action.gripper).astype(np.float64)


class ActionLayout:
    """The action: the arm's joint position targets (rad or m, command order), then one gripper command.

    The bounds are the robot's joint limits (infinite for a continuous joint) and the gripper's command
    range, as the policy node sends them.
    """

    def __init__(
        self, arm_joint_names: Sequence[str], arm_limits: np.ndarray, gripper_range: tuple[float, float]
    ) -> None:
        """Lay out ``arm_joint_names`` with their ``(n, 2)`` limits and the gripper's ``(open, closed)``."""
        self.arm_joint_names = tuple(arm_joint_names)
        lo, hi = sorted(gripper_range)
        limits = np.asarray(arm_limits, dtype=np.float64)
        self.space = spaces.Box(np.append(limits[:, 0], lo), np.append(limits[:, 1], hi), dtype=np.float64)

    def action(self, value: np.ndarray | Sequence[float]) -> Action:
        """The :class:`Action` of an environment action.

        Raises:
            ValueError: a wrong shape, a NaN, or a value outside the bounds (naming the joint); wrap the
                environment in ``gymnasium.wrappers.ClipAction`` to clip instead.
        """
        arr = np.asarray(value, dtype=np.float64)
        names = (*self.arm_joint_names, "gripper")
        if arr.shape != self.space.shape:
            raise ValueError(f"action: must have shape {self.space.shape} ({list(names)}), got {arr.shape}")
        bad = [n for n, v in zip(names, arr, strict=True) if not np.isfinite(v)]
        if bad:
            raise ValueError(f"action: must be finite, got {arr.tolist()} (at {bad})")
        low, high = self.space.low, self.space.high
        outside = [
            f"{n}={v} outside [{lo}, {hi}]"
            for n, v, lo, hi in zip(names, arr, low, high, strict=True)
            if not lo <= v <= hi
        ]
        if outside:
            raise ValueError(
                f"action: {'; '.join(outside)} (wrap the env in gymnasium.wrappers.ClipAction to clip)"
            )
        return Action(arm_positions=arr[:-1], gripper=float(arr[-1]))
