"""A shallow classification tree (CART, Gini) over variation parameters, and its failure regions as rules.

Pure numpy, deterministic. :func:`fit_tree` grows at most :data:`MAX_DEPTH` levels; :func:`failure_rules`
prints its failure leaves as rules such as ``fails when physics.friction_scale < 0.62 (n=12, success 1/12)``,
each parameter as one interval (``0.2 <= light < 0.585``; see :func:`merge_conditions`).
Columns that are ``nan`` anywhere are not split on (see ``failure_regions.usable_features``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "MAX_DEPTH",
    "Node",
    "Rule",
    "design_matrix",
    "failure_rules",
    "feature_importance",
    "fit_tree",
    "merge_conditions",
    "predict_proba",
    "tree_regions",
]

MAX_DEPTH = 3
"""Deepest tree :func:`fit_tree` grows: deeper trees stop being readable as rules."""


def design_matrix(X: npt.ArrayLike, y: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``X`` as floats ``(n, d)`` and ``y`` as bools ``(n,)``; ValueError naming what is at fault."""
    x = np.asarray(X, dtype=float)
    t = np.asarray(y)
    if x.ndim != 2:
        raise ValueError(f"X must have shape (n, d): got {x.shape}")
    if t.shape != (x.shape[0],):
        raise ValueError(f"y must have shape ({x.shape[0]},) to match X: got {t.shape}")
    if t.dtype != bool and not np.all((t == 0) | (t == 1)):
        raise ValueError("y must hold outcomes 0/1 (or bool)")
    return x, t.astype(bool)


# --------------------------------------------------------------------------------------------------
# A shallow classification tree (CART, Gini)
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Node:
    """A tree node. A leaf has ``feature == -1``; an inner node sends ``x[feature] < threshold`` left.

    Attributes:
        trials: training episodes reaching the node.
        successes: successes among them.
        feature: column of the split, or -1 for a leaf.
        threshold: split value (midpoint between two observed values), ``nan`` for a leaf.
        gain: Gini impurity decrease of the split, weighted by the node's share of episodes.
        left: the ``<`` child.
        right: the ``>=`` child.
    """

    trials: int
    successes: int
    feature: int = -1
    threshold: float = math.nan
    gain: float = 0.0
    left: Node | None = None
    right: Node | None = None

    @property
    def rate(self) -> float:
        """Training success rate at the node (``nan`` for zero trials)."""
        return self.successes / self.trials if self.trials else math.nan

    @property
    def is_leaf(self) -> bool:
        """True for a leaf."""
        return self.feature < 0


