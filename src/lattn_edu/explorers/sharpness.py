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
from ..style import PALETTE
from ..feature_maps import FavorPlus
from ..softmax import softmax_attention_weights
from .base import Explorer

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
    weights = {  # each [N, N], rows sum to 1, built when its turn comes: one N×N matrix at a time
        "softmax": lambda: softmax_attention_weights(scale * q, k),
        "elu+1": lambda: effective_attention_matrix(scale * q, k, feature_map="elu+1", eps=0.0),
        f"FAVOR+ (m = {m})": lambda: effective_attention_matrix(scale * q * d**-0.25, k * d**-0.25,
                                                                feature_map=favor, eps=0.0),
    }
    order = np.argsort(-(k @ q[query]), kind="stable")  # keys by score, best first
    result: dict[str, Any] = {"n": n, "scale": scale, "d": d, "m": m, "query": query,
                              "rows": {}, "entropy": {}, "peak": {}}
    for name, build in weights.items():
        a = build()
        result["rows"][name] = a[query, order]
        result["entropy"][name] = float(row_entropy(a).mean())
        result["peak"][name] = float(peak_weight(a).mean())
    return result


LANE = 1.45  # a lane's height, in units of the tallest weight: the lanes' axes stay put as s changes
GROUPS = ("entropy / log N", "peak weight")  # the bar groups


class SharpnessExplorer(Explorer):
    """Softmax sharpens with its inverse temperature; elu+1 cannot, FAVOR+ only partly.

    Left: one row of each method over the keys sorted by score (at rank / N), in lanes on one
    scale. Right: the mean row entropy (as a fraction of log N, the uniform row's) and the
    mean peak weight of each method.
    """

    name = "sharpness"
    title = "Sharpness: softmax's temperature vs elu+1 and FAVOR+"
    controls = {"scale": (0.25, 0.5, 1.0, 2.0, 4.0, 8.0), "n": (32, 128, 512)}
    defaults = {"scale": 1.0, "n": 128}
    labels = {"scale": "query scale s (inverse temperature)", "n": "sequence length N"}

    figsize = (9.5, 4.2)

    def compute(self, scale: float, n: int) -> dict[str, Any]:
        return compute_sharpness(n, scale)

    def build(self, fig: Figure) -> dict[str, Any]:
        """Every artist in place and empty: per method a lane (stems, peak marker, label,
        uniform line) and two bars with labels, plus the bars' 1/N line and the suptitle.
        Made once: making them anew costs more than drawing them."""
        names = ["softmax", "elu+1", f"FAVOR+ (m = {FAVOR_FEATURES})"]  # compute_sharpness's methods
        lanes, bars = fig.subplots(1, 2, width_ratios=[1.5, 1])
        bases = [(len(names) - 1 - position) * LANE for position in range(len(names))]  # first method on top
        # keys at their rank / N, so the axis is the same for every N and a change of N only
        # moves the artists; a margin on the left keeps the best key's stem off the frame
        lanes.set(xlim=(-0.02, 1), xticks=[0, 0.25, 0.5, 0.75, 1], ylim=(-0.05, len(names) * LANE), yticks=[],
                  ylabel="weight (one lane per method)", title="One attention row",
                  xlabel="key rank / N (keys sorted by score q·k, best first; dotted: uniform 1/N)")
        bars.set(ylim=(0, 1.2), yticks=[0, 0.25, 0.5, 0.75, 1.0],
                 title="Mean over all N rows\nuniform row: (1, 1/N); lookup: (0, 1)")
        width = 0.8 / len(names)
        artists: dict[str, Any] = {"bases": bases, "methods": []}
        for position, name in enumerate(names):
            color = COLORS[name.split(" ")[0]]
            base = bases[position]
            method = {"name": name,
                      # a stem per key, drawn as one broken line: a collection of N segments costs far more
                      "stems": lanes.plot([], [], color=color, solid_capstyle="butt")[0],
                      "peak": lanes.plot([], [], "o", color=color, ms=4, clip_on=False)[0],
                      "uniform": lanes.plot([], [], color="k", lw=0.8, ls=":")[0],
                      "label": lanes.text(0.99, base + 1.38, "", transform=lanes.get_yaxis_transform(), ha="right",
                                          va="top", fontsize=9, color=color, fontweight="bold")}
            x = np.arange(len(GROUPS)) + (position - (len(names) - 1) / 2) * width
            method["bars"] = bars.bar(x, np.zeros(len(GROUPS)), width, color=color, label=name)
            method["bar_labels"] = [bars.text(xi, 0, "", ha="center", va="bottom", fontsize=8, color=color)
                                    for xi in x]
            artists["methods"].append(method)
        lanes.hlines(bases, 0, 1, transform=lanes.get_yaxis_transform(), color="0.6", lw=0.6)
        bars.set_xticks(np.arange(len(GROUPS)), ["entropy / log N\n(labels: entropy in nats)", "peak weight"])
        artists["bars_uniform"] = bars.axhline(0, color="k", lw=0.8, ls=":")
        artists["title"] = fig.suptitle("", fontsize=10)
        return artists

    def update(self, artists: dict[str, Any], result: dict[str, Any]) -> None:
        """Move every artist to ``result``: the rows in units of the tallest weight, the bars,
        their labels, the 1/N lines and the suptitle."""
        n, scale = result["n"], result["scale"]
        keys = (np.arange(n) + 0.5) / n  # [N]: rank / N, the middle of each key's slot
        top = max(row.max() for row in result["rows"].values())  # every lane has this height
        for method, base in zip(artists["methods"], artists["bases"]):
            name = method["name"]
            row = result["rows"][name]
            height = row / top  # [N]
            stems = np.stack([np.full(n, base), base + height, np.full(n, np.nan)], axis=1).ravel()  # [3N]
            method["stems"].set_data(np.repeat(keys, 3), stems)
            method["stems"].set_linewidth(max(1.0, 240 / n))
            method["peak"].set_data([keys[np.argmax(row)]], [base + height.max()])
            method["uniform"].set_data([0, 1], [base + 1 / (n * top)] * 2)
            method["label"].set_text(f"{name}: entropy {row_entropy(row[None])[0]:.2f}, peak {row.max():.3f}")
            short = name.split(" ")[0]  # the bars' colors match the lanes; the names say it too
            heights = (result["entropy"][name] / np.log(n), result["peak"][name])
            texts = (f"{short}\n{result['entropy'][name]:.2f}", f"{short}\n{result['peak'][name]:.3f}")
            for bar, label, height_, text in zip(method["bars"], method["bar_labels"], heights, texts):
                bar.set_height(height_)
                label.set_y(height_ + 0.01)
                label.set_text(text)
        artists["bars_uniform"].set_ydata([1 / n, 1 / n])
        artists["title"].set_text(f"N = {n}, query scale s = {scale:g}: row {result['query']}, each lane up to "
                                  f"the tallest weight, {top:.2g}")
