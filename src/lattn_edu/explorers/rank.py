"""Explorer ``rank``: the singular spectrum of linear attention's matrix against softmax's (chapter 7).

Non-causal linear attention implies A = diag(1/den)·φ(Q)φ(K)ᵀ, so rank A <= m however long
the sequence; softmax's matrix has no such cap. The explorer draws σ_i/σ_1 of three N×N
matrices on the same seeded q, k: softmax, elu+1 (m = d) and FAVOR+ with m features.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..analysis import effective_attention_matrix, numerical_rank, singular_values
from ..book import PALETTE
from ..feature_maps import FavorPlus
from ..softmax import softmax_attention_weights
from ._ticks import fixed_ticks, plain_log_labels
from .base import Explorer, figure_axes

HEAD_WIDTH = 16  # d: elu+1 has m = d = 16 features
SIZES, FEATURES = (16, 32, 64, 128), (4, 8, 16, 32)  # the explorer's N and m
INDEX_TICKS = (1, 2, 4, 8, 16, 32, 64, 128)
FLOOR = 1e-18  # where exact zeros and rounding noise are drawn on the log axis


def compute_rank(n: int, m: int, d: int = HEAD_WIDTH, seed: int = 0) -> dict[str, Any]:
    """Normalised singular values σ_i/σ_1 and numerical ranks of the three N×N matrices.

    q, k [N, d] are standard normal from ``seed``; FAVOR+ sees them scaled by d**-0.25 so
    that it estimates the same softmax(q·k/√d). Returns ``spectra`` and ``ranks`` keyed
    by method, and ``caps``: the most each rank can be (N, or min(N, feature count)).
    """
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((n, d)), rng.standard_normal((n, d))  # [N, d]
    favor = FavorPlus(d, m, orthogonal=True, seed=seed)
    matrices = {
        "softmax": softmax_attention_weights(q, k),
        f"elu+1 (m = d = {d})": effective_attention_matrix(q, k, feature_map="elu+1"),
        f"FAVOR+ (m = {m})": effective_attention_matrix(q * d**-0.25, k * d**-0.25, feature_map=favor),
    }
    spectra, ranks = {}, {}
    for name, a in matrices.items():
        sigma = singular_values(a)  # [N]
        spectra[name] = sigma / sigma[0]
        ranks[name] = numerical_rank(a)
    caps = dict(zip(matrices, (n, min(n, d), min(n, m))))
    return {"n": n, "m": m, "d": d, "spectra": spectra, "ranks": ranks, "caps": caps}


def plot_rank(result: dict[str, Any], fig: Figure | None = None) -> Figure:
    """σ_i/σ_1 against i on a log axis, dotted lines at m = d (elu+1) and m (FAVOR+).
    Given ``fig``, a figure this function drew before, draws on its axes again in place.
    """
    n, m, d = result["n"], result["m"], result["d"]
    fig, (ax,) = figure_axes(fig, (7.5, 4.2))
    colors = (PALETTE["vermillion"], PALETTE["green"], PALETTE["blue"])
    index = np.arange(1, n + 1)
    for (name, sigma), color, style in zip(result["spectra"].items(), colors, ("-", "--", "-.")):
        rank = result["ranks"][name]
        ax.semilogy(index, np.maximum(sigma, FLOOR), style, color=color, lw=2,
                    label=f"{name}: rank {rank}")
    for width, color, what in ((d, colors[1], "m = d"), (m, colors[2], "m")):
        if width < n:
            ax.axvline(width + 0.5, color=color, lw=1, ls=":")
            ax.annotate(f"{what} = {width}", (width + 0.5, 1e-7), xytext=(4, 0),
                        textcoords="offset points", color=color, fontsize=9, va="center")
    loose = [what for width, what in ((d, "elu+1"), (m, "FAVOR+")) if width >= n]
    note = (f"{' and '.join(loose)}: m >= N, so the cap\nmin(N, m) = N does not bind"
            if loose else None)
    ranks = ", ".join(f"{name.split(' ')[0]} {result['ranks'][name]}"
                      + ("" if name == "softmax" else f" (<= {result['caps'][name]})")
                      for name in result["ranks"])
    # one index axis for every N (log scale): the axes stay put as N changes
    ax.set(xscale="log", xlim=(0.8, 1.25 * max(SIZES)), ylim=(FLOOR / 2, 3), yscale="log",
           xlabel="index i of the singular value (largest first, log scale)", ylabel="σ_i / σ_1 (log scale)",
           title="Singular spectra of the N×N attention matrix")
    fixed_ticks(ax.xaxis, INDEX_TICKS, [str(i) for i in INDEX_TICKS])
    fig.suptitle(f"N = {n}, d = {d}; numerical ranks: {ranks}", fontsize=10)
    plain_log_labels(ax.yaxis)
    ax.legend(loc="center right", fontsize=9, title=note, title_fontsize=9)
    return fig


class RankExplorer(Explorer):
    """The rank <= m cap of linear attention, next to softmax's full-rank spectrum."""

    name = "rank"
    title = "Rank of the attention matrix: linear attention's m cap vs softmax"
    controls = {"n": SIZES, "m": FEATURES}
    defaults = {"n": 64, "m": 8}
    labels = {"n": "sequence length N", "m": "FAVOR+ features m"}

    def draw(self, fig: Figure | None, **settings: Any) -> Figure:
        return plot_rank(compute_rank(settings["n"], settings["m"]), fig)
