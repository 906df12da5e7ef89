"""Explorer ``recurrence``: the state S_i, z_i token by token, and the parallel form agreeing (chapter 4).

    S_i = S_{i-1} + φ(k_i) v_iᵀ,   z_i = z_{i-1} + φ(k_i),   o_i = φ(q_i)ᵀ S_i / φ(q_i)ᵀ z_i
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..book import PALETTE
from ..feature_maps import elu_plus_one
from ..linear import linear_attention
from ..state import LinearAttentionState
from .base import Explorer, figure_axes

NUM_TOKENS, FEATURES, VALUE_WIDTH = 12, 6, 4  # N, m (= d for elu+1), d_v


def compute_recurrence(i: int, seed: int, n: int = NUM_TOKENS, d: int = FEATURES,
                       d_v: int = VALUE_WIDTH) -> dict[str, Any]:
    """Feed tokens 0 … i into a ``LinearAttentionState`` and read query i; compare with row i of
    causal ``linear_attention`` (parallel form) over the whole sequence.

    Returns S_i [m, d_v], z_i [m], o_i [d_v], the parallel output O [N, d_v], and the colour
    limit of S over all N steps (so the picture keeps one scale as the state grows).
    """
    if not 0 <= i < n:
        raise ValueError(f"token index i must lie in 0 … {n - 1}; got {i}")
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, n, d))  # [N, d]
    v = rng.standard_normal((n, d_v))  # [N, d_v]
    phi_q, phi_k = elu_plus_one(q), elu_plus_one(k)  # [N, m], m = d
    state = LinearAttentionState(m=d, d_v=d_v)
    outputs, largest = [], 0.0
    for token in range(n):
        outputs.append(state.step(phi_q[token], phi_k[token], v[token]))
        largest = max(largest, float(np.abs(state.S).max()))
        if token == i:
            S_i, z_i = state.S.copy(), state.z.copy()
    parallel = linear_attention(q, k, v, feature_map="elu+1", causal=True, form="parallel")
    o_i = outputs[i]
    return {"i": i, "seed": seed, "n": n, "S": S_i, "z": z_i, "o": o_i, "parallel": parallel,
            "max_difference": float(np.abs(o_i - parallel[i]).max()),
            "s_limit": largest, "z_limit": float(state.z.max()), "state_numbers": d * d_v + d}


def _annotate(ax: Any, matrix: np.ndarray, columns: np.ndarray, fmt: str, limit: float) -> None:
    for (row, col), value in np.ndenumerate(matrix):
        ax.text(columns[col], row, format(value, fmt), ha="center", va="center", fontsize=8, in_layout=False,
                color="white" if abs(value) > 0.6 * limit else "0.13")


def plot_recurrence(result: dict[str, Any], fig: Figure | None = None) -> Figure:
    """Left: S_i and z_i side by side as annotated heatmaps on scales fixed over all i.
    Right: o_i read from the state next to row i of the parallel form, with their difference.
    Given ``fig``, a figure this function drew before, draws on its axes again in place.
    """
    i, n, S, z, o, parallel = (result[key] for key in ("i", "n", "S", "z", "o", "parallel"))
    m, d_v = S.shape
    fig, (state_ax, out_ax) = figure_axes(fig, (10, 4), 2, width_ratios=[d_v + 2, 5])
    limit, z_limit = result["s_limit"], result["z_limit"]
    state_ax.imshow(S, cmap="RdBu_r", vmin=-limit, vmax=limit, extent=(-0.5, d_v - 0.5, m - 0.5, -0.5))
    state_ax.imshow(z[:, None], cmap="Greens", vmin=0, vmax=1.5 * z_limit,
                    extent=(d_v + 0.5, d_v + 1.5, m - 0.5, -0.5))  # one empty column between
    _annotate(state_ax, S, np.arange(d_v), ".1f", limit)
    _annotate(state_ax, z[:, None], np.array([d_v + 1]), ".1f", 1.5 * z_limit)
    state_ax.set_xlim(-0.5, d_v + 1.5)
    state_ax.set_xticks([*range(d_v), d_v + 1], [*map(str, range(d_v)), "z"])
    state_ax.set_yticks([])  # few tick labels: each one costs more to lay out than a cell's number
    state_ax.tick_params(length=0)
    state_ax.grid(False)
    state_ax.set(title=f"state S_i [{m}×{d_v}] and z_i [{m}]", xlabel="value component",
                 ylabel=f"feature 0 … {m - 1}")

    positions = np.arange(d_v)
    out_ax.bar(positions, o, width=0.6, color=PALETTE["green"])
    out_ax.plot(positions, parallel[i], linestyle="none", marker="_", markersize=34,
                markeredgewidth=3, color="0.13")
    out_ax.axhline(0, color="0.53", linewidth=0.8)
    bound = 1.15 * float(np.abs(parallel).max())  # one scale for every i
    out_ax.yaxis.set_major_locator(MaxNLocator(4))
    out_ax.set(ylim=(-bound, bound), xticks=positions, xlabel="value component",
               title="bars: o_i = φ(q_i)ᵀS_i / φ(q_i)ᵀz_i\ndashes: row i of the parallel form")
    out_ax.text(0.98, 0.03, f"max |difference| = {result['max_difference']:.1e}",
                transform=out_ax.transAxes, ha="right", va="bottom", fontsize=9, in_layout=False)
    fig.suptitle(f"i = {i}: tokens 0…{i} of {n} are in the state, still {result['state_numbers']} numbers "
                 f"(seed {result['seed']})", fontsize=11)
    return fig


class RecurrenceExplorer(Explorer):
    """Step through the tokens: the state grows in value, never in size, and matches the parallel form."""

    name = "recurrence"
    title = "The recurrent state S_i, z_i, token by token"
    controls = {"i": tuple(range(NUM_TOKENS)), "seed": (0, 1)}
    defaults = {"i": 3, "seed": 0}
    labels = {"i": "token i", "seed": "random seed"}

    def draw(self, fig: Figure | None, **settings: Any) -> Figure:
        return plot_recurrence(compute_recurrence(settings["i"], settings["seed"]), fig)
