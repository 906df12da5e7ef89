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
    trig_mse, favor_over_trig = exercises.CATALOG["ch06.trig_error"].solution
    measured = ch06.measured_trig_relative_mse(q, k, 16, draws=40_000, seed=1)
    assert measured == pytest.approx(trig_mse, rel=0.03)
    # FAVOR+'s relative error at the same point, measured; its long tail needs a loose tolerance
    favor_mse = ch06.measured_favor_variance(q, k, 16, draws=40_000, seed=2) / np.exp(2 * q @ k)
    assert favor_mse / measured == pytest.approx(favor_over_trig, rel=0.2)
    assert favor_over_trig > 10  # the trigonometric features are the better ones here


TRIG = 2 * (np.cosh(1.0) - 1) / 16
FAVOR = (np.exp(3.0) - 1) / 16


@pytest.mark.parametrize("wrong", [
    [(np.cosh(1.0) - 1) / 16, FAVOR / TRIG],  # m/2 directions forgotten: one term per feature
    [2 * (np.cosh(1.0) - 1) / 8, FAVOR / TRIG],  # the number of directions in place of m
    [2 * (np.cosh(3.0) - 1) / 16, FAVOR / TRIG],  # ||q + k||² in place of ||q - k||²
    [FAVOR, FAVOR / TRIG],  # FAVOR+'s error at the same point
    [TRIG, TRIG / FAVOR],  # the factor turned upside down
    [TRIG, np.sqrt(FAVOR / TRIG)],  # the ratio of RMS errors, not of mean squared errors
])
def test_trig_error_rejects_the_likely_slips(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch06.trig_error"].check(np.array(wrong))


def test_trig_error_needs_both_numbers():
    with pytest.raises(ExerciseFailed):
        exercises.CATALOG["ch06.trig_error"].check(TRIG)


@pytest.mark.parametrize("c, error", [(2.7, 0.208), (1.3, 0.05), (40.0, 0.9)])
def test_features_to_beat_is_the_first_m_where_the_theory_crosses(c, error):
    m = ch06.features_to_beat(c, error)
    assert c / np.sqrt(m) <= error < c / np.sqrt(m - 1)


def test_features_to_beat_elu_accepts_the_prediction_only():
    exercise = exercises.CATALOG["ch06.features_to_beat_elu"]
    exercise.check(169)
    for wrong in (168, 13, 730, 128):  # floor, C/e unsquared, 100 C², the measured crossing
        with pytest.raises(ExerciseFailed, match="wrong value"):
            exercise.check(wrong)


def test_rank_predictions_are_what_the_package_measures():
    rng = np.random.default_rng(79)
    features = la.FavorPlus(16, 8, seed=3)
    keys, values = rng.standard_normal((257, 16)) * 0.5, rng.standard_normal((257, 32))
    q, k = rng.standard_normal((2, 257, 4))
    measured = [la.numerical_rank(features(keys[:5]).T @ values[:5]),
                la.numerical_rank(features(keys).T @ values),
                la.numerical_rank((q @ k.T) ** 2)]
    assert measured == list(exercises.CATALOG["ch07.numerical_rank"].solution)


@pytest.mark.parametrize("d", [1, 3, 5])
def test_squared_kernel_rank_is_reached_on_random_inputs(d):
    rng = np.random.default_rng(d)
    q, k = rng.standard_normal((2, 41, d))
    assert la.numerical_rank((q @ k.T) ** 2) == ch07.squared_kernel_rank(d)


@pytest.mark.parametrize("wrong", [[5, 8, 16], [8, 8, 10], [5, 32, 10], [5, 256, 10]])
def test_rank_predictions_reject_the_likely_slips(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch07.numerical_rank"].check(np.array(wrong, dtype=float))


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


@pytest.mark.parametrize("scale", [1e6, 1e7, 1e10, 1e16])
def test_elu_limit_by_brute_force_at_one_large_scale_is_rejected(scale):
    def brute_force(q, k):
        with np.errstate(over="ignore", invalid="ignore"):
            return la.effective_attention_matrix(scale * q, k, feature_map="elu+1", eps=0.0)

    with pytest.raises(ExerciseFailed):
        exercises.CATALOG["ch07.elu_limit"].check(brute_force)


def test_elu_limit_is_exact_on_the_scale_cases():
    """The limit is scale-free per row, so rescaling every row to size 1 gives the same weights,
    and at size 1 the package at s = 1e6 is already within 1e-5 of it."""
    for case in ch07._scale_cases():
        q, k = case["q"], case["k"]
        unit = q / np.abs(q).max(1, keepdims=True)  # [N_q, d], each row's largest entry ±1
        np.testing.assert_allclose(ch07.solution_elu_limit_weights(q, k),
                                   ch07.solution_elu_limit_weights(unit, k), rtol=1e-12)
        far = la.effective_attention_matrix(1e6 * unit, k, feature_map="elu+1", eps=0.0)
        np.testing.assert_allclose(ch07.solution_elu_limit_weights(q, k), far, atol=1e-5)
