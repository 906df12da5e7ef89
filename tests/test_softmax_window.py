"""Sliding-window softmax attention (softmax_attention(..., window=W)): against torch's SDPA with
an explicit boolean mask, a case worked by hand, its limits (W = 1, W >= N) and bad windows."""

from __future__ import annotations

import math

import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close


def test_a_case_worked_by_hand():
    """N = 3, W = 2, scale 1, q_i = 1, k = (0, ln 2, 0), v = (1, 2, 4): query 0 sees key 0; query 1
    keys 0, 1 with weights 1/3, 2/3; query 2 keys 1, 2 with weights 2/3, 1/3 (key 0 left the window)."""
    q = np.ones((3, 1))
    k = np.array([[0.0], [math.log(2)], [0.0]])
    v = np.array([[1.0], [2.0], [4.0]])
    weights = la.softmax_attention_weights(q, k, causal=True, scale=1.0, window=2)
    expected = np.array([[1, 0, 0], [1 / 3, 2 / 3, 0], [0, 2 / 3, 1 / 3]])
    assert_close(weights, expected)
    out = la.softmax_attention(q, k, v, causal=True, scale=1.0, window=2)
    assert_close(out, np.array([[1.0], [5 / 3], [8 / 3]]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n, window", [(45, 1), (45, 3), (63, 16), (100, 99), (100, 100), (17, 40)])
def test_matches_torch_sdpa_with_a_band_mask(n, window, dtype, rng):
    torch = pytest.importorskip("torch")
    q, k = rng.standard_normal((2, 2, 3, n, 6)).astype(dtype)
    v = rng.standard_normal((2, 3, n, 5)).astype(dtype)
    out = la.softmax_attention(q, k, v, causal=True, window=window)
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    allowed = torch.from_numpy((j <= i) & (j > i - window))  # True: the query attends to the key
    ref = torch.nn.functional.scaled_dot_product_attention(*(torch.from_numpy(x) for x in (q, k, v)),
                                                           attn_mask=allowed)
    assert out.dtype == dtype
    assert_close(out, ref.numpy(), what=f"N={n}, W={window}")


def test_the_limits_of_the_window(rng):
    q, k = rng.standard_normal((2, 3, 20, 4))
    v = rng.standard_normal((3, 20, 5))
    causal = la.softmax_attention(q, k, v, causal=True)
    for window in (20, 21, 1000):  # W >= N: every causal key is in the window
        np.testing.assert_array_equal(la.softmax_attention(q, k, v, causal=True, window=window), causal)
    assert_close(la.softmax_attention(q, k, v, causal=True, window=1), v)  # each query sees itself alone
    weights = la.softmax_attention_weights(q, k, causal=True, window=4)
    i, j = np.arange(20)[:, None], np.arange(20)[None, :]
    assert np.all(weights[:, (j > i) | (j <= i - 4)] == 0)
    assert_close(weights.sum(-1), np.ones((3, 20)))


@pytest.mark.parametrize("window, error, match", [
    (0, ValueError, "window must be a positive int"),
    (-3, ValueError, "window must be a positive int"),
    (2.5, TypeError, "window must be a positive int; got float"),
    (True, TypeError, "window must be a positive int; got bool"),
    ("4", TypeError, "window must be a positive int; got str"),
])
def test_bad_windows_are_refused_by_name(window, error, match, rng):
    q, k, v = rng.standard_normal((3, 8, 4))
    with pytest.raises(error, match=match):
        la.softmax_attention(q, k, v, causal=True, window=window)
    with pytest.raises(error, match=match):
        la.softmax_attention_weights(q, k, causal=True, window=window)


def test_a_window_needs_causal_attention(rng):
    q, k, v = rng.standard_normal((3, 8, 4))
    with pytest.raises(ValueError, match="window=3 needs causal=True"):
        la.softmax_attention(q, k, v, window=3)
    with pytest.raises(ValueError, match="window=3 needs causal=True"):
        la.softmax_attention_weights(q, k, causal=False, window=3)


def test_a_numpy_integer_window_is_accepted(rng):
    q, k, v = rng.standard_normal((3, 8, 4))
    np.testing.assert_array_equal(la.softmax_attention(q, k, v, causal=True, window=np.int64(3)),
                                  la.softmax_attention(q, k, v, causal=True, window=3))


def test_the_window_never_reaches_the_numba_kernel(rng, monkeypatch):
    """The numba softmax kernel (a benchmark baseline, without a window) is not a path of
    softmax_attention: with it broken, windowed attention still runs."""
    pytest.importorskip("numba")
    from lattn_edu.backends import numba_softmax

    def broken(*args, **kwargs):
        raise AssertionError("the numba softmax kernel was called")
    monkeypatch.setattr(numba_softmax, "_softmax_kernel", broken)
    monkeypatch.setattr(numba_softmax, "softmax_attention", broken)
    q, k, v = rng.standard_normal((3, 8, 4))
    assert np.isfinite(la.softmax_attention(q, k, v, causal=True, window=3)).all()
