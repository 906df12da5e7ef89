"""Feature maps: known values, positivity, FAVOR+ statistics and stabilisation, bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

import lattn_edu as la
from lattn_edu.feature_maps import apply_feature_maps, resolve_feature_map
from conftest import assert_close
from lattn_edu.linear import FORMS

PLAIN_MAPS = {"elu+1": la.elu_plus_one, "relu": la.relu_feature_map, "identity": la.identity_feature_map}

# Two fixed query/key pairs with small norms (|q·k| < 1), so exp(q·k) is O(1) and the
# random-feature estimators have modest variance. "aligned" points q and k along the
# all-ones diagonal, a direction where any sign bias of the projections would show.
PAIRS = {
    "random": (np.array([-0.17, 0.12, 0.08, 0.48]), np.array([-0.25, -0.49, -0.12, 0.03])),
    "aligned": (np.full(4, 0.3), np.array([0.35, 0.25, 0.3, 0.2])),
}
# q and k pointing apart: exp(q·k) = exp(-0.29) is small relative to the norms.
APART = (np.array([0.6, 0.3, -0.2, 0.1]), np.array([-0.5, -0.2, -0.3, 0.1]))


def kernel_estimates(cls, q, k, m, orthogonal, seeds):
    """φ(q)·φ(k) for one independent projection per seed: [len(seeds)] (q, k may be [P, d] -> [S, P])."""
    q2, k2 = np.atleast_2d(q), np.atleast_2d(k)
    out = []
    for seed in seeds:
        phi = cls(q2.shape[-1], m, orthogonal=orthogonal, seed=seed)
        out.append(np.sum(phi(q2) * phi(k2), axis=-1))
    out = np.array(out)
    return out[:, 0] if np.ndim(q) == 1 else out


def quadratic_reference(phi_q, phi_k, v, causal=False, eps=1e-6):
    """o = (W v) / (W 1 + eps) with W = φ(Q)φ(K)ᵀ, built by hand from given features."""
    weights = phi_q @ phi_k.swapaxes(-1, -2)
    if causal:
        weights = np.tril(weights)
    return (weights @ v) / (weights.sum(-1, keepdims=True) + eps)


def log_space_reference(fp, q, k, v, causal=False):
    """The same normalised FAVOR+ attention with eps = 0, computed entirely in log space.

    log W_ij = logsumexp_r(log φ(q_i)_r + log φ(k_j)_r): exact for any norm, no under/overflow.
    """
    log_terms = fp.log_features(q)[..., :, None, :] + fp.log_features(k)[..., None, :, :]  # [..., N_q, N, m]
    top = log_terms.max(-1, keepdims=True)
    log_w = (top + np.log(np.exp(log_terms - top).sum(-1, keepdims=True)))[..., 0]  # [..., N_q, N]
    if causal:
        log_w = np.where(np.tri(*log_w.shape[-2:], dtype=bool), log_w, -np.inf)
    weights = np.exp(log_w - log_w.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)) @ v


def unit_rows(rng, n, d):
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


# ---------------------------------------------------------------- deterministic maps

def test_elu_plus_one_known_values():
    x = np.array([-3.0, -0.5, 0.0, 1e-300, 0.25, 2.0])
    expected = np.array([np.exp(-3.0), np.exp(-0.5), 1.0, 1.0 + 1e-300, 1.25, 3.0])
    np.testing.assert_array_equal(la.elu_plus_one(x), expected)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_elu_plus_one_is_strictly_positive_where_exp_is_representable(dtype, rng):
    low = np.log(np.finfo(dtype).tiny)  # below this exp(x) leaves the normal range
    x = np.concatenate([rng.uniform(low, 50, 999), [low, 0.0, -1e-12]]).astype(dtype)
    assert (la.elu_plus_one(x) > 0).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_elu_plus_one_has_no_overflow_warning_at_huge_inputs(dtype):
    x = np.array([1e4, -1e4, 0.0], dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = la.elu_plus_one(x)
    assert out.dtype == dtype
    assert np.isfinite(out).all()
    assert out[0] == dtype(1e4) + 1 and out[1] >= 0 and out[2] == 1


@pytest.mark.parametrize("name", PLAIN_MAPS)
def test_plain_maps_keep_float32(name, rng):
    x = rng.standard_normal((3, 11, 5)).astype(np.float32)
    out = PLAIN_MAPS[name](x)
    assert out.dtype == np.float32 and out.shape == x.shape


def test_relu_and_identity_known_values():
    x = np.array([[-2.0, -0.0, 0.0, 0.5, 3.0]])
    np.testing.assert_array_equal(la.relu_feature_map(x), [[0.0, 0.0, 0.0, 0.5, 3.0]])
    np.testing.assert_array_equal(la.identity_feature_map(x), x)


@pytest.mark.parametrize("name", PLAIN_MAPS)
def test_plain_maps_refuse_integer_input(name):
    with pytest.raises(TypeError, match="x must have dtype float32 or float64"):
        PLAIN_MAPS[name](np.arange(5))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", PLAIN_MAPS)
def test_plain_maps_on_torch_tensors_match_numpy(name, dtype, rng):
    torch = pytest.importorskip("torch")
    x = (3 * rng.standard_normal((2, 7, 5))).astype(dtype)
    out = PLAIN_MAPS[name](torch.from_numpy(x))
    assert isinstance(out, torch.Tensor) and str(out.dtype) == f"torch.{dtype}"
    assert_close(out, PLAIN_MAPS[name](x), what=f"{name} torch vs numpy")


def test_random_feature_maps_on_torch_tensors_match_numpy(rng):
    torch = pytest.importorskip("torch")
    x = 0.5 * rng.standard_normal((2, 9, 5))
    fp, trig = la.FavorPlus(5, 13, seed=4), la.TrigonometricFeatures(5, 14, seed=4)
    rescaled = [lambda x, i=i: fp.rescaled_features(x, x)[i] for i in range(3)]
    for fn in (fp, trig, *rescaled):
        assert_close(fn(torch.from_numpy(x)), fn(x), what=repr(fn))


@given(arrays(np.float64, array_shapes(min_dims=1, max_dims=3, max_side=7),
              elements=st.floats(-700, 700)))
def test_elu_plus_one_property_float64(x):
    out = la.elu_plus_one(x)
    assert (out > 0).all()
    np.testing.assert_array_equal(out, np.where(x > 0, x + 1, np.exp(x)))


@given(arrays(np.float32, array_shapes(min_dims=1, max_dims=3, max_side=7),
              elements=st.floats(-80, 80, width=32)))
def test_elu_plus_one_property_float32(x):
    out = la.elu_plus_one(x)
    assert out.dtype == np.float32 and (out > 0).all()
    np.testing.assert_array_equal(out, np.where(x > 0, x + 1, np.exp(x)))


def test_exp_kernel_equals_exp_of_dot_products(rng):
    q, k = rng.standard_normal((2, 9, 5)), rng.standard_normal((2, 13, 5))
    out = la.exp_kernel(q, k)
    assert out.shape == (2, 9, 13)
    assert_close(out, np.exp(q @ k.swapaxes(-1, -2)), what="exp_kernel")
    assert_close(la.exp_kernel(q[0], k[0]), np.exp(q[0] @ k[0].T), what="exp_kernel 2-d")
    with pytest.raises(ValueError, match="k must have the same d as q"):
        la.exp_kernel(q, k[..., :4])


# ---------------------------------------------------------------- FAVOR+: basics

@pytest.mark.parametrize("orthogonal", [False, True], ids=["iid", "orthogonal"])
@pytest.mark.parametrize("lead", [(), (3,), (2, 3)], ids=["no-lead", "B", "BH"])
def test_favor_plus_shape_and_positivity(lead, orthogonal, rng):
    fp = la.FavorPlus(5, 13, orthogonal=orthogonal, seed=1)
    x = rng.standard_normal(lead + (31, 5))
    out = fp(x)
    assert out.shape == lead + (31, 13)
    assert (out > 0).all()
    assert_close(fp.log_features(x), np.log(out), what="log_features")


def test_favor_plus_features_match_the_formula(rng):
    fp = la.FavorPlus(5, 13, seed=2)
    x = rng.standard_normal((7, 5))
    w = fp.projection  # [m, d]
    expected = np.exp(x @ w.T - 0.5 * (x * x).sum(-1, keepdims=True)) / np.sqrt(13)
    assert_close(fp(x), expected, what="φ(x)_r = exp(w_r·x - |x|²/2)/√m")


@pytest.mark.parametrize("cls", [la.FavorPlus, la.TrigonometricFeatures], ids=["favor", "trig"])
def test_random_features_keep_float32(cls, rng):
    phi = cls(5, 14, seed=3)
    x = (0.5 * rng.standard_normal((2, 31, 5))).astype(np.float32)
    out = phi(x)
    assert out.dtype == np.float32
    assert_close(out, phi(x.astype(np.float64)), what=f"{cls.__name__} float32 vs float64")
    if cls is la.FavorPlus:
        assert all(part.dtype == np.float32 for part in phi.rescaled_features(x, x))


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_linear_attention_with_favor_plus_in_float32(causal, rng):
    q, k, v = 0.5 * rng.standard_normal((3, 2, 63, 5))
    fp = la.FavorPlus(5, 13, seed=3)
    out = la.linear_attention(*(a.astype(np.float32) for a in (q, k, v)), feature_map=fp, causal=causal)
    assert out.dtype == np.float32
    assert_close(out, la.linear_attention(q, k, v, feature_map=fp, causal=causal), what="f32 vs f64")


@pytest.mark.parametrize("cls", [la.FavorPlus, la.TrigonometricFeatures], ids=["favor", "trig"])
def test_seed_fixes_the_features(cls, rng):
    x = rng.standard_normal((11, 5))
    np.testing.assert_array_equal(cls(5, 14, seed=7)(x), cls(5, 14, seed=7)(x))
    assert not np.allclose(cls(5, 14, seed=7)(x), cls(5, 14, seed=8)(x))


def test_orthogonal_projection_rows_are_orthogonal_within_blocks():
    d, m = 5, 13  # blocks of 5, 5 and 3 rows
    w = la.FavorPlus(d, m, orthogonal=True, seed=3).projection
    assert w.shape == (m, d)
    unit = w / np.linalg.norm(w, axis=1, keepdims=True)
    for start in range(0, m, d):
        block = unit[start:start + d]
        np.testing.assert_allclose(block @ block.T, np.eye(len(block)), atol=1e-12)
    # across blocks (and for iid rows) the directions are not orthogonal
    assert np.abs(unit[:d] @ unit[d:2 * d].T).max() > 0.1
    iid = la.FavorPlus(d, m, orthogonal=False, seed=3).projection
    iid_unit = iid / np.linalg.norm(iid, axis=1, keepdims=True)
    assert np.abs(iid_unit[:d] @ iid_unit[:d].T - np.eye(d)).max() > 0.1


@pytest.mark.parametrize("orthogonal", [False, True], ids=["iid", "orthogonal"])
def test_projection_row_norms_follow_the_gaussian(orthogonal):
    """E|w_r|² = d for w_r ~ N(0, I_d): orthogonal rows keep the chi_d norms of Gaussian rows."""
    d, m = 5, 15
    sq = np.concatenate([np.sum(la.FavorPlus(d, m, orthogonal=orthogonal, seed=s).projection ** 2, 1)
                         for s in range(200)])  # 3000 samples, variance 2d
    assert abs(sq.mean() - d) < 4 * sq.std(ddof=1) / np.sqrt(sq.size)


# ---------------------------------------------------------------- FAVOR+ / trig statistics

@pytest.mark.parametrize("pair", PAIRS, ids=PAIRS.keys())
@pytest.mark.parametrize("cls,orthogonal", [(la.FavorPlus, False), (la.TrigonometricFeatures, False),
                                            (la.TrigonometricFeatures, True)],
                         ids=["favor-iid", "trig-iid", "trig-orthogonal"])
def test_random_features_are_unbiased(cls, orthogonal, pair):
    q, k = PAIRS[pair]
    vals = kernel_estimates(cls, q, k, m=16, orthogonal=orthogonal, seeds=range(2000))
    se = vals.std(ddof=1) / np.sqrt(vals.size)
    assert abs(vals.mean() - np.exp(q @ k)) <= 4 * se + 1e-12, (vals.mean(), np.exp(q @ k), se)


def test_favor_plus_mse_falls_as_one_over_m():
    q, k = PAIRS["random"]
    ms = np.array([8, 32, 128, 512])
    mse = [np.mean((kernel_estimates(la.FavorPlus, q, k, m, False, range(300)) - np.exp(q @ k)) ** 2)
           for m in ms]
    slope = np.polyfit(np.log(ms), np.log(mse), 1)[0]
    assert -1.3 <= slope <= -0.7, (slope, mse)


def test_orthogonal_features_are_no_worse_than_iid(rng):
    d, m = 8, 16
    q, k = 0.3 * rng.standard_normal((9, d)), 0.3 * rng.standard_normal((9, d))
    exact = np.exp(np.sum(q * k, -1))
    mse = {orth: np.mean((kernel_estimates(la.FavorPlus, q, k, m, orth, range(1500)) - exact) ** 2)
           for orth in (False, True)}
    assert mse[True] <= 1.05 * mse[False], mse


def test_trigonometric_weights_can_be_negative_favor_never():
    q, k = APART
    trig = kernel_estimates(la.TrigonometricFeatures, q, k, 4, False, range(200))
    favor = kernel_estimates(la.FavorPlus, q, k, 4, False, range(200))
    negative = np.flatnonzero(trig < 0)
    assert negative.size > 0, "no seed gave a negative trigonometric weight"
    seed = int(negative[0])
    phi = la.TrigonometricFeatures(4, 4, orthogonal=False, seed=seed)
    assert phi(q[None])[0] @ phi(k[None])[0] < 0  # a negative "attention weight"
    assert (favor > 0).all()


def test_trigonometric_mse_exceeds_favor_where_the_kernel_is_small():
    """Performer's argument: where exp(q·k) is small (q, k apart), positive features win."""
    q, k = APART
    exact = np.exp(q @ k)
    assert exact < 1
    mse = {cls.__name__: np.mean((kernel_estimates(cls, q, k, 16, False, range(2000)) - exact) ** 2)
           for cls in (la.FavorPlus, la.TrigonometricFeatures)}
    assert mse["TrigonometricFeatures"] > 3 * mse["FavorPlus"], mse


