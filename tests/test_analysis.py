"""The quality-gap measurements: effective matrices, rank, sharpness, denominator drift, cost."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close

MAPS = {"elu+1": "elu+1", "relu": "relu", "favor": la.FavorPlus(5, 7, seed=2)}


def unit_rows(rng, n, d):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


# ---------------------------------------------------------------- effective attention matrix

@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("lead", [(), (2, 3)], ids=["no-lead", "BH"])
def test_effective_matrix_is_row_stochastic_for_elu(rng, lead, causal):
    n, eps = 63, 1e-6
    q, k = rng.standard_normal(lead + (n, 5)), rng.standard_normal(lead + (n, 5))
    a = la.effective_attention_matrix(q, k, causal=causal, eps=eps)
    assert a.shape == lead + (n, n)
    assert (a >= 0).all()
    sums = a.sum(-1)
    # A_ij = W_ij / (Σ_j W_ij + eps): rows fall short of 1 by eps / (Σ_j W_ij + eps) only
    phi_q, phi_k = la.elu_plus_one(q), la.elu_plus_one(k)
    w = phi_q @ phi_k.swapaxes(-1, -2)
    den = (np.tril(w) if causal else w).sum(-1)
    np.testing.assert_allclose(sums, den / (den + eps), rtol=1e-12)
    assert (np.abs(sums - 1) < 1e-5).all()
    if causal:
        assert (np.triu(a, 1) == 0).all()
        assert (a[..., np.tri(n, dtype=bool)] > 0).all()


@pytest.mark.parametrize("name", MAPS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_effective_matrix_times_v_is_linear_attention(rng, causal, name):
    q, k, v = rng.standard_normal((3, 2, 63, 5)) * 5**-0.25
    a = la.effective_attention_matrix(q, k, feature_map=MAPS[name], causal=causal)
    for form in ("quadratic", "parallel"):
        out = la.linear_attention(q, k, v, feature_map=MAPS[name], causal=causal, form=form)
        assert_close(a @ v, out, what=f"A v vs {form}")


def test_effective_matrix_with_more_queries_than_keys(rng):
    q, k = rng.standard_normal((45, 5)), rng.standard_normal((31, 5))
    assert la.effective_attention_matrix(q, k).shape == (45, 31)
    with pytest.raises(ValueError, match="causal attention needs q and k of the same length"):
        la.effective_attention_matrix(q, k, causal=True)


def test_effective_matrix_of_identity_map_can_have_negative_weights(rng):
    q, k = rng.standard_normal((2, 31, 5))
    assert (la.effective_attention_matrix(q, k, feature_map="identity") < 0).any()


def test_effective_matrix_refuses_bad_arguments(rng):
    q, k = rng.standard_normal((2, 9, 5))
    with pytest.raises(TypeError, match="causal must be True or False"):
        la.effective_attention_matrix(q, k, causal="yes")
    with pytest.raises(ValueError, match="eps must be finite and >= 0"):
        la.effective_attention_matrix(q, k, eps=-1e-6)
    with pytest.raises(ValueError, match="k must have the same feature size d as q"):
        la.effective_attention_matrix(q, k[:, :4])
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="takes numpy arrays"):
        la.effective_attention_matrix(torch.from_numpy(q), torch.from_numpy(k))


# ---------------------------------------------------------------- rank

@pytest.mark.parametrize("d,m,n,name", [(5, 5, 63, "elu+1"), (5, 7, 101, "favor")], ids=["elu-m5-N63", "favor-m7-N101"])
def test_linear_attention_is_rank_m_while_softmax_is_full_rank(rng, d, m, n, name):
    """rank(A_linear) <= m < N, while softmax weights of the same q, k have rank N.

    Why softmax is full rank here: the keys are distinct unit vectors and q = c·k, so the
    logits are c/√d · k_i·k_j and exp(c/√d · K Kᵀ) is a Gram matrix of the strictly
    positive-definite kernel exp(x·y) = e^{|x|²/2} e^{|y|²/2} e^{-|x-y|²/2} on distinct
    points: invertible. Softmax divides its rows by positive sums, which keeps rank N.
    We also check it is numerically full rank with a wide margin (σ_min/σ_max >> rtol).
    """
    feature_map = la.FavorPlus(d, m, seed=2) if name == "favor" else name
    k = unit_rows(rng, n, d)
    q = 30.0 * k
    # eps = 0: at this norm the true FAVOR+ weights are ~1e-170, far below any absolute eps.
    linear = la.effective_attention_matrix(q, k, feature_map=feature_map, eps=0.0)
    assert la.numerical_rank(linear) == m  # <= m by construction, = m for generic inputs
    sigma = la.singular_values(linear)
    assert sigma[m] < 1e-13 * sigma[0] < sigma[m - 1]
    softmax = la.softmax_attention_weights(q, k)
    assert la.numerical_rank(softmax) == n
    sigma_soft = la.singular_values(softmax)
    assert sigma_soft[-1] > 1e-6 * sigma_soft[0]


def test_singular_values_are_sorted_and_match_numpy(rng):
    a = rng.standard_normal((3, 13, 9))
    sigma = la.singular_values(a)
    assert sigma.shape == (3, 9)
    assert (np.diff(sigma, axis=-1) <= 0).all()
    assert_close(sigma, np.linalg.svd(a, compute_uv=False), what="singular values")
    assert_close(la.singular_values(a[0].T), sigma[0], what="transpose")


def test_numerical_rank_known_answers():
    a = np.diag([2.0, 0.3, 1e-3, 1e-17, 0.0])
    assert la.numerical_rank(a) == 3
    assert isinstance(la.numerical_rank(a), int)
    assert la.numerical_rank(a, rtol=0.1) == 2
    assert la.numerical_rank(a, rtol=0.2) == 1
    assert la.numerical_rank(a, rtol=0) == 4
    assert la.numerical_rank(np.zeros((3, 5))) == 0
    assert la.numerical_rank(np.ones((7, 5))) == 1


def test_numerical_rank_of_a_stack_is_an_int_array(rng):
    stack = np.stack([rng.standard_normal((9, r)) @ rng.standard_normal((r, 11)) for r in (1, 3, 5)])
    ranks = la.numerical_rank(stack)
    assert isinstance(ranks, np.ndarray) and ranks.dtype.kind == "i"
    np.testing.assert_array_equal(ranks, [1, 3, 5])
    ranks_bh = la.numerical_rank(stack.reshape(3, 1, 9, 11))
    assert ranks_bh.shape == (3, 1)


@pytest.mark.parametrize("rtol,error,message", [
    (-0.1, ValueError, "rtol must be finite and >= 0"),
    (np.inf, ValueError, "rtol must be finite and >= 0"),
    (np.nan, ValueError, "rtol must be finite and >= 0"),
    ("1e-3", TypeError, "rtol must be a real number"),
    (True, TypeError, "rtol must be a real number"),
], ids=["negative", "inf", "nan", "str", "bool"])
def test_numerical_rank_validates_rtol(rtol, error, message):
    with pytest.raises(error, match=message):
        la.numerical_rank(np.eye(3), rtol=rtol)


@pytest.mark.parametrize("bad,error,message", [
    (np.ones(5), ValueError, "a must have shape \\[..., rows, cols\\]"),
    (np.ones((0, 3)), ValueError, "a must have shape"),
    (np.full((2, 2), np.nan), ValueError, "a must be finite"),
    (np.eye(3, dtype=int), TypeError, "a must have dtype"),
], ids=["1-d", "empty", "nan", "int"])
def test_rank_and_spectrum_refuse_bad_matrices(bad, error, message):
    for fn in (la.singular_values, la.numerical_rank):
        with pytest.raises(error, match=message):
            fn(bad)


# ---------------------------------------------------------------- sharpness

def test_entropy_and_peak_of_one_hot_and_uniform_rows():
    n = 13
    one_hot = np.eye(n)[[4, 0, 12]]
    np.testing.assert_array_equal(la.row_entropy(one_hot), 0.0)
    np.testing.assert_array_equal(la.peak_weight(one_hot), 1.0)
    uniform = np.full((3, 2, n), 1.0 / n)
    assert la.row_entropy(uniform).shape == (3, 2)
    np.testing.assert_allclose(la.row_entropy(uniform), np.log(n), rtol=1e-14)
    np.testing.assert_allclose(la.peak_weight(uniform), 1.0 / n, rtol=1e-14)
    half = np.array([[0.5, 0.5, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(la.row_entropy(half), [np.log(2)], rtol=1e-14)


def test_softmax_gets_sharper_as_temperature_drops(rng):
    """Scaling q by c is inverse temperature c. Per row, dH/dc = -c·Var(logits) <= 0 and
    the largest weight grows: entropy falls and peak weight rises, strictly for generic rows."""
    n, d = 63, 8
    q, k = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    scales = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
    entropy = np.array([la.row_entropy(la.softmax_attention_weights(c * q, k)) for c in scales])
    peak = np.array([la.peak_weight(la.softmax_attention_weights(c * q, k)) for c in scales])
    assert (np.diff(entropy, axis=0) < 0).all()
    assert (np.diff(peak, axis=0) > 0).all()
    assert entropy[0].min() > 0.9 * np.log(n) and peak[-1].mean() > 0.5
    # elu+1 linear attention on the sharpest q stays far flatter than softmax does
    linear = la.effective_attention_matrix(8.0 * q, k)
    assert la.row_entropy(linear).mean() > 2 * entropy[-1].mean()
    assert la.peak_weight(linear).mean() < 0.5 * peak[-1].mean()


@pytest.mark.parametrize("fn", [la.row_entropy, la.peak_weight], ids=["entropy", "peak"])
def test_sharpness_refuses_rows_that_are_not_distributions(fn):
    with pytest.raises(ValueError, match="weights rows must sum to 1"):
        fn(np.full((3, 5), 0.3))
    with pytest.raises(ValueError, match="weights must be non-negative"):
        fn(np.array([[1.5, -0.5, 0.0]]))
    with pytest.raises(ValueError, match="weights must have shape"):
        fn(np.array([0.5, 0.5]))
    with pytest.raises(TypeError, match="weights must have dtype"):
        fn(np.eye(3, dtype=np.int32))


# ---------------------------------------------------------------- denominator drift

@pytest.mark.parametrize("name", ["elu+1", "identity", "favor"])
def test_denominator_drift_matches_a_hand_loop(rng, name):
    n, d = 31, 5
    phi = la.FavorPlus(d, 7, seed=1) if name == "favor" else {"elu+1": la.elu_plus_one,
                                                                "identity": la.identity_feature_map}[name]
    q, k = rng.standard_normal((2, 3, n, d)), rng.standard_normal((2, 3, n, d))
    drift = la.denominator_drift(q, k, feature_map=phi if name == "favor" else name)
    assert drift.shape == (2, 3, n)
    expected = np.zeros((2, 3, n))
    for b in range(2):
        for h in range(3):
            z = np.zeros(phi(k[b, h]).shape[-1])
            for i in range(n):
                z += phi(k[b, h, i])  # z_i = Σ_{j<=i} φ(k_j), with the plain (unrescaled) map
                expected[b, h, i] = phi(q[b, h, i]) @ z
    assert_close(drift, expected, what="φ(q_i)·z_i")


def test_elu_denominator_grows_with_position(rng):
    n, d = 101, 7
    q, k = rng.standard_normal((8, n, d)), rng.standard_normal((8, n, d))
    drift = la.denominator_drift(q, k)
    assert (drift > 0).all()
    quarter = n // 4
    assert (drift[:, -quarter:].mean(-1) > 4 * drift[:, :quarter].mean(-1)).all()
    assert drift[:, -1].mean() > 20 * drift[:, 0].mean()
    assert np.corrcoef(np.arange(n), drift.mean(0))[0, 1] > 0.9  # roughly linear in i


def test_identity_map_denominator_can_be_negative(rng):
    q, k = rng.standard_normal((2, 63, 5))
    drift = la.denominator_drift(q, k, feature_map="identity")
    assert (drift < 0).any() and (drift > 0).any()
    i = int(np.argmin(drift))
    assert q[i] @ k[: i + 1].sum(0) < 0  # the same sign, by hand


def test_denominator_drift_refuses_bad_input(rng):
    q, k = rng.standard_normal((2, 9, 5))
    with pytest.raises(ValueError, match="causal attention needs q and k of the same length"):
        la.denominator_drift(q, k[:7])
    with pytest.raises(ValueError, match="feature_map must be one of"):
        la.denominator_drift(q, k, feature_map="softmax")
    with pytest.raises(ValueError, match="q must be finite"):
        la.denominator_drift(np.full((9, 5), np.nan), k)


# ---------------------------------------------------------------- cost accounting

def test_attention_cost_reproduces_the_seed_numbers():
    cost = la.attention_cost(100_000, 128)
    assert cost.softmax_matrix_entries == 10**10
    assert cost.linear_state_entries == 16_384
    assert cost.memory_ratio == 10**10 / 16_384
    assert (cost.d_v, cost.m) == (128, 128)


def test_attention_cost_formulas_for_a_small_odd_case():
    n, d, d_v, m = 7, 3, 5, 11
    cost = la.attention_cost(n, d, d_v=d_v, m=m)
    assert cost.softmax_matrix_entries == 49
    assert cost.linear_state_entries == 55
    assert cost.kv_cache_entries == 56  # 7 tokens × (3 + 5)
    assert cost.softmax_macs == 49 * 3 + 49 * 5 == 392  # QKᵀ then AV
    assert cost.linear_macs == 7 * 11 * 5 + 7 * 11 * 5 == 770  # φ(K)ᵀV then φ(Q)S
    assert cost.compute_ratio == 392 / 770
    assert cost.memory_ratio == 49 / 55
    with pytest.raises(dataclasses.FrozenInstanceError):
        cost.n = 9


@pytest.mark.parametrize("n,d,d_v,m", [(7, 3, 5, 11), (4097, 33, 65, 17), (1001, 64, 64, 64)])
def test_attention_cost_work_ratio_is_n_d_plus_dv_over_2_m_dv(n, d, d_v, m):
    cost = la.attention_cost(n, d, d_v=d_v, m=m)
    assert cost.compute_ratio == pytest.approx(n**2 * (d + d_v) / (2 * n * m * d_v), rel=1e-12)
    if d == d_v == m:
        assert cost.compute_ratio == pytest.approx(n / d, rel=1e-12)
    else:  # the ratio is N/d only when the widths agree
        assert cost.compute_ratio != pytest.approx(n / d, rel=1e-3)


def test_attention_cost_scales_quadratically_vs_linearly():
    small, large = la.attention_cost(1001, 64), la.attention_cost(3003, 64)
    assert large.softmax_macs == 9 * small.softmax_macs
    assert large.linear_macs == 3 * small.linear_macs
    assert large.linear_state_entries == small.linear_state_entries
    assert large.compute_ratio == 3 * small.compute_ratio


@pytest.mark.parametrize("kwargs,error,message", [
    ({"n": 0, "d": 4}, ValueError, "n must be a positive int"),
    ({"n": 9, "d": -1}, ValueError, "d must be a positive int"),
    ({"n": 9, "d": 1.5}, TypeError, "d must be a positive int"),
    ({"n": 9.0, "d": 4}, TypeError, "n must be a positive int"),
    ({"n": True, "d": 4}, TypeError, "n must be a positive int"),
    ({"n": 9, "d": 4, "d_v": 0}, ValueError, "d_v must be a positive int"),
    ({"n": 9, "d": 4, "m": "8"}, TypeError, "m must be a positive int"),
], ids=["n0", "d-neg", "d-float", "n-float", "n-bool", "dv0", "m-str"])
def test_attention_cost_refuses_bad_input(kwargs, error, message):
    with pytest.raises(error, match=message):
        la.attention_cost(**kwargs)


def test_effective_matrix_refuses_a_zero_row_without_eps():
    q, k = -np.ones((2, 4)), np.ones((2, 4))  # relu features of q are all zero
    with pytest.raises(ValueError, match="sums to 0 and eps=0"):
        la.effective_attention_matrix(q, k, feature_map="relu", eps=0.0)
    assert (la.effective_attention_matrix(q, k, feature_map="relu") == 0).all()
