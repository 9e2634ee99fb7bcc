"""What a task reads and sets in the world it judges.

Tasks sit below the world in the layers: they see it through this protocol, which
:class:`r2s2r_sim.world.sim_world.SimWorld` satisfies (mypy checks it where the world hands itself to its
task).
"""

from __future__ import annotations

from typing import Protocol

import mujoco
import numpy as np

__all__ = ["TaskWorld"]


class TaskWorld(Protocol):
    """The world as a task sees it: the MuJoCo model and state, names, poses and the task object."""

    model: mujoco.MjModel
    data: mujoco.MjData
    world_id: str
    robot_body_mask: np.ndarray  # True for the robot's bodies, by body id

    @property
    def time(self) -> float:
        """Sim time (s)."""

    @property
    def task_object_is_free(self) -> bool:
        """Whether the task object has a free joint (it can be placed and can fall)."""

    @property
    def gripper_open_fraction(self) -> float | None:
        """The gripper's opening, 0 closed to 1 open; None without a gripper."""

    def place_task_object(self, x: float, y: float, yaw: float) -> None:
        """Put the task object at ``x, y`` (m, world frame) and ``yaw`` (rad), at its current height."""

    def body_id(self, name: str) -> int:
        """Id of body ``name``, with an error naming the world when it is missing."""

    def site_id(self, name: str) -> int:
        """Id of site ``name``, with an error naming the world when it is missing."""

    def body_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """World-frame position (3,) and wxyz quaternion (4,) of a body."""

    def site_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """World-frame position (3,) and wxyz quaternion (4,) of a site."""