@pytest.mark.parametrize("orthogonal", [False, True], ids=["iid", "orthogonal"])
def test_favor_plus_approximates_softmax_attention(orthogonal, rng):
    """FAVOR+ on q, k scaled by d**-0.25 estimates softmax(q·k/√d) attention.

    Tolerance, derived: with relative weight errors ε_ij (Var ε_ij = r_ij² =
    (exp(|q_i + k_j|²) - 1)/m for iid features; orthogonal features have lower variance),
    to first order δo_i = Σ_j A_ij ε_ij (v_j - o_i). Cauchy–Schwarz gives
    E|δo_i|² <= Σ_j A_ij r_ij² · Σ_j A_ij |v_j - o_i|², so the RMS error over rows is at
    most `predicted`; we allow 3× that, and check this is tighter than the error of the
    trivial approximation (the uniform average of v), so the test has teeth.
    """
    d, n, d_v, m = 8, 31, 3, 2**16
    q, k = 0.5 * rng.standard_normal((n, d)), 0.5 * rng.standard_normal((n, d))
    v = rng.standard_normal((n, d_v))
    qs, ks = q * d**-0.25, k * d**-0.25
    weights = la.softmax_attention_weights(q, k)  # scale 1/√d
    soft = weights @ v
    r2 = (np.exp(((qs[:, None, :] + ks[None, :, :]) ** 2).sum(-1)) - 1) / m  # [N, N]
    spread = np.einsum("ij,ijc->i", weights, (v[None, :, :] - soft[:, None, :]) ** 2)
    tolerance = 3 * np.sqrt(np.mean((weights * r2).sum(-1) * spread))

    def rms(a):
        return np.sqrt(np.mean(np.sum((a - soft) ** 2, -1)))

    assert rms(np.broadcast_to(v.mean(0), soft.shape)) > 1.4 * tolerance  # uniform average fails
    fp = la.FavorPlus(d, m, orthogonal=orthogonal, seed=5)
    out = la.linear_attention(qs, ks, v, feature_map=fp)
    assert rms(out) < tolerance, (rms(out), tolerance)


