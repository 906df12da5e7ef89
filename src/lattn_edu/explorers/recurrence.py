"""Explorer ``recurrence``: the state S_i, z_i token by token, and the parallel form agreeing (chapter 4).

    S_i = S_{i-1} + φ(k_i) v_iᵀ,   z_i = z_{i-1} + φ(k_i),   o_i = φ(q_i)ᵀ S_i / φ(q_i)ᵀ z_i
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..style import PALETTE
from ..feature_maps import elu_plus_one
from ..linear import linear_attention
from ..state import LinearAttentionState
from .base import Explorer

NUM_TOKENS, FEATURES, VALUE_WIDTH = 12, 6, 4  # N, m (= d for elu+1), d_v


@functools.lru_cache(maxsize=8)
def _run(seed: int, n: int, d: int, d_v: int) -> dict[str, np.ndarray]:
    """Every step of one seeded sequence, kept: moving the token i reads another step of the
    same run, so only a new seed or size computes anything. Arrays are read-only."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, n, d))  # [N, d]
    v = rng.standard_normal((n, d_v))  # [N, d_v]
    phi_q, phi_k = elu_plus_one(q), elu_plus_one(k)  # [N, m], m = d
    state = LinearAttentionState(m=d, d_v=d_v)
    outputs, states, normalisers = [], [], []
    for token in range(n):
        outputs.append(state.step(phi_q[token], phi_k[token], v[token]))
        states.append(state.S.copy())
        normalisers.append(state.z.copy())
    run = {"S": np.array(states), "z": np.array(normalisers), "o": np.array(outputs),  # [N, m, d_v], [N, m], [N, d_v]
           "parallel": linear_attention(q, k, v, feature_map="elu+1", causal=True, form="parallel")}
    for array in run.values():
        array.flags.writeable = False
    return run

def compute_recurrence(i: int, seed: int, n: int = NUM_TOKENS, d: int = FEATURES,
                       d_v: int = VALUE_WIDTH) -> dict[str, Any]:
    """Feed tokens 0 … i into a ``LinearAttentionState`` and read query i; compare with row i of
    causal ``linear_attention`` (parallel form) over the whole sequence.

    Returns S_i [m, d_v], z_i [m], o_i [d_v], the parallel output O [N, d_v], and the colour
    limit of S over all N steps (so the picture keeps one scale as the state grows).
    """
    if not 0 <= i < n:
        raise ValueError(f"token index i must lie in 0 … {n - 1}; got {i}")
    run = _run(seed, n, d, d_v)
    o_i, parallel = run["o"][i], run["parallel"]
    return {"i": i, "seed": seed, "n": n, "S": run["S"][i], "z": run["z"][i], "o": o_i, "parallel": parallel,
            "max_difference": float(np.abs(o_i - parallel[i]).max()),
            "s_limit": float(np.abs(run["S"]).max()), "z_limit": float(run["z"][-1].max()),
            "state_numbers": d * d_v + d}


