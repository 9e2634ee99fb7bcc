"""Unit tests of r2s2r_eval.analysis.metrics: known values, edge cases, bounds, batch == element-wise."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from r2s2r_eval.analysis.metrics import (
    CROSS_POLICY_METRICS,
    METRIC_BOUNDS,
    bootstrap_intervals,
    episodes_from_counts,
    kendall,
    mmrv,
    pearson,
    spearman,
    success_rate,
    trials_to_separate,
    wilson_interval,
)
from scipy import stats

# The worked example of tests/data/sim_real_example.csv (4 policies, 50 trials each side).
EX_SIM = [0.80, 0.60, 0.30, 0.10]
EX_REAL = [0.70, 0.74, 0.40, 0.16]


def _tied_rates(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Rates on a coarse grid (k/5) so that ties are common."""
    return rng.integers(0, 6, size=shape) / 5.0


def _mmrv_reference(sim, real, less=True):
    """Direct double loop over the SIMPLER equation (independent of the vectorized code)."""
    n = len(sim)
    total = 0.0
    for i in range(n):
        worst = 0.0
        for j in range(n):
            if less:
                flip = (sim[i] < sim[j]) != (real[i] < real[j])
            else:
                flip = (sim[i] > sim[j]) != (real[i] > real[j])
            if flip:
                worst = max(worst, abs(real[i] - real[j]))
        total += worst
    return total / n


# ------------------------------------------------------------------------------------------------
# Wilson interval and success rate
# ------------------------------------------------------------------------------------------------
def test_wilson_known_value():
    # 8/10 at 95 %: the textbook Wilson interval is (0.4902, 0.9433).
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.49016, abs=1e-4)
    assert high == pytest.approx(0.94332, abs=1e-4)


def test_wilson_edges():
    low, high = wilson_interval(0, 20)
    assert low == 0.0 and 0.0 < high < 1.0
    low, high = wilson_interval(20, 20)
    assert high == 1.0 and 0.0 < low < 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)
    # Symmetric: k successes and n-k failures mirror each other.
    low3, high3 = wilson_interval(3, 17)
    low14, high14 = wilson_interval(14, 17)
    assert low3 == pytest.approx(1 - high14) and high3 == pytest.approx(1 - low14)


def test_wilson_contains_rate_and_widens_with_confidence():
    k = np.arange(0, 31)
    n = np.full_like(k, 30)
    low90, high90 = wilson_interval(k, n, confidence=0.90)
    low99, high99 = wilson_interval(k, n, confidence=0.99)
    p = k / n
    assert np.all((0 <= low99) & (low99 <= low90) & (low90 <= p) & (p <= high90) & (high90 <= high99))
    assert np.all(high99 <= 1)


def test_wilson_array_equals_elementwise():
    k = np.array([[0, 1, 5], [7, 10, 0]])
    n = np.array([[10, 10, 10], [10, 10, 0]])
    low, high = wilson_interval(k, n, confidence=0.9)
    assert low.shape == high.shape == k.shape
    for idx in np.ndindex(k.shape):
        assert (low[idx], high[idx]) == wilson_interval(int(k[idx]), int(n[idx]), confidence=0.9)


def test_success_rate():
    assert success_rate(3, 4) == 0.75
    assert np.isnan(success_rate(0, 0))
    rates = success_rate([0, 2, 0], [5, 4, 0])
    np.testing.assert_array_equal(rates[:2], [0.0, 0.5])
    assert np.isnan(rates[2])
    for i, (k, n) in enumerate([(0, 5), (2, 4)]):
        assert rates[i] == success_rate(k, n)


@pytest.mark.parametrize(
    ("k", "n", "kwargs", "match"),
    [
        (5, 4, {}, "successes <= trials"),
        (-1, 4, {}, "successes <= trials"),
        (1.5, 4, {}, "whole numbers"),
        (np.nan, 4, {}, "finite"),
        (1, 4, {"confidence": 1.0}, "confidence"),
        (1, 4, {"confidence": 0.0}, "confidence"),
    ],
)
def test_wilson_bad_input(k, n, kwargs, match):
    with pytest.raises(ValueError, match=match):
        wilson_interval(k, n, **kwargs)


