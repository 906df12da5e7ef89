"""The rank explorer measures the package's matrices: rank <= min(N, m) for linear attention."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu.explorers.rank import RankExplorer, compute_rank


@pytest.mark.parametrize("n, m", [(63, 5), (100, 8), (21, 32), (37, 16)], ids=lambda v: str(v))
def test_linear_ranks_never_exceed_their_caps(n, m):
    result = compute_rank(n, m, seed=4)
    favor, elu = f"FAVOR+ (m = {m})", "elu+1 (m = d = 16)"
    assert result["ranks"][favor] <= min(n, m) == result["caps"][favor]
    assert result["ranks"][elu] <= min(n, 16) == result["caps"][elu]
    assert result["ranks"]["softmax"] == n  # no cap: full rank at these sizes
    if m < n:  # the cap binds, and is reached: the spectrum falls off a cliff right after m
        assert result["ranks"][favor] == m
        sigma = result["spectra"][favor]
        assert sigma[m - 1] > 1e-8 and sigma[m:].max() < 1e-12


def test_spectra_are_the_packages_and_normalised():
    result = compute_rank(40, 8, seed=2)
    rng = np.random.default_rng(2)
    q, k = rng.standard_normal((40, 16)), rng.standard_normal((40, 16))
    sigma = la.singular_values(la.softmax_attention_weights(q, k))
    np.testing.assert_allclose(result["spectra"]["softmax"], sigma / sigma[0])
    for spectrum in result["spectra"].values():
        assert spectrum[0] == 1.0 and np.all(np.diff(spectrum) <= 1e-15) and spectrum.shape == (40,)


def test_seeded_and_the_figure_shows_the_ranks():
    a, b = compute_rank(33, 4, seed=1), compute_rank(33, 4, seed=1)
    for name in a["spectra"]:
        np.testing.assert_array_equal(a["spectra"][name], b["spectra"][name])
    fig = RankExplorer().plot(a)
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and "numerical ranks" in fig.get_suptitle()
    assert "FAVOR+ 4 (<= 4)" in fig.get_suptitle()
    assert any(line.get_xdata()[0] == 4.5 for line in ax.get_lines())  # the line at m


def test_m_at_least_n_is_drawn_with_a_note_not_refused():
    fig = RankExplorer().render(n=16, m=32)
    assert "does not bind" in fig.axes[0].get_legend().get_title().get_text()


def test_log_ticks_are_plain_text_powers_of_ten():
    from lattn_edu.explorers._ticks import power_of_ten

    assert [power_of_ten(v) for v in (1e-17, 1e-3, 1.0, 100.0)] == ["10⁻¹⁷", "10⁻³", "1", "10²"]
    assert power_of_ten(2e-3) == "" and power_of_ten(0.0) == ""
