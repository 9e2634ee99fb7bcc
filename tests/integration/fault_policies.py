"""Test policies for the fault tests: cheap (joint states only), so episodes need no rendering."""

from __future__ import annotations

import numpy as np
from r2s2r_eval.policy import Action, EpisodeInfo, Observation, Policy


class HoldPolicy(Policy):
    """Holds the arm where the episode found it, gripper open; the sim's task ends it by its timeout."""

    def reset(self, info: EpisodeInfo) -> None:
        self._info = info
        self._hold: np.ndarray | None = None

    def act(self, observation: Observation) -> Action:
        if self._hold is None:
            self._hold = observation.positions(self._info.arm_joint_names)
            # The fault tests wait for this line: the episode runs (its reset was answered before).
            print(
                f"hold policy: acting in episode {self._info.episode_index} (seed {self._info.seed})",
                flush=True,
            )
        return Action(arm_positions=self._hold.copy(), gripper=self._info.gripper_command_range[0])
