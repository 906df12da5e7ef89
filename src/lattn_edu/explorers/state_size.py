"""Explorer ``state_size``: the N×N attention matrix against the m×d_v state, to scale (chapter 1)."""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..analysis import attention_cost
from ..style import PALETTE
from ._ticks import plain_log_labels
from .base import Explorer

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


class StateSizeExplorer(Explorer):
    """How much bigger the N×N attention matrix is than the linear-attention state, as N grows.

    Left: the N×N square with the m×d_v state drawn in its corner at the same scale. Right:
    the same counts on a log axis, where the state is visible at any N.
    """

    name = "state_size"
    title = "The N×N attention matrix vs the m×d_v state"
    controls = {"n": SIZES, "d": WIDTHS}
    defaults = {"n": 4096, "d": 64}
    labels = {"n": "sequence length N", "d": "head width d (= m = d_v)"}
    figsize = (9, 4)

    def compute(self, n: int, d: int) -> dict[str, Any]:
        return compute_state_size(n, d)

    def build(self, fig: Figure) -> dict[str, Any]:
        """The unit square (the N×N matrix at every N) and the state's corner with a legend,
        and three bars with their count labels on a fixed log axis."""
        square, bars = fig.subplots(1, 2, width_ratios=[1, 1.3])
        artists: dict[str, Any] = {"state": Rectangle((0, 0), 0, 0, color=PALETTE["green"], label=" ")}
        square.add_patch(Rectangle((0, 0), 1, 1, color=PALETTE["vermillion"], alpha=0.35, label=" "))
        square.add_patch(artists["state"])
        square.set(xlim=(0, 1), ylim=(0, 1), aspect="equal", xticks=[], yticks=[],
                   title="to scale: the state is the green corner")
        artists["legend"] = square.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), fontsize=9,
                                          ncols=2, frameon=False)
        colours = [PALETTE["vermillion"], PALETTE["blue"], PALETTE["green"]]
        artists["bars"] = bars.barh(["N×N matrix", "KV cache", "state S"], [1, 1, 1], color=colours, log=True)
        artists["counts"] = [bars.text(1, y, "", va="center", fontsize=9) for y in range(3)]
        plain_log_labels(bars.xaxis)
        bars.set(xlim=COUNT_RANGE, xlabel="entries per head (log scale, float32 bytes)",
                 title="on a log scale: visible at any N")
        artists["title"] = fig.suptitle("", fontsize=11)
        return artists

    def update(self, artists: dict[str, Any], result: dict[str, Any]) -> None:
        """The state's corner and the legend, the bars and their counts, and the suptitle."""
        n, d = result["n"], result["d"]
        side = d / n  # the square has side 1 at every N
        artists["state"].set_bounds(0, 1 - side, side, side)
        for text, label in zip(artists["legend"].get_texts(), (f"N×N = {n:,}²", f"state {d}×{d}")):
            text.set_text(label)
        counts = [result["matrix_entries"], result["cache_entries"], result["state_entries"]]
        for bar, label, count in zip(artists["bars"], artists["counts"], counts):
            bar.set_width(count)
            label.set_x(count)
            label.set_text(f"  {count:,}  ({_bytes(count * BYTES_PER_ENTRY)})")
        artists["title"].set_text(f"N = {n:,}, d = {d}: the matrix is {result['ratio']:,.0f}× the state")
