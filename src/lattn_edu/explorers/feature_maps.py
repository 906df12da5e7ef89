"""Explorer ``feature_maps``: random-feature estimates of the softmax kernel exp(q·k) (chapter 6).

φ(q)·φ(k) estimates exp(q·k) without bias for positive (FAVOR+) and trigonometric random
features alike; the error falls like 1/√m, orthogonal directions lower it, and only the
positive features never give a negative weight. The explorer draws, for one set of m
features, the estimate against the exact kernel over many (q, k) pairs, and, for one pair,
the spread of the estimate over many independent sets of features.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..book import PALETTE
from ..feature_maps import FavorPlus, TrigonometricFeatures, exp_kernel
from ._ticks import plain_log_labels
from .base import Explorer, ImpossibleSetting, figure_axes, ladder_limit

HEAD_WIDTH = 16  # d
PAIRS = 400  # (q, k) pairs in the scatter
NORMS = (0.5, 1.25)  # |q| and |k| drawn uniformly in this range
SEEDS = 64  # independent feature draws for the histogram of one pair
KINDS = {"positive": FavorPlus, "trigonometric": TrigonometricFeatures}


def _pairs(count: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """q, k [count, d]: norms uniform in NORMS, cosine of their angle uniform in [-0.95, 0.95]
    (random pairs in d = 16 would all be nearly orthogonal and show only one regime)."""
    q_dir = rng.standard_normal((count, d))
    q_dir /= np.linalg.norm(q_dir, axis=1, keepdims=True)
    other = rng.standard_normal((count, d))
    other -= (other * q_dir).sum(1, keepdims=True) * q_dir  # orthogonal to q
    other /= np.linalg.norm(other, axis=1, keepdims=True)
    cos = rng.uniform(-0.95, 0.95, (count, 1))
    k_dir = cos * q_dir + np.sqrt(1 - cos**2) * other
    q_norm, k_norm = rng.uniform(*NORMS, (2, count, 1))
    return q_norm * q_dir, k_norm * k_dir


def compute_feature_maps(m: int, kind: str, projection: str, d: int = HEAD_WIDTH,
                         pairs: int = PAIRS, seeds: int = SEEDS, seed: int = 0) -> dict[str, Any]:
    """Estimates φ(q)·φ(k) of exp(q·k) for ``pairs`` pairs with one draw of features, and for
    one pair over ``seeds`` independent draws.

    ``kind`` is 'positive' (FAVOR+) or 'trigonometric', ``projection`` 'iid' or 'orthogonal'.
    Pairs have norms in NORMS and spread angles (seeded by ``seed``); the histogram pair is
    the one whose exact kernel is the median. Odd m with trigonometric features raises
    ``ImpossibleSetting``.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}; got {kind!r}")
    if projection not in ("iid", "orthogonal"):
        raise ValueError(f"projection must be 'iid' or 'orthogonal'; got {projection!r}")
    if kind == "trigonometric" and m % 2:
        raise ImpossibleSetting(f"trigonometric features come in cos/sin pairs: m must be even, "
                                f"got m = {m}")
    make = KINDS[kind]
    orthogonal = projection == "orthogonal"
    q, k = _pairs(pairs, d, np.random.default_rng(seed))  # [P, d] each
    exact = exp_kernel(q[:, None], k[:, None])[:, 0, 0]  # [P]: exp(q_p·k_p)
    phi = make(d, m, orthogonal=orthogonal, seed=seed)
    estimate = (phi(q) * phi(k)).sum(-1)  # [P]: φ(q_p)·φ(k_p)
    typical = int(np.argsort(exact)[pairs // 2])
    draws = []
    for s in range(seeds):
        phi_s = make(d, m, orthogonal=orthogonal, seed=seed + 1 + s)
        draws.append(float(phi_s(q[typical]) @ phi_s(k[typical])))
    relative = np.abs(estimate - exact) / exact
    return {
        "m": m, "kind": kind, "projection": projection, "d": d, "q": q, "k": k,
        "exact": exact, "estimate": estimate,
        "relative_rms": float(np.sqrt(np.mean(relative**2))),
        "relative_median": float(np.median(relative)),
        "negative_fraction": float(np.mean(estimate <= 0)),
        "pair_exact": float(exact[typical]), "pair_draws": np.array(draws),
    }


def plot_feature_maps(result: dict[str, Any], fig: Figure | None = None) -> Figure:
    """Left: estimate vs exact over all pairs on log axes (negative estimates marked at the
    bottom edge). Right: histogram of one pair's estimate over independent feature draws.
    Given ``fig``, a figure this function drew before, draws on its axes again in place.
    """
    exact, estimate = result["exact"], result["estimate"]
    color = PALETTE["blue"] if result["kind"] == "positive" else PALETTE["orange"]
    fig, (scatter, hist) = figure_axes(fig, (9.5, 4), 2, width_ratios=[1.1, 1])
    # limits from the exact kernel (the same at every setting) and a whole decade above the
    # largest estimate: the axes change only when an estimate crosses a decade
    low = exact.min() / 10
    high = 10.0 ** np.ceil(np.log10(max(exact.max(), estimate.max()) * 2))
    shown = estimate > low
    scatter.plot([low, high], [low, high], color="k", lw=1, ls="--", label="estimate = exact")
    scatter.plot(exact[shown], estimate[shown], "o", color=color, ms=3, alpha=0.5,
                 label="φ(q)·φ(k), one draw of features")
    for mask, marker_color, label in (
            ((estimate > 0) & ~shown, color, "positive but below the axis"),
            (estimate <= 0, PALETTE["vermillion"], f"≤ 0, a negative weight ({result['negative_fraction']:.0%})")):
        if mask.any():
            scatter.plot(exact[mask], np.full(mask.sum(), low * 1.2), "v", color=marker_color,
                         ms=4, label=label)
    scatter.set(xscale="log", yscale="log", xlim=(low, high), ylim=(low, high),
                xlabel="exact exp(q·k)", ylabel="estimate φ(q)·φ(k)")
    scatter.set_title(f"estimate against exact, {exact.size} pairs", fontsize=10)
    plain_log_labels(scatter.xaxis, scatter.yaxis)
    scatter.legend(loc="upper left", fontsize=8)
    draws, truth = result["pair_draws"], result["pair_exact"]
    half_width = ladder_limit(max(float(np.abs(draws - truth).max()), truth / 2))  # a short ladder of ranges
    bins = np.linspace(truth - half_width, truth + half_width, 30)
    counts, _, _ = hist.hist(draws, bins=bins, color=color, alpha=0.75, histtype="stepfilled")
    stderr = draws.std(ddof=1) / np.sqrt(draws.size)
    hist.axvline(truth, color="k", lw=2)
    hist.axvline(draws.mean(), color=PALETTE["purple"], lw=2, ls="--")
    if bins[0] < 0:
        hist.axvspan(bins[0], 0, color=PALETTE["vermillion"], alpha=0.08, lw=0)
        hist.text(bins[0], 0.97, " negative", color=PALETTE["vermillion"], fontsize=8, va="top",
                  transform=hist.get_xaxis_transform())
    hist.set(xlabel="estimate φ(q)·φ(k) for one typical pair", ylabel="number of draws",
             ylim=(0, ladder_limit(counts.max() * 1.4)))
    hist.set_title(f"one typical pair, {draws.size} draws of the features", fontsize=10)
    fig.suptitle(f"{result['kind'].capitalize()} features, {result['projection']}, m = {result['m']}: "
                 f"relative error over {exact.size} pairs RMS {result['relative_rms']:.3g}, "
                 f"median {result['relative_median']:.3g}\none typical pair: exact {truth:.3f} (solid), "
                 f"mean {draws.mean():.3f} ± {stderr:.3f} (dashed)", fontsize=10)
    return fig


class FeatureMapsExplorer(Explorer):
    """How well m random features estimate exp(q·k): positive vs trigonometric, iid vs orthogonal."""

    name = "feature_maps"
    title = "Random features for the softmax kernel: error vs m"
    controls = {"m": (4, 16, 64, 256), "kind": ("positive", "trigonometric"),
                "projection": ("iid", "orthogonal")}
    defaults = {"m": 16, "kind": "positive", "projection": "orthogonal"}
    labels = {"m": "features m", "kind": "feature kind", "projection": "directions"}

    def draw(self, fig: Figure | None, **settings: Any) -> Figure:
        return plot_feature_maps(compute_feature_maps(settings["m"], settings["kind"],
                                                      settings["projection"]), fig)
