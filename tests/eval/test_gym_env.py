"""The Gymnasium environments: ids, the API check, spaces, seeding, the reference policy, vector envs."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.utils.env_match import data_equivalence
from gymnasium.vector import AsyncVectorEnv
from r2s2r_eval.gym import ENV_IDS, GENERIC_ID, CellEnv, CellEnvError, action_array, env_id, to_observation
from r2s2r_eval.policies.reference import ReferencePolicy
from r2s2r_sim.worlds import WORLDS

PICK = "r2s2r/TabletopPick-v1"
# Small frames without shadows keep the episodes quick; the reference policy still finds the cube.
SMALL = {"image_size": (64, 48), "render_profile": "fast"}


@pytest.fixture(scope="module")
def env() -> Iterator[CellEnv]:
    made = gym.make(PICK, render_mode="rgb_array", **SMALL)
    yield made.unwrapped  # type: ignore[misc]
    made.close()


def test_one_id_per_bundled_world_and_a_generic_one() -> None:
    assert ENV_IDS == (*(env_id(w) for w in WORLDS), GENERIC_ID)
    assert env_id("tabletop-pick-v1") == PICK
    assert set(ENV_IDS) <= set(gym.registry)
    with pytest.raises(ValueError, match="expected <lower-case-words>-v<N>"):
        env_id("Tabletop_pick")


def test_env_passes_gymnasiums_checker() -> None:
    made = gym.make(PICK, render_mode="rgb_array", **SMALL)
    try:
        check_env(made.unwrapped)
    finally:
        made.close()


def test_reset_and_step_return_the_documented_spaces(env: CellEnv) -> None:
    obs, info = env.reset(seed=1)
    assert obs in env.observation_space
    assert obs["rgb"].shape == (48, 64, 3) and obs["rgb"].dtype == np.uint8
    assert obs["depth"].dtype == np.float32 and np.all(np.isfinite(obs["depth"])) and obs["depth"].max() > 0.5
    assert obs["camera_k"][0, 2] == pytest.approx(31.5) and obs["camera_k"][1, 2] == pytest.approx(23.5)
    assert obs["joint_positions"].shape == (len(env.joint_names),) == (8,)
    assert np.array_equal(obs["gripper"], obs["joint_positions"][-2:])
    assert obs["time"][0] == 0.0
    assert info["seed"] == 1 and info["world_id"] == "tabletop-pick-v1" and info["variation"]
    assert env.action_space.shape == (7,)
    assert env.action_space.high[-1] == pytest.approx(0.04)
    hold = np.append(obs["joint_positions"][:6], 0.04)
    for k in range(1, 4):
        obs, reward, terminated, truncated, info = env.step(hold)
        assert obs in env.observation_space
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert obs["time"][0] == pytest.approx(k * env.control_period)
        assert info["reason"] == "" and not info["success"]
        assert set(info["metrics"]) >= {"object_to_target_m", "object_lifted"}
    frame = env.render()
    assert frame is not None and np.array_equal(frame, obs["rgb"])


def test_same_seed_gives_the_same_start_and_variation(env: CellEnv) -> None:
    first, info_a = env.reset(seed=5)
    other, info_c = env.reset(seed=6)
    again, info_b = env.reset(seed=5)
    assert data_equivalence(first, again, exact=True)
    assert info_a["variation"] == info_b["variation"]
    assert info_a["variation"] != info_c["variation"]
    assert not np.array_equal(first["rgb"], other["rgb"])


def test_reset_options_place_the_object_and_bad_ones_are_refused(env: CellEnv) -> None:
    env.reset(seed=2, options={"object_pose": (0.42, -0.08, 0.3)})
    position, _ = env.runner.cell.world.body_pose("cube")
    assert position[:2] == pytest.approx([0.42, -0.08])
    with pytest.raises(CellEnvError, match=r"unknown \['pose'\]"):
        env.reset(seed=2, options={"pose": (0.4, 0.0, 0.0)})
    with pytest.raises(CellEnvError, match="must be \\(x, y, yaw\\)"):
        env.reset(seed=2, options={"object_pose": "middle"})


def test_actions_outside_the_space_are_refused(env: CellEnv) -> None:
    obs, _ = env.reset(seed=1)
    hold = np.append(obs["joint_positions"][:6], 0.04)
    with pytest.raises(ValueError, match=r"gripper=0.5 outside \[0.0, 0.04\].*ClipAction"):
        env.step(np.append(hold[:6], 0.5))
    with pytest.raises(ValueError, match="must be finite.*shoulder_pan"):
        env.step(np.append(np.nan, hold[1:]))
    with pytest.raises(ValueError, match="must have shape \\(7,\\)"):
        env.step(hold[:6])


def test_the_task_timeout_truncates_any_world_folder() -> None:
    # One step per second of sim time reaches the push task's 30 s timeout in a few dozen steps.
    made = gym.make(GENERIC_ID, world=str(WORLDS["tabletop-push-v1"]), control_rate_hz=1.0, **SMALL)
    try:
        obs, info = made.reset(seed=0)
        assert info["variation"] == {} and info["world_id"] == "tabletop-push-v1"
        hold = np.append(obs["joint_positions"][:6], 0.04)
        steps = 0
        terminated = truncated = False
        while not (terminated or truncated) and steps < 100:
            _, reward, terminated, truncated, info = made.step(hold)
            steps += 1
        assert (reward, terminated, truncated) == (0.0, False, True)
        # The first step whose period reaches the timeout ends it.
        assert steps * 1.0 == pytest.approx(info["time_s"]) and 30.0 <= info["time_s"] < 31.0 + 1e-6
        assert info["reason"] == "object_outside_region (timeout)"
        with pytest.raises(gym.error.ResetNeeded):
            made.step(hold)
    finally:
        made.close()


def test_reference_policy_succeeds_through_the_env() -> None:
    """The pick reference policy, through its API on the env's observations, places the cube."""
    made = gym.make(PICK, image_size=(160, 120), render_profile="fast")
    env: CellEnv = made.unwrapped  # type: ignore[assignment]
    policy = ReferencePolicy()
    try:
        obs, _ = made.reset(seed=0)
        policy.reset(env.episode_info)
        action = None
        for _ in range(1000):
            # As the runner does: once the policy says done, the arm holds its last command.
            if action is None or not policy.done:
                action = action_array(policy.act(to_observation(obs, env.joint_names)))
            obs, reward, terminated, truncated, info = made.step(action)
            if terminated or truncated:
                break
    finally:
        made.close()
    assert (terminated, truncated, reward) == (True, False, 1.0), info["reason"]
    assert info["success"] and info["reason"] == "success"


def test_async_vector_env_steps_two_envs() -> None:
    # The "module:id" form imports the registering package in each spawned worker.
    make = partial(gym.make, f"r2s2r_eval.gym:{PICK}", **SMALL)
    envs = AsyncVectorEnv([make, make], context="spawn")
    try:
        obs, info = envs.reset(seed=[3, 4])
        assert obs["rgb"].shape == (2, 48, 64, 3) and list(info["seed"]) == [3, 4]
        actions = np.stack([np.append(q[:6], 0.04) for q in obs["joint_positions"]])
        obs, reward, terminated, truncated, info = envs.step(actions)
        assert obs in envs.observation_space
        assert reward.tolist() == [0.0, 0.0] and not terminated.any() and not truncated.any()
        assert info["time_s"] == pytest.approx([0.1, 0.1])
    finally:
        envs.close()
