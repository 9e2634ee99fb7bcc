"""Failure regions: binned success, the shallow tree and its rules, sim-real agreement, next trials."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from r2s2r_eval.analysis import failure_regions as fr
from r2s2r_eval.analysis import failure_tree as ft


def _threshold_data(n: int = 200, seed: int = 0, thr: float = 0.62) -> tuple[np.ndarray, np.ndarray]:
    """Two parameters; the policy fails exactly when friction < thr (noise column irrelevant)."""
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.uniform(0.3, 1.2, n), rng.uniform(-1, 1, n)])
    return x, x[:, 0] >= thr


NAMES = ("physics.friction_scale", "camera.dx")


def test_tree_finds_threshold_within_a_bin():
    x, y = _threshold_data()
    tree = ft.fit_tree(x, y, max_depth=2)
    assert tree.feature == 0
    # Within one gap between neighbouring samples, i.e. finer than any quantile bin.
    below, above = x[x[:, 0] < 0.62, 0].max(), x[x[:, 0] >= 0.62, 0].min()
    assert below < tree.threshold <= above
    rules = ft.failure_rules(tree, NAMES)
    assert len(rules) == 1 and rules[0].successes == 0 and rules[0].trials == int((~y).sum())
    assert rules[0].text().startswith("fails when physics.friction_scale < 0.6")
    assert f"n={int((~y).sum())}, success 0/" in rules[0].text()
    assert np.array_equal(ft.predict_proba(tree, x) >= 0.5, y)
    imp = ft.feature_importance(tree, 2)
    assert imp[0] > 0 and imp[1] == 0


def test_tree_edge_cases():
    x, y = _threshold_data(20)
    leaf = ft.fit_tree(x, np.ones(20, bool))
    assert leaf.is_leaf and leaf.rate == 1.0 and ft.failure_rules(leaf, NAMES) == []
    assert ft.fit_tree(x, y, max_depth=0).is_leaf
    all_fail = ft.fit_tree(x, np.zeros(20, bool))
    assert ft.failure_rules(all_fail, NAMES)[0].text() == "fails everywhere (n=20, success 0/20 = 0.00)"
    assert ft.fit_tree(np.empty((6, 0)), y[:6]).is_leaf  # no parameters at all
    with pytest.raises(ValueError, match="max_depth"):
        ft.fit_tree(x, y, max_depth=4)
    with pytest.raises(ValueError, match="finite"):
        ft.fit_tree(np.where(x > 1, np.nan, x), y)
    with pytest.raises(ValueError, match="shape"):
        ft.fit_tree(x, y[:5])
    with pytest.raises(ValueError, match="no episodes"):
        ft.fit_tree(np.empty((0, 2)), np.empty(0, bool))
    with pytest.raises(ValueError, match="min_leaf"):
        ft.fit_tree(x, y, min_leaf=0)


def test_tree_is_deterministic_and_respects_min_leaf():
    x, y = _threshold_data(60, seed=3)
    a, b = ft.fit_tree(x, y, min_leaf=7), ft.fit_tree(x, y, min_leaf=7)
    assert ft.tree_regions(a, NAMES) == ft.tree_regions(b, NAMES)
    assert all(r.trials >= 7 for r in ft.tree_regions(a, NAMES))


def _select(conditions, x: np.ndarray, names) -> np.ndarray:
    """Rows of ``x`` inside every condition: the region a rule stands for, evaluated independently."""
    inside = np.ones(x.shape[0], bool)
    for name, op, thr in conditions:
        col = x[:, list(names).index(name)]
        inside &= col < thr if op == "<" else col >= thr
    return inside


def test_rule_prints_one_interval_per_axis():
    rule = ft.Rule(
        conditions=(
            ("light", "<", 1.3),
            ("camera.dx", ">=", -0.5),
            ("light", "<", 0.585),
            ("light", ">=", 0.2),
        ),
        trials=12,
        successes=1,
    )
    assert rule.conditions == (("light", ">=", 0.2), ("light", "<", 0.585), ("camera.dx", ">=", -0.5))
    assert rule.text() == "fails when 0.2 <= light < 0.585 and camera.dx >= -0.5 (n=12, success 1/12 = 0.08)"
    assert ft.merge_conditions(rule.conditions) == rule.conditions  # merging twice changes nothing
    assert (
        ft.Rule(conditions=(("x", ">=", 0.1), ("x", ">=", 0.3)), trials=1, successes=0)
        .text()
        .startswith("fails when x >= 0.3 (")
    )


def test_merged_rule_selects_the_same_points():
    rng = np.random.default_rng(7)
    names = ("a", "b", "c")
    x = rng.uniform(-1, 1, (4000, 3))
    for _ in range(200):
        conds = []
        for _ in range(rng.integers(1, 7)):
            name = names[rng.integers(3)]
            conds.append((name, "<" if rng.random() < 0.5 else ">=", float(rng.uniform(-1, 1))))
        try:
            merged = ft.merge_conditions(conds)
        except ValueError:  # bounds that leave an axis empty: the original selects nothing either
            assert not _select(conds, x, names).any()
            continue
        assert np.array_equal(_select(merged, x, names), _select(conds, x, names)), conds
        assert len(merged) <= 2 * len({n for n, _, _ in conds})
        for name in names:  # at most one lower and one upper bound per axis
            ops = [op for n, op, _ in merged if n == name]
            assert ops in ([], ["<"], [">="], [">=", "<"])


def test_tree_rules_are_merged_and_contradictions_refused():
    # Fails only in a band of x: a depth-2 tree splits x twice on the path to the band.
    rng = np.random.default_rng(1)
    x = np.column_stack([rng.uniform(0, 1, 300), rng.uniform(0, 1, 300)])
    y = ~((x[:, 0] >= 0.3) & (x[:, 0] < 0.6))
    tree = ft.fit_tree(x, y, max_depth=2)
    (rule,) = ft.failure_rules(tree, ("x", "y"))
    assert [(n, op) for n, op, _ in rule.conditions] == [("x", ">="), ("x", "<")]
    assert re.match(r"fails when 0\.(29|30)\d* <= x < 0\.60\d* \(n=\d+, success 0/", rule.text()), rule.text()
    # Each merged leaf rule selects exactly the points the tree sends to that leaf.
    for leaf, region in zip(_leaves(tree), ft.tree_regions(tree, ("x", "y")), strict=True):
        reach = np.array([_leaf_of(tree, row) is leaf for row in x])
        assert np.array_equal(_select(region.conditions, x, ("x", "y")), reach)
    with pytest.raises(ValueError, match=r"conditions on x leave no value: >= 0.7 and < 0.5"):
        ft.merge_conditions([("x", "<", 0.5), ("x", ">=", 0.7)])
    with pytest.raises(ValueError, match="op must be '<' or '>='"):
        ft.merge_conditions([("x", "<=", 0.5)])


def _leaves(node: ft.Node) -> list[ft.Node]:
    """The tree's leaves left to right, the order of ``tree_regions``."""
    if node.is_leaf:
        return [node]
    assert node.left is not None and node.right is not None
    return _leaves(node.left) + _leaves(node.right)


