"""The decay explorer: D and (QKᵀ)⊙D from the package, γ^t weights, half-life ln 2 / (−ln γ)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu.explorers.decay import DecayExplorer, compute_decay


@pytest.mark.parametrize("gamma", [0.5, 0.8, 0.9, 0.95, 0.99], ids=str)
def test_half_life_halves_the_weight(gamma):
    result = compute_decay(gamma, 64)
    assert result["half_life"] == pytest.approx(math.log(2) / -math.log(gamma))
    assert gamma ** result["half_life"] == pytest.approx(0.5)
    assert gamma ** result["horizon"] == pytest.approx(0.01)
    np.testing.assert_allclose(result["weights"], gamma ** np.arange(64), rtol=1e-12)


@pytest.mark.parametrize("n", [1, 7, 16], ids=lambda n: f"N{n}")
def test_retention_matrix_is_qk_times_decay(n):
    result = compute_decay(0.8, n, seed=3)
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((2, n, 8)) / 8**0.25
    expected = (q @ k.T) * la.decay_matrix(0.8, n)
    np.testing.assert_allclose(result["matrix"], expected, rtol=1e-12, atol=1e-15)
    assert np.all(np.triu(result["matrix"], 1) == 0)  # causal: nothing above the diagonal
    np.testing.assert_array_equal(result["decay"], la.decay_matrix(0.8, n))


def test_no_decay_means_infinite_half_life_and_every_token_counts():
    result = compute_decay(1.0, 16)
    assert math.isinf(result["half_life"]) and math.isinf(result["horizon"])
    np.testing.assert_array_equal(result["weights"], np.ones(16))
    fig = DecayExplorer().plot(result)
    assert "half-life ∞" in fig.get_suptitle()


def test_figure_marks_the_half_life_and_is_seeded():
    result = compute_decay(0.9, 64)
    np.testing.assert_array_equal(result["matrix"], compute_decay(0.9, 64)["matrix"])
    fig = DecayExplorer().plot(result)
    curve = next(ax for ax in fig.axes if ax.get_xlabel().startswith("distance"))
    marks = [line.get_xdata()[0] for line in curve.get_lines() if line.get_linestyle() == "--"]
    assert result["half_life"] in marks
    assert "half-life 6.58 tokens" in fig.get_suptitle()
    assert DecayExplorer().defaults == {"gamma": 0.9, "n": 64}
