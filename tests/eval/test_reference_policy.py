"""Reference policy on the bundled world, in process: succeeds, degrades with noise, is deterministic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from r2s2r_eval.episodes.runner import EpisodeRunner, RunnerError, control_substeps
from r2s2r_eval.policies.reference import ReferenceParams, ReferencePolicy
from r2s2r_eval.policy import EpisodeInfo, Observation, PolicyError, load_policy

WORLD = "tabletop-pick-v1"
SEEDS = range(5)
# The policy perceives once at t = 0; a 1 Hz camera keeps the test fast without changing what it sees.
CAMERA_HZ = 1.0


@pytest.fixture(scope="module")
def runner() -> Iterator[EpisodeRunner]:
    with EpisodeRunner(WORLD) as r:
        yield r


def _rate(runner: EpisodeRunner, params: ReferenceParams) -> tuple[float, list[str]]:
    results = [runner.run(ReferencePolicy(params), s, camera_rate_hz=CAMERA_HZ) for s in SEEDS]
    return float(np.mean([r.success for r in results])), [r.reason for r in results]


def test_reference_succeeds_and_degrades_with_perception_noise(runner: EpisodeRunner) -> None:
    nominal, reasons = _rate(runner, ReferenceParams())
    assert nominal >= 0.8, reasons
    noisy, noisy_reasons = _rate(runner, ReferenceParams(perception_noise_m=0.05))
    assert noisy < nominal, (reasons, noisy_reasons)


def test_perception_estimate_is_accurate(runner: EpisodeRunner) -> None:
    policy = ReferencePolicy()
    runner.world.reset(7)
    truth, _ = runner.world.body_pose("cube")
    result = runner.run(policy, 7, camera_rate_hz=CAMERA_HZ, max_steps=2)
    assert result.reason == "not_achieved (max_steps)" and result.steps == 2
    assert policy.estimate is not None
    assert np.linalg.norm(policy.estimate.position - truth) < 0.005


def test_episode_is_deterministic(runner: EpisodeRunner) -> None:
    params = ReferenceParams(perception_noise_m=0.01)
    a = runner.run(ReferencePolicy(params), 2, camera_rate_hz=CAMERA_HZ, max_steps=40)
    state_a = runner.world.state_vector()
    b = runner.run(ReferencePolicy(params), 2, camera_rate_hz=CAMERA_HZ, max_steps=40)
    assert (a.duration_s, a.metrics) == (b.duration_s, b.metrics)
    assert np.array_equal(state_a, runner.world.state_vector())


def test_policy_errors_end_the_episode_as_failure(runner: EpisodeRunner) -> None:
    class _Blind(ReferencePolicy):
        def act(self, observation: Observation) -> object:  # type: ignore[override]
            raise PolicyError("camera unplugged")

        def reset(self, info: EpisodeInfo) -> None:
            super().reset(info)

    result = runner.run(_Blind(), 0, camera_rate_hz=CAMERA_HZ)
    assert not result.success
    assert result.reason == "policy_error: PolicyError: camera unplugged"


def test_runner_refuses_bad_rates_and_closed_use(runner: EpisodeRunner) -> None:
    assert control_substeps(10.0, 0.002) == 50
    with pytest.raises(RunnerError, match="integer multiple of the physics timestep: got 0.0666"):
        control_substeps(15.0, 0.002)
    closed = EpisodeRunner(WORLD)
    with pytest.raises(RunnerError, match="outside its with-block"):
        closed.run(load_policy("reference"), 0)


def test_assumed_nominal_camera_fails_only_where_the_camera_differs(runner: EpisodeRunner) -> None:
    # In the bundled world the nominal camera is the true one; on the emulated hardware the camera sits
    # ~2 cm and ~1.6 deg away, so a policy that trusts the nominal model misjudges where the cube is there:
    # its grasps close on nothing (the fingers say so) and it must retry, or fails.
    from r2s2r_sim.cells.emulated_cell import EmulatedCell

    params = ReferenceParams(assume_camera_of=WORLD)

    def misses(policy: ReferencePolicy) -> int:
        return sum(what == "empty" for _, what in policy.events)

    in_sim, sim_misses = [], 0
    for s in SEEDS[:3]:
        policy = ReferencePolicy(params)
        in_sim.append(runner.run(policy, s, camera_rate_hz=CAMERA_HZ).success)
        sim_misses += misses(policy)
    profile = Path(__file__).resolve().parents[2] / "config/emulated_hardware/ideal_profile.yaml"
    on_real, real_misses = [], 0
    with EpisodeRunner(EmulatedCell(WORLD, profile)) as real:
        for s in SEEDS[:3]:
            policy = ReferencePolicy(params)
            on_real.append(real.run(policy, s, episode_index=s, camera_rate_hz=CAMERA_HZ).success)
            real_misses += misses(policy)
    assert all(in_sim) and sim_misses == 0, (in_sim, sim_misses)
    assert real_misses >= 2 and not all(on_real), (on_real, real_misses)
    unknown = ReferencePolicy(ReferenceParams(assume_camera_of="no-such-world"))
    bad = runner.run(unknown, 0, camera_rate_hz=CAMERA_HZ)
    assert not bad.success and bad.reason.startswith("policy_error") and "assume_camera_of" in bad.reason
