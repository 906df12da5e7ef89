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


# chapter 8: RetNet's normalised decay mask and clipped denominator


def test_normalised_decay_rows_are_divided_by_the_root_of_their_sums():
    for gamma, n in ((0.8, 9), (0.05, 300)):
        mask = ch08.solution_normalised_decay(gamma, n)
        assert np.isfinite(mask).all() and not np.triu(mask, 1).any()
        # the diagonal entry γ^0 = 1 is divided by the root of the row's geometric sum
        expected = (1 - gamma) ** 0.5 / (1 - gamma ** np.arange(1, n + 1)) ** 0.5
        np.testing.assert_allclose(np.diag(mask), expected, rtol=1e-12)
    at_one = ch08.solution_normalised_decay(1.0, 7)  # row i: i + 1 ones, each over sqrt(i + 1)
    np.testing.assert_allclose(at_one, np.tril(np.ones((7, 7))) / np.sqrt(np.arange(1, 8))[:, None])


def test_normalised_decay_rejects_the_unnormalised_mask_and_the_plain_sum():
    def unnormalised(gamma, n):
        return la.decay_matrix(gamma, n)

    def by_the_sum(gamma, n):  # divides by the row sum, not its square root
        mask = la.decay_matrix(gamma, n)
        return mask / mask.sum(axis=1, keepdims=True)

    for wrong in (unnormalised, by_the_sum):
        with pytest.raises(ExerciseFailed, match="wrong value"):
            check("ch08.normalised_decay", wrong)


@pytest.mark.parametrize("seed", [0, 1])
def test_clipped_retention_is_retention_divided_row_by_row(seed):
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((3, 41, 7))
    out = ch08.solution_clipped_retention(q, k, v, 0.9)
    plain = la.retention(q, k, v, 0.9, form="recurrent")
    sums = ((q @ k.T) * la.decay_matrix(0.9, 41)).sum(axis=1)  # Σ_j R_nj  [N]
    np.testing.assert_allclose(out * np.maximum(np.abs(sums), 1.0)[:, None], plain, rtol=1e-10)
    assert (np.abs(sums) > 1).any() and (sums < -1).any()  # both the division and the |·| matter here


def test_clipped_retention_rejects_the_plain_form_and_a_missing_absolute_value():
    def plain(q, k, v, gamma):
        return la.retention(q, k, v, gamma, form="recurrent")

    def signed(q, k, v, gamma):  # max(q·z, 1) instead of max(|q·z|, 1)
        scores = (q @ k.T) * la.decay_matrix(gamma, q.shape[0])
        return scores @ v / np.maximum(scores.sum(axis=1, keepdims=True), 1.0)

    for wrong in (plain, signed):
        with pytest.raises(ExerciseFailed, match="wrong value"):
            check("ch08.clipped_retention", wrong)


# chapter 8: the kernel's total weight and the bilinear transform


def test_kernel_total_is_where_the_step_response_settles():
    a, b, c = np.array([0.3, 0.7]), np.array([1.5, -0.5]), np.array([2.0, 1.0])
    total = ch08.solution_kernel_total(a, b, c)
    assert total == pytest.approx(1.5 * 2.0 / 0.7 - 0.5 / 0.3, rel=1e-12)
    y = la.diagonal_ssm(np.ones((200, 1)), a, b, c)[:, 0]
    assert y[-1] == pytest.approx(total, rel=1e-12)


def test_kernel_total_rejects_a_missing_first_term():
    def without_kappa_0(a, b, c):
        return float((c * b * a / (1 - a)).sum())

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch08.kernel_total", without_kappa_0)


def _bilinear_step_error(step):
    """The bilinear rule's largest step-response error on the chapter's three-mode system."""
    rates, b, c = np.array([-0.5, -2.0, -8.0]), np.array([1.0, 0.5, 2.0]), np.array([1.0, -1.0, 0.5])
    n = round(6.0 / step)
    times = step * np.arange(1, n + 1)  # the state after input i is h((i+1)Δ)
    exact = (np.expm1(np.outer(times, rates)) / rates * b) @ c
    a, b_bar = ch08.solution_bilinear(rates, b, step)
    return np.abs(la.diagonal_ssm(np.ones((n, 1)), a, b_bar, c)[:, 0] - exact).max()


def test_bilinear_error_shrinks_with_the_square_of_the_step():
    assert _bilinear_step_error(0.01) / _bilinear_step_error(0.001) == pytest.approx(100, rel=0.05)


def test_bilinear_decays_fade_for_every_step_and_reach_the_exact_level():
    rates, b = np.array([-0.5, -3.0, -40.0]), np.array([1.0, -2.0, 0.5])
    for step in (1e-3, 0.3, 4.0):
        a, b_bar = ch08.solution_bilinear(rates, b, step)
        assert (np.abs(a) < 1).all()
        np.testing.assert_allclose(b_bar / (1 - a), -b / rates, rtol=1e-12)


def test_bilinear_rejects_the_hold_and_euler():
    def hold(rates, b, step):
        return np.exp(step * rates), np.expm1(step * rates) / rates * b

    def euler(rates, b, step):
        return 1 + step * rates, step * b

    for wrong in (hold, euler):
        with pytest.raises(ExerciseFailed, match="wrong value"):
            check("ch08.bilinear", wrong)


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


# chapter 9: the chunk step


def test_chunk_step_solution_passes_and_the_package_is_switched_off_while_checked():
    check("ch09.chunk_step", ch09.solution_chunk_step)

    def through_the_package(q_c, k_c, v_c, state, normaliser):  # right values, not written out
        out, (after, normaliser_after) = la.linear_attention(
            q_c, k_c, v_c, feature_map="identity", causal=True, form="recurrent", eps=0.0,
            initial_state=(state, normaliser), return_state=True)
        return out, after, normaliser_after

    with pytest.raises(ExerciseFailed, match="switched off"):
        check("ch09.chunk_step", through_the_package)
    q = np.ones((1, 3, 2))
    assert la.linear_attention(q, q, q, causal=True).shape == (1, 3, 2)  # restored afterwards


# chapter 9: the roofline


@pytest.mark.parametrize("chunk, m, d_v", [(64, 128, 128), (1, 8, 8), (37, 16, 48), (5, 3, 7)])
def test_bytes_per_token_is_a_literal_count_of_one_chunk_loop(chunk, m, d_v):
    assert ch09.solution_bytes_per_token(chunk, m, d_v) == pytest.approx(
        ch09._counted_bytes_per_token(chunk, m, d_v))


def test_bytes_per_token_rejects_moving_the_state_every_token():
    def state_every_token(chunk, m, d_v):
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
    # the teaching form of chapter 3 (la.linear_attention's causal 'parallel' runs the chunkwise recurrence)
    peak = peak_bytes(la.parallel_linear_attention, q, k, v, causal=True, eps=0.0)
    assert peak >= n * (m * m + m) * 8  # S_1..S_N and z_1..z_N in float64


def test_parallel_memory_is_where_the_prefix_states_equal_the_square():
    n = exercises.CATALOG["ch09.parallel_memory"].solution
    m = d_v = 64
    assert n * (m * d_v + m) == n**2
    for other in (n - 1, n + 1):
        assert (other * (m * d_v + m) > other**2) == (other < n)
    for wrong in (n - 1, m * d_v):  # the largest N below it; the count without z
        with pytest.raises(ExerciseFailed):
            check("ch09.parallel_memory", wrong)


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