@pytest.mark.parametrize("orthogonal", [False, True], ids=["iid", "orthogonal"])
def test_favor_plus_attention_error_falls_as_one_over_sqrt_m(rng, orthogonal):
    """Chapter 6's dial: the RMS error against softmax attention shrinks like m**-0.5.

    The error is averaged (in mean square) over 4 seeds at each m; a bias in the
    estimator would show as a floor, flattening the log-log slope towards 0.
    """
    d, n = 8, 31
    q, k, v = 0.5 * rng.standard_normal((n, d)), 0.5 * rng.standard_normal((n, d)), rng.standard_normal((n, 3))
    soft = la.softmax_attention(q, k, v)
    ms = np.array([2**6, 2**9, 2**12, 2**15])
    errors = []
    for m in ms:
        outs = [la.linear_attention(q * d**-0.25, k * d**-0.25, v,
                                    feature_map=la.FavorPlus(d, int(m), orthogonal=orthogonal, seed=s))
                for s in range(4)]
        errors.append(np.sqrt(np.mean([np.mean(np.sum((o - soft) ** 2, -1)) for o in outs])))
    slope = np.polyfit(np.log(ms), np.log(errors), 1)[0]
    assert -0.65 <= slope <= -0.35, (slope, errors)


# ---------------------------------------------------------------- FAVOR+ stabilisation

