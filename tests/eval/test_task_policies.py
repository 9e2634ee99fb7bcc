"""The scripted reference policy of each new task, in process on its bundled world: it succeeds, and the
world's variation defaults are what a sweep reads."""

from __future__ import annotations

import numpy as np
import pytest
from r2s2r_eval.cli.sweep import default_variations
from r2s2r_eval.episodes.runner import EpisodeRunner
from r2s2r_eval.episodes.sweep_plan import SweepError
from r2s2r_eval.policies.drawer import DrawerParams, DrawerPolicy
from r2s2r_eval.policies.push import PushParams, PushPolicy
from r2s2r_eval.policies.stack import StackParams, StackPolicy
from r2s2r_eval.policy import PolicyError
from r2s2r_sim.paths import config_dir
from r2s2r_sim.variations import load_variation_config
from r2s2r_sim.world.config import load_world_config
from r2s2r_sim.worlds import WORLDS

# Two seeds each keep the file fast; the 50-seed rates are measured with `r2s2r sweep` (README).
CASES = [
    ("tabletop-push-v1", PushPolicy, PushParams()),
    ("tabletop-stack-v1", StackPolicy, StackParams()),
    ("tabletop-drawer-v1", DrawerPolicy, DrawerParams()),
]


@pytest.mark.parametrize(("world", "cls", "params"), CASES, ids=[c[0] for c in CASES])
def test_reference_policy_succeeds(world: str, cls: type, params: object) -> None:
    # The fast profile (no shadows) keeps the test quick; the policies segment colours either way.
    with EpisodeRunner(world, render_profile="fast") as runner:
        results = [runner.run(cls(params), seed) for seed in (0, 1)]
    assert [r.reason for r in results] == ["success", "success"], [(r.reason, r.metrics) for r in results]
    assert all(r.metrics["held_s"] >= 0.5 for r in results)


def test_drawer_policy_that_misses_the_bar_leaves_the_drawer_shut() -> None:
    # Hooking 10 cm behind the bar lands the fingers on the drawer, not behind its handle.
    with EpisodeRunner("tabletop-drawer-v1", render_profile="fast") as runner:
        result = runner.run(DrawerPolicy(DrawerParams(hook_offset_m=0.1, open_to_m=0.05)), 0, max_steps=150)
    assert not result.success
    assert result.metrics["joint_position"] < 0.12


def test_push_policy_refuses_a_world_without_its_object() -> None:
    with EpisodeRunner("tabletop-drawer-v1", render_profile="fast") as runner:
        result = runner.run(PushPolicy(), 0, max_steps=3)
    assert result.reason.startswith("policy_error: PolicyError: push policy: world "), result.reason
    assert result.reason.endswith("has a 'drawer' task, not 'push'")


def test_params_are_checked() -> None:
    with pytest.raises(ValueError, match=r"push_speed_m_s: must be in \(0, 0.5\], got 0.0"):
        PushParams(push_speed_m_s=0.0)
    with pytest.raises(ValueError, match=r"open_to_m: must be in \(0, 1\], got -0.1"):
        DrawerParams(open_to_m=-0.1)
    with pytest.raises(ValueError, match=r"release_height_m: must be in \[0, 0.1\], got 0.5"):
        StackParams(release_height_m=0.5)
    assert issubclass(PolicyError, ValueError)


@pytest.mark.parametrize("world", ["tabletop-push-v1", "tabletop-stack-v1", "tabletop-drawer-v1"])
def test_task_worlds_bring_their_variation_defaults(world: str) -> None:
    path = default_variations(world)
    assert path == WORLDS[world] / "variations.yaml"
    cfg = load_variation_config(path)
    task = load_world_config(WORLDS[world]).task
    assert task is not None
    if cfg.objects.enabled:
        assert cfg.objects.body == task.object_body
    assert default_variations("tabletop-pick-v1") == config_dir() / "variations.yaml"
    with pytest.raises(SweepError, match="--world: unknown world 'nowhere-v1'"):
        default_variations("nowhere-v1")


def test_drawer_policy_on_a_nominal_camera_misplaces_the_handle_only_where_the_camera_differs() -> None:
    """In the bundled world the nominal camera is the true one: the handle is found where the observed
    camera puts it.  On the emulated hardware the camera sits centimetres away from its nominal pose, so a
    policy that assumes the nominal model sees the handle elsewhere."""
    from pathlib import Path

    from r2s2r_sim.cells.emulated_cell import EmulatedCell

    world = "tabletop-drawer-v1"
    nominal = DrawerParams(assume_camera_of=world)

    def handles(runner: EpisodeRunner) -> float:
        found = []
        for params in (DrawerParams(), nominal):
            policy = DrawerPolicy(params)
            runner.run(policy, 0, episode_index=0, max_steps=2)
            assert policy.handle is not None
            found.append(policy.handle)
        return float(np.linalg.norm(found[0] - found[1]))

    with EpisodeRunner(world, render_profile="fast") as runner:
        in_sim = handles(runner)
        result = runner.run(DrawerPolicy(nominal), 0)
    assert result.success, result.reason
    profile = Path(__file__).resolve().parents[2] / "config/emulated_hardware/realistic_profile.yaml"
    with EpisodeRunner(EmulatedCell(world, profile)) as real:
        on_real = handles(real)
    assert in_sim < 0.002 and on_real > 0.01, (in_sim, on_real)
