"""Explorer ``sharpness``: how peaked a row of attention can be, as the temperature changes (chapter 7).

Multiplying the queries by s (dividing softmax's temperature by s) sharpens softmax rows
towards a lookup. elu+1 has no temperature (the factor s cancels in the normalisation) and
FAVOR+ with finite m stalls part of the way. The explorer shows one row of each method over
the keys and the mean row entropy and peak weight (``row_entropy``, ``peak_weight``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..analysis import effective_attention_matrix, peak_weight, row_entropy
from ..book import PALETTE
from ..feature_maps import FavorPlus
from ..softmax import softmax_attention_weights
from .base import Explorer, figure_axes

HEAD_WIDTH = 16  # d
FAVOR_FEATURES = 64  # m of the FAVOR+ map
COLORS = {"softmax": PALETTE["vermillion"], "elu+1": PALETTE["green"], "FAVOR+": PALETTE["blue"]}


def compute_sharpness(n: int, scale: float, d: int = HEAD_WIDTH, m: int = FAVOR_FEATURES,
                      seed: int = 0, query: int = 0) -> dict[str, Any]:
    """Attention weights of softmax, elu+1 and FAVOR+ on queries s·q and keys k, [N, d] each.

    FAVOR+ sees s·q and k scaled by d**-0.25, so it estimates this very softmax. Returns, per
    method, one ``row`` (query ``query``, keys sorted by its score q·k, best first), and the
    ``entropy`` and ``peak`` of every row averaged over the N queries.
    """
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((n, d)), rng.standard_normal((n, d))  # [N, d]
    favor = FavorPlus(d, m, orthogonal=True, seed=seed)
    weights = {
        "softmax": softmax_attention_weights(scale * q, k),
        "elu+1": effective_attention_matrix(scale * q, k, feature_map="elu+1", eps=0.0),
        f"FAVOR+ (m = {m})": effective_attention_matrix(scale * q * d**-0.25, k * d**-0.25,
                                                        feature_map=favor, eps=0.0),
    }  # [N, N] each, rows sum to 1
    order = np.argsort(-(k @ q[query]), kind="stable")  # keys by score, best first
    return {
        "n": n, "scale": scale, "d": d, "m": m, "query": query,
        "rows": {name: a[query, order] for name, a in weights.items()},
        "entropy": {name: float(row_entropy(a).mean()) for name, a in weights.items()},
        "peak": {name: float(peak_weight(a).mean()) for name, a in weights.items()},
    }


def plot_sharpness(result: dict[str, Any], fig: Figure | None = None) -> Figure:
    """Left: one row of each method over the keys (sorted by score). Right: the mean entropy
    (as a fraction of log N, the uniform row's) and the mean peak weight of each method.
    Given ``fig``, a figure this function drew before, draws on its axes again in place.
    """
    n, scale = result["n"], result["scale"]
    names = list(result["rows"])
    colors = [COLORS[name.split(" ")[0]] for name in names]
    fig, (lanes, bars) = figure_axes(fig, (9.5, 4.2), 2, width_ratios=[1.5, 1])
    keys = np.arange(1, n + 1)
    top = max(row.max() for row in result["rows"].values())  # every lane has this height
    lane = 1.45  # in units of top, so the axes stay put as s changes
    # limits first: then adding artists triggers no autoscaling, most of their cost
    lanes.set(xlim=(0.5, n + 0.5), ylim=(-0.05, len(names) * lane))
    bars.set(ylim=(0, 1.2))
    bases = [(len(names) - 1 - position) * lane for position in range(len(names))]  # first method on top
    for position, (name, color) in enumerate(zip(names, colors)):
        row = result["rows"][name]
        height = row / top  # [N]
        base = bases[position]
        # a stem per key, drawn as one broken line: a collection of N segments costs far more
        stems = np.stack([np.full(n, base), base + height, np.full(n, np.nan)], axis=1).ravel()  # [3N]
        lanes.plot(np.repeat(keys, 3), stems, color=color, lw=max(1.0, 240 / n), solid_capstyle="butt")
        lanes.plot(keys[np.argmax(row)], base + height.max(), "o", color=color, ms=4)
        lanes.text(0.99, base + 1.38, f"{name}: entropy {row_entropy(row[None])[0]:.2f}, "
                   f"peak {row.max():.3f}", transform=lanes.get_yaxis_transform(), ha="right",
                   va="top", fontsize=9, color=color, fontweight="bold")
    lanes.hlines(bases, 0.5, n + 0.5, color="0.6", lw=0.6)
    lanes.hlines(np.add(bases, 1 / (n * top)), 0.5, n + 0.5, color="k", lw=0.8, ls=":")
    lanes.set_yticks([])  # the lanes' common height is in the suptitle
    lanes.set(xlabel="key (sorted by score q·k, best first; dotted: uniform 1/N)",
              ylabel="weight (one lane per method)", title="One attention row")
    width = 0.8 / len(names)
    groups = {"entropy / log N": [result["entropy"][name] / np.log(n) for name in names],
              "peak weight": [result["peak"][name] for name in names]}
    for offset, (name, color) in enumerate(zip(names, colors)):
        x = np.arange(len(groups)) + (offset - (len(names) - 1) / 2) * width
        heights = [values[offset] for values in groups.values()]
        bars.bar(x, heights, width, color=color, label=name)
        short = name.split(" ")[0]  # the bars' colors match the lanes; the names say it too
        for xi, height, text in zip(x, heights, (f"{short}\n{result['entropy'][name]:.2f}",
                                                 f"{short}\n{result['peak'][name]:.3f}")):
            bars.text(xi, height + 0.01, text, ha="center", va="bottom", fontsize=8, color=color)
    bars.axhline(1 / n, color="k", lw=0.8, ls=":")
    bars.set_xticks(np.arange(len(groups)), ["entropy / log N\n(labels: entropy in nats)",
                                             "peak weight"])
    bars.set(yticks=[0, 0.25, 0.5, 0.75, 1.0],
             title="Mean over all N rows\nuniform row: (1, 1/N); lookup: (0, 1)")
    fig.suptitle(f"N = {n}, query scale s = {scale:g}: row {result['query']}, each lane up to "
                 f"the tallest weight, {top:.2g}", fontsize=10)
    return fig


class SharpnessExplorer(Explorer):
    """Softmax sharpens with its inverse temperature; elu+1 cannot, FAVOR+ only partly."""

    name = "sharpness"
    title = "Sharpness: softmax's temperature vs elu+1 and FAVOR+"
    controls = {"scale": (0.25, 0.5, 1.0, 2.0, 4.0, 8.0), "n": (32, 128, 512)}
    defaults = {"scale": 1.0, "n": 128}
    labels = {"scale": "query scale s (inverse temperature)", "n": "sequence length N"}

    def draw(self, fig: Figure | None, **settings: Any) -> Figure:
        return plot_sharpness(compute_sharpness(settings["n"], settings["scale"]), fig)