def test_rescaled_features_differ_only_by_the_reported_factors(rng):
    fp = la.FavorPlus(5, 13, seed=6)
    q, k = rng.standard_normal((2, 3, 31, 5)), rng.standard_normal((2, 3, 31, 5))
    phi_q, phi_k, log_scale = fp.rescaled_features(q, k)
    ratio_q = phi_q / fp(q)  # one factor per query row
    assert_close(ratio_q, np.broadcast_to(ratio_q[..., :1], ratio_q.shape), what="query factor")
    ratio_k = phi_k / fp(k)  # one factor per sequence
    assert_close(ratio_k, np.broadcast_to(ratio_k[..., :1, :1], ratio_k.shape), what="key factor")
    np.testing.assert_allclose(phi_q.max(-1), 1.0, rtol=1e-15)
    np.testing.assert_allclose(phi_k.max((-2, -1)), 1.0, rtol=1e-15)
    # log_scale = log(c_q c_k): the true weights are the rescaled ones times exp(log_scale)
    assert log_scale.shape == (2, 3, 31, 1)
    assert_close(np.exp(log_scale) * (phi_q @ phi_k.swapaxes(-1, -2)), fp(q) @ fp(k).swapaxes(-1, -2))


@pytest.mark.parametrize("form", ["quadratic", "parallel", "recurrent", "chunkwise"])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_stabilised_favor_attention_equals_plain_features(causal, form, rng):
    """With eps = 0 the rescaled query/key features give exactly the plain-φ attention."""
    d, n = 5, 63
    fp = la.FavorPlus(d, 13, seed=7)
    q, k, v = (rng.standard_normal((2, n, d)) * d**-0.25, rng.standard_normal((2, n, d)) * d**-0.25,
               rng.standard_normal((2, n, 3)))
    out = la.linear_attention(q, k, v, feature_map=fp, causal=causal, form=form, eps=0.0, chunk_size=16)
    assert_close(out, quadratic_reference(fp(q), fp(k), v, causal, eps=0.0), what=form)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_stabilisation_keeps_large_norm_inputs_finite_and_exact(causal, rng):
    d, n, norm = 4, 257, 30.0
    fp = la.FavorPlus(d, 16, seed=3)
    q, k, v = norm * unit_rows(rng, n, d), norm * unit_rows(rng, n, d), rng.standard_normal((n, 3))
    # The plain features underflow: the weights φ(q_i)·φ(k_j) of most rows are exactly 0,
    # so the plain normalised output would be 0/0 (with eps: 0 instead of a weighted average).
    plain_weights = fp(q) @ fp(k).T
    if causal:
        plain_weights = np.tril(plain_weights)
    assert (plain_weights.sum(-1) == 0).mean() > 0.5
    naive = quadratic_reference(fp(q), fp(k), v, causal)
    expected = log_space_reference(fp, q, k, v, causal)
    assert np.linalg.norm(naive - expected) > 0.5 * np.linalg.norm(expected)
    # The stabilised path is finite and, with eps = 0, equals the log-space reference.
    out = la.linear_attention(q, k, v, feature_map=fp, causal=causal, eps=0.0)
    assert np.isfinite(out).all()
    assert_close(out, expected, rtol=1e-9, what="stabilised FAVOR+ at norm 30")
    assert np.isfinite(la.linear_attention(q, k, v, feature_map=fp, causal=causal)).all()


# ---------------------------------------------------------------- bad input

def test_unknown_feature_map_name_lists_the_names():
    with pytest.raises(ValueError, match="feature_map must be one of 'elu\\+1', 'relu', 'identity'"):
        resolve_feature_map("softmax")
    x = np.ones((3, 4))
    with pytest.raises(ValueError, match="'elu\\+1', 'relu', 'identity'.*got 'elu'"):
        la.linear_attention(x, x, x, feature_map="elu")


@pytest.mark.parametrize("bad", [42, None, np.ones(3)], ids=["int", "None", "array"])
def test_non_callable_feature_map_is_a_type_error(bad):
    with pytest.raises(TypeError, match="feature_map must be a name"):
        resolve_feature_map(bad)


@pytest.mark.parametrize("callable_", [lambda x: x[..., 0], lambda x: x[..., :-1, :], lambda x: x.tolist(),
                                       lambda x: x[None]],
                         ids=["drops-axis", "drops-token", "list", "adds-axis"])
def test_feature_map_with_wrong_shape_is_named(callable_, rng):
    q, k, v = rng.standard_normal((3, 9, 5))
    with pytest.raises(ValueError, match="feature_map must map q of shape \\(9, 5\\)"):
        la.linear_attention(q, k, v, feature_map=callable_)


def test_feature_map_with_wrong_dtype_is_a_type_error(rng):
    q, k, v = rng.standard_normal((3, 9, 5))
    with pytest.raises(TypeError, match="feature_map must return the same array type and dtype"):
        la.linear_attention(q, k, v, feature_map=lambda x: x.astype(np.float32))


def test_feature_map_returning_nan_is_refused(rng):
    q, k, v = rng.standard_normal((3, 9, 5))
    with pytest.raises(ValueError, match="feature_map\\(q\\) must be finite"):
        la.linear_attention(q, k, v, feature_map=lambda x: np.where(x > 1, np.nan, x))


