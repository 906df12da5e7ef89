"""The feature_maps explorer: unbiased estimates of exp(q·k), error falling with m, signs."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu.explorers.base import ImpossibleSetting
from lattn_edu.explorers.feature_maps import FeatureMapsExplorer, compute_feature_maps, plot_feature_maps


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
    # the typical pair's first draw is the map with seed + 1, evaluated by the package
    draws = compute_feature_maps(16, "positive", "iid", pairs=31, seeds=3, seed=3)["pair_draws"]
    np.testing.assert_array_equal(draws, result["pair_draws"][:3])
    np.testing.assert_allclose(np.median(result["exact"]), result["pair_exact"])


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
    fig = plot_feature_maps(a)
    assert f"RMS {a['relative_rms']:.3g}" in fig.get_suptitle()
    assert fig.axes[0].get_xscale() == fig.axes[0].get_yscale() == "log"
    assert "Trigonometric features, orthogonal, m = 64" in fig.get_suptitle()
