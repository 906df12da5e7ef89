"""Explorer ``state_size``: the N×N attention matrix against the m×d_v state, to scale (chapter 1)."""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..analysis import attention_cost
from ..style import PALETTE
from ._ticks import plain_log_labels
from .base import Explorer, figure_axes

BYTES_PER_ENTRY = 4  # float32
SIZES, WIDTHS = (256, 1024, 4096, 16384, 100_000), (32, 64, 128)  # the explorer's N and d
COUNT_RANGE = (1, max(SIZES) ** 2 * 1e4)  # one count axis for every N: room for the labels


def compute_state_size(n: int, d: int) -> dict[str, Any]:
    """Entries and float32 bytes of one head's N×N matrix, its state (m = d_v = d) and KV cache."""
    cost = attention_cost(n, d)
    return {
        "n": n, "d": d,
        "matrix_entries": cost.softmax_matrix_entries,
        "state_entries": cost.linear_state_entries,
        "cache_entries": cost.kv_cache_entries,
        "matrix_bytes": cost.softmax_matrix_entries * BYTES_PER_ENTRY,
        "state_bytes": cost.linear_state_entries * BYTES_PER_ENTRY,
        "ratio": cost.memory_ratio,
    }


def _bytes(count: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


def plot_state_size(result: dict[str, Any], fig: Figure | None = None) -> Figure:
    """Left: the N×N square with the m×d_v state drawn in its corner at the same scale.
    Right: the same counts on a log axis, where the state is visible at any N.
    Given ``fig``, a figure this function drew before, draws on its axes again in place.
    """
    n, d = result["n"], result["d"]
    fig, (square, bars) = figure_axes(fig, (9, 4), 2, width_ratios=[1, 1.3])
    side = d / n  # the square has side 1 at every N, so its axes stay put
    square.add_patch(Rectangle((0, 0), 1, 1, color=PALETTE["vermillion"], alpha=0.35, label=f"N×N = {n:,}²"))
    square.add_patch(Rectangle((0, 1 - side), side, side, color=PALETTE["green"], label=f"state {d}×{d}"))
    square.set(xlim=(0, 1), ylim=(0, 1), aspect="equal", xticks=[], yticks=[],
               title="to scale: the state is the green corner")
    square.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), fontsize=9, ncols=2, frameon=False)
    labels = ["N×N matrix", "KV cache", "state S"]
    counts = [result["matrix_entries"], result["cache_entries"], result["state_entries"]]
    bars.barh(labels, counts, color=[PALETTE["vermillion"], PALETTE["blue"], PALETTE["green"]], log=True)
    for y, count in enumerate(counts):
        bars.text(count, y, f"  {count:,}  ({_bytes(count * BYTES_PER_ENTRY)})", va="center", fontsize=9)
    plain_log_labels(bars.xaxis)
    bars.set(xlim=COUNT_RANGE, xlabel="entries per head (log scale, float32 bytes)",
             title="on a log scale: visible at any N")
    fig.suptitle(f"N = {n:,}, d = {d}: the matrix is {result['ratio']:,.0f}× the state", fontsize=11)
    return fig


class StateSizeExplorer(Explorer):
    """How much bigger the N×N matrix is than the linear-attention state, as N grows."""

    name = "state_size"
    title = "The N×N attention matrix vs the m×d_v state"
    controls = {"n": SIZES, "d": WIDTHS}
    defaults = {"n": 4096, "d": 64}
    labels = {"n": "sequence length N", "d": "head width d (= m = d_v)"}

    def draw(self, fig: Figure | None, **settings: Any) -> Figure:
        return plot_state_size(compute_state_size(settings["n"], settings["d"]), fig)