def test_episodes_from_counts():
    ep = episodes_from_counts(3, 5)
    np.testing.assert_array_equal(ep, [1, 1, 1, 0, 0])
    assert episodes_from_counts(0, 0).size == 0
    with pytest.raises(ValueError, match="successes <= trials"):
        episodes_from_counts(6, 5)


# ------------------------------------------------------------------------------------------------
# Cross-policy metrics: worked example (computed by hand, not by the code under test)
# ------------------------------------------------------------------------------------------------
def test_worked_example_by_hand():
    # sim  = [.80, .60, .30, .10]  mean .45  -> deviations [ .35,  .15, -.15, -.35]
    # real = [.70, .74, .40, .16]  mean .50  -> deviations [ .20,  .24, -.10, -.34]
    # Σ ds·dr = .07 + .036 + .015 + .119 = .24 ; Σ ds² = .29 ; Σ dr² = .2232
    # Pearson = .24 / sqrt(.29 · .2232) = .24 / .254417 = 0.94333
    assert pearson(sim=EX_SIM, real=EX_REAL) == pytest.approx(0.94333, abs=1e-5)
    # Only the pair (a, b) is ordered differently (sim a > b, real a < b); gap in REAL = |.70 − .74|.
    # max_j violation: a .04, b .04, c 0, d 0 -> MMRV = .08 / 4 = 0.02
    assert mmrv(sim=EX_SIM, real=EX_REAL) == pytest.approx(0.02, abs=1e-12)
    # Ranks sim [4,3,2,1], real [3,4,2,1]: Σd² = 2 -> Spearman = 1 − 6·2/(4·15) = 0.8
    assert spearman(sim=EX_SIM, real=EX_REAL) == pytest.approx(0.8)
    # 6 pairs, 1 discordant -> Kendall = (5 − 1)/6
    assert kendall(sim=EX_SIM, real=EX_REAL) == pytest.approx(4 / 6)


# ------------------------------------------------------------------------------------------------
# MMRV: argument roles and ties
# ------------------------------------------------------------------------------------------------
def test_mmrv_measures_the_real_gap():
    # One swapped pair; the violation is the REAL gap: .1 one way, .8 the other way round.
    assert mmrv(sim=[0.1, 0.9], real=[0.5, 0.4]) == pytest.approx(0.1)
    assert mmrv(sim=[0.5, 0.4], real=[0.1, 0.9]) == pytest.approx(0.8)


def test_mmrv_perfect_ranking_is_zero():
    assert mmrv(sim=[0.1, 0.5, 0.9], real=[0.0, 0.2, 1.0]) == 0.0


def test_mmrv_ties_in_sim_less_vs_greater():
    # sim all tied, real [.1, .2, .9].
    # "less" (paper Eq.): i violated by j iff R_i < R_j -> i=0: max(.1, .8) = .8 ; i=1: .7 ; i=2: 0
    #   MMRV = 1.5 / 3 = 0.5
    # "greater" (SimplerEnv code): i violated by j iff R_i > R_j -> i=0: 0 ; i=1: .1 ; i=2: max(.8, .7)
    #   MMRV = .9 / 3 = 0.3
    assert mmrv(sim=[0.5, 0.5, 0.5], real=[0.1, 0.2, 0.9]) == pytest.approx(0.5)
    assert mmrv(sim=[0.5, 0.5, 0.5], real=[0.1, 0.2, 0.9], comparison="greater") == pytest.approx(0.3)
    # Two policies tied in sim: one of the two is charged either way -> .6 / 2 = 0.3 for both rules.
    assert mmrv(sim=[0.5, 0.5], real=[0.2, 0.8]) == pytest.approx(0.3)
    assert mmrv(sim=[0.5, 0.5], real=[0.2, 0.8], comparison="greater") == pytest.approx(0.3)
    # Tie in real only: the magnitude |R_i − R_j| is 0, so no violation.
    assert mmrv(sim=[0.2, 0.8], real=[0.5, 0.5]) == 0.0


