"""Chapters 6 and 7: the derive-then-predict exercises agree with what the package measures."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu import exercises
from lattn_edu.exercises import ExerciseFailed, ch06, ch07


def unit_pair(cos, d, seed):
    """Unit q, k in R^d with q·k = cos."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(d)
    q /= np.linalg.norm(q)
    r = rng.standard_normal(d)
    r -= (r @ q) * q
    return q, cos * q + np.sqrt(1 - cos**2) * r / np.linalg.norm(r)


@pytest.mark.parametrize("cos, radius, m", [(-0.5, 1.25, 16), (0.0, 0.8, 6), (0.9, 1.1, 30)])
def test_trig_error_formula_matches_a_measurement(cos, radius, m):
    q, k = (radius * x for x in unit_pair(cos, 7, seed=m))
    predicted = 2 * (np.cosh(((q - k) ** 2).sum()) - 1) / m
    measured = ch06.measured_trig_relative_mse(q, k, m, draws=20_000, seed=m)
    assert measured == pytest.approx(predicted, rel=0.05)


def test_trig_error_answer_is_the_measured_one_at_the_exercise_point():
    q, k = unit_pair(0.5, 9, seed=65)
    measured = ch06.measured_trig_relative_mse(q, k, 16, draws=40_000, seed=1)
    assert measured == pytest.approx(exercises.CATALOG["ch06.trig_error"].solution, rel=0.03)


@pytest.mark.parametrize("wrong", [
    (np.cosh(1.0) - 1) / 16,  # m/2 directions forgotten: one term per feature
    2 * (np.cosh(1.0) - 1) / 8,  # the number of directions in place of m
    2 * (np.cosh(3.0) - 1) / 16,  # ||q + k||² in place of ||q - k||²
    (np.exp(3.0) - 1) / 16,  # FAVOR+'s error at the same point
])
def test_trig_error_rejects_the_likely_slips(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch06.trig_error"].check(wrong)


def test_block_ranks_are_what_the_package_measures():
    rng = np.random.default_rng(77)
    q, k = rng.standard_normal((2, 256, 16))
    causal = la.effective_attention_matrix(q, k, feature_map="elu+1", causal=True)
    measured = [la.numerical_rank(causal[t:, :t]) for t in ch07.BLOCK_CUTS]
    assert measured == list(exercises.CATALOG["ch07.block_rank"].solution)


@pytest.mark.parametrize("n, m, t", [(9, 4, 1), (31, 5, 15), (40, 3, 37)])
def test_largest_block_rank_is_reached_on_random_inputs(n, m, t):
    rng = np.random.default_rng(n + m + t)
    q, k = rng.standard_normal((2, n, m))
    causal = la.effective_attention_matrix(q, k, feature_map="elu+1", causal=True)
    assert la.numerical_rank(causal[t:, :t]) == ch07.largest_block_rank(n, m, t)


@pytest.mark.parametrize("wrong", [[16, 16, 16], [8, 128, 6], [8, 16, 250]])
def test_block_rank_rejects_the_likely_slips(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch07.block_rank"].check(np.array(wrong, dtype=float))
