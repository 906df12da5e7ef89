"""Diagrams of the book's algorithms that no record feeds: chapter 9's chunkwise form.

Each function returns a matplotlib Figure; the chapters call it and show it.
"""

from __future__ import annotations

from typing import Any

from ._checks import check_positive_int
from .style import PALETTE

INSIDE_LABEL = "tril($Q_c K_c^\\top$) $V_c$:\nquadratic,\ninside the chunk"
CARRIED_LABEL = "covered by the carried state $S_{<c}$"


def plot_chunkwise_blocks(n_chunks: int = 4) -> Any:
    """The causal N x N matrix of query-key pairs cut into C x C blocks, one row and column of
    blocks per chunk: the diagonal blocks (labelled, the quadratic work inside each chunk),
    the blocks below them (shaded, what the carried state S_<c covers), the masked blocks above
    (white), and an arrow carrying S from each chunk to the next."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Polygon, Rectangle

    if check_positive_int(n_chunks, "n_chunks") < 2:
        raise ValueError(f"n_chunks must be at least 2, so that some block is carried; got n_chunks={n_chunks}")
    fig, ax = plt.subplots(figsize=(6.4, 6.0), layout="constrained")
    # block (row r, column c): queries of chunk r against keys of chunk c; rows run downwards
    for r in range(n_chunks):
        for c in range(n_chunks):
            x, y = c, n_chunks - 1 - r
            if c < r:
                ax.add_patch(Rectangle((x, y), 1, 1, facecolor=PALETTE["sky"], alpha=0.45,
                                       edgecolor="0.3", gid="carried"))
            elif c == r:
                ax.add_patch(Rectangle((x, y), 1, 1, facecolor="white", edgecolor="0.3"))
                # the causal mask inside the block: its lower triangle, diagonal included
                ax.add_patch(Polygon([(x, y + 1), (x, y), (x + 1, y)], closed=True,
                                     facecolor=PALETTE["orange"], alpha=0.55, edgecolor="none",
                                     gid="inside"))
                ax.text(x + 0.5, y + 0.5, INSIDE_LABEL, ha="center", va="center", fontsize=7)
            else:
                ax.add_patch(Rectangle((x, y), 1, 1, facecolor="white", edgecolor="0.8"))
    # one label for the shaded region, in the lowest-left block
    ax.text(0.5, 0.08, CARRIED_LABEL.replace(" by", "\nby").replace(" state", "\nstate"),
            ha="center", va="bottom", fontsize=7)
    # the state carried from chunk to chunk, drawn above the matrix
    for c in range(n_chunks - 1):
        ax.add_patch(FancyArrowPatch((c + 0.55, n_chunks + 0.25), (c + 1.45, n_chunks + 0.25),
                                     arrowstyle="-|>", mutation_scale=12, color=PALETTE["blue"],
                                     gid="carry"))
        ax.text(c + 1.0, n_chunks + 0.35, f"$S_{{<{c + 1}}}$", ha="center", va="bottom",
                fontsize=9, color=PALETTE["blue"])
    ax.text(n_chunks / 2, n_chunks + 0.75, "the state S, carried from chunk to chunk",
            ha="center", va="bottom", fontsize=9, color=PALETTE["blue"])
    ax.set_xlim(-0.05, n_chunks + 0.05)
    ax.set_ylim(-0.05, n_chunks + 1.1)
    ax.set_aspect("equal")
    ax.set_xticks([c + 0.5 for c in range(n_chunks)], [f"keys of\nchunk {c}" for c in range(n_chunks)],
                  fontsize=8)
    ax.set_yticks([n_chunks - 0.5 - r for r in range(n_chunks)],
                  [f"queries of\nchunk {r}" for r in range(n_chunks)], fontsize=8)
    ax.tick_params(length=0)
    ax.grid(False)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title("The causal N × N matrix in C × C blocks (white above the diagonal: masked)",
                 fontsize=9)
    return fig