def test_feature_map_giving_q_and_k_different_widths_is_refused(rng):
    class Mismatched:
        def __call__(self, x):
            return x

        def log_features(self, x):  # width 3 for the 9 queries, 2 for the 7 keys
            return x[..., :3] if x.shape[-2] == 9 else x[..., :2]

    q, k = rng.standard_normal((9, 5)), rng.standard_normal((7, 5))
    with pytest.raises(ValueError, match="feature_map.log_features must give q and k the same width m; "
                                         "got 3 and 2"):
        apply_feature_maps(Mismatched(), q, k)
    with pytest.raises(ValueError, match="same width m"):
        la.linear_attention(q, k, k, feature_map=Mismatched())


@pytest.mark.parametrize("cls", [la.FavorPlus, la.TrigonometricFeatures], ids=["favor", "trig"])
@pytest.mark.parametrize("kwargs,error,message", [
    ({"d": 0, "m": 4}, ValueError, "d must be a positive int"),
    ({"d": -3, "m": 4}, ValueError, "d must be a positive int"),
    ({"d": 2.0, "m": 4}, TypeError, "d must be a positive int"),
    ({"d": True, "m": 4}, TypeError, "d must be a positive int"),
    ({"d": 4, "m": 0}, ValueError, "m must be a positive int"),
    ({"d": 4, "m": -2}, ValueError, "m must be a positive int"),
    ({"d": 4, "m": 4.0}, TypeError, "m must be a positive int"),
    ({"d": 4, "m": "8"}, TypeError, "m must be a positive int"),
    ({"d": 4, "m": 4, "orthogonal": 1}, TypeError, "orthogonal must be True or False"),
    ({"d": 4, "m": 4, "orthogonal": "yes"}, TypeError, "orthogonal must be True or False"),
], ids=["d0", "d-neg", "d-float", "d-bool", "m0", "m-neg", "m-float", "m-str", "orth-int", "orth-str"])
def test_random_feature_constructor_validation(cls, kwargs, error, message):
    with pytest.raises(error, match=message):
        cls(**kwargs)


@pytest.mark.parametrize("m", [7, 1], ids=["m7", "m1"])
def test_trigonometric_features_need_even_m(m):
    with pytest.raises(ValueError, match=f"m must be even .*got {m}"):
        la.TrigonometricFeatures(4, m)
    assert la.TrigonometricFeatures(4, m + 1)(np.zeros((3, 4))).shape == (3, m + 1)


@pytest.mark.parametrize("cls", [la.FavorPlus, la.TrigonometricFeatures], ids=["favor", "trig"])
def test_random_features_refuse_input_of_the_wrong_width(cls, rng):
    phi = cls(5, 6)
    with pytest.raises(ValueError, match="x must have shape \\[..., 5\\] \\(d=5\\); got \\(9, 4\\)"):
        phi(rng.standard_normal((9, 4)))
    with pytest.raises(ValueError, match="x must be finite"):
        phi(np.full((9, 5), np.inf))
    with pytest.raises(TypeError, match="x must have dtype"):
        phi(np.ones((9, 5), dtype=np.int64))


def test_favor_plus_through_linear_attention_refuses_wrong_width(rng):
    q, k, v = rng.standard_normal((3, 9, 5))
    with pytest.raises(ValueError, match="x must have shape \\[..., 4\\]"):
        la.linear_attention(q, k, v, feature_map=la.FavorPlus(4, 8))


# ---------------------------------------------------------------- orthogonal features stay unbiased

def test_orthogonal_projection_rows_are_sign_symmetric():
    """Each orthogonal row must keep the N(0, I_d) marginal, in particular P(w_r0 > 0) = 1/2."""
    d, seeds = 4, range(400)
    w = np.array([la.FavorPlus(d, d, orthogonal=True, seed=s).projection for s in seeds])  # [S, d, d]
    positive = (w > 0).mean(0)  # [d, d] fraction of seeds with a positive entry
    se = np.sqrt(0.25 / len(seeds))
    assert (np.abs(positive - 0.5) < 4 * se).all(), positive


@pytest.mark.parametrize("pair", PAIRS, ids=PAIRS.keys())
def test_orthogonal_favor_plus_is_unbiased(pair):
    q, k = PAIRS[pair]
    vals = kernel_estimates(la.FavorPlus, q, k, m=16, orthogonal=True, seeds=range(2000))
    se = vals.std(ddof=1) / np.sqrt(vals.size)
    assert abs(vals.mean() - np.exp(q @ k)) <= 4 * se + 1e-12, (vals.mean(), np.exp(q @ k), se)


def test_orthogonal_favor_plus_mse_falls_as_one_over_m():
    q, k = PAIRS["random"]
    ms = np.array([8, 32, 128, 512])
    mse = [np.mean((kernel_estimates(la.FavorPlus, q, k, m, True, range(300)) - np.exp(q @ k)) ** 2)
           for m in ms]
    slope = np.polyfit(np.log(ms), np.log(mse), 1)[0]
    assert -1.3 <= slope <= -0.7, (slope, mse)


# ---------------------------------------------------------------- rescaling is exact and causal

