"""Explorer ``worked_example``: chapter 5's two-token state with numbers you can change (chapter 5).

φ(k_1) = [1, 0], v_1 = [1, 0], φ(k_2) = [0, 1], v_2 = [0, s], φ(q) = [q1, q2]:
S = [[1, 0], [0, s]], z = [1, 1], and o = φ(q)ᵀS / φ(q)ᵀz. The defaults q = [3, 1], s = 2 give
the chapter's o = [0.75, 0.5], a weighted average of v_1 and v_2 with weights 3/4 and 1/4.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..analysis import effective_attention_matrix
from ..style import PALETTE
from ..state import LinearAttentionState
from .base import Explorer, ImpossibleSetting

KEY_FEATURES = np.array([[1.0, 0.0], [0.0, 1.0]])  # φ(k_1), φ(k_2)  [2, m]

def compute_worked_example(q1: float, q2: float, v2_scale: float) -> dict[str, Any]:
    """The state after tokens 1 and 2, and the read of φ(q) = [q1, q2], with eps = 0 as in the chapter.

    Raises ``ImpossibleSetting`` when φ(q)ᵀz = 0 (φ(q) = 0): no weight on any token.
    """
    phi_q = np.array([q1, q2], dtype=float)  # [m]
    values = np.array([[1.0, 0.0], [0.0, v2_scale]])  # v_1, v_2  [2, d_v]
    state = LinearAttentionState(m=2, d_v=2, eps=0.0)
    for phi_k, v in zip(KEY_FEATURES, values):
        state.update(phi_k, v)
    numerator, denominator = phi_q @ state.S, float(phi_q @ state.z)
    if denominator == 0:
        raise ImpossibleSetting("φ(q) = 0: no weight on any token, the denominator is 0")
    weights = effective_attention_matrix(phi_q[None], KEY_FEATURES, feature_map="identity", eps=0.0)[0]
    return {"phi_q": phi_q, "phi_k": KEY_FEATURES, "values": values, "S": state.S.copy(),
            "z": state.z.copy(), "numerator": numerator, "denominator": denominator,
            "weights": weights, "o": state.read(phi_q)}


V2_SCALES = (1, 2, 4)  # the slider's values of s: the plane's frame fits the largest

def _number(x: float) -> str:
    return f"{x:.3g}"

def _fill_grid(image: Any, cells: list[list[Any]], matrix: np.ndarray) -> None:
    """An annotated heatmap: the colours on a scale of twice the largest entry (at least 2),
    so the bold numbers stay readable on every cell."""
    image.set_data(matrix)
    image.set_clim(0, max(float(matrix.max()), 1.0) * 2)
    for (row, col), value in np.ndenumerate(matrix):
        cells[row][col].set_text(f"{value:g}")


class WorkedExampleExplorer(Explorer):
    """Change the query's features and v_2: the state stays two small arrays, o moves along v_1–v_2.

    S and z as annotated grids, the two token weights, and o on the segment from v₁ to v₂.
    """

    name = "worked_example"
    title = "The worked example: change φ(q) and v₂"
    controls = {"q1": (0, 1, 3, 6), "q2": (0, 1, 3), "v2_scale": V2_SCALES}
    defaults = {"q1": 3, "q2": 1, "v2_scale": 2}
    labels = {"q1": "φ(q), feature 1", "q2": "φ(q), feature 2", "v2_scale": "v₂ = [0, s], s"}

    figsize = (10.5, 3.8)

    def compute(self, q1: float, q2: float, v2_scale: float) -> dict[str, Any]:
        return compute_worked_example(q1, q2, v2_scale)

    def build(self, fig: Figure) -> dict[str, Any]:
        """Every artist in place and empty: the S and z grids with their cell numbers, two
        weight bars with their fractions, the v₁–v₂ segment, o and the suptitle. The frame
        is the same at every setting (the plane fits the largest s). Few tick labels on
        purpose: each costs more to lay out than anything else in the picture.
        """
        state_ax, weight_ax, plane_ax = fig.subplots(1, 3, width_ratios=[3.2, 2.4, 3.2])
        artists: dict[str, Any] = {}
        for name, left, cols, cmap in (("S", 0, 2, "Blues"), ("z", 3, 1, "Greens")):  # z right of S, a gap between
            artists[name] = state_ax.imshow(np.zeros((2, cols)), cmap=cmap,
                                            extent=(left - 0.5, left + cols - 0.5, 1.5, -0.5))
            artists[f"{name}_cells"] = [[state_ax.text(left + col, row, "", ha="center", va="center", fontsize=14,
                                                       fontweight="bold", in_layout=False)
                                         for col in range(cols)] for row in range(2)]
        state_ax.set_xlim(-0.5, 3.5)
        state_ax.set_xticks([0, 1, 3], ["S[:, 1]", "S[:, 2]", "z"])
        state_ax.set_yticks([0, 1], ["feature 1", "feature 2"])
        state_ax.tick_params(length=0)
        state_ax.grid(False)
        state_ax.set_title("S = φ(k₁)v₁ᵀ + φ(k₂)v₂ᵀ,  z = φ(k₁) + φ(k₂)", fontsize=10)

        colors = [PALETTE["vermillion"], PALETTE["blue"]]
        artists["bars"] = weight_ax.bar([0, 1], [0, 0], color=colors)
        artists["bar_labels"] = [weight_ax.text(x, 0, "", ha="center", va="bottom", fontsize=10, in_layout=False)
                                 for x in (0, 1)]
        weight_ax.set(ylim=(0, 1.35), yticks=[], title="weights φ(q)·φ(kⱼ) / φ(q)ᵀz")
        weight_ax.set_xticks([0, 1], ["token 1", "token 2"])

        artists["segment"], = plane_ax.plot([], [], color="0.6", linestyle="--", zorder=1)
        artists["values"] = plane_ax.scatter([0, 0], [0, 0], s=60, color=colors, zorder=2)
        plane_ax.annotate("v₁", (1, 0), xytext=(0, -18), textcoords="offset points", fontsize=11, ha="center")
        artists["v2_label"] = plane_ax.annotate("v₂", (0, 0), xytext=(-10, 0), textcoords="offset points",
                                                fontsize=11, ha="right", va="center")
        artists["o"] = plane_ax.scatter([0], [0], s=120, marker="*", color=PALETTE["green"], zorder=3)
        artists["o_label"] = plane_ax.annotate("", (0, 0), xytext=(10, 8), textcoords="offset points",
                                               fontsize=10, color=PALETTE["green"], fontweight="bold")
        top = max(V2_SCALES)
        plane_ax.set(xlim=(-0.4, 2.1), ylim=(-0.3 * top, 1.2 * top), xticks=[0, 1], yticks=range(top + 1),
                     xlabel="component 1", ylabel="component 2", title="o lies between v₁ and v₂")
        plane_ax.grid(alpha=0.3)
        artists["title"] = fig.suptitle("", fontsize=12)
        return artists

    def update(self, artists: dict[str, Any], result: dict[str, Any]) -> None:
        """Move every artist to ``result``: S and z, the weights and their fractions, v₂, o and
        the suptitle."""
        phi_q, weights, o, (v1, v2) = (result[key] for key in ("phi_q", "weights", "o", "values"))
        _fill_grid(artists["S"], artists["S_cells"], result["S"])
        _fill_grid(artists["z"], artists["z_cells"], result["z"][:, None])
        scores = phi_q @ result["phi_k"].T  # φ(q)·φ(k_j)
        for bar, label, score, weight in zip(artists["bars"], artists["bar_labels"], scores, weights):
            bar.set_height(weight)
            label.set_y(weight + 0.03)
            label.set_text(f"{_number(score)}/{_number(result['denominator'])}\n= {weight:.2f}")
        artists["segment"].set_data(*zip(v1, v2))
        artists["values"].set_offsets([v1, v2])
        artists["v2_label"].xy = tuple(v2)
        artists["o"].set_offsets([o])
        artists["o_label"].xy = tuple(o)
        artists["o_label"].set_text(f"o = [{o[0]:.2f}, {o[1]:.2f}]")
        artists["title"].set_text(f"φ(q) = [{_number(phi_q[0])}, {_number(phi_q[1])}]:  o = φ(q)ᵀS / φ(q)ᵀz = "
                                  f"[{_number(result['numerator'][0])}, {_number(result['numerator'][1])}] / "
                                  f"{_number(result['denominator'])} = [{o[0]:.2f}, {o[1]:.2f}]")
