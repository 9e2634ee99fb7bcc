"""Reference policy grasp handling: the grip judged from the finger joint, regrasp after an empty grasp or a
slip, slower carrying once the grip has shown itself weak, and a sweep on the bundled world."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from r2s2r_eval.episodes.results import ResultsStore
from r2s2r_eval.episodes.runner import EpisodeResult, EpisodeRunner
from r2s2r_eval.episodes.sweep import run_sweep
from r2s2r_eval.episodes.sweep_plan import PolicySpec, SweepConfig
from r2s2r_eval.policies.reference import ReferenceParams, ReferencePolicy
from r2s2r_eval.policies.reference.grip import GripMonitor, GripState, closure_fraction
from r2s2r_eval.policies.reference.policy import Phase
from r2s2r_eval.policy import Action, Observation, ObservationKind
from r2s2r_sim.variations import load_variation_config

ROOT = Path(__file__).resolve().parents[2]
WORLD = "tabletop-pick-v1"
# The policy looks at the scene only at the start and after a failed grasp; a 1 Hz camera is enough.
CAMERA_HZ = 1.0


@pytest.fixture(scope="module")
def runner() -> Iterator[EpisodeRunner]:
    with EpisodeRunner(WORLD) as r:
        yield r


# ------------------------------------------------------------------------------------------ grip rules


def test_closure_fraction_in_both_command_directions() -> None:
    assert closure_fraction(0.04, (0.04, 0.0)) == 0.0
    assert closure_fraction(0.0, (0.04, 0.0)) == 1.0
    assert closure_fraction(0.02, (0.04, 0.0)) == pytest.approx(0.5)
    assert closure_fraction(0.425, (0.0, 0.85)) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="open and closed must differ"):
        closure_fraction(0.0, (0.5, 0.5))


def test_grip_monitor_states() -> None:
    g = GripMonitor(empty_closure=0.9, weak_drift=0.02, slip_drift=0.1)
    assert g.grasped(0.5) and not g.grasped(0.9) and not g.grasped(1.0)
    assert g.state(0.5, 0.505) is GripState.HELD
    assert g.state(0.5, 0.53) is GripState.WEAK
    assert g.state(0.5, 0.61) is GripState.SLIPPED
    assert g.state(0.85, 0.9) is GripState.SLIPPED  # fully closed: nothing left between the fingers
    with pytest.raises(ValueError, match="slip_drift: must be > weak_drift"):
        GripMonitor(weak_drift=0.1, slip_drift=0.1)
    with pytest.raises(ValueError, match="empty_closure"):
        GripMonitor(empty_closure=0.0)
    with pytest.raises(ValueError, match="window_s"):
        GripMonitor(window_s=0.0)
    with pytest.raises(ValueError, match="weak_grip_speed"):
        ReferenceParams(weak_grip_speed=0.0)
    with pytest.raises(ValueError, match="max_regrasps"):
        ReferenceParams(max_regrasps=-1)


def _judged(g: GripMonitor, closures: np.ndarray, rate_hz: float = 10.0) -> list[GripState]:
    """The monitor's judgement after each sample of a carry, as the policy asks it."""
    held = [(k / rate_hz, float(c)) for k, c in enumerate(closures)]
    return [g.judge(held[: k + 1]) for k in range(len(held))]


@pytest.mark.parametrize("seed", range(5))
def test_a_noisy_finger_reading_is_not_a_weak_grip(seed: int) -> None:
    """A gripper reporting with 0.5 mm noise on a 40 mm range (closure std 0.0125, more than a single
    sample's weak drift allows) holds its object for 20 s: never judged weak or slipped; the same samples
    creeping 0.1 closed over 2 s, or jumping shut, are."""
    g = GripMonitor()
    rng = np.random.default_rng(seed)
    noise = rng.normal(0.0, 0.0125, 200)
    assert set(_judged(g, 0.5 + noise)) == {GripState.HELD}
    creep = 0.5 + noise + np.clip((np.arange(200) - 100) / 20.0, 0.0, 1.0) * 0.1
    states = _judged(g, creep)
    assert set(states[:100]) == {GripState.HELD} and GripState.WEAK in states[100:], states
    shut = 0.5 + noise + np.where(np.arange(200) >= 100, 0.5, 0.0)
    assert _judged(g, shut)[-1] is GripState.SLIPPED


