"""The feature_maps explorer: unbiased estimates of exp(q·k), error falling with m, signs."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu.explorers.base import ImpossibleSetting
from lattn_edu.explorers.feature_maps import FeatureMapsExplorer, compute_feature_maps


def test_exact_and_estimates_are_the_packages():
    result = compute_feature_maps(16, "positive", "iid", pairs=31, seeds=5, seed=3)
    assert result["exact"].shape == result["estimate"].shape == (31,)
    assert result["exact"].min() > 0 and result["estimate"].min() > 0  # positive features
    assert result["negative_fraction"] == 0
    q, k = result["q"], result["k"]  # [31, 16]
    np.testing.assert_allclose(result["exact"], np.diag(la.exp_kernel(q, k)))
    phi = la.FavorPlus(16, 16, orthogonal=False, seed=3)
    np.testing.assert_allclose(result["estimate"], np.diag(phi(q) @ phi(k).T))
    norms = np.linalg.norm(np.concatenate([q, k]), axis=1)
    assert norms.min() >= 0.5 - 1e-12 and norms.max() <= 1.25 + 1e-12
    np.testing.assert_allclose(np.median(result["exact"]), result["pair_exact"])
    draws = compute_feature_maps(16, "positive", "iid", pairs=31, seeds=3, seed=3)["pair_draws"]
    np.testing.assert_array_equal(draws, result["pair_draws"][:3])


@pytest.mark.parametrize("kind, m", [("positive", 13), ("trigonometric", 18)])
def test_each_draw_of_the_histogram_is_the_packages_map_on_its_own_seed(kind, m):
    """Draw s is the package's map built from the first rows of the map at width 256 seeded
    seed + 1 + s; with iid directions, the very map of width m with that seed."""
    cls = {"positive": la.FavorPlus, "trigonometric": la.TrigonometricFeatures}[kind]
    typical = compute_feature_maps(m, kind, "iid", pairs=31, seeds=5, seed=3)
    q, k = typical["q"], typical["k"]
    pair = np.argsort(typical["exact"])[15]
    iid = [float(cls(16, m, orthogonal=False, seed=4 + s)(q[pair]) @ cls(16, m, orthogonal=False, seed=4 + s)(k[pair]))
           for s in range(5)]
    np.testing.assert_allclose(typical["pair_draws"], iid, rtol=1e-12)
    orthogonal = compute_feature_maps(m, kind, "orthogonal", pairs=31, seeds=5, seed=3)["pair_draws"]
    rows = m // cls.features_per_projection
    maps = [cls.from_projection(cls(16, 256, orthogonal=True, seed=4 + s).projection[:rows]) for s in range(5)]
    np.testing.assert_allclose(orthogonal, [float(phi(q[pair]) @ phi(k[pair])) for phi in maps], rtol=1e-12)


def test_the_draws_are_independent_of_one_another():
    """No two draws share directions: consecutive draws are uncorrelated (ranks, 301 draws),
    and draws at two widths from one pool differ."""
    draws = compute_feature_maps(4, "positive", "orthogonal", pairs=41, seeds=301)["pair_draws"]
    ranks = np.argsort(np.argsort(draws))
    assert abs(np.corrcoef(ranks[:-1], ranks[1:])[0, 1]) < 4 / np.sqrt(draws.size)
    assert np.unique(draws).size == draws.size
    wider = compute_feature_maps(8, "positive", "orthogonal", pairs=41, seeds=301)["pair_draws"]
    assert not np.isin(wider, draws).any()


@pytest.mark.parametrize("kind", ["positive", "trigonometric"])
@pytest.mark.parametrize("projection", ["iid", "orthogonal"])
def test_error_falls_with_m_and_the_draws_average_to_the_exact_value(kind, projection):
    small = compute_feature_maps(4, kind, projection, seeds=8)
    large = compute_feature_maps(256, kind, projection, seeds=200)
    assert large["relative_median"] < 0.5 * small["relative_median"]
    draws = large["pair_draws"]
    stderr = draws.std(ddof=1) / np.sqrt(draws.size)
    assert abs(draws.mean() - large["pair_exact"]) < 4 * stderr  # unbiased


def test_only_trigonometric_features_give_negative_weights():
    trig = compute_feature_maps(4, "trigonometric", "iid")
    assert trig["negative_fraction"] > 0.05
    assert compute_feature_maps(4, "positive", "iid")["negative_fraction"] == 0


def test_odd_m_with_trigonometric_features_is_an_impossible_setting():
    with pytest.raises(ImpossibleSetting, match="even"):
        FeatureMapsExplorer().render(m=5, kind="trigonometric")
    FeatureMapsExplorer().render(m=5, kind="positive")  # odd m is fine for FAVOR+
    with pytest.raises(ValueError, match="kind"):
        compute_feature_maps(16, "cosine", "iid")


def test_seeded_and_the_title_reports_the_error():
    a = compute_feature_maps(64, "trigonometric", "orthogonal", pairs=50, seeds=4)
    b = compute_feature_maps(64, "trigonometric", "orthogonal", pairs=50, seeds=4)
    np.testing.assert_array_equal(a["estimate"], b["estimate"])
    fig = FeatureMapsExplorer().plot(a)
    assert f"RMS {a['relative_rms']:.3g}" in fig.get_suptitle()
    assert fig.axes[0].get_xscale() == fig.axes[0].get_yscale() == "log"
    assert "Trigonometric features, orthogonal, m = 64" in fig.get_suptitle()


def test_every_setting_draws_on_the_first_decoration():
    """Axes, ticks, titles and labels are the same at every setting (numbers that change live
    in the suptitle and the axes' texts), so the live widget draws the whole figure once and
    afterwards only what moved."""
    explorer = FeatureMapsExplorer()
    explorer.live_png(**explorer.defaults)
    for m in FeatureMapsExplorer.controls["m"]:
        for kind in FeatureMapsExplorer.controls["kind"]:
            for projection in FeatureMapsExplorer.controls["projection"]:
                explorer.live_png(m=m, kind=kind, projection=projection)
    assert explorer._live.full_draws == 1


def histogram_shows(fig, result) -> None:
    """The histogram holds every draw inside its axis, divided by the exact value, and a
    text counts the rest on each side."""
    hist = fig.axes[1]
    bars = hist.patches[0]
    ratios = result["pair_draws"] / result["pair_exact"]
    shown = (ratios >= hist.get_xlim()[0]) & (ratios <= hist.get_xlim()[1])
    np.testing.assert_array_equal(bars.get_data().values, np.histogram(ratios[shown], bars.get_data().edges)[0])
    low, high = hist.get_xlim()
    off = [f"{count} {side}" for count, side in ((np.sum(ratios > high), f"above {high:g}"),
                                                  (np.sum(ratios < low), f"below {low:g}".replace("-", "−")))
           if count]
    assert [t.get_text() for t in hist.texts] == ["\n".join(off)]


def test_estimates_off_the_axes_are_on_its_edges_and_counted():
    result = compute_feature_maps(4, "trigonometric", "orthogonal", pairs=201, seeds=41)
    fig = FeatureMapsExplorer().plot(result)
    scatter = fig.axes[0]
    low, high = scatter.get_ylim()
    points, above, below, negative = scatter.lines[1:]  # after the diagonal
    assert sum(len(line.get_xdata()) for line in (points, above, below, negative)) == 201
    assert low < np.min(points.get_ydata()) and np.max(points.get_ydata()) <= high
    assert len(negative.get_xdata()) == np.sum(result["estimate"] <= 0) > 0
    assert len(below.get_xdata()) > 0 and np.all(np.concatenate([negative.get_ydata(), below.get_ydata()]) < 2 * low)
    assert [t.get_text() for t in scatter.texts] == [f"{len(negative.get_xdata())} of 201 estimates ≤ 0"]
    histogram_shows(fig, result)


def test_positive_features_mark_nothing_red_and_count_draws_off_the_axis():
    result = compute_feature_maps(4, "positive", "orthogonal", pairs=401, seeds=65)
    fig = FeatureMapsExplorer().plot(result)
    scatter = fig.axes[0]
    assert len(scatter.lines[4].get_xdata()) == 0 and scatter.texts[0].get_text() == ""
    assert np.any(result["pair_draws"] > 3 * result["pair_exact"])  # the heavy right tail
    histogram_shows(fig, result)
