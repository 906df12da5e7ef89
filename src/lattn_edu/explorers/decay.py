"""Explorer ``decay``: RetNet's γ, the retention matrix (QKᵀ)⊙D and how far back a token counts (chapter 8).

    o_n = Σ_{j<=n} γ^(n-j) (q_n·k_j) v_j,   D[i, j] = γ^(i-j) for j <= i

A token t steps back is weighted γ^t: half its weight after ln 2 / (−ln γ) tokens.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..style import PALETTE
from ..retention import decay_matrix, retention
from .base import Explorer, figure_axes

HEAD_WIDTH = 8  # d of the seeded q, k


def compute_decay(gamma: float, n: int, seed: int = 0, d: int = HEAD_WIDTH) -> dict[str, Any]:
    """The decay matrix D [N, N], the effective retention matrix (QKᵀ)⊙D [N, N], the weights γ^t
    for t = 0 … N−1, the half-life ln 2/(−ln γ) and the 1 % horizon ln 100/(−ln γ) (inf at γ = 1).

    The retention matrix is read off ``retention`` itself: with V = I its output O = ((QKᵀ)⊙D) I.
    """
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, n, d)) / d**0.25  # q·k of order 1
    decay = decay_matrix(gamma, n)  # [N, N]
    matrix = retention(q, k, np.eye(n), gamma, form="parallel")  # (QKᵀ)⊙D  [N, N]
    rate = -math.log(gamma)  # γ^t = exp(−rate · t)
    return {"gamma": gamma, "n": n, "decay": decay, "matrix": matrix,
            "distance": np.arange(n), "weights": decay[n - 1, ::-1],  # γ^0 … γ^(N-1)
            "half_life": math.log(2) / rate if rate > 0 else math.inf,
            "horizon": math.log(100) / rate if rate > 0 else math.inf}


def _tokens(x: float) -> str:
    if math.isinf(x):
        return "∞ (no decay)"
    return f"{x:.3g} token" + ("" if x == 1 else "s")


def plot_decay(result: dict[str, Any], fig: Figure | None = None) -> Figure:
    """Left: (QKᵀ)⊙D as a heatmap. Right: γ^t against the distance t, with the half-life marked.

    Few tick labels and no legend on purpose: they cost more to lay out than anything else.
    Given ``fig``, a figure this function drew before, draws on its axes again in place.
    """
    gamma, n, matrix = result["gamma"], result["n"], result["matrix"]
    fig, (heat_ax, curve_ax) = figure_axes(fig, (10, 4.2), 2, width_ratios=[1, 1.25])
    limit = float(np.abs(matrix).max())
    heat_ax.imshow(matrix, cmap="RdBu_r", vmin=-limit, vmax=limit, interpolation="nearest")
    ends = [0, n // 2, n - 1]
    heat_ax.set(xticks=ends, yticks=ends, xlabel="key j", ylabel="query i",
                title="(QKᵀ)⊙D: red q·k > 0, blue < 0")
    heat_ax.grid(False)

    distance, weights = result["distance"], result["weights"]
    # limits first: then adding artists triggers no autoscaling, most of their cost
    curve_ax.set(xlim=(-0.5, n - 0.5), ylim=(-0.03, 1.08), xticks=np.linspace(0, n, 5).astype(int)[:-1].tolist() + [n - 1],
                 yticks=[0, 0.5, 1], xlabel="distance t = i − j (tokens back)", ylabel="weight γ^t",
                 title="how far back a token still counts")
    curve_ax.plot(distance, weights, marker="o", markersize=3 if n > 20 else 5, color=PALETTE["blue"])
    curve_ax.axhline(0.5, color="0.6", linestyle=":", linewidth=1)
    half_life, horizon = result["half_life"], result["horizon"]
    for mark, color, text in ((half_life, PALETTE["vermillion"], f"half-life\nln2/(−lnγ) = {half_life:.3g}"),
                              (horizon, PALETTE["green"], f"weight 1%\nat t = {horizon:.3g}")):
        if mark < n:
            curve_ax.axvline(mark, color=color, linestyle="--")
            curve_ax.text(mark + 0.01 * n, 0.97, text, color=color, fontsize=9, va="top", in_layout=False)
    curve_ax.grid(alpha=0.3)
    fig.suptitle(f"RetNet decay γ = {gamma:g}, N = {n}: a token t steps back is weighted γ^t, "
                 f"half-life {_tokens(half_life)}", fontsize=11)
    return fig


class DecayExplorer(Explorer):
    """Slide γ: the retention matrix narrows to a band near the diagonal, and memory shortens."""

    name = "decay"
    title = "RetNet decay γ: how far back a token still counts"
    controls = {"gamma": (0.5, 0.8, 0.9, 0.95, 0.99, 1.0), "n": (16, 64)}
    defaults = {"gamma": 0.9, "n": 64}
    labels = {"gamma": "decay γ", "n": "sequence length N"}

    def draw(self, fig: Figure | None, **settings: Any) -> Figure:
        return plot_decay(compute_decay(settings["gamma"], settings["n"]), fig)
