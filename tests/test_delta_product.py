"""delta_product: the recurrent form against explicit Householder products, the chunkwise form
(the delta rule on the interleaved steps) against the recurrent one, n_h = 1 as the delta rule,
every backend, autograd, fla's naive reference, the reflections property, bad input and
extremes (lattn_edu.delta_product)."""

from __future__ import annotations


import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close
from fla_naive import load

BACKENDS = la.available_backends()
FORMS = ("recurrent", "chunkwise")
LEAD, N, D_K, D_V = (2, 3), 45, 6, 5


def product_inputs(rng, lead=LEAD, n=N, n_h=2, d_k=D_K, d_v=D_V, gated=True, dtype=np.float64, state=True):
    """q [*lead, n, d_k], unit-norm k [*lead, n, n_h, d_k], v [*lead, n, n_h, d_v], β in [0, 2]
    [*lead, n, n_h], log decay in [-1, 0] [*lead, n] (or None), S_0 (or None)."""
    q = rng.standard_normal(lead + (n, d_k))
    k = rng.standard_normal(lead + (n, n_h, d_k))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v = rng.standard_normal(lead + (n, n_h, d_v))
    beta = rng.uniform(0, 2, lead + (n, n_h))
    g = -rng.uniform(0, 1, lead + (n,)) if gated else None
    s0 = rng.standard_normal(lead + (d_k, d_v)) if state else None
    return tuple(None if x is None else x.astype(dtype) for x in (q, k, v, beta, g, s0))


def naive_product(q, k, v, beta, g, scale, state=None):
    """S_t = exp(g_t) Π_j (I − β_tj k_tj k_tjᵀ) S_{t−1} + B_t, step by step with explicit matrices."""
    lead, (n, n_h, d_k), d_v = q.shape[:-2], k.shape[-3:], v.shape[-1]
    out, final = np.zeros(lead + (n, d_v)), np.zeros(lead + (d_k, d_v))
    for idx in np.ndindex(*lead):
        s = np.zeros((d_k, d_v)) if state is None else np.array(state[idx], np.float64)
        for t in range(n):
            s = s * (1.0 if g is None else np.exp(g[idx + (t,)]))
            for j in range(n_h):
                kt, b = k[idx + (t, j)], beta[idx + (t, j)]
                s = (np.eye(d_k) - b * np.outer(kt, kt)) @ s + b * np.outer(kt, v[idx + (t, j)])
            out[idx + (t,)] = scale * s.T @ q[idx + (t,)]
        final[idx] = s
    return out, final


@pytest.mark.parametrize("gated", [False, True], ids=["deltaproduct", "gated"])
@pytest.mark.parametrize("form", FORMS)
def test_forms_match_explicit_products(form, gated, rng):
    q, k, v, beta, g, s0 = product_inputs(rng, n=23, n_h=3, gated=gated)
    out, state = la.delta_product(q, k, v, beta, g, form=form, chunk_size=5, initial_state=s0, return_state=True)
    ref_out, ref_state = naive_product(q, k, v, beta, g, D_K ** -0.5, s0)
    assert_close(out, ref_out, what=form)
    assert_close(state, ref_state, what=f"{form} state")


@pytest.mark.parametrize("n_h", [1, 2, 3])
@pytest.mark.parametrize("chunk", [1, 5, 64])
@pytest.mark.parametrize("gated", [False, True], ids=["deltaproduct", "gated"])
def test_chunkwise_agrees_with_recurrent(n_h, chunk, gated, rng):
    q, k, v, beta, g, s0 = product_inputs(rng, n_h=n_h, gated=gated)  # N = 45: a ragged last chunk for 5 and 64
    ref, ref_state = la.delta_product(q, k, v, beta, g, form="recurrent", initial_state=s0, return_state=True)
    out, state = la.delta_product(q, k, v, beta, g, chunk_size=chunk, initial_state=s0, return_state=True)
    assert out.shape == LEAD + (N, D_V) and state.shape == LEAD + (D_K, D_V)
    assert_close(out, ref, rtol=1e-10)
    assert_close(state, ref_state, rtol=1e-10)


