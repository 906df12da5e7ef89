"""The sharpness explorer: softmax sharpens with the query scale, elu+1 does not, FAVOR+ partly."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu.explorers.sharpness import SharpnessExplorer, compute_sharpness

SOFTMAX, ELU, FAVOR = "softmax", "elu+1", "FAVOR+ (m = 64)"


@pytest.mark.parametrize("n", [33, 100])
def test_rows_are_distributions_and_measures_are_in_range(n):
    result = compute_sharpness(n, 2.0, seed=1)
    for name, row in result["rows"].items():
        assert row.shape == (n,) and row.min() >= 0
        np.testing.assert_allclose(row.sum(), 1.0, rtol=1e-12, err_msg=name)
        assert 0 <= result["entropy"][name] <= np.log(n) + 1e-12
        assert 1 / n - 1e-12 <= result["peak"][name] <= 1


def test_softmax_sharpens_with_scale_elu_does_not():
    low, high = compute_sharpness(63, 0.25), compute_sharpness(63, 8.0)
    assert high["entropy"][SOFTMAX] < 0.3 * low["entropy"][SOFTMAX]
    assert high["peak"][SOFTMAX] > 0.6 > 0.1 > low["peak"][SOFTMAX]
    assert abs(high["entropy"][ELU] - low["entropy"][ELU]) < 0.05 * np.log(63)
    assert high["peak"][ELU] < 2 * low["peak"][ELU] < 0.1
    # FAVOR+ estimates this softmax, yet stays far broader than it at high scale
    assert high["entropy"][SOFTMAX] < high["entropy"][FAVOR] < high["entropy"][ELU]


def test_the_row_is_the_packages_softmax_row_sorted_by_score():
    result = compute_sharpness(21, 4.0, seed=7, query=3)
    rng = np.random.default_rng(7)
    q, k = rng.standard_normal((21, 16)), rng.standard_normal((21, 16))
    weights = la.softmax_attention_weights(4.0 * q, k)
    np.testing.assert_allclose(result["rows"][SOFTMAX], np.sort(weights[3])[::-1])
    np.testing.assert_allclose(result["entropy"][SOFTMAX], la.row_entropy(weights).mean())


def test_seeded_and_plotted_with_every_method():
    a, b = compute_sharpness(40, 1.0, seed=2), compute_sharpness(40, 1.0, seed=2)
    assert a["entropy"] == b["entropy"]
    fig = SharpnessExplorer().plot(a)
    lanes, bars = fig.axes
    labels = " ".join(text.get_text() for text in lanes.texts)
    assert all(f"{name}: entropy" in labels for name in (SOFTMAX, ELU, FAVOR))
    assert [t.get_text().split("\n")[0] for t in bars.get_xticklabels()] == ["entropy / log N",
                                                                          "peak weight"]
    heights = [patch.get_height() for patch in bars.patches]  # per method: entropy/log N, peak
    np.testing.assert_allclose(heights[:2], [a["entropy"][SOFTMAX] / np.log(40), a["peak"][SOFTMAX]])
