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
from ..style import PALETTE
from ..feature_maps import FavorPlus
from ..softmax import softmax_attention_weights
from ._ticks import fixed_ticks, plain_log_labels
from .base import Explorer

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


COLORS, STYLES = (PALETTE["vermillion"], PALETTE["green"], PALETTE["blue"]), ("-", "--", "-.")


class RankExplorer(Explorer):
    """The rank <= m cap of linear attention, next to softmax's full-rank spectrum: σ_i/σ_1
    against i on a log axis, dotted lines at m = d (elu+1) and m (FAVOR+)."""

    name = "rank"
    title = "Rank of the attention matrix: linear attention's m cap vs softmax"
    controls = {"n": SIZES, "m": FEATURES}
    defaults = {"n": 64, "m": 8}
    labels = {"n": "sequence length N", "m": "FAVOR+ features m"}
    figsize = (7.5, 4.2)

    def compute(self, n: int, m: int) -> dict[str, Any]:
        return compute_rank(n, m)

    def build(self, fig: Figure) -> dict[str, Any]:
        """Every artist in place: a spectrum line per method (softmax, elu+1, FAVOR+), the
        dotted lines and notes at m = d and m, the legend and the suptitle, on one index axis
        for every N (log scale), so the axes stay put as N and m change. The legend is built
        once and its texts moved: a new legend costs more than the data."""
        ax = fig.subplots()
        artists: dict[str, Any] = {"title": fig.suptitle("", fontsize=10)}
        artists["spectra"] = [ax.plot([], [], style, color=color, lw=2, label=" ")[0]
                              for color, style in zip(COLORS, STYLES)]
        artists["widths"] = [(ax.axvline(1, color=color, lw=1, ls=":"),
                              ax.annotate("", (1, 1e-7), xytext=(4, 0), textcoords="offset points", color=color,
                                          fontsize=9, va="center")) for color in COLORS[1:]]
        ax.set(xscale="log", xlim=(0.8, 1.25 * max(SIZES)), ylim=(FLOOR / 2, 3), yscale="log",
               xlabel="index i of the singular value (largest first, log scale)", ylabel="σ_i / σ_1 (log scale)",
               title="Singular spectra of the N×N attention matrix")
        fixed_ticks(ax.xaxis, INDEX_TICKS, [str(i) for i in INDEX_TICKS])
        plain_log_labels(ax.yaxis)
        artists["legend"] = ax.legend(loc="center right", fontsize=9, title=" ", title_fontsize=9)
        return artists

    def update(self, artists: dict[str, Any], result: dict[str, Any]) -> None:
        """Move every artist to ``result``: the spectra and their ranks in the legend, the lines
        at m = d and m where they bind (a note in the legend where they do not), the suptitle."""
        n, m, d = result["n"], result["m"], result["d"]
        index = np.arange(1, n + 1)
        texts = artists["legend"].get_texts()
        for line, text, (name, sigma) in zip(artists["spectra"], texts, result["spectra"].items()):
            line.set_data(index, np.maximum(sigma, FLOOR))
            line.set_label(f"{name}: rank {result['ranks'][name]}")
            text.set_text(line.get_label())
        for (line, note), width, what in zip(artists["widths"], (d, m), ("m = d", "m")):
            line.set_xdata([width + 0.5] * 2)
            note.xy = (width + 0.5, 1e-7)
            note.set_text(f"{what} = {width}")
            line.set_visible(width < n)
            note.set_visible(width < n)
        loose = [what for width, what in ((d, "elu+1"), (m, "FAVOR+")) if width >= n]
        artists["legend"].set_title(f"{' and '.join(loose)}: m >= N, so the cap\nmin(N, m) = N does not bind"
                                    if loose else "", prop={"size": 9})
        ranks = ", ".join(f"{name.split(' ')[0]} {result['ranks'][name]}"
                          + ("" if name == "softmax" else f" (<= {result['caps'][name]})")
                          for name in result["ranks"])
        artists["title"].set_text(f"N = {n}, d = {d}; numerical ranks: {ranks}")