def test_mmrv_constant_inputs():
    real = np.array([0.1, 0.4, 0.3, 0.9])
    # Constant sim ("less"): every policy is charged its gap to the real-best: mean(max R − R).
    assert mmrv(sim=np.full(4, 0.5), real=real) == pytest.approx(np.mean(real.max() - real))
    assert mmrv(sim=real, real=np.full(4, 0.5)) == 0.0


def test_mmrv_matches_reference_loop_with_ties():
    rng = np.random.default_rng(1)
    for _ in range(50):
        n = int(rng.integers(2, 8))
        s, r = _tied_rates(rng, (n,)), _tied_rates(rng, (n,))
        assert mmrv(sim=s, real=r) == pytest.approx(_mmrv_reference(s, r, less=True), abs=1e-12)
        assert mmrv(sim=s, real=r, comparison="greater") == pytest.approx(
            _mmrv_reference(s, r, less=False), abs=1e-12
        )


def test_mmrv_rules_agree_without_ties():
    rng = np.random.default_rng(2)
    s, r = rng.random((200, 6)), rng.random((200, 6))
    np.testing.assert_allclose(mmrv(sim=s, real=r), mmrv(sim=s, real=r, comparison="greater"))


def test_mmrv_unknown_comparison():
    with pytest.raises(ValueError, match="comparison must be"):
        mmrv(sim=EX_SIM, real=EX_REAL, comparison="le")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------
# Correlations: constant input, agreement with scipy
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [pearson, spearman, kendall])
def test_correlation_of_constant_is_nan(fn):
    assert np.isnan(fn(sim=[0.3, 0.3, 0.3], real=[0.1, 0.2, 0.3]))
    assert np.isnan(fn(sim=[0.1, 0.2, 0.3], real=[0.1, 0.1, 0.1]))
    assert np.isnan(fn(sim=[0.1, 0.1, 0.1], real=[0.1, 0.1, 0.1]))


@pytest.mark.parametrize("fn", [pearson, spearman, kendall])
def test_correlation_perfect_and_reversed(fn):
    assert fn(sim=[0.1, 0.5, 0.9], real=[0.2, 0.4, 0.6]) == pytest.approx(1.0)
    assert fn(sim=[0.1, 0.5, 0.9], real=[0.6, 0.4, 0.2]) == pytest.approx(-1.0)


def test_correlations_match_scipy_with_ties():
    rng = np.random.default_rng(3)
    for _ in range(40):
        n = int(rng.integers(3, 9))
        s, r = _tied_rates(rng, (n,)), _tied_rates(rng, (n,))
        if np.ptp(s) == 0 or np.ptp(r) == 0:
            continue
        assert pearson(sim=s, real=r) == pytest.approx(stats.pearsonr(s, r)[0], abs=1e-12)
        assert spearman(sim=s, real=r) == pytest.approx(stats.spearmanr(s, r)[0], abs=1e-12)
        assert kendall(sim=s, real=r) == pytest.approx(stats.kendalltau(s, r)[0], abs=1e-12)


# ------------------------------------------------------------------------------------------------
# Contract over the registry: batch == element-wise, bounds, bad input
# ------------------------------------------------------------------------------------------------
def test_registry_has_bounds():
    assert set(CROSS_POLICY_METRICS) == set(METRIC_BOUNDS) == {"pearson", "mmrv", "spearman", "kendall"}


@pytest.mark.parametrize("name", sorted(CROSS_POLICY_METRICS))
def test_batch_equals_elementwise_and_bounds(name):
    fn = CROSS_POLICY_METRICS[name]
    rng = np.random.default_rng(4)
    s, r = _tied_rates(rng, (3, 7, 5)), _tied_rates(rng, (3, 7, 5))
    batch = fn(sim=s, real=r)
    assert batch.shape == (3, 7)
    for idx in np.ndindex(3, 7):
        one = fn(sim=s[idx], real=r[idx])
        assert isinstance(one, float)
        np.testing.assert_equal(batch[idx], one)  # nan == nan here
    lo, hi = METRIC_BOUNDS[name]
    finite = batch[np.isfinite(batch)]
    assert finite.size > 0 and np.all((finite >= lo) & (finite <= hi))