def test_causal_favor_plus_output_does_not_depend_on_future_keys(rng):
    """Exactly causal, also with eps > 0: the guard is measured against the largest key feature
    query i can see, never against a later key."""
    d, n = 16, 101
    fp = la.FavorPlus(d, 63, seed=3)
    q, k, v = rng.standard_normal((n, d)) * d**-0.25, rng.standard_normal((n, d)) * d**-0.25, rng.standard_normal((n, 5))
    k_edited = k.copy()
    w = fp.projection[np.argmax(np.linalg.norm(fp.projection, axis=1))]
    # edit the last key only: point it along a projection row, no longer than the longest key
    k_edited[-1] = w / np.linalg.norm(w) * np.linalg.norm(k, axis=1).max()
    for eps in (0.0, 1e-6, 1e-2):
        before = la.linear_attention(q, k, v, feature_map=fp, causal=True, eps=eps)
        after = la.linear_attention(q, k_edited, v, feature_map=fp, causal=True, eps=eps)
        assert_close(after[:-1], before[:-1], what=f"outputs at i < N-1 after editing key N-1, eps={eps}")


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("sigma", [1.0, 4.0])
def test_apply_feature_maps_gives_the_weights_linear_attention_applies(sigma, causal, rng):
    """The materialised weights (what effective_attention_matrix builds) with their guard give
    linear attention's output, default eps included: one convention for the guard."""
    d, n = 5, 63
    fp = la.FavorPlus(d, 13, seed=7)
    q, k = rng.standard_normal((2, 2, n, d)) * sigma * d**-0.25
    v = rng.standard_normal((2, n, 3))
    phi_q, phi_k, guard = apply_feature_maps(fp, q, k, eps=1e-6, causal=causal)
    out = la.linear_attention(q, k, v, feature_map=fp, causal=causal)
    assert_close(out, quadratic_reference(phi_q, phi_k, v, causal, eps=guard), what="FAVOR+ vs its weights")
    exact = la.linear_attention(q, k, v, feature_map=fp, causal=causal, eps=0.0)
    assert_close(exact, quadratic_reference(fp(q), fp(k), v, causal, eps=0.0), what="FAVOR+, eps = 0")


