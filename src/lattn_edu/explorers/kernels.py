"""Explorer ``kernels``: softmax and three feature-map kernels side by side on the same q, k (chapter 2)."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

import lattn_edu as la

from .base import Explorer, figure_axes

METHODS = ("softmax", "elu+1", "relu", "identity")


def compute_kernels(n: int, scale: float, seed: int = 0, d: int = 4) -> dict[str, Any]:
    """Normalised weights of each method on one seeded q, k: {method: [N, N]}, plus the share
    of negative weights and the smallest denominator (where a map breaks the rules)."""
    rng = np.random.default_rng(seed)
    q, k = scale * rng.standard_normal((2, n, d))
    weights = {"softmax": la.softmax_attention_weights(q, k, scale=1.0)}
    for name in METHODS[1:]:
        weights[name] = la.effective_attention_matrix(q, k, feature_map=name)
    denominators = {name: float(la.denominator_drift(q, k, feature_map=name).min())
                    for name in METHODS[1:]}
    negative = {name: float((w < 0).mean()) for name, w in weights.items()}
    empty = {name: int((np.abs(w).sum(-1) == 0).sum()) for name, w in weights.items()}
    return {"n": n, "scale": scale, "weights": weights, "negative": negative,
            "empty_rows": empty, "min_denominator": denominators}


def plot_kernels(result: dict[str, Any], fig: Figure | None = None) -> Figure:
    """One heatmap per method. Non-negative weights use one sequential scale per panel;
    a map with negative weights gets a diverging scale centred on 0 (negative = blue).
    Given ``fig``, a figure this function drew before, draws on its axes again in place.
    """
    fig, axes = figure_axes(fig, (9.5, 3.4), len(METHODS))
    unit = (0, 1, 1, 0)  # every N on the same unit square: the axes stay put as N changes
    for ax, name in zip(axes, METHODS):
        weights = result["weights"][name]
        if result["negative"][name]:
            limit = float(np.abs(weights).max())
            ax.imshow(weights, cmap="RdBu_r", vmin=-limit, vmax=limit, extent=unit)
            detail = f"{result['negative'][name]:.0%} negative, |w| up to {limit:.1f}"
        else:
            ax.imshow(weights, cmap="viridis", vmin=0, extent=unit)
            detail = f"all >= 0, peak {weights.max():.2f}"
            if result["empty_rows"][name]:
                detail += f", {result['empty_rows'][name]} empty rows"
        ax.set_title(name, fontsize=9, pad=16)  # room for the detail line below it
        ax.text(0.5, 1.02, detail, transform=ax.transAxes, ha="center", va="bottom", fontsize=9,
                in_layout=False)
        ax.set(xticks=[], yticks=[], xlabel="key j")
    fig.axes[0].set_ylabel("query i")
    fig.suptitle(f"N = {result['n']}, inputs scaled by {result['scale']}; each row sums to 1 "
                 "(an empty row: a query with no positive feature)", fontsize=10)
    return fig


class KernelsExplorer(Explorer):
    """The same queries and keys weighted by softmax and by three feature-map kernels."""

    name = "kernels"
    title = "Kernels side by side: softmax, elu+1, relu, identity"
    controls = {"n": (8, 16, 32), "scale": (0.5, 1.0, 2.0, 4.0)}
    defaults = {"n": 16, "scale": 1.0}
    labels = {"n": "tokens N", "scale": "input scale"}

    def draw(self, fig: Figure | None, **settings: Any) -> Figure:
        return plot_kernels(compute_kernels(settings["n"], settings["scale"]), fig)