@pytest.mark.parametrize("name", sorted(CROSS_POLICY_METRICS))
@pytest.mark.parametrize(
    ("sim", "real", "match"),
    [
        ([0.5], [0.5], "at least 2 policies"),
        ([0.1, 0.2], [0.1, 0.2, 0.3], "same shape"),
        ([0.1, 1.2], [0.1, 0.2], "sim success rates must be in"),
        ([0.1, 0.2], [-0.1, 0.2], "real success rates must be in"),
        ([0.1, np.nan], [0.1, 0.2], "sim success rates must be in"),
    ],
)
def test_cross_policy_bad_input(name, sim, real, match):
    with pytest.raises(ValueError, match=match):
        CROSS_POLICY_METRICS[name](sim=sim, real=real)


# ------------------------------------------------------------------------------------------------
# Bootstrap
# ------------------------------------------------------------------------------------------------
def _example_episodes():
    counts_sim, counts_real = [40, 30, 15, 5], [35, 37, 20, 8]
    return (
        [episodes_from_counts(k, 50) for k in counts_sim],
        [episodes_from_counts(k, 50) for k in counts_real],
    )


def test_bootstrap_is_seeded():
    sims, reals = _example_episodes()
    a = bootstrap_intervals(
        sim_episodes=sims, real_episodes=reals, rng=np.random.default_rng(7), resamples=300
    )
    b = bootstrap_intervals(
        sim_episodes=sims, real_episodes=reals, rng=np.random.default_rng(7), resamples=300
    )
    c = bootstrap_intervals(
        sim_episodes=sims, real_episodes=reals, rng=np.random.default_rng(8), resamples=300
    )
    assert a == b
    assert a != c
    assert set(a) == set(CROSS_POLICY_METRICS)
    for name, iv in a.items():
        lo, hi = METRIC_BOUNDS[name]
        assert lo <= iv.low <= iv.high <= hi


def test_bootstrap_resamples_episodes_per_policy():
    # A metric that reads policy 0's sim rate: its bootstrap spread must be the binomial one of
    # 100 episodes at p = .5, i.e. about .5 ± 1.96 · .05.
    sims = [episodes_from_counts(50, 100), episodes_from_counts(10, 100)]
    reals = [episodes_from_counts(1, 3), episodes_from_counts(2, 3)]
    iv = bootstrap_intervals(
        sim_episodes=sims,
        real_episodes=reals,
        rng=np.random.default_rng(0),
        resamples=4000,
        metrics={"sim0": lambda *, sim, real: sim[..., 0]},
    )["sim0"]
    assert iv.low == pytest.approx(0.402, abs=0.02)
    assert iv.high == pytest.approx(0.598, abs=0.02)


def test_bootstrap_deterministic_outcomes_and_undefined_fraction():
    # All-success / all-failure episodes never change under resampling: the interval is a point.
    sims = [np.ones(5), np.zeros(5), np.ones(4)]
    reals = [np.ones(3), np.zeros(6), np.zeros(2)]
    out = bootstrap_intervals(
        sim_episodes=sims, real_episodes=reals, rng=np.random.default_rng(0), resamples=50
    )
    assert out["mmrv"].low == out["mmrv"].high == mmrv(sim=[1, 0, 1], real=[1, 0, 0])
    # A constant side makes Pearson undefined in every resample.
    const = bootstrap_intervals(
        sim_episodes=[np.ones(4), np.ones(4)],
        real_episodes=[np.ones(4), np.zeros(4)],
        rng=np.random.default_rng(0),
        resamples=20,
    )
    assert const["pearson"].undefined_fraction == 1.0
    assert np.isnan(const["pearson"].low) and np.isnan(const["pearson"].high)