def _gini(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(n > 0, k / np.where(n > 0, n, 1), 0.0)
    return 2.0 * p * (1.0 - p)


def _best_split(x: np.ndarray, y: np.ndarray, min_leaf: int) -> tuple[int, float, float]:
    """(feature, threshold, impurity decrease) of the best split; feature -1 if none helps."""
    n = y.size
    k = float(y.sum())
    parent = float(_gini(np.array(k), np.array(n)))
    best = (-1, math.nan, 0.0)
    for j in range(x.shape[1]):
        order = np.argsort(x[:, j], kind="stable")
        xs, ys = x[order, j], y[order].astype(float)
        n_left = np.arange(1, n)
        k_left = np.cumsum(ys)[:-1]
        valid = (xs[1:] > xs[:-1]) & (n_left >= min_leaf) & (n - n_left >= min_leaf)
        if not np.any(valid):
            continue
        child = (n_left * _gini(k_left, n_left) + (n - n_left) * _gini(k - k_left, n - n_left)) / n
        gain = np.where(valid, parent - child, -np.inf)
        i = int(np.argmax(gain))  # first maximum: ties go to the lower feature and threshold
        if gain[i] > best[2] + 1e-12:
            best = (j, float(0.5 * (xs[i] + xs[i + 1])), float(gain[i]))
    return best


def fit_tree(X: npt.ArrayLike, y: npt.ArrayLike, *, max_depth: int = 2, min_leaf: int = 3) -> Node:
    """Fit a CART classification tree: greedy Gini splits ``x[j] < t``, thresholds at midpoints.

    A node is split only if the split lowers the Gini impurity and leaves at least ``min_leaf``
    episodes on each side; a pure node is a leaf. Ties between equally good splits go to the lowest
    column, then the lowest threshold, so the tree is deterministic. With no finite column or fewer
    than ``2 * min_leaf`` episodes the tree is a single leaf (the overall rate).

    Args:
        X: realised parameters, shape ``(n, d)``; must be finite (select columns with
            :func:`usable_features`).
        y: outcomes, shape ``(n,)``.
        max_depth: 0 (a single leaf) to :data:`MAX_DEPTH`.
        min_leaf: smallest number of episodes in a leaf (>= 1).

    Raises:
        ValueError: bad shapes, non-finite ``X``, ``max_depth`` outside [0, MAX_DEPTH], ``min_leaf < 1``,
            or no episodes.
    """
    x, t = design_matrix(X, y)
    if not 0 <= max_depth <= MAX_DEPTH:
        raise ValueError(f"max_depth must be in [0, {MAX_DEPTH}]: got {max_depth}")
    if min_leaf < 1:
        raise ValueError(f"min_leaf must be >= 1: got {min_leaf}")
    if t.size == 0:
        raise ValueError("no episodes to fit a tree to")
    if not np.all(np.isfinite(x)):
        raise ValueError("X must be finite: drop columns with missing values (usable_features)")
    total = x.shape[0]

    def grow(rows: np.ndarray, depth: int) -> Node:
        k, n = int(t[rows].sum()), int(rows.size)
        if depth >= max_depth or k in (0, n) or n < 2 * min_leaf:
            return Node(trials=n, successes=k)
        j, thr, gain = _best_split(x[rows], t[rows], min_leaf)
        if j < 0:
            return Node(trials=n, successes=k)
        go_left = x[rows, j] < thr
        return Node(
            trials=n,
            successes=k,
            feature=j,
            threshold=thr,
            gain=gain * n / total,
            left=grow(rows[go_left], depth + 1),
            right=grow(rows[~go_left], depth + 1),
        )

    return grow(np.arange(total), 0)


def predict_proba(tree: Node, X: npt.ArrayLike) -> np.ndarray:
    """Success probability of each row of ``X`` (shape ``(n, d)``): the training rate of its leaf.

    Range [0, 1]. A ``nan`` in a split column sends the row to the ``>=`` side (comparisons with
    ``nan`` are false); select finite columns to avoid that.
    """
    x = np.asarray(X, dtype=float)
    out = np.empty(x.shape[0])
    for i, row in enumerate(x):
        node = tree
        while not node.is_leaf:
            assert node.left is not None and node.right is not None
            node = node.left if row[node.feature] < node.threshold else node.right
        out[i] = node.rate
    return out


def feature_importance(tree: Node, n_features: int) -> np.ndarray:
    """Total weighted Gini decrease per column (shape ``(n_features,)``, >= 0; all 0 for a leaf)."""
    imp = np.zeros(n_features)
    stack = [tree]
    while stack:
        node = stack.pop()
        if not node.is_leaf:
            imp[node.feature] += node.gain
            stack.extend(c for c in (node.left, node.right) if c is not None)
    return imp


Condition = tuple[str, str, float]
"""``(name, op, threshold)`` with ``op`` ``"<"`` or ``">="``: one split of a tree path."""


def merge_conditions(conditions: Sequence[Condition]) -> tuple[Condition, ...]:
    """The same region with at most one interval per parameter: its tightest ``>=`` and ``<`` bounds.

    A tree path may split one parameter several times (``light < 1.3`` then ``light < 0.585``); only the
    tightest bounds change which points are in. Parameters keep the order of their first condition, the
    lower bound before the upper one, so merging twice changes nothing.

    Raises:
        ValueError: an unknown ``op``, a threshold that is not finite, or bounds that leave a parameter
            no value (``x >= 1 and x < 0.5``); no tree path gives those, since every split of a path
            lies inside the bounds above it.
    """
    low: dict[str, float] = {}
    high: dict[str, float] = {}
    for name, op, thr in conditions:
        if not math.isfinite(thr):
            raise ValueError(f"condition on {name}: threshold must be finite: got {thr}")
        if op == ">=":
            low[name] = max(low.get(name, -math.inf), thr)
        elif op == "<":
            high[name] = min(high.get(name, math.inf), thr)
        else:
            raise ValueError(f"condition on {name}: op must be '<' or '>=': got {op!r}")
        high.setdefault(name, math.inf)
        low.setdefault(name, -math.inf)
    out: list[Condition] = []
    for name in low:  # first-seen order
        if low[name] >= high[name]:
            raise ValueError(
                f"conditions on {name} leave no value: >= {low[name]:.6g} and < {high[name]:.6g}"
            )
        out += [(name, ">=", low[name])] if low[name] > -math.inf else []
        out += [(name, "<", high[name])] if high[name] < math.inf else []
    return tuple(out)


@dataclass(frozen=True, kw_only=True)
class Rule:
    """A leaf of the tree as a conjunction of conditions, at most one interval per parameter.

    Attributes:
        conditions: ``(name, op, threshold)`` with ``op`` ``"<"`` or ``">="``; merged by
            :func:`merge_conditions` when the rule is made, so a stored or printed rule never repeats a
            parameter's bound.
        trials: training episodes in the leaf.
        successes: successes among them.
    """

    conditions: tuple[Condition, ...]
    trials: int
    successes: int

    def __post_init__(self) -> None:
        """Merge the conditions (frozen, so through ``object.__setattr__``, as dataclasses itself does)."""
        object.__setattr__(self, "conditions", merge_conditions(self.conditions))

    @property
    def rate(self) -> float:
        """Leaf success rate."""
        return self.successes / self.trials if self.trials else math.nan

    def text(self, verb: str = "fails") -> str:
        """E.g. ``fails when 0.2 <= light < 0.585 and friction < 0.62 (n=12, success 1/12 = 0.08)``."""
        parts: list[str] = []
        for i, (name, op, thr) in enumerate(self.conditions):
            if i and self.conditions[i - 1][0] == name:  # the upper bound after a lower one: one interval
                parts[-1] = f"{self.conditions[i - 1][2]:.4g} <= {name} < {thr:.4g}"
            else:
                parts.append(f"{name} {op} {thr:.4g}")
        where = f"when {' and '.join(parts)}" if parts else "everywhere"
        return f"{verb} {where} (n={self.trials}, success {self.successes}/{self.trials} = {self.rate:.2f})"


def tree_regions(tree: Node, names: Sequence[str]) -> list[Rule]:
    """Every leaf of ``tree`` as a :class:`Rule`, left to right."""
    out: list[Rule] = []

    def walk(node: Node, conds: tuple[Condition, ...]) -> None:
        if node.is_leaf:
            out.append(Rule(conditions=conds, trials=node.trials, successes=node.successes))
            return
        assert node.left is not None and node.right is not None
        name = names[node.feature]
        walk(node.left, (*conds, (name, "<", node.threshold)))
        walk(node.right, (*conds, (name, ">=", node.threshold)))

    walk(tree, ())
    return out


def failure_rules(tree: Node, names: Sequence[str], *, threshold: float = 0.5) -> list[Rule]:
    """The failure regions: leaves whose success rate is below ``threshold``, worst first."""
    return sorted(
        (r for r in tree_regions(tree, names) if r.rate < threshold), key=lambda r: (r.rate, -r.trials)
    )
