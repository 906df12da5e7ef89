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
from .base import Explorer

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


class DecayExplorer(Explorer):
    """Slide γ: the retention matrix narrows to a band near the diagonal, and memory shortens.

    Left: (QKᵀ)⊙D as a heatmap. Right: γ^t against the distance t, with the half-life and the
    1 % horizon marked. Few tick labels and no legend on purpose: they cost more to lay out
    than anything else.
    """

    name = "decay"
    title = "RetNet decay γ: how far back a token still counts"
    controls = {"gamma": (0.5, 0.8, 0.9, 0.95, 0.99, 1.0), "n": (16, 64)}
    defaults = {"gamma": 0.9, "n": 64}
    labels = {"gamma": "decay γ", "n": "sequence length N"}

    def compute(self, gamma: float, n: int) -> dict[str, Any]:
        return compute_decay(gamma, n)

    def decoration(self, gamma: float, n: int) -> int:
        return n  # both panels' limits and ticks follow N

    def build(self, fig: Figure) -> dict[str, Any]:
        """Both panels' fixed labels and titles, an empty heatmap, curve and two marks."""
        heat_ax, curve_ax = fig.subplots(1, 2, width_ratios=[1, 1.25])
        artists: dict[str, Any] = {"heat_ax": heat_ax, "curve_ax": curve_ax}
        artists["matrix"] = heat_ax.imshow(np.zeros((1, 1)), cmap="RdBu_r", interpolation="nearest")
        heat_ax.set(xlabel="key j", ylabel="query i", title="(QKᵀ)⊙D: red q·k > 0, blue < 0")
        heat_ax.grid(False)
        curve_ax.set(ylim=(-0.03, 1.08), yticks=[0, 0.5, 1], xlabel="distance t = i − j (tokens back)",
                     ylabel="weight γ^t", title="how far back a token still counts")
        artists["curve"], = curve_ax.plot([], [], marker="o", color=PALETTE["blue"])
        curve_ax.axhline(0.5, color="0.6", linestyle=":", linewidth=1)
        artists["marks"] = [(curve_ax.axvline(0, color=color, linestyle="--"),
                             curve_ax.text(0, 0.97, "", color=color, fontsize=9, va="top", in_layout=False))
                            for color in (PALETTE["vermillion"], PALETTE["green"])]
        curve_ax.grid(alpha=0.3)
        artists["title"] = fig.suptitle("", fontsize=11)
        return artists

    def update(self, artists: dict[str, Any], result: dict[str, Any]) -> None:
        """The matrix and the curve, the axes' limits and ticks for N, the marks that fall
        inside the curve's axes, and the suptitle."""
        gamma, n, matrix = result["gamma"], result["n"], result["matrix"]
        limit = float(np.abs(matrix).max())
        artists["matrix"].set_data(matrix)
        artists["matrix"].set_extent((-0.5, n - 0.5, n - 0.5, -0.5))
        artists["matrix"].set_clim(-limit, limit)
        ends = [0, n // 2, n - 1]
        artists["heat_ax"].set(xlim=(-0.5, n - 0.5), ylim=(n - 0.5, -0.5), xticks=ends, yticks=ends)
        artists["curve_ax"].set(xlim=(-0.5, n - 0.5),
                                xticks=np.linspace(0, n, 5).astype(int)[:-1].tolist() + [n - 1])
        artists["curve"].set_data(result["distance"], result["weights"])
        artists["curve"].set_markersize(3 if n > 20 else 5)
        half_life, horizon = result["half_life"], result["horizon"]
        for (line, note), mark, text in zip(artists["marks"], (half_life, horizon), (
                f"half-life\nln2/(−lnγ) = {half_life:.3g}", f"weight 1%\nat t = {horizon:.3g}")):
            shown = mark < n
            x = mark if shown else n  # a mark beyond the axes is hidden
            line.set_xdata([x, x])
            line.set_visible(shown)
            note.set_position((x + 0.01 * n, 0.97))
            note.set_text(text if shown else "")
        artists["title"].set_text(f"RetNet decay γ = {gamma:g}, N = {n}: a token t steps back is weighted "
                                  f"γ^t, half-life {_tokens(half_life)}")
