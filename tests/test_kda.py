"""Kimi Delta Attention: la.delta_rule with a per-channel log_decay [..., N, d_k] (lattn_edu.delta,
backends/numba_kda.py). The forms against each other and an explicit-matrix loop, every backend,
fla's naive KDA references, torch autograd, the scalar case as the special case it is, bad input
and the extremes (long strongly decaying sequences, β = 2)."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close
from fla_naive import load

BACKENDS = la.available_backends()
FORMS = ("recurrent", "chunkwise")


def kda_inputs(rng, lead=(2, 3), n=45, d_k=5, d_v=3, dtype=np.float64, strength=1.0):
    """q, unit-norm k, v, β in [0, 2], per-channel log decay in [-strength, 0], S_0."""
    q, k = rng.standard_normal((2,) + lead + (n, d_k))
    k = k / np.linalg.norm(k, axis=-1, keepdims=True)
    v = rng.standard_normal(lead + (n, d_v))
    beta = rng.uniform(0, 2, lead + (n,))
    g = -strength * rng.uniform(0, 1, lead + (n, d_k))
    s0 = rng.standard_normal(lead + (d_k, d_v))
    return tuple(x.astype(dtype) for x in (q, k, v, beta, g, s0))


def naive_kda(q, k, v, beta, g, scale, state):
    """S_t = (I − β k kᵀ) diag(exp g_t) S_{t−1} + β k vᵀ with explicit matrices, one sequence at a time."""
    lead, (n, d_k), d_v = q.shape[:-2], q.shape[-2:], v.shape[-1]
    out, final = np.zeros(lead + (n, d_v)), np.zeros(lead + (d_k, d_v))
    for idx in np.ndindex(*lead):
        s = np.array(state[idx], np.float64)
        for t in range(n):
            kt, b = k[idx + (t,)], beta[idx + (t,)]
            decayed = np.exp(g[idx + (t,)])[:, None] * s  # diag(exp g_t) S
            s = (np.eye(d_k) - b * np.outer(kt, kt)) @ decayed + b * np.outer(kt, v[idx + (t,)])
            out[idx + (t,)] = scale * s.T @ q[idx + (t,)]
        final[idx] = s
    return out, final


@pytest.mark.parametrize("form", FORMS)
def test_forms_match_the_explicit_matrix_loop(form, rng):
    q, k, v, beta, g, s0 = kda_inputs(rng, n=23)
    out, state = la.delta_rule(q, k, v, beta, g, form=form, chunk_size=8, initial_state=s0, return_state=True)
    ref_out, ref_state = naive_kda(q, k, v, beta, g, 5 ** -0.5, s0)
    assert_close(out, ref_out, what=form)
    assert_close(state, ref_state, what=f"{form} state")


@pytest.mark.parametrize("n,chunk,d_k,d_v", [(45, 1, 5, 3), (63, 7, 4, 6), (100, 64, 6, 5), (45, 64, 3, 3)])
@pytest.mark.parametrize("backend", BACKENDS)
def test_chunkwise_agrees_with_recurrent_in_float64(n, chunk, d_k, d_v, backend, rng):
    """Odd N, ragged last chunk, d_k != d_v, [B, H] axes, an initial state; every backend's
    chunkwise form against the float64 numpy recurrent reference."""
    q, k, v, beta, g, s0 = kda_inputs(rng, (2, 3), n, d_k, d_v)
    ref, ref_state = la.delta_rule(q, k, v, beta, g, form="recurrent", initial_state=s0, return_state=True)
    for form in FORMS:
        out, state = la.delta_rule(*_as(backend, q, k, v, beta, g), form=form, chunk_size=chunk, backend=backend,
                                   initial_state=_as(backend, s0)[0], return_state=True)
        assert_close(out, ref, what=f"{backend} {form}")
        assert_close(state, ref_state, what=f"{backend} {form} state")


def _as(backend, *arrays):
    """The arrays as the backend takes them: torch tensors for 'torch', numpy otherwise."""
    if backend != "torch":
        return arrays
    import torch
    return tuple(torch.from_numpy(np.ascontiguousarray(x)) for x in arrays)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_keeps_kind_and_dtype(backend, dtype, rng):
    q, k, v, beta, g, s0 = kda_inputs(rng, (2,), 37, 4, 3)
    ref = la.delta_rule(q, k, v, beta, g, form="recurrent", initial_state=s0)
    for form in FORMS:
        args = _as(backend, *(x.astype(dtype) for x in (q, k, v, beta, g, s0)))
        out = la.delta_rule(*args[:5], form=form, backend=backend, chunk_size=16, initial_state=args[5])
        assert type(out) is type(args[0]) and out.dtype == args[0].dtype
        assert_close(out, ref, what=f"{backend} {form} {np.dtype(dtype).name}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", FORMS)
def test_split_anywhere_and_carry_the_state(form, backend, rng):
    q, k, v, beta, g, _ = kda_inputs(rng, (3,), 45, 4, 3)
    args = _as(backend, q, k, v, beta, g)
    whole = la.delta_rule(*args, form=form, backend=backend, chunk_size=7)
    for cut in (1, 20, 44):
        first, state = la.delta_rule(*(x[:, :cut] for x in args), form=form, backend=backend, chunk_size=7,
                                     return_state=True)
        second = la.delta_rule(*(x[:, cut:] for x in args), form=form, backend=backend, chunk_size=7,
                               initial_state=state)
        assert_close(np.concatenate([np.asarray(first), np.asarray(second)], axis=-2), whole,
                     what=f"cut at {cut}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_equal_channels_are_the_scalar_decay_of_gated_deltanet(backend, rng):
    """A per-channel decay with all d_k channels equal is Gated DeltaNet's scalar decay, and the
    scalar decay itself still runs the explicit-matrix Gated DeltaNet."""
    q, k, v, beta, g, s0 = kda_inputs(rng, (2,), 41, 4, 3)
    scalar = g[..., 0]
    channels = np.repeat(scalar[..., None], 4, axis=-1)
    ref_out, _ = naive_kda(q, k, v, beta, channels, 0.5, s0)
    for form in FORMS:
        a = _as(backend, q, k, v, beta, scalar, channels, s0)
        out_scalar = la.delta_rule(*a[:5], form=form, backend=backend, chunk_size=8, initial_state=a[6])
        out_vector = la.delta_rule(*a[:4], a[5], form=form, backend=backend, chunk_size=8, initial_state=a[6])
        assert_close(out_scalar, ref_out, what=f"{form} scalar")
        assert_close(out_vector, out_scalar, what=f"{form} equal channels")


def test_ut_transform_inverts_i_plus_a_with_channel_decays(rng):
    k, beta, g = rng.standard_normal((2, 9, 4)), rng.uniform(0, 2, (2, 9)), -rng.uniform(0, 1, (2, 9, 4))
    b = np.cumsum(g, axis=-2)
    a = np.zeros((2, 9, 9))
    for i in range(9):
        for j in range(i):
            a[:, i, j] = beta[:, i] * np.sum(k[:, i] * k[:, j] * np.exp(b[:, i] - b[:, j]), axis=-1)
    t = la.ut_transform(k, beta, g)
    assert_close(t @ (np.eye(9) + a), np.broadcast_to(np.eye(9), t.shape))


@pytest.mark.parametrize("form", FORMS)
def test_torch_autograd_gradcheck(form, rng):
    torch = pytest.importorskip("torch")
    q, k, v, beta, g, s0 = (torch.from_numpy(x).requires_grad_() for x in kda_inputs(rng, (1,), 4, 2, 2))

    def run(q, k, v, beta, g, s0):
        return la.delta_rule(q, k, v, beta, g, form=form, backend="torch", chunk_size=2, initial_state=s0,
                             return_state=True)
    assert torch.autograd.gradcheck(run, (q, k, v, beta, g, s0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_fla_naive_recurrent_and_chunk_kda(backend, rng):
    """fla's layouts: q, k [B, T, H, K], v [B, T, H, V], g [B, T, H, K] (log decays, as ours),
    β [B, T, H], initial state [B, H, K, V]; scale K^-1/2 as ours; float32 inside."""
    import torch
    fla = load("kda/naive.py")
    q, k, v, beta, g, s0 = kda_inputs(rng, (2, 3), 48, 6, 5)

    def theirs(x):  # ours [B, H, T, ·] (or [B, H, T]) -> fla's [B, T, H, ·] in float32
        return torch.from_numpy(np.ascontiguousarray(np.swapaxes(x, 1, 2))).float()
    args = [theirs(x) for x in (q, k, v, g, beta)] + [torch.from_numpy(s0).float()]
    results = {"naive_recurrent_kda": fla.naive_recurrent_kda(*args[:5], initial_state=args[5],
                                                              output_final_state=True),
               "naive_chunk_kda": fla.naive_chunk_kda(*args[:5], initial_state=args[5], output_final_state=True,
                                                      chunk_size=16)}
    for dtype in (np.float64, np.float32):
        for form in FORMS:
            ours = _as(backend, *(x.astype(dtype) for x in (q, k, v, beta, g, s0)))
            out, state = la.delta_rule(*ours[:5], form=form, backend=backend, chunk_size=16, initial_state=ours[5],
                                       return_state=True)
            for name, (o, s) in results.items():
                what = f"{name} vs {backend} {form} {np.dtype(dtype).name}"
                assert_close(np.swapaxes(o.double().numpy(), 1, 2), out, rtol=1e-4, what=what)
                assert_close(s, state, rtol=1e-4, what=what + " state")


BAD = [
    (lambda q, b, g: la.delta_rule(q, q, q, b, -g), ValueError, "log_decay must be <= 0"),
    (lambda q, b, g: la.delta_rule(q, q, q, b, np.concatenate([g, g], axis=-1)), ValueError,
     r"log_decay of shape \[2, 9, 6\] does not broadcast to \[2, 9, 3\]"),
    (lambda q, b, g: la.delta_rule(q, q, q, b, np.where(g < -0.5, np.nan, g)), ValueError, "log_decay must be finite"),
    (lambda q, b, g: la.delta_rule(q, q, q, b, np.where(g < -0.5, np.nan, g), backend="numba"), ValueError,
     "log_decay must be finite"),
    (lambda q, b, g: la.delta_rule_vjp(q, q, q, b, q, g), ValueError, "log_decay must have shape"),
]


@pytest.mark.parametrize("call,error,message", BAD, ids=["positive", "wrong width", "NaN", "NaN numba", "vjp"])
def test_bad_per_channel_decay_is_named(call, error, message, rng):
    q, b, g = rng.standard_normal((2, 9, 3)), rng.uniform(0, 0.6, (2, 9)), -rng.uniform(0.1, 1, (2, 9, 3))
    with pytest.raises(error, match=message):
        call(q, b, g)


@pytest.mark.parametrize("backend", [b for b in ("numpy", "numba") if b in BACKENDS])
def test_long_strongly_decaying_sequence_stays_finite_in_float32(backend, rng):
    """N = 65,536 with g = −5 per step in every channel (exp(Σg) is 0 in float32 after 18 steps):
    every decay factor is exp of a sum <= 0, so nothing overflows, and the state holds only the
    last few tokens: the output equals that of the sequence's last 64 tokens alone."""
    n, d = 65_536, 4
    q, k, v, beta, _, _ = kda_inputs(rng, (1,), n, d, d, np.float32)
    g = np.full((1, n, d), -5.0, np.float32)
    out = la.delta_rule(q, k, v, beta, g, backend=backend)
    tail = la.delta_rule(*(x[:, -64:] for x in (q, k, v, beta, g)), form="recurrent")
    assert np.isfinite(out).all()
    assert_close(out[:, -32:], tail[:, -32:], rtol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_beta_two_for_thousands_of_steps_stays_bounded(backend, rng):
    """β = 2 with unit keys: I − 2 k kᵀ is a reflection, so the state never grows (decay <= 1 on top)."""
    n = 3000
    q, k, v, _, g, _ = kda_inputs(rng, (2,), n, 4, 3, np.float32, strength=0.05)
    beta = np.full((2, n), 2.0, np.float32)
    for form in FORMS:
        out, state = la.delta_rule(*_as(backend, q, k, v, beta, g), form=form, backend=backend, return_state=True)
        out, state = np.asarray(out), np.asarray(state)
        assert np.isfinite(out).all() and np.abs(out).max() < 100, (form, np.abs(out).max())
        assert np.linalg.norm(state, axis=(-2, -1)).max() < 100


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("backend", BACKENDS)
def test_channels_of_very_different_decay(backend, dtype, rng):
    """Every third channel forgets within a few steps (g down to −8), the others barely decay: the
    numba kernel cuts its chunks into pieces there, and stays within float32's tolerance."""
    q, k, v, beta, g, s0 = kda_inputs(rng, (2,), 200, 9, 4)
    g = g * np.where(np.arange(9) % 3 == 0, 8.0, 0.05)
    ref = la.delta_rule(q, k, v, beta, g, form="recurrent", initial_state=s0)
    out = la.delta_rule(*_as(backend, *(x.astype(dtype) for x in (q, k, v, beta, g, s0)))[:5], backend=backend,
                        initial_state=_as(backend, s0.astype(dtype))[0])
    assert_close(out, ref)
