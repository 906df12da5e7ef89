"""Explorer ``memory``: P key–value pairs in an [m, d_v] state, written by three rules (chapter 10).

- additive:    S ← S + k_j v_jᵀ
- delta:       S ← S + β k_j (v_j − Sᵀk_j)ᵀ
- gated delta: S ← a S first (a = GATED_DECAY), then the delta step

Keys are random unit vectors with a shared component (cosine about the key correlation ρ);
values are random unit vectors. Left: the retrieval error ‖Sᵀk_i − v_i‖ of every stored pair in
the order they were written. Right: the singular values of each rule's state (at most
min(m, d_v) of them: the rank cap). The figure and its artists are built once; a control
change recomputes three small scans and moves the artists' data (set_data).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..analysis import singular_values
from ..style import PALETTE
from ..memory import RULES, make_keys, make_values, retrieval_error, write_memory
from ._ticks import fixed_ticks
from .base import Explorer

VALUE_WIDTH = 16  # d_v
GATED_DECAY = 0.95  # the gated rule's decay a per step: a pair written 20 steps ago keeps 0.95^20 ≈ 0.36
MAX_PAIRS = 64  # the P axis is fixed at the largest P of the slider, so pictures line up
STYLES = {"additive": (PALETTE["orange"], "-", "o"), "delta": (PALETTE["blue"], "--", "s"),
          "gated delta": (PALETTE["green"], ":", "^")}  # colour plus line style and marker
# Both panels keep one y axis at every setting, so a control change never redraws the axes:
# up to 8 (every setting of the grid stays below 7), on an asinh scale, linear below 1 and
# compressed above, so that the common values (0 to 2) still fill half the height.
Y_TICKS = (0, 0.5, 1, 2, 4, 8)

def compute_memory(p: int, m: int, beta: float = 1.0, correlation: float = 0.0,
                   d_v: int = VALUE_WIDTH, decay: float = GATED_DECAY, seed: int = 0) -> dict[str, Any]:
    """Per rule: the retrieval error of each pair [P] and the state's singular values [min(m, d_v)]."""
    keys = make_keys(p, m, "random", correlation, seed)  # [P, m]
    values = make_values(p, d_v, seed + 1)  # [P, d_v]
    errors, singular = {}, {}
    for rule in RULES:
        state = write_memory(keys, values, rule, beta, decay)  # [m, d_v]
        errors[rule] = retrieval_error(state, keys, values)
        singular[rule] = singular_values(state)  # [min(m, d_v)], largest first
    return {"p": p, "m": m, "beta": beta, "correlation": correlation, "errors": errors,
            "singular": singular}


class MemoryExplorer(Explorer):
    """Store P pairs by three rules and see what each can read back, and the rank it leaves."""

    name = "memory"
    title = "Memory: P key–value pairs in an m×d_v state, added or overwritten"
    controls = {"p": (8, 16, 32, 64), "m": (16, 32), "beta": (0.5, 1.0, 1.5),
                "correlation": (0.0, 0.8)}  # 48 frames: the static page stays under 3 MB
    defaults = {"p": 16, "m": 16, "beta": 1.0, "correlation": 0.0}
    labels = {"p": "pairs P", "m": "key width m", "beta": "step β", "correlation": "key correlation ρ"}
    figsize = (8.5, 3.4)
    layout = "none"  # the axes are placed by hand: no layout pass at all

    def compute(self, p: int, m: int, beta: float, correlation: float) -> dict[str, Any]:
        return compute_memory(p, m, beta, correlation)

    def build(self, fig: Figure) -> dict[str, Any]:
        """Two axes at fixed positions and one line per rule in each panel."""
        error_ax = fig.add_axes((0.07, 0.15, 0.5, 0.68))
        value_ax = fig.add_axes((0.66, 0.15, 0.32, 0.68))
        artists: dict[str, Any] = {"errors": {}, "singular": {}}
        for rule in RULES:
            colour, style, marker = STYLES[rule]
            artists["errors"][rule], = error_ax.plot([], [], color=colour, linestyle=style, marker=marker,
                                                     markersize=3)
            artists["singular"][rule], = value_ax.plot([], [], color=colour, linestyle=style, marker=marker,
                                                       markersize=4, label=rule)
        # few, fixed ticks: text is most of a redraw's cost
        error_ax.set(xlim=(0, MAX_PAIRS + 1), xticks=(1, 16, 32, 48, 64), xlabel="pair i (in the order written)",
                     ylabel="‖Sᵀk_i − v_i‖ / ‖v_i‖")
        value_ax.legend(loc="upper right", fontsize=8, frameon=False)  # the corner small singular values leave free
        value_ax.set(xlim=(0.5, VALUE_WIDTH + 0.5), xticks=(1, 4, 8, 12, 16), xlabel="index")
        for ax in (error_ax, value_ax):
            ax.set_yscale("asinh", linear_width=1)
            ax.set_ylim(0, Y_TICKS[-1])
            fixed_ticks(ax.yaxis, Y_TICKS, [f"{tick:g}" for tick in Y_TICKS])
        error_ax.set_title("retrieval error (dash-dot line: i = m, the key width)", fontsize=10)
        value_ax.set_title("singular values of S", fontsize=10)
        artists["capacity"] = error_ax.axvline(0, color="#777777", linewidth=1, linestyle="-.")
        artists["title"] = fig.suptitle("", fontsize=10)
        for ax in (error_ax, value_ax):
            ax.grid(alpha=0.3)
        return artists

    def update(self, artists: dict[str, Any], result: dict[str, Any]) -> None:
        """Move every artist to ``result``: data, the m marker and the suptitle."""
        p, m = result["p"], result["m"]
        for rule in RULES:
            artists["errors"][rule].set_data(np.arange(1, p + 1), result["errors"][rule])
            artists["singular"][rule].set_data(np.arange(1, len(result["singular"][rule]) + 1),
                                               result["singular"][rule])
        artists["capacity"].set_xdata([m, m])
        artists["title"].set_text(f"P = {p} pairs, m = {m}, d_v = {VALUE_WIDTH}, β = {result['beta']:g}, "
                                  f"key correlation {result['correlation']:g}, gated a = {GATED_DECAY}")
