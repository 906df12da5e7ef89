"""Retention: the parallel, recurrent and chunkwise forms agree; γ = 1 is unnormalised linear attention."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lattn_edu as la
from conftest import assert_close

FORMS = ("parallel", "recurrent", "chunkwise")


def loop_retention(q, k, v, gamma):
    return np.stack([sum(gamma ** (n - j) * (q[n] @ k[j]) * v[j] for j in range(n + 1))
                     for n in range(len(q))])


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("gamma", [1.0, 0.9, 0.3], ids=lambda g: f"gamma{g}")
def test_matches_the_definition(rng, form, gamma):
    q, k = rng.standard_normal((2, 23, 4))
    v = rng.standard_normal((23, 3))
    out = la.retention(q, k, v, gamma, form=form, chunk_size=5)
    assert_close(out, loop_retention(q, k, v, gamma), what=form)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("n", [1, 2, 63, 100, 257], ids=lambda n: f"N{n}")
def test_triad_agrees_with_per_head_gamma(rng, n, dtype):
    q, k = rng.standard_normal((2, 2, 3, n, 5)).astype(dtype)
    v = rng.standard_normal((2, 3, n, 7)).astype(dtype)
    gamma = np.array([0.5, 0.9, 0.99])  # one decay per head: multi-scale retention
    reference = la.retention(q, k, v, gamma, form="parallel")
    for form in FORMS:
        for chunk in (7, 64):
            out = la.retention(q, k, v, gamma, form=form, chunk_size=chunk)
            assert out.dtype == dtype
            assert_close(out, reference, what=f"{form} C={chunk}")
    for h in range(3):
        assert_close(reference[:, h], la.retention(q[:, h], k[:, h], v[:, h], gamma[h]))


def test_gamma_one_is_unnormalised_causal_linear_attention(rng):
    q, k = rng.standard_normal((2, 31, 4))
    v = rng.standard_normal((31, 3))
    unnormalised = np.tril(q @ k.T) @ v  # identity feature map, no denominator
    assert_close(la.retention(q, k, v, 1.0), unnormalised)


def test_decay_matrix():
    np.testing.assert_allclose(la.decay_matrix(0.5, 3), [[1, 0, 0], [0.5, 1, 0], [0.25, 0.5, 1]])
    assert la.decay_matrix(np.array([0.5, 0.9]), 4).shape == (2, 4, 4)
    assert la.decay_matrix(0.5, 2000)[-1, 0] == 0.0  # underflows to 0, no warning


def test_smaller_gamma_forgets_faster(rng):
    q = np.ones((50, 2))
    k, v = np.ones((50, 2)), np.zeros((50, 1))
    v[0] = 1.0  # only the first token carries a value
    slow, fast = (la.retention(q, k, v, g)[-1, 0] for g in (0.99, 0.8))
    assert slow > fast > 0


@given(n=st.integers(1, 30), chunk=st.integers(1, 12), gamma=st.floats(0.05, 1.0),
       seed=st.integers(0, 2**31 - 1))
def test_forms_agree_on_random_shapes(n, chunk, gamma, seed):
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((3, n, 3))
    reference = la.retention(q, k, v, gamma)
    for form in ("recurrent", "chunkwise"):
        assert_close(la.retention(q, k, v, gamma, form=form, chunk_size=chunk), reference,
                     rtol=1e-9, what=form)


@pytest.mark.parametrize("gamma, error, message", [
    (0.0, ValueError, r"gamma must lie in \(0, 1\]"),
    (1.5, ValueError, r"gamma must lie in \(0, 1\]"),
    (float("nan"), ValueError, "gamma"),
    (np.array([0.5, 0.9]), ValueError, "broadcast against the leading axes"),
    ("0.5", TypeError, "gamma must be a float"),
], ids=["zero", "above one", "nan", "wrong heads", "string"])
def test_bad_gamma(gamma, error, message):
    x = np.zeros((3, 4, 2))
    with pytest.raises(error, match=message):
        la.retention(x, x, x, gamma)


def test_bad_form_and_chunk():
    x = np.zeros((4, 2))
    with pytest.raises(ValueError, match="form must be one of"):
        la.retention(x, x, x, 0.5, form="quadratic")
    with pytest.raises(ValueError, match="chunk_size"):
        la.retention(x, x, x, 0.5, form="chunkwise", chunk_size=-3)
    with pytest.raises(ValueError, match="same length N"):
        la.retention(np.zeros((3, 2)), x, x, 0.5)
