"""Gymnasium environments over the simulated cell; importing this package registers their ids.

``gymnasium.make("r2s2r/TabletopPick-v1")`` after ``import r2s2r_eval.gym`` (or
``gymnasium.make("r2s2r_eval.gym:r2s2r/TabletopPick-v1")``, which imports it), one id per bundled world,
and ``r2s2r/World-v1`` for any world folder (``world=``, ``variations=``).
"""

from r2s2r_eval.gym.env import CellEnv, CellEnvError
from r2s2r_eval.gym.registration import GENERIC_ID, env_id, register_envs
from r2s2r_eval.gym.spaces import action_array, to_observation

__all__ = ["ENV_IDS", "GENERIC_ID", "CellEnv", "CellEnvError", "action_array", "env_id", "to_observation"]

ENV_IDS: tuple[str, ...] = register_envs()