def test_without_noise_the_medians_see_the_drift_at_once() -> None:
    g = GripMonitor(weak_drift=0.02)
    steady = np.full(20, 0.5)
    assert set(_judged(g, steady)) == {GripState.HELD}
    states = _judged(g, np.concatenate([steady, np.full(10, 0.53)]))
    assert states[19] is GripState.HELD and states[-1] is GripState.WEAK
    assert GripState.WEAK in states[20:24]  # within the window's half: 0.2 s at 10 Hz


# ------------------------------------------------------------------------------------------ episodes


class _MisplacedFirstLook(ReferencePolicy):
    """Believes the cube 8 cm from where it is on its first look only: the first grasp closes on nothing."""

    def _perceive(self, obs: Observation) -> None:
        super()._perceive(obs)
        if not self._events and self._estimate is not None:
            self._estimate.position[0] += 0.08


def _phase_times(
    runner: EpisodeRunner, policy: ReferencePolicy, seed: int
) -> tuple[EpisodeResult, dict[Phase, float]]:
    """Run an episode; the time spent in each phase (s)."""
    act = policy.act
    spent: dict[Phase, float] = {}

    def timed(obs: Observation) -> Action:
        action = act(obs)
        spent[policy.phase] = spent.get(policy.phase, 0.0) + runner.cell.dt * round(
            policy._info.control_period / runner.cell.dt  # type: ignore[union-attr]
        )
        return action

    policy.act = timed  # type: ignore[method-assign]
    return runner.run(policy, seed, camera_rate_hz=CAMERA_HZ), spent


def test_empty_grasp_is_seen_and_retried(runner: EpisodeRunner) -> None:
    policy = _MisplacedFirstLook()
    result = runner.run(policy, 1, camera_rate_hz=CAMERA_HZ)
    whats = [w for _, w in policy.events]
    assert whats[0] == "empty", policy.events
    assert policy.regrasps == 1 and "grasped" in whats
    assert result.success, result


def test_slip_while_carrying_is_seen_and_the_object_regrasped(runner: EpisodeRunner) -> None:
    world = runner.world
    body = world.model.body("cube").id
    policy = ReferencePolicy()
    act = policy.act

    def pulled_once(obs: Observation) -> Action:
        # 40 N down on the cube while it is first lifted (far beyond the grip): it is pulled out.
        lifting = policy.phase in (Phase.TEST_LIFT, Phase.LIFT) and policy.regrasps == 0
        world.data.xfrc_applied[body] = (0, 0, -40.0, 0, 0, 0) if lifting else 0.0
        return act(obs)

    policy.act = pulled_once  # type: ignore[method-assign]
    try:
        result = runner.run(policy, 2, camera_rate_hz=CAMERA_HZ)
    finally:
        world.data.xfrc_applied[body] = 0.0
    whats = [w for _, w in policy.events]
    assert whats == ["grasped", "slipped", "grasped"], policy.events
    assert policy.regrasps == 1
    assert policy.carry_scale == pytest.approx(0.5)  # carried slower after the slip
    assert result.success, result


def test_weak_grip_carries_slower(runner: EpisodeRunner) -> None:
    firm, firm_t = _phase_times(runner, ReferencePolicy(), 3)
    # A monitor that calls any creep of the fingers weak: the carry then runs at weak_grip_speed.
    touchy = ReferencePolicy(ReferenceParams(weak_grip_speed=0.4), grip=GripMonitor(weak_drift=1e-9))
    weak, weak_t = _phase_times(runner, touchy, 3)
    assert firm.success and weak.success, (firm, weak)
    assert "weak" in [w for _, w in touchy.events] and touchy.carry_scale == 0.4
    # The transfer (about 0.5 m) is speed-bound: it takes about 1 / 0.4 as long.
    ratio = weak_t[Phase.TRANSFER] / firm_t[Phase.TRANSFER]
    assert 1.8 < ratio < 3.0, (firm_t, weak_t)


def test_no_regrasps_left_gives_up_open(runner: EpisodeRunner) -> None:
    policy = _MisplacedFirstLook(ReferenceParams(max_regrasps=0))
    result = runner.run(policy, 1, camera_rate_hz=CAMERA_HZ, max_steps=80)
    assert [w for _, w in policy.events] == ["empty"] and policy.done
    assert not result.success
    assert result.metrics["object_lifted"] == 0.0


