"""Explorer ``kernels``: softmax and three feature-map kernels side by side on the same q, k (chapter 2)."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

import lattn_edu as la

from .base import Explorer

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


class KernelsExplorer(Explorer):
    """The same queries and keys weighted by softmax and by three feature-map kernels.

    One heatmap per method, every N on the same unit square. Non-negative weights use one
    sequential scale per panel; a map with negative weights gets a diverging scale centred
    on 0 (negative = blue).
    """

    name = "kernels"
    title = "Kernels side by side: softmax, elu+1, relu, identity"
    controls = {"n": (8, 16, 32), "scale": (0.5, 1.0, 2.0, 4.0)}
    defaults = {"n": 16, "scale": 1.0}
    labels = {"n": "tokens N", "scale": "input scale"}
    figsize = (9.5, 3.4)

    def compute(self, n: int, scale: float) -> dict[str, Any]:
        return compute_kernels(n, scale)

    def build(self, fig: Figure) -> dict[str, Any]:
        """Per method an axes with its name, an empty heatmap and an empty detail line."""
        images, details = [], []
        for ax, name in zip(fig.subplots(1, len(METHODS)), METHODS):
            images.append(ax.imshow(np.zeros((1, 1)), extent=(0, 1, 1, 0)))
            ax.set_title(name, fontsize=9, pad=16)  # room for the detail line below it
            details.append(ax.text(0.5, 1.02, "", transform=ax.transAxes, ha="center", va="bottom",
                                   fontsize=9, in_layout=False))
            ax.set(xticks=[], yticks=[], xlabel="key j")
        fig.axes[0].set_ylabel("query i")
        return {"images": images, "details": details, "title": fig.suptitle("", fontsize=10)}

    def update(self, artists: dict[str, Any], result: dict[str, Any]) -> None:
        """Each method's weights on its scale, its detail line, and the suptitle."""
        for image, detail, name in zip(artists["images"], artists["details"], METHODS):
            weights = result["weights"][name]
            image.set_data(weights)
            if result["negative"][name]:
                limit = float(np.abs(weights).max())
                image.set(cmap="RdBu_r", clim=(-limit, limit))
                detail.set_text(f"{result['negative'][name]:.0%} negative, |w| up to {limit:.1f}")
            else:
                image.set(cmap="viridis", clim=(0, weights.max()))
                empty = result["empty_rows"][name]
                detail.set_text(f"all >= 0, peak {weights.max():.2f}" + (f", {empty} empty rows" if empty else ""))
        artists["title"].set_text(f"N = {result['n']}, inputs scaled by {result['scale']}; each row sums to 1 "
                                  "(an empty row: a query with no positive feature)")
