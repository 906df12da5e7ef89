"""Explorer ``feature_maps``: random-feature estimates of the softmax kernel exp(q·k) (chapter 6).

φ(q)·φ(k) estimates exp(q·k) without bias for positive (FAVOR+) and trigonometric random
features alike; the error falls like 1/√m, orthogonal directions lower it, and only the
positive features never give a negative weight. The explorer draws, for one set of m
features, the estimate against the exact kernel over many (q, k) pairs, and, for one pair,
the spread of the estimate over many independent sets of features.
"""

from __future__ import annotations

import itertools
from functools import lru_cache
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..style import PALETTE
from ..feature_maps import FavorPlus, TrigonometricFeatures, exp_kernel
from ._ticks import fixed_ticks, power_of_ten
from .base import Explorer, ImpossibleSetting

HEAD_WIDTH = 16  # d
PAIRS = 400  # (q, k) pairs in the scatter
NORMS = (0.5, 1.25)  # |q| and |k| drawn uniformly in this range
SEEDS = 64  # independent feature draws for the histogram of one pair
POOL_WIDTH = 256  # the histogram's draws are made once at this m (the explorer's largest)
KINDS = {"positive": FavorPlus, "trigonometric": TrigonometricFeatures}
# Fixed axes, the same at every setting, so that a move redraws only the data. Exact values
# lie in [0.23, 4.4] (|q·k| <= 0.95 · 1.25²); estimates beyond the scatter's axes sit on an edge.
SCATTER_LIMITS = (1e-2, 1e2)
RATIO_EDGES = np.linspace(-1, 3, 41)  # histogram bins of estimate / exact, 0.1 wide