class ScaledFavorPlus(la.FavorPlus):
    """FAVOR+ with every feature multiplied by exp(log_factor): the same kernel up to a constant."""

    def __init__(self, *args, log_factor=0.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.log_factor = log_factor

    def log_features(self, x):
        return super().log_features(x) + self.log_factor


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("sigma", [1.0, 3.0, 4.0, 8.0])
def test_favor_plus_output_ignores_constant_factors_and_does_not_collapse(sigma, causal, rng):
    """At d = 64 and q, k ~ N(0, σ²) the true denominators fall far below eps = 1e-6. Adding eps
    to the unscaled denominator drove the output to 0 (mean |o| 1e-13 at σ = 4) and made it
    depend on any constant factor in φ. The guard now lives in the rescaled units."""
    d, n = 64, 97
    q, k = rng.standard_normal((2, n, d)) * sigma
    v = rng.standard_normal((n, 8))
    outputs = [la.linear_attention(q, k, v, causal=causal,
                                   feature_map=ScaledFavorPlus(d, 64, seed=0, log_factor=shift))
               for shift in (0.0, -40.0, 40.0)]
    for shifted in outputs[1:]:
        assert_close(shifted, outputs[0], what=f"features times a constant, sigma={sigma}")
    assert np.abs(outputs[0]).mean() > 0.01, f"output collapsed: mean |o| = {np.abs(outputs[0]).mean():.3g}"


# ---------------------------------------------------------------- FAVOR+ on every path (issue 26)

BACKENDS = [pytest.param(name, marks=pytest.mark.skipif(name not in la.available_backends(),
                                                        reason=f"{name} is not installed"))
            for name in ("numpy", "numba", "torch")]


def favor_inputs(rng, sigma, d=33, n=47, d_v=5):
    """q, k = σ·N(0, 1)·d^-1/4 (the inputs that make FAVOR+ estimate softmax, at scale σ), v ~ N(0, 1)."""
    q, k = rng.standard_normal((2, 2, n, d)) * sigma * d**-0.25  # [B, N, d] each
    return q, k, rng.standard_normal((2, n, d_v))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("sigma", [1.0, 3.0, 4.0, 8.0])
def test_favor_plus_gives_the_same_output_with_and_without_return_state(sigma, causal, backend, rng):
    """return_state used to switch to the plain features with eps on the unscaled denominator:
    at σ = 3 its mean |o| was 6e-5 where the call without state gave 0.64."""
    q, k, v = favor_inputs(rng, sigma)
    fp = la.FavorPlus(33, 65, seed=1)
    for form in FORMS:
        plain = la.linear_attention(q, k, v, feature_map=fp, causal=causal, form=form, backend=backend,
                                    chunk_size=8)
        with_state, _ = la.linear_attention(q, k, v, feature_map=fp, causal=causal, form=form,
                                            backend=backend, chunk_size=8, return_state=True)
        assert_close(with_state, plain, what=f"{form}: with vs without return_state, sigma={sigma}")
        assert_close(plain, log_space_reference(fp, q, k, v, causal), rtol=1e-5, what=f"{form} vs log space")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("sigma", [1.0, 3.0, 4.0, 8.0])
def test_default_eps_moves_favor_plus_output_less_than_a_thousandth(sigma, causal, backend, rng):
    """Each stabilised denominator is at least 1, so eps = 1e-6 cannot move the output; the
    guard used to change it by 9-21% at σ = 3 and 57-61% at σ = 4 (d = 64, m = 128)."""
    q, k, v = favor_inputs(rng, sigma, d=63)
    fp = la.FavorPlus(63, 127, seed=2)
    for return_state in (False, True):
        outputs = [la.linear_attention(q, k, v, feature_map=fp, causal=causal, backend=backend,
                                       eps=eps, return_state=return_state) for eps in (1e-6, 0.0)]
        if return_state:
            outputs = [out for out, _ in outputs]
        np.testing.assert_allclose(outputs[0], outputs[1], rtol=1e-3, atol=0,
                                   err_msg=f"eps = 1e-6 vs eps = 0, sigma={sigma}, return_state={return_state}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("case", ["times 30", "norm 60"])
def test_favor_plus_rescales_features_that_underflow_instead_of_raising(case, causal, backend, rng):
    """The issue's call, q * 30 and k * 30 with q, k, v ~ N(0, 1) [2, 3, 6, 4] and FavorPlus(4, 8),
    raised 'linear attention produced NaN or inf'; so would rows of norm 60. Key 0's features
    are e^-1000 of a later key's, so one constant for all keys loses it: the unit must follow
    the keys a query can see."""
    if case == "times 30":
        q, k, v = rng.standard_normal((3, 2, 3, 6, 4))
        q, k, fp = 30 * q, 30 * k, la.FavorPlus(4, 8)
    else:
        q, k = (60 * x / np.linalg.norm(x, axis=-1, keepdims=True) for x in rng.standard_normal((2, 3, 13, 5)))
        v, fp = rng.standard_normal((3, 13, 3)), la.FavorPlus(5, 9, seed=4)
    expected = log_space_reference(fp, q, k, v, causal)
    for form in FORMS:
        for eps, rtol in ((1e-6, 1e-5), (0.0, 1e-8)):
            out = la.linear_attention(q, k, v, feature_map=fp, causal=causal, form=form, backend=backend,
                                      chunk_size=4, eps=eps)
            assert_close(out, expected, rtol=rtol, what=f"{case}, {form}, eps={eps}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sigma", [1.0, 8.0])
def test_causal_favor_plus_with_and_without_the_unit_decay_agree(sigma, backend, rng, monkeypatch):
    """Where the running units grow little, the keys share the final unit and no decay is
    needed (the fast path); forcing the decay everywhere must give the same outputs and state."""
    q, k, v = favor_inputs(rng, sigma, d=9, n=41)
    fp = la.FavorPlus(9, 17, seed=6)
    _, prompt = la.linear_attention(q[:, :5], k[:, :5], v[:, :5], feature_map=fp, causal=True, return_state=True)
    results = {}
    for span in (None, 0.0):
        if span is not None:  # every growth of a unit becomes a decay of the state
            monkeypatch.setattr(la.random_features, "DECAY_FREE_SPAN", {"float32": span, "float64": span})
        for form in FORMS:
            results[span, form] = la.linear_attention(
                q[:, 5:], k[:, 5:], v[:, 5:], feature_map=fp, causal=True, form=form, backend=backend,
                chunk_size=8, initial_state=prompt, return_state=True)
    for form in FORMS:
        (fast, fast_state), (decayed, decayed_state) = results[None, form], results[0.0, form]
        assert_close(decayed, fast, what=f"{form}: outputs with the decay vs without")
        for part, name in zip(range(3), ("S", "z", "log_scale")):
            assert_close(decayed_state[part], fast_state[part], what=f"{form}: {name}")


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("sigma", [1.0, 8.0, 60.0])
def test_stabilised_denominators_are_at_least_one(sigma, causal, rng):
    """The floor that makes eps harmless: the query's largest term meets a key feature of 1."""
    q, k, _ = favor_inputs(rng, sigma, d=7, n=29)
    fp = la.FavorPlus(7, 11, seed=5)
    features = la.feature_maps.stabilised_features(fp.log_features(q), fp.log_features(k), causal)
    assert features.phi_k.max() <= 1
    if features.log_decay is None:  # one unit for all keys: a query's features below exp(span)
        assert features.phi_q.max() <= np.exp(la.feature_maps.DECAY_FREE_SPAN["float64"])
    else:  # units that follow the keys: each query's largest feature is exactly 1
        np.testing.assert_array_equal(features.phi_q.max(-1), 1.0)
    assert (features.log_decay is not None) == (causal and sigma == 60.0)
    if causal:  # z_i: the recurrence's sum of keys 0..i, re-measured at every change of unit
        _, z = la.gated_linear_attention(features.phi_q, features.phi_k, np.ones_like(k[..., :1]),
                                         features.log_decay, scale=1.0, form="recurrent", return_state=True)
        steps = la.gated_linear_attention(features.phi_q, features.phi_k, np.ones_like(k[..., :1]),
                                          features.log_decay, scale=1.0, form="recurrent")
        assert steps.min() >= 1 - 1e-12
        assert z.min() >= 1 - 1e-12
    else:
        denominators = features.phi_q @ features.phi_k.sum(-2)[..., None]  # [..., N, 1]
        assert denominators.min() >= 1 - 1e-12


# ---------------------------------------------------------------- seed validation

@pytest.mark.parametrize("seed,error", [(-1, ValueError), ("a", TypeError), (1.5, TypeError)],
                         ids=["negative", "str", "float"])
def test_bad_seed_is_named(seed, error):
    with pytest.raises(error, match="seed"):
        la.FavorPlus(4, 8, seed=seed)


def test_taylor_features_give_the_second_order_exp_kernel(rng):
    q, k = rng.standard_normal((7, 4)), rng.standard_normal((9, 4))
    scores = q @ k.T  # [7, 9]
    phi_q, phi_k = la.taylor_features(q), la.taylor_features(k)
    assert phi_q.shape == (7, la.taylor_width(4)) == (7, 15)
    assert_close(phi_q @ phi_k.T, 1 + scores + scores ** 2 / 2, what="Taylor kernel")
    assert (phi_q @ phi_k.T > 0).all()


def test_taylor_features_agree_on_numpy_and_torch(rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)  # [B, N, t]
    from_torch = la.taylor_features(torch.from_numpy(x))
    assert from_torch.dtype == torch.float32 and from_torch.shape == (2, 5, la.taylor_width(3))
    assert_close(from_torch.numpy(), la.taylor_features(x), what="taylor_features, torch vs numpy")


def test_taylor_features_refuse_bad_input():
    with pytest.raises(ValueError, match="x must have shape"):
        la.taylor_features(np.float64(1.0))
    with pytest.raises(ValueError, match="t must be a positive int"):
        la.taylor_width(0)


# ---------------------------------------------------------------- maps built from a given projection

@pytest.mark.parametrize("cls,m", [(la.FavorPlus, 11), (la.TrigonometricFeatures, 10)], ids=["favor", "trig"])
@pytest.mark.parametrize("orthogonal", [False, True], ids=["iid", "orthogonal"])
def test_a_map_from_a_drawn_projection_is_the_drawn_map(cls, m, orthogonal, rng):
    drawn = cls(7, m, orthogonal=orthogonal, seed=5)
    given = cls.from_projection(drawn.projection)
    x = rng.standard_normal((3, 9, 7))
    np.testing.assert_array_equal(given(x), drawn(x))
    assert (given.d, given.m, given.orthogonal, given.seed) == (7, m, None, None)
    assert given.projection.shape == (m // cls.features_per_projection, 7)


@pytest.mark.parametrize("cls", [la.FavorPlus, la.TrigonometricFeatures], ids=["favor", "trig"])
def test_the_first_rows_of_a_larger_iid_draw_are_the_smaller_draw(cls, rng):
    """Gaussian rows come one after another from the seed's stream: a map built from the first
    rows of the draw at m = 30 is the map drawn at m = 12 with that seed."""
    x = rng.standard_normal((9, 7))
    for seed in (0, 3):
        large = cls(7, 30, orthogonal=False, seed=seed)
        first = cls.from_projection(large.projection[:12 // cls.features_per_projection])
        np.testing.assert_array_equal(first(x), cls(7, 12, orthogonal=False, seed=seed)(x))


@pytest.mark.parametrize("cls", [la.FavorPlus, la.TrigonometricFeatures], ids=["favor", "trig"])
def test_the_first_rows_of_a_larger_orthogonal_draw_are_an_orthogonal_draw(cls):
    """The first 11 rows of a draw of 31 at d = 5 (blocks of 5, 5 and a cut one of 1) keep
    orthogonal blocks and chi_5 norms, so the map built from them stays unbiased."""
    d, rows = 5, 11
    q, k = np.array([0.3, -0.2, 0.25, 0.1, 0.35]), np.array([0.35, 0.1, 0.3, -0.25, 0.2])
    width = 31 * cls.features_per_projection
    prefixes = [cls(d, width, orthogonal=True, seed=s).projection[:rows] for s in range(1500)]
    unit = prefixes[0] / np.linalg.norm(prefixes[0], axis=1, keepdims=True)
    for start in (0, 5):
        np.testing.assert_allclose(unit[start:start + d] @ unit[start:start + d].T, np.eye(d), atol=1e-12)
    squared_norms = np.concatenate([np.sum(w**2, 1) for w in prefixes])  # E = d, variance 2d
    assert abs(squared_norms.mean() - d) < 4 * np.sqrt(2 * d / squared_norms.size)
    estimates = np.array([float(phi(q) @ phi(k)) for phi in map(cls.from_projection, prefixes)])
    se = estimates.std(ddof=1) / np.sqrt(estimates.size)
    assert abs(estimates.mean() - np.exp(q @ k)) <= 4 * se, (estimates.mean(), np.exp(q @ k), se)


@pytest.mark.parametrize("projection,error,message", [
    (np.ones(5), ValueError, r"projection must have shape \[num_projections, d\].*got \(5,\)"),
    (np.ones((0, 5)), ValueError, r"projection must have shape .*got \(0, 5\)"),
    (np.ones((3, 5), dtype=np.int64), TypeError, "projection must have dtype float32 or float64"),
    (np.full((3, 5), np.nan), ValueError, "projection must be finite"),
    ("directions", TypeError, "projection must be a float32 or float64 array"),
], ids=["1-d", "empty", "int", "nan", "str"])
def test_a_bad_projection_is_named(projection, error, message):
    with pytest.raises(error, match=message):
        la.FavorPlus.from_projection(projection)


def test_a_torch_projection_is_refused():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="projection must be a numpy array; got a torch tensor"):
        la.TrigonometricFeatures.from_projection(torch.ones(3, 5, dtype=torch.float64))


# ---------------------------------------------------------------- FAVOR+ owns its stabilisation (issue 29)

@pytest.mark.parametrize("backend", BACKENDS)
def test_every_path_asks_favor_plus_for_its_stabilised_features(backend, rng, monkeypatch):
    """Every form, causal or not, with or without a state, takes its features from
    FavorPlus.stabilised: no path can skip the rescaling."""
    calls = []
    own = la.FavorPlus.stabilised
    monkeypatch.setattr(la.FavorPlus, "stabilised", lambda self, *args: calls.append(1) or own(self, *args))
    q, k, v = favor_inputs(rng, 3.0)
    fp = la.FavorPlus(33, 65, seed=1)
    expected = 0
    for form in FORMS:
        for causal in (False, True):
            _, state = la.linear_attention(q, k, v, feature_map=fp, causal=causal, form=form, backend=backend,
                                           chunk_size=8, return_state=True)
            la.linear_attention(q, k, v, feature_map=fp, causal=causal, form=form, backend=backend,
                                chunk_size=8, initial_state=state)
            expected += 2
    assert len(calls) == expected


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_favor_plus_guarded_features_are_the_generic_ones(causal, rng):
    """The map's own guarded features equal the module's rule on its log features, and a map
    that offers only log_features gets the same from apply_feature_maps."""
    fp = la.FavorPlus(5, 13, seed=3)
    q, k = rng.standard_normal((2, 2, 31, 5)) * 2.0

    class LogOnly:
        def __call__(self, x):
            return fp(x)

        def log_features(self, x):
            return fp.log_features(x)

    own = fp.guarded_features(q, k, causal, 1e-3)
    generic = apply_feature_maps(LogOnly(), q, k, eps=1e-3, causal=causal)
    for a, b in zip(own, generic):
        np.testing.assert_array_equal(a, b)
    assert np.all(np.asarray(own[2]) <= 1e-3)  # the guard never exceeds eps