def _leaf_of(tree: ft.Node, row: np.ndarray) -> ft.Node:
    node = tree
    while not node.is_leaf:
        assert node.left is not None and node.right is not None
        node = node.left if row[node.feature] < node.threshold else node.right
    return node


def test_binned_success_and_quantile_edges():
    values = np.arange(10.0)
    success = values >= 5
    edges = fr.quantile_edges(values, 2)
    b = fr.binned_success(values, success, edges=edges)
    assert list(b.trials) == [5, 5] and list(b.successes) == [0, 5]
    assert b.low[0] == 0.0 and b.high[1] == 1.0 and b.low[1] > 0.5 and b.high[0] < 0.5
    assert b.dropped == 0 and np.allclose(b.centres, [2.25, 6.75])
    # nan values are dropped and counted; a constant axis gives one bin; an empty bin is nan, (0, 1).
    b2 = fr.binned_success([1.0, np.nan, 1.0], [1, 0, 0], edges=fr.quantile_edges([1.0, 1.0], 4))
    assert b2.dropped == 1 and list(b2.trials) == [2]
    b3 = fr.binned_success([0.0, 0.1], [1, 1], edges=[0.0, 0.5, 1.0])
    assert math.isnan(b3.rate[1]) and (b3.low[1], b3.high[1]) == (0.0, 1.0)
    assert fr.quantile_edges([np.nan], 3).size == 0
    with pytest.raises(ValueError, match="edges"):
        fr.binned_success([1.0], [1], edges=[1.0])
    with pytest.raises(ValueError, match="n_bins"):
        fr.quantile_edges(values, 0)


