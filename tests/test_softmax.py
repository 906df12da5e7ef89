"""Softmax attention: the quadratic baseline against a loop, its invariants and its memory guard."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close


def loop_softmax_attention(q, k, v, causal, scale):
    out = np.zeros((len(q), v.shape[-1]))
    for i in range(len(q)):
        keys = k[: i + 1] if causal else k
        logits = keys @ q[i] * scale
        weights = np.exp(logits - logits.max())
        out[i] = weights / weights.sum() @ v[: len(keys)]
    return out


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n", [1, 2, 63, 100], ids=lambda n: f"N{n}")
def test_matches_the_definition(rng, causal, n):
    q, k = rng.standard_normal((2, n, 5))
    v = rng.standard_normal((n, 3))
    out = la.softmax_attention(q, k, v, causal=causal)
    assert_close(out, loop_softmax_attention(q, k, v, causal, 5**-0.5), what="softmax")


def test_leading_axes_are_independent_sequences(rng):
    q, k = rng.standard_normal((2, 2, 3, 17, 4))
    v = rng.standard_normal((2, 3, 17, 6))
    out = la.softmax_attention(q, k, v, causal=True)
    for b in range(2):
        for h in range(3):
            assert_close(out[b, h], la.softmax_attention(q[b, h], k[b, h], v[b, h], causal=True))


def test_weights_are_probabilities_and_causal_weights_are_lower_triangular(rng):
    q, k = rng.standard_normal((2, 31, 5))
    weights = la.softmax_attention_weights(q, k, causal=True)
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-12)
    assert (weights >= 0).all() and np.count_nonzero(np.triu(weights, 1)) == 0
    assert weights[0, 0] == 1.0


def test_huge_logits_do_not_overflow(rng):
    q, k = rng.standard_normal((2, 9, 4)) * 1e3
    v = rng.standard_normal((9, 2))
    out = la.softmax_attention(q, k, v, causal=True)
    assert np.isfinite(out).all()


def test_float32_in_float32_out(rng):
    q, k, v = rng.standard_normal((3, 2, 11, 4)).astype(np.float32)
    out = la.softmax_attention(q, k, v)
    assert out.dtype == np.float32
    assert_close(out, la.softmax_attention(*(x.astype(np.float64) for x in (q, k, v))), rtol=1e-5)


def test_scale_sharpens_the_weights(rng):
    q, k = rng.standard_normal((2, 20, 4))
    soft = la.softmax_attention_weights(q, k, scale=0.1).max(-1)
    sharp = la.softmax_attention_weights(q, k, scale=10.0).max(-1)
    assert (sharp >= soft).all() and sharp.mean() > 0.8 > soft.mean()


def test_memory_budget_points_at_linear_attention():
    x = np.zeros((2, 3000, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="linear_attention"):
        la.softmax_attention(x, x, x, max_matrix_bytes=2**20)
    with pytest.raises(ValueError, match=r"\[100000, 100000\]"):
        big = np.zeros((100_000, 2))
        la.softmax_attention_weights(big, big)


@pytest.mark.parametrize("scale, error", [(0.0, ValueError), (-1.0, ValueError),
                                          (float("inf"), ValueError), ("x", TypeError)],
                         ids=["zero", "negative", "inf", "string"])
def test_bad_scale(scale, error):
    x = np.zeros((3, 2))
    with pytest.raises(error, match="scale"):
        la.softmax_attention(x, x, x, scale=scale)


def test_bad_shapes_name_the_argument():
    with pytest.raises(ValueError, match="k must have the same feature size"):
        la.softmax_attention(np.zeros((3, 2)), np.zeros((3, 4)), np.zeros((3, 1)))
    with pytest.raises(ValueError, match="causal attention needs q and k of the same length"):
        la.softmax_attention_weights(np.zeros((2, 2)), np.zeros((3, 2)), causal=True)
    with pytest.raises(TypeError, match="q must have dtype"):
        la.softmax_attention(np.zeros((3, 2), dtype=int), np.zeros((3, 2)), np.zeros((3, 1)))
