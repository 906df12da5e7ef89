"""The derivation exercises of chapters 8 and 9: each reference answer is tied to something
computed independently (the continuous system's closed form, the package's scans and
allocations, a literal count of the arrays a chunk loop touches), and each checker rejects
the tempting wrong answer the chapter warns about."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu import exercises
from lattn_edu.exercises import ExerciseFailed, ch08, ch09


def check(exercise_id, answer):
    exercises.CATALOG[exercise_id].check(answer)


# chapter 8: the zero-order hold


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_zero_order_hold_makes_the_step_response_exact(seed):
    rng = np.random.default_rng(seed)
    rates, b, c = -rng.uniform(0.2, 6.0, 5), rng.standard_normal(5), rng.standard_normal(5)
    step, n = 0.13, 47
    a, b_bar = ch08.solution_zero_order_hold(rates, b, step)
    times = step * np.arange(1, n + 1)  # the state after input i is h((i+1)Δ)
    exact = (np.expm1(np.outer(times, rates)) / rates * b) @ c  # y(t) = Σ c_r b_r (e^(A_r t) - 1)/A_r
    y = la.diagonal_ssm(np.ones((n, 1)), a, b_bar, c)[:, 0]
    np.testing.assert_allclose(y, exact, rtol=1e-12, atol=1e-13)


def test_zero_order_hold_is_the_block_exponential():
    rng = np.random.default_rng(5)
    for step in (1e-9, 0.3, 4.0):
        rates, b = -rng.uniform(0.01, 9.0, 6), rng.standard_normal(6)
        for got, expected in zip(ch08.solution_zero_order_hold(rates, b, step),
                                 ch08._exact_hold(rates, b, step)):
            np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_zero_order_hold_tends_to_the_euler_write_for_small_steps():
    rates, b = np.array([-0.5, -3.0]), np.array([1.0, -2.0])
    for step in (1e-3, 1e-6):
        a, b_bar = ch08.solution_zero_order_hold(rates, b, step)
        np.testing.assert_allclose(b_bar, step * b, rtol=5 * step * np.abs(rates).max())
        np.testing.assert_allclose(a, 1 + step * rates, rtol=step**2 * 10)


def test_zero_order_hold_rejects_cancellation_and_euler():
    def cancelling(rates, b, step):
        return np.exp(step * rates), (np.exp(step * rates) - 1) / rates * b

    def euler(rates, b, step):
        return 1 + step * rates, step * b

    for wrong in (cancelling, euler):
        with pytest.raises(ExerciseFailed, match="wrong value"):
            check("ch08.zero_order_hold", wrong)


# chapter 8: the decay that keeps 1% for 500 tokens


def test_gamma_for_memory_keeps_exactly_one_percent_at_500_tokens():
    gamma = exercises.CATALOG["ch08.gamma_for_memory"].solution
    assert la.decay_matrix(gamma, 501)[500, 0] == pytest.approx(0.01, rel=1e-12)
    assert la.decay_matrix(gamma * (1 - 1e-6), 501)[500, 0] < 0.01  # any smaller γ falls short


def test_gamma_for_memory_rejects_the_first_order_approximation():
    check("ch08.gamma_for_memory", 0.99083)  # five decimals are enough
    with pytest.raises(ExerciseFailed):
        check("ch08.gamma_for_memory", 1 - np.log(100) / 500)


def test_steady_level_is_asked_at_0_99_and_matches_retention():
    assert exercises.CATALOG["ch08.steady_level"].solution == pytest.approx(1 / np.sqrt(1 - 0.99**2))
    with pytest.raises(ExerciseFailed):
        check("ch08.steady_level", ch08.steady_rms_level(0.9))  # the level printed in the text
    rng = np.random.default_rng(84)
    q, k, v = rng.standard_normal((3, 16, 1201, 5))
    out = la.retention(q, k, v, 0.99, form="chunkwise", chunk_size=100)  # [16, N, d_v]
    one_term = np.sqrt(((q * k).sum(-1) ** 2 * (v**2).sum(-1)).mean())
    level = np.sqrt((out[:, 700:] ** 2).sum(-1).mean())  # 0.99^1400 is negligible
    assert level / one_term == pytest.approx(ch08.steady_rms_level(0.99), rel=0.05)


# chapter 9: the roofline


@pytest.mark.parametrize("c, m, d_v", [(64, 128, 128), (1, 8, 8), (37, 16, 48), (5, 3, 7)])
def test_bytes_per_token_is_a_literal_count_of_one_chunk_loop(c, m, d_v):
    assert ch09.solution_bytes_per_token(c, m, d_v) == pytest.approx(ch09._counted_bytes_per_token(c, m, d_v))


def test_bytes_per_token_rejects_moving_the_state_every_token():
    def state_every_token(c, m, d_v):
        return 4 * (2 * m + 2 * d_v + 2 * m * d_v)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch09.bytes_per_token", state_every_token)


@pytest.mark.parametrize("d", [16, 64, 128])
def test_intensity_has_the_closed_form_of_the_solution(d):
    for c in (1, 7, 52, 256):
        assert ch09.flops_per_byte(c, d, d) == pytest.approx(c * (c + d) / (2 * (2 * c + d)))


def test_roofline_chunk_is_the_first_length_that_reaches_the_balance():
    c = exercises.CATALOG["ch09.roofline_chunk"].solution
    assert ch09.flops_per_byte(c, 128, 128) >= 20 > ch09.flops_per_byte(c - 1, 128, 128)
    positive_root = (-48 + np.sqrt(48**2 + 4 * 5120)) / 2  # C² + 48C - 5120 = 0
    assert c == int(np.ceil(positive_root))
    with pytest.raises(ExerciseFailed):
        check("ch09.roofline_chunk", positive_root)  # a chunk has a whole number of tokens


# chapter 9: memory of the causal parallel form, equal work, fixed costs


def peak_bytes(fn, *args, **kwargs):
    tracemalloc.start()
    try:
        fn(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_parallel_form_allocates_every_prefix_state():
    rng = np.random.default_rng(9)
    n, m = 257, 16
    q, k, v = rng.standard_normal((3, n, m))
    peak = peak_bytes(la.linear_attention, q, k, v, feature_map="identity", causal=True,
                      form="parallel", eps=0.0)
    assert peak >= n * (m * m + m) * 8  # S_1..S_N and z_1..z_N in float64


def test_parallel_memory_is_where_the_prefix_states_equal_the_square():
    n = exercises.CATALOG["ch09.parallel_memory"].solution
    m = d_v = 64
    assert n * (m * d_v + m) == n**2
    for other in (n - 1, n + 1):
        assert (other * (m * d_v + m) > other**2) == (other < n)


@pytest.mark.parametrize("c, d", [(64, 128), (16, 32), (33, 17)])
def test_equal_work_length_balances_the_two_counts(c, d):
    n = ch09.equal_work_length(c, d, d)
    softmax = n**2 * (d + d) / 2
    chunkwise = n * (c * (d + d) + 2 * d * d)
    assert softmax == pytest.approx(chunkwise)


def test_work_crossover_rejects_the_unmasked_count():
    assert exercises.CATALOG["ch09.work_crossover"].solution == pytest.approx(384)
    with pytest.raises(ExerciseFailed):
        check("ch09.work_crossover", 192)  # N²(d + d_v): both halves of the mask counted


def test_fixed_cost_slopes_are_the_numerical_derivative():
    fixed, per_token, per_pair, n = 50.0, 0.1, 0.002, 2048.0
    h = 1e-6
    numerical = [(np.log(t(n * np.exp(h))) - np.log(t(n * np.exp(-h)))) / (2 * h)
                 for t in (lambda x: fixed + per_token * x, lambda x: fixed + per_pair * x**2)]
    np.testing.assert_allclose(ch09.fixed_cost_slopes(n, fixed, per_token, per_pair), numerical,
                               rtol=1e-6)
    np.testing.assert_allclose(ch09.fixed_cost_slopes(n, 0.0, per_token, per_pair), [1.0, 2.0])
    with pytest.raises(ExerciseFailed):
        check("ch09.slopes", np.array([1.0, 2.0]))  # the counts, without the fixed cost