def test_agreement_is_perfect_when_sim_equals_real():
    x, y = _threshold_data(120)
    a = fr.failure_agreement(x, y, x, y, NAMES, k=1)
    assert a.accuracy == 1.0 and a.knn_accuracy == 1.0 and a.iou == 1.0
    assert a.failure_recall == 1.0 and a.failure_precision == 1.0
    assert a.base_rate_accuracy == pytest.approx(max(y.mean(), 1 - y.mean()))
    assert a.features == NAMES and a.n_real == 120


def test_agreement_when_sim_is_wrong_and_overlap_edges():
    x, y = _threshold_data(120)
    shifted = x[:, 0] >= 0.9  # sim fails on a larger region than real
    a = fr.failure_agreement(x, shifted, x, y, NAMES)
    frac = np.mean(shifted == y)
    assert a.accuracy == pytest.approx(frac)
    assert 0 < a.iou < 1 and a.failure_recall == 1.0 and a.failure_precision < 1
    # Overlap edge cases: nothing fails anywhere -> undefined; one side empty -> 0; identical -> 1.
    ok = np.ones(120, bool)
    assert math.isnan(fr.failure_agreement(x, ok, x, ok, NAMES).iou)
    assert fr.failure_agreement(x, ok, x, y, NAMES).iou == 0.0
    assert math.isnan(fr.failure_agreement(x, y, x, ok, NAMES).failure_recall)
    assert math.isnan(fr.region_iou([False, False], [False, False]))
    assert fr.region_iou([True, False], [False, False]) == 0.0
    assert fr.region_iou([True, True, False], [True, False, False]) == 0.5
    with pytest.raises(ValueError, match="same shape"):
        fr.region_iou([True], [True, False])
    with pytest.raises(ValueError, match="need sim and real"):
        fr.failure_agreement(x, y, x[:0], y[:0], NAMES)


def test_missing_and_constant_columns_are_not_used():
    x, y = _threshold_data(40)
    extra = np.column_stack([x, np.full(40, 2.0), np.where(np.arange(40) % 2, np.nan, 1.0)])
    mask = fr.usable_features(extra)
    assert list(mask) == [True, True, False, False]
    a = fr.failure_agreement(extra, y, extra, y, (*NAMES, "const", "holey"))
    assert a.features == NAMES and a.accuracy == 1.0


def test_knn_and_entropy():
    train = np.array([[0.0], [1.0], [2.0], [3.0]])
    ty = np.array([0, 0, 1, 1])
    assert list(fr.knn_proba(train, ty, [[0.1], [2.9]], k=1)) == [0.0, 1.0]
    assert list(fr.knn_proba(train, ty, [[1.4]], k=2)) == [0.5]
    assert list(fr.knn_proba(train, ty, [[1.4]], k=99)) == [0.5]
    # Array result equals element-wise result.
    q = np.array([[0.2], [1.6], [2.2]])
    assert np.array_equal(
        fr.knn_proba(train, ty, q, k=3), [fr.knn_proba(train, ty, r[None], k=3)[0] for r in q]
    )
    h = fr.binary_entropy([0.0, 0.5, 1.0, 0.25])
    assert h[0] == 0 and h[1] == 1 and h[2] == 0 and h[3] == pytest.approx(0.811278, abs=1e-6)
    with pytest.raises(ValueError, match="k must"):
        fr.knn_proba(train, ty, q, k=0)
    with pytest.raises(ValueError, match="finite"):
        fr.knn_proba(train, ty, [[np.nan]])


