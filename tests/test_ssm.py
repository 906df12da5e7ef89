"""The SSM scan: linear attention and retention are its special cases; the mixing matrix matches."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close


def test_linear_attention_is_the_scan_with_no_decay(rng):
    q, k = rng.standard_normal((2, 2, 41, 5))
    v = rng.standard_normal((2, 41, 3))
    phi_q, phi_k = la.elu_plus_one(q), la.elu_plus_one(k)
    numerator = la.ssm_scan(1.0, phi_k, phi_q, v)  # a = 1, b = φ(k), c = φ(q), x = v
    denominator = la.ssm_scan(1.0, phi_k, phi_q, np.ones((2, 41, 1)))  # same scan with x = 1
    assert_close(numerator / (denominator + 1e-6), la.linear_attention(q, k, v, causal=True))


def test_retention_is_the_scan_with_constant_decay(rng):
    q, k = rng.standard_normal((2, 3, 29, 4))
    v = rng.standard_normal((3, 29, 2))
    gamma = np.array([0.6, 0.8, 0.95])
    decay = gamma[:, None, None]  # [H, 1, 1] broadcasts to [H, N, m]
    assert_close(la.ssm_scan(decay, k, q, v), la.retention(q, k, v, gamma))


def test_mixing_matrix_reproduces_the_scan(rng):
    b, c = rng.standard_normal((2, 2, 33, 4))
    x = rng.standard_normal((2, 33, 3))
    decay = rng.uniform(0.5, 1.0, size=(2, 33, 4))  # input-dependent, per state row
    mixing = la.ssm_mixing_matrix(decay, b, c)
    assert mixing.shape == (2, 33, 33) and np.count_nonzero(np.triu(mixing[0], 1)) == 0
    assert_close(mixing @ x, la.ssm_scan(decay, b, c, x))


def test_mixing_matrix_with_no_decay_is_masked_phi_q_phi_k(rng):
    b, c = np.abs(rng.standard_normal((2, 12, 3)))
    assert_close(la.ssm_mixing_matrix(1.0, b, c), np.tril(c @ b.T))


def test_diagonal_ssm_is_a_convolution(rng):
    x = rng.standard_normal((3, 40, 2))
    a, b, c = np.array([0.5, 0.9, 0.99]), rng.standard_normal(3), rng.standard_normal(3)
    kernel = np.array([(c * a**t * b).sum() for t in range(40)])  # K_t = Σ_r c_r a_r^t b_r
    expected = np.stack([[[sum(kernel[t] * x[s, i - t, ch] for t in range(i + 1))
                           for ch in range(2)] for i in range(40)] for s in range(3)])
    assert_close(la.diagonal_ssm(x, a, b, c), expected)


def test_selective_ssm_remembers_or_forgets_by_input(rng):
    d, m = 3, 4
    w_b, w_c = rng.standard_normal((2, d, m))
    x = rng.standard_normal((25, d))
    keep = la.selective_ssm(x, np.zeros(m), w_b, w_c, np.zeros(d), delta_bias=-8.0)
    forget = la.selective_ssm(x, np.zeros(m), w_b, w_c, np.zeros(d), delta_bias=8.0)
    # large Δ: a_i ≈ 0 so only the current token counts: y_i ∝ (c_i·b_i) x_i
    delta = np.logaddexp(0, 8.0)
    local = ((x @ w_c) * (delta * (x @ w_b))).sum(-1, keepdims=True) * x
    assert_close(forget, local, rtol=1e-3)
    assert np.abs(keep - local).max() > 0.1  # small Δ keeps history (and writes little)


def test_selective_ssm_matches_an_explicit_scan(rng):
    d, m = 3, 5
    x = rng.standard_normal((2, 17, d))
    a_log, w_delta = rng.standard_normal(m), rng.standard_normal(d)
    w_b, w_c = rng.standard_normal((2, d, m))
    delta = np.logaddexp(0, x @ w_delta + 0.3)[..., None]
    decay = np.exp(-delta * np.exp(a_log))
    expected = la.ssm_scan(decay, delta * (x @ w_b), x @ w_c, x)
    assert_close(la.selective_ssm(x, a_log, w_b, w_c, w_delta, 0.3), expected)


@pytest.mark.parametrize("call, error, message", [
    (lambda x: la.ssm_scan(1.5, x, x, x), ValueError, r"decay must lie in \(0, 1\]"),
    (lambda x: la.ssm_scan(np.ones(7), x, x, x), ValueError, "decay must broadcast"),
    (lambda x: la.ssm_scan(1.0, x, x[:, :2], x), ValueError, "b and c must have the same shape"),
    (lambda x: la.ssm_scan(1.0, x, x, x[:3]), ValueError, "x must have shape"),
    (lambda x: la.ssm_scan("1", x, x, x), TypeError, "decay must be"),
    (lambda x: la.diagonal_ssm(x, [0.5], [1.0, 2.0], [1.0]), ValueError, "a, b and c must be"),
    (lambda x: la.selective_ssm(x, np.zeros(2), np.zeros((2, 2)), np.zeros((3, 2)), np.zeros(3)),
     ValueError, r"w_b must have shape \[3, 2\]"),
], ids=["decay range", "decay shape", "b c shape", "x length", "decay type", "diag params",
        "selective params"])
def test_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call(np.ones((5, 3)))


def test_selective_gates_are_what_the_scan_uses(rng):
    d, m = 3, 4
    x = rng.standard_normal((19, d))
    params = (rng.standard_normal(m), *rng.standard_normal((2, d, m)), rng.standard_normal(d))
    decay, b, c = la.selective_ssm_gates(x, *params, delta_bias=0.5)
    assert decay.shape == b.shape == c.shape == (19, m)
    assert ((decay > 0) & (decay < 1)).all()
    assert_close(la.ssm_scan(decay, b, c, x), la.selective_ssm(x, *params, delta_bias=0.5))