class RecurrenceExplorer(Explorer):
    """Step through the tokens: the state grows in value, never in size, and matches the parallel form.

    Left: S_i and z_i side by side as annotated heatmaps on scales fixed over all i. Right: o_i
    read from the state next to row i of the parallel form, with their difference.
    """

    name = "recurrence"
    title = "The recurrent state S_i, z_i, token by token"
    controls = {"i": tuple(range(NUM_TOKENS)), "seed": (0, 1)}
    defaults = {"i": 3, "seed": 0}
    labels = {"i": "token i", "seed": "random seed"}
    figsize = (10, 4)

    def compute(self, i: int, seed: int) -> dict[str, Any]:
        return compute_recurrence(i, seed)

    def decoration(self, i: int, seed: int) -> int:
        return seed  # the output panel's scale fits every token of the seed's run

    def build(self, fig: Figure) -> dict[str, Any]:
        """Every artist in place and empty, for the FEATURES×VALUE_WIDTH state: two heatmaps
        and their cell labels, the bars and dashes, the difference note and the suptitle.
        Made once: making thirty cell labels anew for every token would cost more than
        drawing them."""
        m, d_v = FEATURES, VALUE_WIDTH
        state_ax, out_ax = fig.subplots(1, 2, width_ratios=[d_v + 2, 5])
        artists: dict[str, Any] = {"out_ax": out_ax}
        artists["S"] = state_ax.imshow(np.zeros((m, d_v)), cmap="RdBu_r", extent=(-0.5, d_v - 0.5, m - 0.5, -0.5))
        artists["z"] = state_ax.imshow(np.zeros((m, 1)), cmap="Greens",
                                       extent=(d_v + 0.5, d_v + 1.5, m - 0.5, -0.5))  # one empty column between
        artists["cells"] = [[state_ax.text(col, row, "", ha="center", va="center", fontsize=8, in_layout=False)
                             for col in [*range(d_v), d_v + 1]] for row in range(m)]  # S's columns, then z
        state_ax.set_xlim(-0.5, d_v + 1.5)
        state_ax.set_xticks([*range(d_v), d_v + 1], [*map(str, range(d_v)), "z"])
        state_ax.set_yticks([])  # few tick labels: each one costs more to lay out than a cell's number
        state_ax.tick_params(length=0)
        state_ax.grid(False)
        state_ax.set(title=f"state S_i [{m}×{d_v}] and z_i [{m}]", xlabel="value component",
                     ylabel=f"feature 0 … {m - 1}")

        positions = np.arange(d_v)
        artists["bars"] = out_ax.bar(positions, np.zeros(d_v), width=0.6, color=PALETTE["green"])
        artists["dashes"], = out_ax.plot(positions, np.zeros(d_v), linestyle="none", marker="_", markersize=34,
                                         markeredgewidth=3, color="0.13")
        out_ax.axhline(0, color="0.53", linewidth=0.8)
        out_ax.yaxis.set_major_locator(MaxNLocator(4))
        out_ax.set(xticks=positions, xlabel="value component",
                   title="bars: o_i = φ(q_i)ᵀS_i / φ(q_i)ᵀz_i\ndashes: row i of the parallel form")
        artists["difference"] = out_ax.text(0.98, 0.03, "", transform=out_ax.transAxes, ha="right", va="bottom",
                                            fontsize=9, in_layout=False)
        artists["title"] = fig.suptitle("", fontsize=11)
        return artists

    def update(self, artists: dict[str, Any], result: dict[str, Any]) -> None:
        """Move every artist to ``result``: S_i and z_i on scales fixed over all i, their labels,
        o_i against row i of the parallel form, the difference and the suptitle."""
        i, n, S, z, o, parallel = (result[key] for key in ("i", "n", "S", "z", "o", "parallel"))
        limit, z_limit = result["s_limit"], 1.5 * result["z_limit"]
        artists["S"].set_data(S)
        artists["S"].set_clim(-limit, limit)
        artists["z"].set_data(z[:, None])
        artists["z"].set_clim(0, z_limit)
        for row, labels in enumerate(artists["cells"]):
            for label, value, scale in zip(labels, [*S[row], z[row]], [limit] * S.shape[1] + [z_limit]):
                label.set_text(format(value, ".1f"))
                label.set_color("white" if abs(value) > 0.6 * scale else "0.13")
        for bar, height in zip(artists["bars"], o):
            bar.set_height(height)
        artists["dashes"].set_ydata(parallel[i])
        bound = 1.15 * float(np.abs(parallel).max())  # one scale for every i
        artists["out_ax"].set_ylim(-bound, bound)
        artists["difference"].set_text(f"max |difference| = {result['max_difference']:.1e}")
        artists["title"].set_text(f"i = {i}: tokens 0…{i} of {n} are in the state, still {result['state_numbers']} "
                                  f"numbers (seed {result['seed']})")