@lru_cache(maxsize=4)
def _pairs(count: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, k [count, d] and exp(q_p·k_p) [count], read-only and kept (every setting uses them):
    norms uniform in NORMS, cosine of their angle uniform in [-0.95, 0.95] (random pairs in
    d = 16 would all be nearly orthogonal and show only one regime)."""
    rng = np.random.default_rng(seed)
    q_dir = rng.standard_normal((count, d))
    q_dir /= np.linalg.norm(q_dir, axis=1, keepdims=True)
    other = rng.standard_normal((count, d))
    other -= (other * q_dir).sum(1, keepdims=True) * q_dir  # orthogonal to q
    other /= np.linalg.norm(other, axis=1, keepdims=True)
    cos = rng.uniform(-0.95, 0.95, (count, 1))
    k_dir = cos * q_dir + np.sqrt(1 - cos**2) * other
    q_norm, k_norm = rng.uniform(*NORMS, (2, count, 1))
    q, k = q_norm * q_dir, k_norm * k_dir
    exact = exp_kernel(q[:, None], k[:, None])[:, 0, 0]  # [count]: exp(q_p·k_p)
    for array in (q, k, exact):
        array.setflags(write=False)
    return q, k, exact


@lru_cache(maxsize=4)
def _projection_pool(kind: str, d: int, orthogonal: bool, width: int, draws: int,
                     first_seed: int) -> tuple[np.ndarray, ...]:
    """The projections of ``draws`` maps of ``kind`` at m = ``width``, seeded first_seed,
    first_seed + 1, …: drawn once and kept (read-only), since at m = 256 the orthogonal
    ones cost 16 QRs each, most of a setting's compute, and every smaller m uses their rows."""
    pool = tuple(KINDS[kind](d, width, orthogonal=orthogonal, seed=first_seed + s).projection
                 for s in range(draws))  # [width / features per projection, d] each
    for projection in pool:
        projection.setflags(write=False)
    return pool


@lru_cache(maxsize=32)
def _pooled_maps(kind: str, d: int, orthogonal: bool, m: int, draws: int, first_seed: int) -> tuple[Any, ...]:
    """``draws`` independent maps of ``kind`` and width m, built by the package's class from
    the first rows of the pool's projections; kept, since a reader comes back to each m.

    Each map takes rows of its own projection only, and each projection comes from its own
    seed, so the maps are independent. The first rows of one projection are a draw for m:
    iid rows, or whole orthogonal blocks of d and one cut block, each row with its own
    chi-distributed norm.
    """
    make = KINDS[kind]
    rows = m // make.features_per_projection
    pool = _projection_pool(kind, d, orthogonal, max(m, POOL_WIDTH), draws, first_seed)
    return tuple(make.from_projection(projection[:rows]) for projection in pool)

def compute_feature_maps(m: int, kind: str, projection: str, d: int = HEAD_WIDTH,
                         pairs: int = PAIRS, seeds: int = SEEDS, seed: int = 0) -> dict[str, Any]:
    """Estimates φ(q)·φ(k) of exp(q·k) for ``pairs`` pairs with one draw of features, and for
    one pair over ``seeds`` independent draws.

    ``kind`` is 'positive' (FAVOR+) or 'trigonometric', ``projection`` 'iid' or 'orthogonal'.
    Pairs have norms in NORMS and spread angles (seeded by ``seed``); the histogram pair is
    the one whose exact kernel is the median. Draw s of the histogram is the map built from
    the first rows of the projection of the map of width max(m, POOL_WIDTH) seeded
    seed + 1 + s (for iid directions, the same rows as the map of width m with that seed).
    Odd m with trigonometric features raises ``ImpossibleSetting``.
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
    q, k, exact = _pairs(pairs, d, seed)  # [P, d], [P, d], [P]
    phi = make(d, m, orthogonal=orthogonal, seed=seed)
    estimate = (phi(q) * phi(k)).sum(-1)  # [P]: φ(q_p)·φ(k_p)
    typical = int(np.argsort(exact)[pairs // 2])
    pair = np.stack([q[typical], k[typical]])  # [2, d]
    draws = [float(np.dot(*phi_s(pair))) for phi_s in _pooled_maps(kind, d, orthogonal, m, seeds, seed + 1)]
    relative = np.abs(estimate - exact) / exact
    return {
        "m": m, "kind": kind, "projection": projection, "d": d, "q": q, "k": k,
        "exact": exact, "estimate": estimate,
        "relative_rms": float(np.sqrt(np.mean(relative**2))),
        "relative_median": float(np.median(relative)),
        "negative_fraction": float(np.mean(estimate <= 0)),
        "pair_exact": float(exact[typical]), "pair_draws": np.array(draws),
    }


class FeatureMapsExplorer(Explorer):
    """How well m random features estimate exp(q·k): positive vs trigonometric, iid vs orthogonal.

    Left: estimate vs exact over all pairs on fixed log axes (estimates beyond them marked on
    the edges, those ≤ 0 in red). Right: histogram of one pair's estimate over independent
    feature draws, divided by its exact value.
    """

    name = "feature_maps"
    title = "Random features for the softmax kernel: error vs m"
    controls = {"m": (4, 16, 64, 256), "kind": ("positive", "trigonometric"),
                "projection": ("iid", "orthogonal")}
    defaults = {"m": 16, "kind": "positive", "projection": "orthogonal"}
    labels = {"m": "features m", "kind": "feature kind", "projection": "directions"}
    figsize = (9.5, 4)

    def compute(self, m: int, kind: str, projection: str) -> dict[str, Any]:
        return compute_feature_maps(m, kind, projection)

    def build(self, fig: Figure) -> dict[str, Any]:
        """Every artist in place and empty, on axes fixed for every setting: the scatter of
        PAIRS estimates against exact values, with markers on its edges for estimates beyond
        them, and the histogram of one pair's estimate over SEEDS draws, divided by its exact
        value. What never changes is said in the axes' titles and labels, drawn once for all
        settings; a legend would be drawn again at every move, and costs more than the data.
        """
        for kind, orthogonal, m in itertools.product(KINDS, (False, True), self.controls["m"]):
            if m % KINDS[kind].features_per_projection == 0:  # a first picture is slow anyway:
                _pooled_maps(kind, HEAD_WIDTH, orthogonal, m, SEEDS, 1)  # build every move's maps now
        scatter, hist = fig.subplots(1, 2, width_ratios=[1.1, 1])
        low, high = SCATTER_LIMITS
        artists: dict[str, Any] = {}
        scatter.plot(SCATTER_LIMITS, SCATTER_LIMITS, color="k", lw=1, ls="--")
        artists["points"], = scatter.plot([], [], "o", ms=3, alpha=0.5)
        artists["above"], = scatter.plot([], [], "^", ms=4)
        artists["below"], = scatter.plot([], [], "v", ms=4)
        artists["negative"], = scatter.plot([], [], "x", ms=5, mew=1.5, color=PALETTE["vermillion"])
        artists["negative_count"] = scatter.text(0.98, 0.07, "", transform=scatter.transAxes, ha="right",
                                                 va="bottom", fontsize=9, color=PALETTE["vermillion"],
                                                 in_layout=False)
        scatter.set(xscale="log", yscale="log", xlim=SCATTER_LIMITS, ylim=SCATTER_LIMITS,
                    xlabel="exact exp(q·k)", ylabel="estimate φ(q)·φ(k), one draw of features")
        decades = np.logspace(np.log10(low), np.log10(high), round(np.log10(high / low)) + 1)
        for axis in (scatter.xaxis, scatter.yaxis):
            fixed_ticks(axis, decades, [power_of_ten(x) for x in decades])
        scatter.set_title(f"estimate against exact, {PAIRS} pairs; dashed: equal\n"
                          "▲ ▼ beyond the top or bottom edge; red ×: ≤ 0", fontsize=10)

        lowest, highest = RATIO_EDGES[0], RATIO_EDGES[-1]
        artists["bars"] = hist.stairs(np.zeros(RATIO_EDGES.size - 1), RATIO_EDGES, fill=True, alpha=0.75)
        hist.axvspan(lowest, 0, color=PALETTE["vermillion"], alpha=0.18, lw=0)
        hist.axvline(1, color="k", lw=2)  # the exact value
        artists["mean"] = hist.axvline(1, color=PALETTE["purple"], lw=2, ls="--")
        artists["outside"] = hist.text(0.98, 0.97, "", transform=hist.transAxes, ha="right", va="top",
                                       fontsize=9, in_layout=False)
        hist.set(xlim=(lowest, highest), ylim=(0, SEEDS),
                 xlabel="estimate / exact (red band: negative)", ylabel="number of draws")
        ratios = np.arange(np.ceil(lowest), highest + 1)
        fixed_ticks(hist.xaxis, ratios, [format(r, "g").replace("-", "−") for r in ratios])
        counts = np.linspace(0, SEEDS, 5)
        fixed_ticks(hist.yaxis, counts, [format(c, "g") for c in counts])
        hist.set_title(f"one typical pair, {SEEDS} draws of the features\n"
                       "solid: exact value; dashed: mean of the draws", fontsize=10)
        artists["title"] = fig.suptitle("", fontsize=10)
        return artists

    def update(self, artists: dict[str, Any], result: dict[str, Any]) -> None:
        """Move every artist to ``result``: the points, the edge markers and the count of
        estimates ≤ 0, the histogram, its mean and the counts of draws off its axis, and the
        suptitle."""
        exact, estimate = result["exact"], result["estimate"]
        color = PALETTE["blue"] if result["kind"] == "positive" else PALETTE["orange"]
        low, high = SCATTER_LIMITS
        shown = (estimate > low) & (estimate <= high)
        artists["points"].set_data(exact[shown], estimate[shown])
        for name, mask, edge in (("above", estimate > high, high / 1.2),
                                 ("below", (estimate > 0) & (estimate <= low), low * 1.5),  # above the ×
                                 ("negative", estimate <= 0, low * 1.2)):
            artists[name].set_data(exact[mask], np.full(mask.sum(), edge))
        for name in ("points", "above", "below"):
            artists[name].set_color(color)
        negatives = int(np.sum(estimate <= 0))
        artists["negative_count"].set_text(f"{negatives} of {estimate.size} estimates ≤ 0" if negatives else "")

        draws, truth = result["pair_draws"], result["pair_exact"]
        ratios = draws / truth  # [seeds]
        counts, _ = np.histogram(ratios, RATIO_EDGES)
        artists["bars"].set_data(counts)
        artists["bars"].set_color(color)
        artists["mean"].set_xdata([draws.mean() / truth] * 2)
        outside = [f"{count} {side} {format(edge, 'g').replace('-', '−')}" for count, side, edge in (
            (int(np.sum(ratios > RATIO_EDGES[-1])), "above", RATIO_EDGES[-1]),
            (int(np.sum(ratios < RATIO_EDGES[0])), "below", RATIO_EDGES[0])) if count]
        artists["outside"].set_text("\n".join(outside))
        stderr = draws.std(ddof=1) / np.sqrt(draws.size)
        artists["title"].set_text(
            f"{result['kind'].capitalize()} features, {result['projection']}, m = {result['m']}: "
            f"relative error RMS {result['relative_rms']:.3g}, median {result['relative_median']:.3g}\n"
            f"one typical pair: exact {truth:.3f}, mean of the draws {draws.mean():.3f} "
            f"(standard error {stderr:.3f})")
