"""The recurrence explorer: the state after token i is the sum of i + 1 outer products, and the
recurrent read matches row i of the parallel form."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu.explorers.recurrence import RecurrenceExplorer, compute_recurrence


@pytest.mark.parametrize("i, seed", [(0, 0), (5, 1), (11, 2)], ids=["first", "middle", "last"])
def test_state_is_the_sum_of_outer_products_and_matches_the_parallel_form(i, seed):
    result = compute_recurrence(i, seed)
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, 12, 6))
    v = rng.standard_normal((12, 4))
    phi_k = la.elu_plus_one(k)[: i + 1]
    np.testing.assert_allclose(result["S"], phi_k.T @ v[: i + 1], rtol=1e-12)
    np.testing.assert_allclose(result["z"], phi_k.sum(0), rtol=1e-12)
    assert result["S"].shape == (6, 4) and result["z"].shape == (6,)
    assert result["max_difference"] < 1e-12
    np.testing.assert_allclose(result["o"], result["parallel"][i], rtol=1e-10)
    assert result["s_limit"] >= np.abs(result["S"]).max() and result["z_limit"] >= result["z"].max()


def test_odd_sizes_and_bad_index():
    result = compute_recurrence(6, seed=3, n=7, d=3, d_v=5)
    assert result["S"].shape == (3, 5) and result["parallel"].shape == (7, 5)
    assert result["max_difference"] < 1e-12 and result["state_numbers"] == 3 * 5 + 3
    with pytest.raises(ValueError, match="0 … 6"):
        compute_recurrence(7, seed=0, n=7)


def test_seeded_and_the_figure_names_token_and_difference():
    a, b = compute_recurrence(4, 1), compute_recurrence(4, 1)
    np.testing.assert_array_equal(a["S"], b["S"])
    assert not np.array_equal(a["S"], compute_recurrence(4, 0)["S"])
    fig = RecurrenceExplorer().plot(a)
    titles = [ax.get_title() for ax in fig.axes]
    assert "state S_i [6×4] and z_i [6]" in titles and any("row i of the parallel form" in t for t in titles)
    assert fig.get_suptitle().startswith("i = 4: tokens 0…4 of 12 are in the state")
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any(t.startswith("max |difference| = ") for t in texts)
    assert f"{a['S'][0, 0]:.1f}" in texts and f"{a['z'][5]:.1f}" in texts  # annotated cells
    bars = [patch.get_height() for patch in fig.axes[1].patches]
    np.testing.assert_allclose(bars, a["o"])


def test_controls_cover_every_token():
    explorer = RecurrenceExplorer()
    assert explorer.controls["i"] == tuple(range(12))