def test_next_trials_ranks_disagreement_and_uncertainty():
    x = np.linspace(0, 1, 21)[:, None]
    sim_y = x[:, 0] >= 0.5
    real_y = x[:, 0] >= 0.7  # real fails more: sim and real disagree on [0.5, 0.7)
    cands = fr.next_trials(x, sim_y, x, real_y, x, k=1, top=5)
    assert cands and all(c.reason == "disagree" and c.priority == 1.0 for c in cands)
    assert all(0.5 <= x[c.index, 0] < 0.7 for c in cands)
    # Identical sides: only the sim-uncertain points near the threshold are listed.
    same = fr.next_trials(x, sim_y, x, sim_y, x, k=4)
    assert same and all(c.reason == "uncertain" and 0.3 < x[c.index, 0] < 0.7 for c in same)
    # No real episodes: entropy alone.
    alone = fr.next_trials(x, sim_y, x[:0], sim_y[:0], x, k=4)
    assert alone and all(math.isnan(c.p_real) for c in alone)
    with pytest.raises(ValueError, match="top"):
        fr.next_trials(x, sim_y, x, sim_y, x, top=0)


def test_paired_agreement_counts_matches_and_baselines() -> None:
    real = [("a", 1, True), ("a", 2, False), ("a", 3, True), ("b", 1, False), ("b", 9, True)]
    sim = [("a", 1, True), ("a", 2, True), ("a", 3, True), ("b", 1, False), ("b", 2, True)]
    got = fr.paired_agreement(real, sim)
    assert got.n == 4 and got.unmatched == 1  # ("b", 9) has no sim partner
    assert got.accuracy == pytest.approx(3 / 4)  # ("a", 2) disagrees
    # majority sim outcome: a -> success (3/3 right on 2 of 3), b -> failure (right on 1 of 1)
    assert got.constant_guess == pytest.approx(3 / 4)
    assert got.failure_recall == pytest.approx(1 / 2)  # real failures ("a",2), ("b",1); sim caught ("b",1)
    assert got.failure_precision == pytest.approx(1.0)
    assert got.per_policy == {"a": (3, pytest.approx(2 / 3)), "b": (1, 1.0)}
    assert got.balanced_accuracy == pytest.approx((2 / 2 + 1 / 2) / 2)  # both successes, one failure of 2
    assert got.kappa == pytest.approx((0.75 - 0.5) / (1 - 0.5))  # chance: 0.5 * 0.75 + 0.5 * 0.25


def test_balanced_accuracy_and_kappa_see_through_a_constant_guess() -> None:
    real = np.array([True] * 9 + [False])
    assert fr.balanced_accuracy(real, np.ones(10, bool)) == 0.5  # 90 % accurate, predicts nothing
    assert fr.cohen_kappa(real, np.ones(10, bool)) == 0.0
    assert fr.balanced_accuracy(real, real) == 1.0 and fr.cohen_kappa(real, real) == 1.0
    assert fr.cohen_kappa(real, ~real) < 0  # worse than chance
    assert math.isnan(fr.balanced_accuracy(np.ones(4, bool), np.ones(4, bool)))
    assert math.isnan(fr.cohen_kappa(np.ones(4, bool), np.ones(4, bool)))


def test_paired_agreement_refuses_duplicates_and_no_pairs() -> None:
    with pytest.raises(ValueError, match="seed 1 twice"):
        fr.paired_agreement([("a", 1, True), ("a", 1, False)], [("a", 1, True)])
    with pytest.raises(ValueError, match="no real episode has a sim partner"):
        fr.paired_agreement([("a", 1, True)], [("a", 2, True)])
