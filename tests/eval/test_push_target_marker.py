"""The push policy pushes to its target marker where the camera sees it, not where the world's MJCF has it."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.policies.push import PushPolicy
from r2s2r_sim.cells.sim_cell import SimCell
from r2s2r_sim.world.sim_world import SimWorld
from r2s2r_sim.worlds import WORLDS

PUSH = WORLDS["tabletop-push-v1"]
SITE_XY = np.array([0.44, 0.15])  # tabletop-push-v1's target_center


def _policy_after_frames(target_offset: tuple[float, float, float]) -> PushPolicy:
    """The policy after a few frames of the push world whose target disc is moved from where its MJCF says.

    The cell renders the moved model, while the policy reads the unmoved world folder: a taped marker
    that is not where the model has it.
    """
    world = SimWorld(PUSH)
    body = world.model.body("target").id
    world.model.body_pos[body] += target_offset
    policy = PushPolicy()
    with EpisodeRunner(SimCell(world, world_dir=PUSH, render_profile="fast")) as runner:
        # 6 control steps at 10 Hz span 3 frames at the policy's 5 Hz, all before the first push.
        runner.run(policy, 0, max_steps=6)
    return policy


def test_target_is_found_by_its_colour_where_the_marker_lies() -> None:
    offset = (0.03, -0.025, 0.0)
    policy = _policy_after_frames(offset)
    moved = SITE_XY + offset[:2]
    error = float(np.linalg.norm(policy.target - moved))
    assert error < 0.01, (policy.target, moved)
    assert np.linalg.norm(policy.target - SITE_XY) > 0.03  # not the model's site


def test_an_unseen_marker_falls_back_to_the_site_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    # The handler goes on the policy's own logger: a launch plugin, when installed, stops propagation.
    log = logging.getLogger("r2s2r_eval.policies.push.policy")
    log.addHandler(caplog.handler)
    try:
        policy = _policy_after_frames((0.0, 0.0, -5.0))  # under the floor: out of sight
    finally:
        log.removeHandler(caplog.handler)
    assert np.allclose(policy.target, SITE_XY)
    said = [r.getMessage() for r in caplog.records if "target marker" in r.getMessage()]
    assert len(said) == 1, said
    assert "not seen; pushing to the model's target site [0.44, 0.15]" in said[0]