@pytest.mark.parametrize(
    ("sims", "reals", "kwargs", "match"),
    [
        ([[1, 0], [1]], [[1]], {}, "same policies"),
        ([[1, 0]], [[1]], {}, "at least 2 policies"),
        ([[1, 0], []], [[1], [0]], {}, "no episodes"),
        ([[1, 0], [2]], [[1], [0]], {}, "Bernoulli"),
        ([[1, 0], [1]], [[1], [0]], {"resamples": 0}, "resamples"),
        ([[1, 0], [1]], [[1], [0]], {"confidence": 1.5}, "confidence"),
    ],
)
def test_bootstrap_bad_input(sims, reals, kwargs, match):
    with pytest.raises(ValueError, match=match):
        bootstrap_intervals(sim_episodes=sims, real_episodes=reals, rng=np.random.default_rng(0), **kwargs)


# ------------------------------------------------------------------------------------------------
# Trials to separate two policies
# ------------------------------------------------------------------------------------------------
def test_trials_known_value():
    # p1 = .5, p2 = .6, alpha = .05 (z = 1.959964), power = .8 (z = 0.841621):
    # p̄ = .55, sqrt(2·.55·.45) = .703562, sqrt(.25 + .24) = .7
    # n = (1.959964·.703562 + .841621·.7)² / .01 = 1.968091² / .01 = 387.33 -> 388
    assert trials_to_separate(0.5, 0.6) == 388.0
    assert trials_to_separate(0.6, 0.5) == 388.0


def test_trials_edges_and_monotone():
    assert trials_to_separate(0.3, 0.3) == np.inf
    assert trials_to_separate(0.0, 1.0) == 2.0  # (1.96 · sqrt(.5))² = 1.92 -> 2
    gaps = trials_to_separate(0.5, np.array([0.55, 0.6, 0.7, 0.9]))
    assert np.all(np.diff(gaps) < 0)
    assert trials_to_separate(0.5, 0.6, power=0.9) > trials_to_separate(0.5, 0.6)
    assert trials_to_separate(0.5, 0.6, alpha=0.01) > trials_to_separate(0.5, 0.6)


def test_trials_array_equals_elementwise():
    p1 = np.array([[0.1, 0.5], [0.9, 0.3]])
    p2 = np.array([[0.2, 0.5], [0.6, 0.35]])
    out = trials_to_separate(p1, p2, alpha=0.1, power=0.9)
    for idx in np.ndindex(p1.shape):
        assert out[idx] == trials_to_separate(float(p1[idx]), float(p2[idx]), alpha=0.1, power=0.9)


def test_trials_achieve_power_by_simulation():
    # At the returned n, the pooled two-proportion z-test rejects about `power` of the time.
    p1, p2 = 0.3, 0.5
    n = int(trials_to_separate(p1, p2))
    rng = np.random.default_rng(5)
    k1, k2 = rng.binomial(n, p1, 20000), rng.binomial(n, p2, 20000)
    pooled = (k1 + k2) / (2 * n)
    z = (k2 - k1) / n / np.sqrt(pooled * (1 - pooled) * 2 / n)
    power = np.mean(np.abs(z) > stats.norm.ppf(0.975))
    assert power == pytest.approx(0.8, abs=0.03)


@pytest.mark.parametrize(
    ("p1", "p2", "kwargs", "match"),
    [
        (1.2, 0.5, {}, r"in \[0, 1\]"),
        (0.5, np.nan, {}, r"in \[0, 1\]"),
        (0.5, 0.6, {"alpha": 0.0}, "alpha"),
        (0.5, 0.6, {"power": 1.0}, "power"),
    ],
)
def test_trials_bad_input(p1, p2, kwargs, match):
    with pytest.raises(ValueError, match=match):
        trials_to_separate(p1, p2, **kwargs)


def test_module_exports_exist():
    import r2s2r_eval.analysis.metrics as module

    for name in module.__all__:
        assert hasattr(module, name)
    assert list(itertools.islice(CROSS_POLICY_METRICS, 4)) == ["pearson", "mmrv", "spearman", "kendall"]
