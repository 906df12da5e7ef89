"""The key–value memory of chapter 10: the crosstalk split is exact, orthogonal keys recall
exactly, and the delta rule overwrites where the additive rule mixes."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu.analysis import singular_values
from lattn_edu.memory import (crosstalk, make_keys, make_values, memory_errors, read_memory,
                              retrieval_error, write_memory)


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
