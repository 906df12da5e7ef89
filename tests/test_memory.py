"""The key–value memory of chapter 10: the crosstalk split is exact, orthogonal keys recall
exactly, and the delta rule overwrites where the additive rule mixes. Chapter 14's learners:
least squares recalls every pair while the keys are independent and fits best past m; TTT's
inner model is read through its residual, and its layer norm, bias and zero start are measured."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu.analysis import singular_values
from lattn_edu.memory import (LEARNER_RULES, RULES, InnerModel, LeastSquaresMemory, crosstalk, make_keys,
                              make_values, memory_errors, read_memory, retrieval_error, write_memory)
from lattn_edu.test_time import layer_norm


@pytest.mark.parametrize("kind", ["orthogonal", "random"])
@pytest.mark.parametrize("p", [5, 23, 41])
def test_crosstalk_decomposition_is_exact(kind, p):
    keys, values = make_keys(p, 11, kind, 0.3, seed=p), make_values(p, 7, seed=p + 1)
    signal, cross = crosstalk(keys, values)
    state = write_memory(keys, values, "additive")
    np.testing.assert_allclose(signal + cross, read_memory(state, keys), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(state, keys.T @ values, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(signal, values, rtol=1e-12)  # unit keys: k_i·k_i = 1


def test_keys_are_unit_and_correlation_sets_their_cosine():
    plain, tied = make_keys(301, 19, "random", 0.0, seed=3), make_keys(301, 19, "random", 0.6, seed=3)
    np.testing.assert_allclose(np.linalg.norm(tied, axis=1), 1.0, rtol=1e-12)
    off = ~np.eye(301, dtype=bool)
    assert abs((plain @ plain.T)[off].mean()) < 0.05
    assert 0.45 < (tied @ tied.T)[off].mean() < 0.75
    blocks = make_keys(25, 9, "orthogonal", seed=5)  # three blocks of 9, the last one partial
    for start in (0, 9, 18):
        block = blocks[start:start + 9]
        np.testing.assert_allclose(block @ block.T, np.eye(len(block)), atol=1e-12)


@pytest.mark.parametrize("p", [1, 6, 13])
def test_orthogonal_keys_up_to_m_recall_exactly_with_the_additive_rule(p):
    errors = memory_errors(p, 13, 5, "additive", "orthogonal", seed=p)
    np.testing.assert_array_less(errors, 1e-12)


def test_past_m_the_additive_rule_must_err():
    # a rank-m state cannot map 2m generic keys to 2m generic values
    errors = memory_errors(26, 13, 9, "additive", "orthogonal", seed=2)
    assert errors.mean() > 0.3
    assert singular_values(write_memory(make_keys(26, 13, seed=2), make_values(26, 9))).shape == (9,)


@pytest.mark.parametrize("rule", ["delta", "gated delta"])
def test_delta_rule_keeps_the_latest_value_of_a_repeated_key(rule):
    keys = make_keys(7, 11, "orthogonal", seed=7)
    keys = np.concatenate([keys, keys[2:3]])  # key 2 comes back with a new value
    values = make_values(8, 5, seed=8)
    state = write_memory(keys, values, rule, beta=1.0, decay=0.9)
    np.testing.assert_allclose(read_memory(state, keys[-1:])[0], values[-1], rtol=1e-12, atol=1e-13)
    mixed = read_memory(write_memory(keys, values, "additive"), keys[-1:])[0]
    np.testing.assert_allclose(mixed, values[2] + values[-1], rtol=1e-12)  # additive: the sum


def test_delta_rule_matches_the_package_recurrence_and_beats_additive_on_random_keys():
    keys, values = make_keys(17, 17, "random", seed=1), make_values(17, 6, seed=2)
    state = write_memory(keys, values, "delta", beta=0.7)
    _, expected = la.delta_rule(keys[None], keys[None], values[None], np.full((1, 17), 0.7),
                                form="chunkwise", chunk_size=5, return_state=True)
    np.testing.assert_allclose(state, expected[0], rtol=1e-10, atol=1e-12)
    delta = retrieval_error(write_memory(keys, values, "delta"), keys, values)
    additive = retrieval_error(write_memory(keys, values, "additive"), keys, values)
    assert delta[-1] < 1e-12 < additive[-1]  # β = 1: the last write is read back exactly
    assert delta.mean() < additive.mean()


def test_gated_delta_forgets_old_pairs():
    errors = memory_errors(31, 37, 5, "gated delta", "orthogonal", decay=0.8, seed=4)
    np.testing.assert_allclose(errors, 1 - 0.8 ** np.arange(30, -1, -1), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda: make_keys(0, 4), "p must be a positive int"),
    (lambda: make_keys(3, 4, "sparse"), "kind must be one of"),
    (lambda: make_keys(3, 4, correlation=1.0), r"correlation must be a number in \[0.0, 1.0\)"),
    (lambda: write_memory(np.ones((3, 2)), np.ones((4, 2))), "same P"),
    (lambda: write_memory(np.ones((3, 2)), np.ones((3, 2)), "hebbian"), "rule must be one of"),
    (lambda: write_memory(np.ones((3, 2)), np.ones((3, 2)), "delta", beta=2.5), "beta must be"),
    (lambda: write_memory(np.ones((3, 2)), np.ones((3, 2)), "gated delta", decay=0.0), "decay must be"),
], ids=["p", "kind", "correlation", "shapes", "rule", "beta", "decay"])
def test_bad_input_is_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---- chapter 14: least squares and TTT as memories ----

@pytest.mark.parametrize("p", [1, 12, 29])
@pytest.mark.parametrize("correlation", [0.0, 0.5])
def test_least_squares_recalls_every_pair_up_to_m_random_keys(p, correlation):
    # random, correlated keys: the additive and delta rules err here, least squares does not
    errors = memory_errors(p, 29, 7, "least squares", "random", correlation, seed=p)
    np.testing.assert_array_less(errors, 1e-6)
    if p > 1:
        assert memory_errors(p, 29, 7, "delta", "random", correlation, seed=p).mean() > 1e-3


def test_least_squares_degrades_past_m_and_still_fits_best():
    m, d_v = 17, 5
    means = [memory_errors(p, m, d_v, "least squares", seed=3).mean() for p in (18, 34, 68)]
    assert 0.1 < means[0] < means[1] < means[2] < 1
    keys, values = make_keys(34, m, seed=3), make_values(34, d_v, seed=4)
    squared = {rule: np.sum(retrieval_error(write_memory(keys, values, rule, decay=0.9), keys, values) ** 2)
               for rule in RULES + ("least squares",)}
    for rule in RULES:  # the least total squared error of any linear map, up to λ‖W‖²
        assert squared["least squares"] < squared[rule]


def test_least_squares_keeps_the_two_sums_and_reads_through_the_ridge():
    keys, values = make_keys(23, 11, seed=5), make_values(23, 6, seed=6)
    state = write_memory(keys, values, "least squares", ridge=0.3)
    assert isinstance(state, LeastSquaresMemory) and state.ridge == 0.3
    np.testing.assert_allclose(state.h, keys.T @ keys, rtol=1e-12, atol=1e-13)  # H = Σ k kᵀ
    np.testing.assert_allclose(state.g, keys.T @ values, rtol=1e-12, atol=1e-13)  # G = Σ k vᵀ
    fitted = np.linalg.solve(keys.T @ keys + 0.3 * np.eye(11), keys.T @ values)  # ridge regression  [m, d_v]
    np.testing.assert_allclose(read_memory(state, keys), keys @ fitted, rtol=1e-10, atol=1e-12)


def test_ttt_is_the_package_inner_model_read_through_its_residual():
    keys, values = make_keys(21, 9, seed=7), make_values(21, 9, seed=8)
    state = write_memory(keys, values, "ttt", beta=0.6, mini_batch_size=5)
    assert isinstance(state, InnerModel)
    eta = 0.6 / (np.arange(21) % 5 + 1)  # η_t = β / position in its mini-batch
    _, (w, b) = la.ttt_linear(keys, keys, values, eta, state.ln_weight, state.ln_bias, mini_batch_size=5,
                              scale=1.0, form="recurrent", return_state=True)
    np.testing.assert_allclose(state.w, w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state.b, b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state.ln_weight, np.sqrt(2 / 9))  # the typical target's length √2
    read = keys + layer_norm(keys @ w + b, state.ln_weight, state.ln_bias, 1e-6)  # k + f(k)
    np.testing.assert_allclose(read_memory(state, keys), read, rtol=1e-12)


def test_ttt_one_pair_is_read_at_the_layer_norms_floor():
    # from zeros, one pair: z ∝ the centred target, so the read is k + √2 · centred(v − k)/its length
    m = 13
    keys, values = make_keys(1, m, seed=9), make_values(1, m, seed=10)
    target = values - keys
    centred = target - target.mean()
    floor = keys + np.sqrt(2) * centred / np.linalg.norm(centred)
    np.testing.assert_allclose(read_memory(write_memory(keys, values, "ttt"), keys), floor, rtol=1e-9)
    assert retrieval_error(write_memory(keys, values, "ttt"), keys, values)[0] > 0.05  # not exact


def test_ttt_from_zeros_ignores_its_step_and_freezes_after_the_first_mini_batch():
    keys, values = make_keys(40, 31, seed=11), make_values(40, 31, seed=12)
    small, large = (retrieval_error(write_memory(keys[:11], values[:11], "ttt", beta=beta), keys[:11],
                                    values[:11]) for beta in (0.5, 2.0))
    np.testing.assert_allclose(small, large, rtol=1e-6)  # LN is scale-invariant: one mini-batch, any step
    first, whole = (write_memory(keys[:n], values[:n], "ttt", mini_batch_size=8) for n in (8, 40))
    unit = [w / np.linalg.norm(w) for w in (first.w, whole.w)]
    assert np.sum(unit[0] * unit[1]) > 1 - 1e-6  # 32 more pairs barely turn W


def test_ttt_stores_unit_pairs_worse_than_the_additive_rule():
    # measured, m = d_v = 32, P = 8 < m: the layer norm's floor and the bias's crosstalk
    for seed in range(3):
        ttt = memory_errors(8, 32, 32, "ttt", seed=seed)
        additive = memory_errors(8, 32, 32, "additive", seed=seed)
        assert additive.mean() < 0.6 and ttt.mean() > 1.0  # TTT: worse than a read of 0 (error 1)


@pytest.mark.parametrize("call, match", [
    (lambda: write_memory(np.ones((3, 4)), np.ones((3, 5)), "ttt"), r"values must have d_v = m = 4"),
    (lambda: write_memory(np.eye(3), np.eye(3), "ttt", beta=-0.1), "beta must be"),
    (lambda: write_memory(np.eye(3), np.eye(3), "ttt", mini_batch_size=0), "mini_batch_size"),
    (lambda: write_memory(np.eye(3), np.eye(3), "least squares", ridge=0.0), "ridge must be > 0"),
    (lambda: write_memory(np.eye(3), np.eye(3), "mesa"), "rule must be one of .*'least squares', 'ttt'"),
], ids=["ttt d_v", "ttt beta", "mini_batch_size", "ridge", "rule"])
def test_learners_refuse_bad_input_by_name(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_chapter_10s_rules_are_unchanged_and_the_learners_apart():
    assert RULES == ("additive", "delta", "gated delta")  # the memory explorer draws exactly these
    assert LEARNER_RULES == ("least squares", "ttt")
