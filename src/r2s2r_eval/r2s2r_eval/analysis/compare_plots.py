"""The comparison's plots as PNG bytes: success scatter, ranking, per-axis success, failure maps."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import numpy as np

from r2s2r_eval.analysis import failure_tree as ft
from r2s2r_eval.analysis.compare import Comparison

__all__ = ["plot_axes", "plot_failure_map", "plot_ranking", "plot_scatter"]


def _png(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def plot_scatter(summary: Mapping[str, Any]) -> bytes:
    """Sim against real success rate per policy, with Wilson intervals and the diagonal."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    for p in summary["policies"]:
        s, r = p["sim"], p["real"]
        ax.errorbar(
            s["success_rate"],
            r["success_rate"],
            xerr=[[s["success_rate"] - s["wilson_low"]], [s["wilson_high"] - s["success_rate"]]],
            yerr=[[r["success_rate"] - r["wilson_low"]], [r["wilson_high"] - r["success_rate"]]],
            fmt="o",
            capsize=3,
            label=p["policy"],
        )
    ax.plot([0, 1], [0, 1], "k--", lw=1, label="identity")
    ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), xlabel="sim success rate", ylabel="real success rate")
    conf = round(100 * summary["settings"]["confidence"])
    ax.set_title(f"Sim vs real success ({conf}% Wilson intervals)")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    return _png(fig)


def plot_ranking(summary: Mapping[str, Any]) -> bytes:
    """The policies ranked by sim and by real success, side by side."""
    import matplotlib.pyplot as plt
    from scipy import stats

    pols = summary["policies"]
    sim_rank = stats.rankdata([-p["sim"]["success_rate"] for p in pols], method="average")
    real_rank = stats.rankdata([-p["real"]["success_rate"] for p in pols], method="average")
    fig, ax = plt.subplots(figsize=(6, 0.5 * len(pols) + 2))
    for p, a, b in zip(pols, sim_rank, real_rank, strict=True):
        line = ax.plot([0, 1], [a, b], "o-", lw=2)[0]
        ax.annotate(
            f"{p['policy']} ({p['sim']['success_rate']:.2f})",
            (0, a),
            xytext=(-6, 0),
            textcoords="offset points",
            ha="right",
            va="center",
            fontsize=8,
            color=line.get_color(),
        )
        ax.annotate(
            f"({p['real']['success_rate']:.2f})",
            (1, b),
            xytext=(6, 0),
            textcoords="offset points",
            ha="left",
            va="center",
            fontsize=8,
            color=line.get_color(),
        )
    ax.set(xlim=(-0.9, 1.4), xticks=[0, 1], xticklabels=["sim rank", "real rank"], ylabel="rank (1 = best)")
    ax.invert_yaxis()
    ax.set_title("Ranking: sim vs real (crossing lines = rank violations)")
    return _png(fig)


def plot_axes(comp: Comparison, confidence: float) -> bytes:
    """Success against each variation axis (quantile bins), sim and real, with Wilson intervals."""
    import matplotlib.pyplot as plt

    axes_names = list(comp.axis_curves)
    fig, axs = plt.subplots(
        len(axes_names), 2, figsize=(10, 2.6 * len(axes_names)), squeeze=False, sharey=True
    )
    for row, name in enumerate(axes_names):
        for col, side in enumerate(("sim", "real")):
            ax = axs[row, col]
            for p, sides in comp.axis_curves[name].items():
                b = sides[side]
                ok = b.trials > 0
                ax.errorbar(
                    b.centres[ok],
                    b.rate[ok],
                    yerr=[(b.rate - b.low)[ok], (b.high - b.rate)[ok]],
                    fmt="o-",
                    capsize=2,
                    label=p,
                )
            ax.set(ylim=(-0.05, 1.05), xlabel=name, title=f"{side}: success vs {name}")
            ax.grid(alpha=0.3)
        axs[row, 0].set_ylabel("success rate")
    axs[0, 1].legend(fontsize=7)
    fig.suptitle(f"Per-axis success ({round(100 * confidence)}% Wilson intervals, quantile bins)", y=1.0)
    fig.tight_layout()
    return _png(fig)


def _split_segments(
    tree: ft.Node, ix: int, iy: int, box: list[float]
) -> list[tuple[str, float, float, float]]:
    """Split lines of the tree on map columns ix/iy inside each node's box.

    Segments are ``('v', x, y0, y1)`` (a split on ix) or ``('h', y, x0, x1)`` (a split on iy).

    A split on another column does not bound the map, so both children keep the parent's box there.
    """
    out: list[tuple[str, float, float, float]] = []
    if tree.is_leaf:
        return out
    assert tree.left is not None and tree.right is not None
    x0, x1, y0, y1 = box
    t = tree.threshold
    if tree.feature == ix:
        out.append(("v", t, y0, y1))
        out += _split_segments(tree.left, ix, iy, [x0, min(t, x1), y0, y1])
        out += _split_segments(tree.right, ix, iy, [max(t, x0), x1, y0, y1])
    elif tree.feature == iy:
        out.append(("h", t, x0, x1))
        out += _split_segments(tree.left, ix, iy, [x0, x1, y0, min(t, y1)])
        out += _split_segments(tree.right, ix, iy, [x0, x1, max(t, y0), y1])
    else:
        out += _split_segments(tree.left, ix, iy, box) + _split_segments(tree.right, ix, iy, box)
    return out


def plot_failure_map(plot: Mapping[str, Any]) -> bytes | None:
    """One policy's episodes on its two most important axes with the trees' splits; None if unplottable."""
    import matplotlib.pyplot as plt

    feats, axes_ = plot["feats"], plot["map_axes"]
    if not axes_:
        return None
    ix = feats.index(axes_[0])
    iy = feats.index(axes_[1]) if len(axes_) > 1 else None
    fig, axs = plt.subplots(1, 2, figsize=(11, 4.6), sharex=True, sharey=True)
    allx = np.vstack([plot["sim_x"], plot["real_x"]])
    pad = lambda lo, hi: (lo - 0.03 * (hi - lo or 1), hi + 0.03 * (hi - lo or 1))  # noqa: E731
    xlim = pad(allx[:, ix].min(), allx[:, ix].max())
    ylim = pad(allx[:, iy].min(), allx[:, iy].max()) if iy is not None else (-1, 1)
    for ax, side in zip(axs, ("sim", "real"), strict=True):
        x, y, tree = plot[f"{side}_x"], plot[f"{side}_y"], plot[f"{side}_tree"]
        yy = x[:, iy] if iy is not None else np.zeros(len(x))
        ax.scatter(x[y, ix], yy[y], c="tab:green", marker="o", s=22, label="success", alpha=0.8)
        ax.scatter(x[~y, ix], yy[~y], c="tab:red", marker="x", s=26, label="failure", alpha=0.9)
        for kind, v, a, b in _split_segments(tree, ix, iy if iy is not None else -2, [*xlim, *ylim]):
            if kind == "v":
                ax.plot([v, v], [a, b], "k-", lw=1.5)
            else:
                ax.plot([a, b], [v, v], "k-", lw=1.5)
        ax.set(
            xlim=xlim,
            ylim=ylim,
            xlabel=axes_[0],
            ylabel=axes_[1] if iy is not None else "",
            title=f"{side} ({len(y)} episodes): tree splits on these axes",
        )
        ax.legend(fontsize=7)
    fig.suptitle(f"Failure regions: {plot['label']}")
    fig.tight_layout()
    return _png(fig)
