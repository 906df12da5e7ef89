"""The decoding state: the seed's worked example, agreement with the parallel form, constant size."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close


def worked_example_state():
    state = la.LinearAttentionState(m=2, d_v=2, eps=0.0)
    state.update([1, 0], [1, 0])  # φ(k1), v1
    state.update([0, 1], [0, 2])  # φ(k2), v2
    return state


def test_seed_worked_example():
    state = worked_example_state()
    np.testing.assert_array_equal(state.S, [[1, 0], [0, 2]])
    np.testing.assert_array_equal(state.z, [1, 1])
    np.testing.assert_array_equal(state.read([3, 1]), [0.75, 0.5])


def test_default_eps_changes_the_worked_example_by_less_than_a_millionth():
    state = la.LinearAttentionState(2, 2)
    state.update(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0, 0.0], [0.0, 2.0]]))
    np.testing.assert_allclose(state.read([3, 1]), [0.75, 0.5], rtol=1e-6)


def test_worked_example_third_token_updates_in_place():
    state = worked_example_state()
    S_before = state.S
    state.update([1, 1], [2, 2])  # a third token, φ(k3) = [1, 1], v3 = [2, 2]
    assert state.S is S_before  # same buffer: nothing earlier is redone
    np.testing.assert_array_equal(state.S, [[3, 2], [2, 4]])
    np.testing.assert_array_equal(state.z, [2, 2])
    # numerator [3·3 + 2, 3·2 + 4] = [11, 10]; denominator 3·2 + 2 = 8
    np.testing.assert_array_equal(state.read([3, 1]), [11 / 8, 10 / 8])
    assert state.num_tokens == 3


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_stepping_equals_causal_linear_attention(rng, dtype):
    q, k = rng.standard_normal((2, 37, 5)).astype(dtype)
    v = rng.standard_normal((37, 3)).astype(dtype)
    state = la.LinearAttentionState(5, 3, dtype=dtype)
    phi_q, phi_k = la.elu_plus_one(q), la.elu_plus_one(k)
    out = np.stack([state.step(phi_q[i], phi_k[i], v[i]) for i in range(37)])
    assert out.dtype == dtype
    assert_close(out, la.linear_attention(q, k, v, causal=True), what="state vs parallel")


def test_state_size_does_not_grow(rng):
    state = la.LinearAttentionState(4, 3)
    size = state.nbytes
    state.update(np.abs(rng.standard_normal((500, 4))), rng.standard_normal((500, 3)))
    assert state.nbytes == size == (4 * 3 + 4) * 8


def test_block_update_equals_token_updates(rng):
    phi_k, v = np.abs(rng.standard_normal((9, 4))), rng.standard_normal((9, 3))
    block, tokens = la.LinearAttentionState(4, 3), la.LinearAttentionState(4, 3)
    block.update(phi_k, v)
    for i in range(9):
        tokens.update(phi_k[i], v[i])
    assert_close(block.S, tokens.S)
    assert_close(block.read(phi_k[:2]), tokens.read(phi_k[:2]))


def test_kv_cache_equals_causal_softmax_and_grows(rng):
    q, k = rng.standard_normal((2, 29, 4))
    v = rng.standard_normal((29, 3))
    cache = la.SoftmaxKVCache(4, 3, capacity=8)
    out = np.stack([cache.step(q[i], k[i], v[i]) for i in range(29)])
    assert_close(out, la.softmax_attention(q, k, v, causal=True), what="KV cache vs softmax")
    assert cache.nbytes == 29 * (4 + 3) * 8
    np.testing.assert_array_equal(cache.keys, k)


@pytest.mark.parametrize("call, message", [
    (lambda s: s.update([1, 0, 0], [1, 0]), r"phi_k must have shape \[2\]"),
    (lambda s: s.update([1, 0], [1]), r"v must have shape \[2\]"),
    (lambda s: s.update(np.ones((3, 2)), np.ones((2, 2))), "same number of tokens"),
    (lambda s: s.read([np.nan, 1]), "phi_q must be finite"),
    (lambda s: s.read(np.array([1, 2])), "phi_q must have dtype"),
    (lambda s: s.step(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2))), "step takes one token"),
], ids=["phi_k width", "v width", "token count", "nan", "int array", "step block"])
def test_state_bad_input(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call(la.LinearAttentionState(2, 2))


def test_constructor_bad_input():
    with pytest.raises(ValueError, match="m must be a positive int"):
        la.LinearAttentionState(0, 2)
    with pytest.raises(TypeError, match="d_v must be a positive int"):
        la.LinearAttentionState(2, 2.5)
    with pytest.raises(TypeError, match="dtype must be float32 or float64"):
        la.LinearAttentionState(2, 2, dtype=np.int32)
    with pytest.raises(ValueError, match="at least one cached token"):
        la.SoftmaxKVCache(2, 2).read([1.0, 0.0])


def test_state_continues_from_linear_attention_over_a_prompt(rng):
    q, k, v = rng.standard_normal((3, 30, 4))
    prompt, state = la.linear_attention(q[:20], k[:20], v[:20], causal=True, return_state=True)
    decoder = la.LinearAttentionState(4, 4, initial_state=state)
    steps = [decoder.step(la.elu_plus_one(q[i]), la.elu_plus_one(k[i]), v[i]) for i in range(20, 30)]
    assert_close(np.array(steps), la.linear_attention(q, k, v, causal=True)[20:])
    s, z = decoder.state
    assert_close(s, la.elu_plus_one(k).T @ v)
    s[...] = 0  # a copy: the decoder's own state is untouched
    assert np.abs(decoder.S).max() > 0


@pytest.mark.parametrize("scale", [1.0, 8.0, 30.0])
def test_log_space_state_decodes_favor_plus_as_linear_attention_does(scale, rng):
    """Stepping log features through a LinearAttentionState(log_space=True), from nothing or from
    the triple linear_attention returns for a prompt, gives linear_attention's outputs, also where
    plain features underflow (scale 30); its state goes back into linear_attention."""
    d, m, n = 5, 9, 27
    fp = la.FavorPlus(d, m, seed=2)
    q, k = scale * rng.standard_normal((2, n, d)) * d**-0.25
    v = rng.standard_normal((n, 3))
    whole = la.linear_attention(q, k, v, feature_map=fp, causal=True)
    fresh = la.LinearAttentionState(m, 3, log_space=True)
    steps = [fresh.step(fp.log_features(q[i]), fp.log_features(k[i]), v[i]) for i in range(n)]
    assert_close(np.array(steps), whole, what="decoded from nothing")
    _, prompt_state = la.linear_attention(q[:17], k[:17], v[:17], feature_map=fp, causal=True, return_state=True)
    decoder = la.LinearAttentionState(m, 3, initial_state=prompt_state, log_space=True)
    decoder.update(fp.log_features(k[17:20]), v[17:20])  # a block of three tokens at once
    outputs = [decoder.read(fp.log_features(q[19]))]
    outputs += [decoder.step(fp.log_features(q[i]), fp.log_features(k[i]), v[i]) for i in range(20, 24)]
    assert_close(np.array(outputs), whole[19:24], what="decoded after the prompt")
    rest = la.linear_attention(q[24:], k[24:], v[24:], feature_map=fp, causal=True, initial_state=decoder.state)
    assert_close(rest, whole[24:], what="linear_attention continued from the decoder's state")
    with pytest.raises(TypeError, match="initial_state must be a pair"):
        la.LinearAttentionState(m, 3, initial_state=prompt_state)  # a triple needs log_space


@pytest.mark.parametrize("case", ["read before any update", "zero denominator", "overflow"])
def test_read_refuses_nan_instead_of_warning(case):
    state = la.LinearAttentionState(2, 2, eps=0.0)
    if case == "zero denominator":
        state.update([1.0, 0.0], [1.0, 1.0])
        with pytest.raises(ValueError, match="denominator"):
            state.read([0.0, 1.0])
    elif case == "read before any update":
        with pytest.raises(ValueError, match="before any update"):
            state.read([1.0, 1.0])
    else:
        with pytest.raises(ValueError, match="overflow"):
            state.update(np.array([1e200, 1e200]), np.array([1e200, 1.0]))
        assert state.num_tokens == 0 and not state.S.any()