def test_sweep_on_the_bundled_world_succeeds(tmp_path: Path) -> None:
    novar = load_variation_config(ROOT / "config" / "variations.yaml").only()
    cfg = SweepConfig(
        world=WORLD,
        policies=(PolicySpec(name="reference"),),
        variations=novar,
        n=1,
        method="random",
        seed=0,
        repeats=2,
        camera_rate_hz=CAMERA_HZ,
    )
    summary = run_sweep(cfg, tmp_path / "s.sqlite", workers=1, progress=False)
    assert (summary.total, summary.errors) == (2, 0)
    with ResultsStore(tmp_path / "s.sqlite") as store:
        rows = list(store.rows())
    assert [r.success for r in rows] == [True, True], [(r.reason, r.metrics) for r in rows]
    for r in rows:
        # Success means resting in the bin: on target, released, still, for the settle time.
        assert r.metrics["object_to_target_m"] <= 0.06
        assert r.metrics["object_settled_s"] >= 0.5
        assert r.metrics["object_speed_m_s"] <= 0.02
    assert len({r.seed for r in rows}) == 2


def _top_down_view() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A camera 1 m above the table looking straight down (optical z = world -z), 500 px focal length:
    intrinsics, pose, and an empty grey 320 x 240 frame with the table at 1 m."""
    k = np.array([[500.0, 0.0, 160.0], [0.0, 500.0, 120.0], [0.0, 0.0, 1.0]])
    pose = np.eye(4)
    pose[:3, :3] = np.diag([1.0, -1.0, -1.0])
    pose[2, 3] = 1.0
    return k, pose, np.full((240, 320, 3), 90, np.uint8), np.full((240, 320), 1.0, np.float32)


def test_cube_is_the_blob_of_its_size_not_the_largest() -> None:
    from r2s2r_eval.policies.reference.perception import estimate_cube

    k, pose, rgb, depth = _top_down_view()
    red = (230, 38, 25)
    rgb[20:140, 20:200] = red  # a large red thing (an arm link), 36 x 24 cm, 5 cm tall
    depth[20:140, 20:200] = 0.95
    rgb[180:201, 250:271] = red  # the 4 cm cube: 21 px at 0.96 m
    depth[180:201, 250:271] = 0.96
    found = estimate_cube(rgb, depth, k, pose, (0.9, 0.15, 0.1), 0.02)
    assert found is not None
    # Pixel (260, 190) at 0.96 m: x = 100 * 0.96 / 500, y = -(70 * 0.96 / 500); top at 0.04 m.
    assert np.allclose(found.position, [0.192, -0.1344, 0.02], atol=0.003), found
    rgb[180:201, 250:271] = 90  # without the cube, the large blob is not taken for it
    depth[180:201, 250:271] = 1.0
    assert estimate_cube(rgb, depth, k, pose, (0.9, 0.15, 0.1), 0.02) is None


def test_a_cube_sized_blob_said_to_be_on_the_arm_is_passed_over() -> None:
    from r2s2r_eval.policies.reference.perception import estimate_cube

    k, pose, rgb, depth = _top_down_view()
    red = (230, 38, 25)
    rgb[40:62, 40:62] = red  # a cube-sized red part of an arm, 18 cm up, larger in the image
    depth[40:62, 40:62] = 0.82
    rgb[180:201, 250:271] = red  # the cube on the table
    depth[180:201, 250:271] = 0.96
    first = estimate_cube(rgb, depth, k, pose, (0.9, 0.15, 0.1), 0.02)
    assert first is not None and first.position[2] > 0.1  # without the arm's geometry: the arm part
    seen: list[np.ndarray] = []

    def on_arm(centre: np.ndarray) -> bool:
        seen.append(centre)
        return bool(centre[2] > 0.1)

    found = estimate_cube(rgb, depth, k, pose, (0.9, 0.15, 0.1), 0.02, reject=on_arm)
    assert found is not None and np.allclose(found.position, [0.192, -0.1344, 0.02], atol=0.003), found
    assert len(seen) == 2


def test_pixels_of_an_arm_touching_the_cube_in_the_image_are_taken_out_first() -> None:
    from r2s2r_eval.policies.reference.perception import estimate_cube

    k, pose, rgb, depth = _top_down_view()
    red = (230, 38, 25)
    rgb[150:201, 200:250] = red  # an arm link of the cube's colour whose edge touches the cube's
    depth[150:201, 200:250] = 0.90
    rgb[180:201, 250:271] = red  # the cube on the table
    depth[180:201, 250:271] = 0.96
    # One blob of both: wider than a cube, so nothing is found.
    assert estimate_cube(rgb, depth, k, pose, (0.9, 0.15, 0.1), 0.02) is None
    arm = np.zeros(depth.shape, dtype=bool)
    arm[150:201, 200:250] = True

    def on_arm(v: np.ndarray, u: np.ndarray) -> np.ndarray:
        return arm[v, u]

    found = estimate_cube(rgb, depth, k, pose, (0.9, 0.15, 0.1), 0.02, drop=on_arm)
    assert found is not None and np.allclose(found.position, [0.192, -0.1344, 0.02], atol=0.003), found


def test_the_grasp_turns_to_a_face_pair_the_wrist_reaches() -> None:
    """An arm whose wrist stops short of the nearest face pair grasps the cube by the next one."""
    from r2s2r_eval.policies.reference.policy import _grasp_yaw
    from r2s2r_eval.policies.scripted.motion import tool_yaw

    class Wrist:
        """IK that misses the goal by 3 cm at tool yaws within 0.3 rad of 1.6 rad (its stop)."""

        def ik(self, target: np.ndarray, rot: np.ndarray, q0: np.ndarray, iterations: int) -> tuple:
            yaw = tool_yaw(rot)
            blocked = abs(math.atan2(math.sin(yaw - 1.6), math.cos(yaw - 1.6))) < 0.3
            return q0, 0.03 if blocked else 0.0

    cube, q0 = np.array([0.4, 0.0, 0.77]), np.zeros(6)
    assert _grasp_yaw(Wrist(), cube, (0.77, 0.89), 0.0, 0.0, q0) == pytest.approx(0.0)  # nearest reached
    # Nearest to 1.5 rad is pi/2, behind the stop; the next quarter turn, pi, is reached.
    assert _grasp_yaw(Wrist(), cube, (0.77, 0.89), 0.0, 1.5, q0) == pytest.approx(math.pi)


def test_skipped_steps_do_not_stretch_the_motion(runner: EpisodeRunner) -> None:
    """A node that holds the policy on stale observations skips act() calls; motions keep their speed."""
    base = runner.run(ReferencePolicy(), 2, camera_rate_hz=CAMERA_HZ)
    policy = ReferencePolicy()
    act = policy.act
    calls = {"n": 0}
    last: list[Action] = []

    def held(obs: Observation) -> Action:
        # Four of every ten control periods are held (the node does not call the policy), as under load.
        calls["n"] += 1
        if last and calls["n"] % 10 >= 6:
            return last[0]
        last[:] = [act(obs)]
        return last[0]

    policy.act = held  # type: ignore[method-assign]
    skipped = runner.run(policy, 2, camera_rate_hz=CAMERA_HZ)
    assert base.success and skipped.success, (base, skipped)
    # Moving one control period per call would take ~1/0.6 = 1.67x as long; catching up keeps it close.
    assert skipped.duration_s <= 1.25 * base.duration_s, (base.duration_s, skipped.duration_s)


def test_images_needed_fresh_only_while_perceiving(runner: EpisodeRunner) -> None:
    """The node's watchdog holds on a lagging camera only at the steps where the policy looks."""
    policy = ReferencePolicy()
    assert policy.fresh_required() == policy.requires  # before an episode: everything
    act = policy.act
    seen: list[tuple[Phase, frozenset[ObservationKind]]] = []

    def recording(obs: Observation) -> Action:
        phase = policy.phase
        fresh = policy.fresh_required()
        seen.append((phase, fresh))
        return act(obs)

    policy.act = recording  # type: ignore[method-assign]
    assert runner.run(policy, 3, camera_rate_hz=CAMERA_HZ).success
    images = {ObservationKind.RGB, ObservationKind.DEPTH}
    assert seen[0][0] is Phase.PERCEIVE and images <= seen[0][1]
    later = [fresh for phase, fresh in seen if phase is not Phase.PERCEIVE]
    assert later and all(fresh == {ObservationKind.JOINT_STATE} for fresh in later)