@pytest.mark.parametrize("form", FORMS)
def test_split_anywhere_and_carry_the_state(form, rng):
    q, k, v, beta, g, _ = product_inputs(rng, n=63, state=False)
    whole = la.delta_product(q, k, v, beta, g, form=form, chunk_size=7)
    for cut in (1, 20, 62):
        first, state = la.delta_product(q[..., :cut, :], k[..., :cut, :, :], v[..., :cut, :, :],
                                        beta[..., :cut, :], g[..., :cut], form=form, chunk_size=7,
                                        return_state=True)
        second = la.delta_product(q[..., cut:, :], k[..., cut:, :, :], v[..., cut:, :, :], beta[..., cut:, :],
                                  g[..., cut:], form=form, chunk_size=7, initial_state=state)
        assert_close(np.concatenate([first, second], axis=-2), whole, rtol=1e-10, what=f"cut {cut}")


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "torch"])
@pytest.mark.parametrize("gated", [False, True], ids=["deltanet", "gated"])
@pytest.mark.parametrize("form", FORMS)
def test_one_key_per_token_is_the_delta_rule_exactly(form, gated, backend, rng):
    q, k, v, beta, g, s0 = product_inputs(rng, n=45, n_h=1, gated=gated)
    ours = la.delta_product(q, k, v, beta, g, form=form, backend=backend, chunk_size=8, initial_state=s0,
                            return_state=True)
    theirs = la.delta_rule(q, k[..., 0, :], v[..., 0, :], beta[..., 0], g, form=form, backend=backend,
                           chunk_size=8, initial_state=s0, return_state=True)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_matches_the_float64_reference(backend, form, dtype, rng):
    q, k, v, beta, g, s0 = product_inputs(rng, n=N, n_h=2)
    ref, ref_state = la.delta_product(q, k, v, beta, g, form="recurrent", initial_state=s0, return_state=True)
    args = [x.astype(dtype) for x in (q, k, v, beta, g, s0)]
    out, state = la.delta_product(*args[:5], form=form, backend=backend, chunk_size=16, initial_state=args[5],
                                  return_state=True)
    assert type(out) is np.ndarray and out.dtype == dtype and state.dtype == dtype
    rtol = 1e-10 if dtype == np.float64 else 1e-4
    assert_close(out, ref, rtol=rtol)
    assert_close(state, ref_state, rtol=rtol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_in_torch_out(dtype, rng):
    torch = pytest.importorskip("torch")
    arrays = [torch.from_numpy(x).to(getattr(torch, dtype)) for x in product_inputs(rng, n=9)]
    out, state = la.delta_product(*arrays[:5], backend="torch", chunk_size=4, initial_state=arrays[5],
                                  return_state=True)
    assert isinstance(out, torch.Tensor) and out.dtype == arrays[0].dtype and state.dtype == arrays[0].dtype
    with pytest.raises(TypeError, match="backend='torch'"):
        la.delta_product(*arrays[:5], backend="numpy")


@pytest.mark.parametrize("form", FORMS)
def test_torch_gradcheck(form, rng):
    torch = pytest.importorskip("torch")
    q, k, v, beta, g, s0 = (torch.from_numpy(x).requires_grad_() for x in
                            product_inputs(rng, lead=(1,), n=5, n_h=2, d_k=3, d_v=2))
    beta.data.clamp_(0.1, 1.9)  # away from the ends of [0, 2], where a central difference would leave it
    g.data.clamp_(max=-0.1)

    def run(q, k, v, beta, g, s0):
        return la.delta_product(q, k, v, beta, g, form=form, backend="torch", chunk_size=2, initial_state=s0,
                                return_state=True)
    assert torch.autograd.gradcheck(run, (q, k, v, beta, g, s0))


@pytest.mark.parametrize("gated", [False, True], ids=["deltaproduct", "gated"])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_fla_naive_reference(backend, form, gated, rng):
    """fla: q [B, T, H, K], k and v token-major [B, T·n_h, H, ·], β [B, T·n_h, H], g [B, T, H]
    applied once per token before its n_h steps; float32 inside."""
    import torch
    reference = load("gated_delta_product/naive.py").naive_recurrent_gated_delta_product
    n_h, (b, h) = 3, LEAD
    q, k, v, beta, g, s0 = product_inputs(rng, n_h=n_h, gated=gated)

    def steps(x):  # ours [B, H, T, n_h, ·] -> theirs [B, T·n_h, H, ·]
        x = np.moveaxis(x, 1, 3)  # [B, T, n_h, H, ·]
        return torch.from_numpy(np.ascontiguousarray(x.reshape((b, N * n_h, h) + x.shape[4:]))).float()

    def tokens(x):  # [B, H, T, ·] -> [B, T, H, ·]
        return torch.from_numpy(np.ascontiguousarray(np.swapaxes(x, 1, 2))).float()

    o, s = reference(tokens(q), steps(k), steps(v), None if g is None else tokens(g), steps(beta), D_K ** -0.5,
                     initial_state=torch.from_numpy(s0).float(), output_final_state=True, num_householder=n_h)
    args = [None if x is None else x.astype(np.float32) for x in (q, k, v, beta, g, s0)]
    out, state = la.delta_product(*args[:5], form=form, backend=backend, chunk_size=16, initial_state=args[5],
                                  return_state=True)
    assert_close(np.swapaxes(o.double().numpy(), 1, 2), out, rtol=1e-4)
    assert_close(s.double().numpy(), state, rtol=1e-4)


@pytest.mark.parametrize("n_h", [1, 2, 3])
@pytest.mark.parametrize("form", FORMS)
def test_reflections_make_an_orthogonal_transition(form, n_h, rng):
    """β = 2, unit keys, no decay, v = 0: each factor I − 2 k kᵀ is a reflection, so the state
    started from I is Π_t A_t, orthogonal, with determinant (−1)^(N·n_h): for n_h = 2 a rotation
    per token, which a single delta-rule step cannot make."""
    n, d = 31, 4
    _, k, _, _, _, _ = product_inputs(rng, lead=(), n=n, n_h=n_h, d_k=d, d_v=d)
    q, v, beta = rng.standard_normal((n, d)), np.zeros((n, n_h, d)), np.full((n, n_h), 2.0)
    _, transition = la.delta_product(q, k, v, beta, form=form, chunk_size=4, initial_state=np.eye(d),
                                     return_state=True)
    assert_close(transition.T @ transition, np.eye(d), rtol=1e-10)
    assert np.linalg.det(transition) == pytest.approx((-1.0) ** (n * n_h))
    s0 = rng.standard_normal((d, d))  # and any state keeps its Frobenius norm
    _, state = la.delta_product(q, k, v, beta, form=form, chunk_size=4, initial_state=s0, return_state=True)
    assert np.linalg.norm(state) == pytest.approx(np.linalg.norm(s0), rel=1e-12)


def test_bad_inputs_are_refused_by_name(rng):
    q, k, v, beta, g, s0 = product_inputs(rng, n=9, n_h=2)
    cases = {
        "k": dict(k=k[..., :1, :3]),  # d_k that is not q's
        "v": dict(v=v[..., :1, :]),  # n_h = 1 where k has 2
        "beta": dict(beta=beta[..., :1]),  # n_h = 1 where k has 2
    }
    for name, change in cases.items():
        args = dict(q=q, k=k, v=v, beta=beta, log_decay=g) | change
        with pytest.raises(ValueError, match=f"{name} must have shape"):
            la.delta_product(**args)
    with pytest.raises(ValueError, match="k must have shape"):
        la.delta_product(q, k[..., 0, :], v, beta)  # a delta-rule key: no n_h axis
    with pytest.raises(ValueError, match="beta must lie in"):
        la.delta_product(q, k, v, beta + 2.5)
    with pytest.raises(ValueError, match="beta must lie in"):
        la.delta_product(q, k, v, beta - 2.5)
    with pytest.raises(ValueError, match="log_decay must be <= 0"):
        la.delta_product(q, k, v, beta, -g)
    with pytest.raises(ValueError, match="log_decay.*per-channel"):
        la.delta_product(q, k, v, beta, np.zeros(q.shape))
    with pytest.raises(ValueError, match="initial_state"):
        la.delta_product(q, k, v, beta, initial_state=s0[..., :2])
    for name, x in (("q", q), ("k", k), ("v", v), ("beta", beta), ("log_decay", g)):
        bad = x.copy()
        bad.flat[3] = np.nan
        args = dict(q=q, k=k, v=v, beta=beta, log_decay=g) | {name: bad}
        with pytest.raises(ValueError, match=f"{name} must be finite"):
            la.delta_product(**args)
    with pytest.raises(TypeError, match="v must have q's dtype"):
        la.delta_product(q, k, v.astype(np.float32), beta)
    with pytest.raises(ValueError, match="chunk_size"):
        la.delta_product(q, k, v, beta, chunk_size=0)


def test_many_reflections_stay_finite(rng):
    """β = 2 for 8,000 steps (4,000 tokens × 2) in float32: every factor is a reflection, so the
    state's norm can only grow by the writes, never by the transitions."""
    q, k, v, _, _, _ = product_inputs(rng, lead=(2,), n=4000, n_h=2, d_k=16, d_v=16, dtype=np.float32,
                                      state=False)
    beta = np.full(k.shape[:-1], 2.0, np.float32)
    backend = "numba" if "numba" in BACKENDS else "numpy"
    out, state = la.delta_product(q, k, v, beta, backend=backend, return_state=True)
    ref = la.delta_product(*(x.astype(np.float64) for x in (q[:, :200], k[:, :200], v[:, :200], beta[:, :200])),
                           form="recurrent")
    assert np.isfinite(out).all() and np.isfinite(state).all()
    assert_close(out[:, :200], ref, rtol=1e-3)


def test_long_strongly_decayed_sequence_stays_finite(rng):
    """N = 65,536 float32 with log decays down to −20 per token on the fast chunkwise form."""
    n = 65_536
    q, k, v, beta, _, _ = product_inputs(rng, lead=(1,), n=n, n_h=2, d_k=8, d_v=8, dtype=np.float32, state=False)
    g = (-20.0 * rng.uniform(0, 1, (1, n))).astype(np.float32)
    backend = "numba" if "numba" in BACKENDS else "numpy"
    out, state = la.delta_product(q, k, v, beta, g, backend=backend, return_state=True)
    assert np.isfinite(out).all() and np.isfinite(state).all()
    tail = la.delta_product(*(x[:, -300:].astype(np.float64) for x in (q, k, v, beta, g)), form="recurrent")
    assert_close(out[:, -290:], tail[:, 10:], rtol=1e-3)  # ten tokens' decay forget what came before
