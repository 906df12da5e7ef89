"""least_squares_attention (MesaNet): recurrent and chunkwise forms against a naive loop and each
other, the least-squares problem it solves, the CG solver against the exact solve, numpy and
torch backends with autograd, fla's naive_mesa_net_exact, extremes and bad input."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lattn_edu as la
from conftest import assert_close
from fla_naive import load
from lattn_edu.least_squares import conjugate_gradient, ridge_solve

LEAD, D_K, D_V = (2, 3), 6, 5
FORMS = ("recurrent", "chunkwise")


def mesa_inputs(rng, lead=LEAD, n=45, d_k=D_K, d_v=D_V, gated=True, dtype=np.float64,
                initial_state=False):
    """q, unit-norm k, v, β in [0, 1], log decay in [-1, 0] (or None), λ [H, d_k] in [0.2, 1]
    (one per head and key channel, like fla's lamb), and a state pair (H_0 PSD, G_0) or None."""
    q, k = rng.standard_normal((2,) + lead + (n, d_k))
    k = k / np.linalg.norm(k, axis=-1, keepdims=True)
    v = rng.standard_normal(lead + (n, d_v))
    beta = rng.uniform(0, 1, lead + (n,))
    g = -rng.uniform(0, 1, lead + (n,)) if gated else None
    ridge = rng.uniform(0.2, 1.0, lead[-1:] + (d_k,))
    state = None
    if initial_state:
        root = rng.standard_normal(lead + (d_k, d_k))
        h = root @ np.swapaxes(root, -1, -2)  # positive semi-definite, as a sum of k kᵀ is
        state = (h.astype(dtype), rng.standard_normal(lead + (d_k, d_v)).astype(dtype))
    cast = (lambda x: None if x is None else x.astype(dtype))
    return (*map(cast, (q, k, v, beta, g, ridge)), state)


def naive_mesa(q, k, v, beta, g, ridge, scale, state=None):
    """The model with explicit matrices and one np.linalg.solve per step, float64, per sequence."""
    lead, (n, d_k), d_v = q.shape[:-2], q.shape[-2:], v.shape[-1]
    ridge = np.broadcast_to(ridge, lead + (d_k,))
    out = np.zeros(lead + (n, d_v))
    for idx in np.ndindex(*lead):
        h, s = (np.zeros((d_k, d_k)), np.zeros((d_k, d_v))) if state is None else (state[0][idx], state[1][idx])
        for t in range(n):
            decay = 1.0 if g is None else np.exp(g[idx + (t,)])
            h = decay * h + beta[idx + (t,)] * np.outer(k[idx + (t,)], k[idx + (t,)])
            s = decay * s + beta[idx + (t,)] * np.outer(k[idx + (t,)], v[idx + (t,)])
            out[idx + (t,)] = s.T @ np.linalg.solve(h + np.diag(ridge[idx]), scale * q[idx + (t,)])
    return out


def run(q, k, v, beta, g, ridge, **kwargs):
    return la.least_squares_attention(q, k, v, beta, g, ridge=ridge, **kwargs)


# ---- forms -------------------------------------------------------------------------------------

@pytest.mark.parametrize("gated", [False, True], ids=["no-decay", "decay"])
@pytest.mark.parametrize("form", FORMS)
def test_forms_match_the_naive_loop(form, gated, rng):
    q, k, v, beta, g, ridge, state = mesa_inputs(rng, n=23, gated=gated, initial_state=True)
    out = run(q, k, v, beta, g, ridge, form=form, chunk_size=8, initial_state=state)
    assert_close(out, naive_mesa(q, k, v, beta, g, ridge, D_K ** -0.5, state), what=form)


@pytest.mark.parametrize("n", [45, 63, 100])
@pytest.mark.parametrize("gated", [False, True], ids=["no-decay", "decay"])
def test_chunkwise_agrees_with_recurrent_in_float64(n, gated, rng):
    q, k, v, beta, g, ridge, state = mesa_inputs(rng, n=n, gated=gated, initial_state=True)
    ref, (ref_h, ref_g) = run(q, k, v, beta, g, ridge, initial_state=state, return_state=True)
    out, (h, s) = run(q, k, v, beta, g, ridge, form="chunkwise", chunk_size=16, initial_state=state,
                      return_state=True)  # 16 divides none of 45, 63, 100: a ragged last chunk
    assert_close(out, ref, rtol=1e-10, what="o")
    assert_close(h, ref_h, rtol=1e-10, what="H")
    assert_close(s, ref_g, rtol=1e-10, what="G")


@given(n=st.integers(1, 30), chunk=st.integers(1, 11), d_k=st.integers(1, 5), d_v=st.integers(1, 4),
       gated=st.booleans(), dtype=st.sampled_from([np.float32, np.float64]))
def test_chunkwise_agrees_with_recurrent_everywhere(n, chunk, d_k, d_v, gated, dtype):
    q, k, v, beta, g, ridge, _ = mesa_inputs(np.random.default_rng(7 * n + chunk), (2,), n, d_k, d_v, gated, dtype)
    ref = run(q, k, v, beta, g, ridge)
    out = run(q, k, v, beta, g, ridge, form="chunkwise", chunk_size=chunk)
    assert out.dtype == dtype
    assert_close(out, ref)


@pytest.mark.parametrize("form", FORMS)
def test_split_anywhere_and_carry_the_state_pair(form, rng):
    q, k, v, beta, g, ridge, _ = mesa_inputs(rng, n=45)
    whole = run(q, k, v, beta, g, ridge, form=form, chunk_size=7)
    for cut in (1, 20, 44):
        head = [x[..., :cut] if x.ndim == 3 else x[..., :cut, :] for x in (q, k, v, beta, g)]
        tail = [x[..., cut:] if x.ndim == 3 else x[..., cut:, :] for x in (q, k, v, beta, g)]
        first, state = run(*head, ridge, form=form, chunk_size=7, return_state=True)
        second = run(*tail, ridge, form=form, chunk_size=7, initial_state=state)
        assert_close(np.concatenate([first, second], axis=-2), whole, rtol=1e-10, what=f"cut at {cut}")


# ---- what the read computes -------------------------------------------------------------------

def test_the_read_is_the_weighted_ridge_regression(rng):
    """o_t = W_tᵀ q_t with W_t = argmin Σ_s w_ts ‖Wᵀk_s − v_s‖² + Σ_r λ_r ‖row r of W‖², where
    w_ts = β_s Π_{l=s+1..t} exp(g_l): solved here by np.linalg.lstsq on the stacked rows
    √w_ts k_sᵀ and √λ_r e_rᵀ."""
    n, d_k, d_v = 12, 4, 3
    q, k, v = rng.standard_normal((n, d_k)), rng.standard_normal((n, d_k)), rng.standard_normal((n, d_v))
    beta, g, ridge = rng.uniform(0, 1, n), -rng.uniform(0, 1, n), rng.uniform(0.1, 1, d_k)
    out = la.least_squares_attention(q, k, v, beta, g, ridge=ridge, scale=1.0)
    for t in range(n):
        weights = beta[:t + 1] * np.exp([g[s + 1:t + 1].sum() for s in range(t + 1)])
        rows = np.concatenate([np.sqrt(weights)[:, None] * k[:t + 1], np.diag(np.sqrt(ridge))])
        targets = np.concatenate([np.sqrt(weights)[:, None] * v[:t + 1], np.zeros((d_k, d_v))])
        w = np.linalg.lstsq(rows, targets, rcond=None)[0]  # [d_k, d_v]
        assert_close(out[t], w.T @ q[t], rtol=1e-10, what=f"step {t}")


def test_a_vanishing_ridge_gives_ordinary_least_squares(rng):
    """No decay, β = 1, λ -> 0 and N >= d_k independent keys: W_t -> K⁺V, the plain fit."""
    n, d_k, d_v = 20, 5, 3
    q, k, v = rng.standard_normal((n, d_k)), rng.standard_normal((n, d_k)), rng.standard_normal((n, d_v))
    out = la.least_squares_attention(q, k, v, np.ones(n), ridge=1e-10, scale=1.0, form="chunkwise", chunk_size=8)
    w = np.linalg.lstsq(k, v, rcond=None)[0]
    assert_close(out[-1], w.T @ q[-1], rtol=1e-7)
    assert_close(out[-1], v.T @ k @ np.linalg.solve(k.T @ k, q[-1]), rtol=1e-7, what="normal equations")


def test_a_zero_input_gate_skips_the_token(rng):
    q, k, v, beta, _, ridge, _ = mesa_inputs(rng, lead=(2,), n=10, gated=False)
    beta[:, 4] = 0.0
    keep = [t for t in range(10) if t != 4]
    out = run(q, k, v, beta, None, ridge, form="chunkwise", chunk_size=3)
    dropped = run(q[:, keep], k[:, keep], v[:, keep], beta[:, keep], None, ridge)
    assert_close(out[:, keep], dropped, rtol=1e-10)


# ---- conjugate gradient ------------------------------------------------------------------------

def test_cg_error_meets_the_textbook_bound(rng):
    """‖x_j − x*‖_A <= 2 ((√κ − 1)/(√κ + 1))^j ‖x*‖_A from x_0 = 0, on the systems H_N + Λ."""
    q, k, v, beta, g, ridge, _ = mesa_inputs(rng, n=60, d_k=16, d_v=4)
    _, (h, _) = run(q, k, v, beta, g, ridge, form="chunkwise", return_state=True)
    a = h + ridge[..., :, None] * np.eye(16)
    y = rng.standard_normal(h.shape[:-1])
    exact = np.linalg.solve(a, y[..., None])[..., 0]
    eigs = np.linalg.eigvalsh(a)
    rho = (np.sqrt(eigs[..., -1] / eigs[..., 0]) - 1) / (np.sqrt(eigs[..., -1] / eigs[..., 0]) + 1)
    a_norm = lambda x: np.sqrt(np.einsum("...i,...ij,...j->...", x, a, x))  # noqa: E731
    previous = a_norm(exact)
    for j in (1, 2, 4, 8, 12):
        error = a_norm(conjugate_gradient(a, y, j) - exact)
        assert (error <= 2 * rho ** j * a_norm(exact) + 1e-12).all(), f"{j} iterations"
        assert (error < previous).all(), f"{j} iterations"
        previous = error
    assert_close(ridge_solve(h, ridge, y, "cg", 16), exact, rtol=1e-12, what="d_k steps")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cg_read_approaches_the_exact_read(dtype, rng):
    """Measured here (d_k = 16, N = 200, λ = 0.25, g in [-1, 0], κ <= 4.6): relative error of o
    1.1, 0.24, 9.3e-3, 3.8e-6, 6.4e-16 after 1, 2, 4, 8, 16 steps in float64; float32 stops at
    its rounding, 2.6e-7."""
    q, k, v, beta, g, _, _ = mesa_inputs(rng, lead=(2, 2), n=200, d_k=16, d_v=16, dtype=dtype)
    exact = run(q, k, v, beta, g, 0.25, form="chunkwise")
    errors = [np.linalg.norm(run(q, k, v, beta, g, 0.25, form="chunkwise", solver="cg", cg_iterations=j) - exact)
              / np.linalg.norm(exact) for j in (1, 2, 4, 8, 16)]
    assert all(later < earlier for earlier, later in zip(errors[:4], errors[1:4])), errors
    assert errors[3] < 1e-4, errors  # 8 steps, κ <= 5 here
    assert errors[4] < (1e-10 if dtype == np.float64 else 1e-5), errors  # d_k steps: exact up to rounding
    recurrent = run(q[..., :40, :], k[..., :40, :], v[..., :40, :], beta[..., :40], g[..., :40], 0.25,
                    solver="cg", cg_iterations=4)
    assert_close(recurrent, run(q[..., :40, :], k[..., :40, :], v[..., :40, :], beta[..., :40], g[..., :40],
                                0.25, form="chunkwise", chunk_size=16, solver="cg", cg_iterations=4),
                 what="both forms run the same CG")


# ---- backends and autograd ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("form", FORMS)
def test_torch_backend_matches_numpy(form, dtype):
    torch = pytest.importorskip("torch")
    q, k, v, beta, g, ridge, state = mesa_inputs(np.random.default_rng(5), n=45, dtype=np.dtype(dtype),
                                                 initial_state=True)
    kwargs = dict(form=form, chunk_size=16, return_state=True)
    ref, ref_state = run(q, k, v, beta, g, ridge, initial_state=state, **kwargs)
    out, out_state = run(*(torch.from_numpy(x) for x in (q, k, v, beta, g, ridge)), backend="torch",
                         initial_state=tuple(map(torch.from_numpy, state)), **kwargs)
    assert isinstance(out, torch.Tensor) and out.dtype == getattr(torch, dtype)
    assert_close(out, ref)
    for ours, theirs in zip(out_state, ref_state):
        assert_close(ours, theirs, what="state")
    via_numpy = run(q, k, v, beta, g, float(ridge[0, 0]), backend="torch", form=form)
    assert isinstance(via_numpy, np.ndarray) and via_numpy.dtype == np.dtype(dtype)


@pytest.mark.parametrize("solver", ["exact", "cg"])
@pytest.mark.parametrize("form", FORMS)
def test_torch_gradcheck(form, solver):
    torch = pytest.importorskip("torch")
    q, k, v, beta, g, ridge, _ = mesa_inputs(np.random.default_rng(6), (2,), n=4, d_k=2, d_v=2)
    beta = 0.1 + 0.8 * beta  # inside [0, 1]: the finite-difference steps stay legal
    args = tuple(torch.from_numpy(x).requires_grad_() for x in (q, k, v, beta, g, ridge[0]))

    def read(q, k, v, beta, g, ridge):
        return la.least_squares_attention(q, k, v, beta, g, ridge=ridge, form=form, backend="torch", chunk_size=3,
                                          solver=solver, cg_iterations=1)

    assert torch.autograd.gradcheck(read, args)


def test_numba_has_no_kernel_for_it(rng):
    if "numba" not in la.available_backends():
        pytest.skip("numba is not installed")
    q, k, v, beta, g, ridge, _ = mesa_inputs(rng, n=5)
    with pytest.raises(ValueError, match="backend='numba' has no kernels for this model"):
        run(q, k, v, beta, g, ridge, backend="numba")


# ---- fla's reference ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("form", FORMS)
def test_matches_fla_naive_mesa_net_exact(form, backend, rng):
    """fla: [B, T, H, d] layout, g the log forget gate [B, T, H], beta [B, T, H], lamb [H, d]
    (diag(lamb) added to H), q not scaled (scale=1 here), d_v = d_k, float32 throughout."""
    import torch
    naive = load("mesa_net/naive.py")
    q, k, v, beta, g, ridge, state = mesa_inputs(rng, n=45, d_k=8, d_v=8, initial_state=True)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    fla = lambda x: torch.from_numpy(np.ascontiguousarray(np.swapaxes(x, 1, 2))).float()  # noqa: E731
    o, h, s = naive.naive_mesa_net_exact(*map(fla, (q, k, v, g)), torch.from_numpy(ridge).float(), fla(beta),
                                         *(torch.from_numpy(x).float() for x in state))
    expected = np.swapaxes(o.double().numpy(), 1, 2)
    as_backend = (lambda x: torch.from_numpy(x)) if backend == "torch" else (lambda x: x)  # noqa: E731
    for dtype in (np.float32, np.float64):
        cast = (lambda x: as_backend(x.astype(dtype)))  # noqa: E731
        out, (ours_h, ours_s) = run(*map(cast, (q, k, v, beta, g, ridge)), scale=1.0, form=form, backend=backend,
                                    chunk_size=16, initial_state=tuple(map(cast, state)), return_state=True)
        assert_close(out, expected, rtol=1e-4, what=f"o {dtype.__name__}")
        assert_close(ours_h, h, rtol=1e-4, what="H")
        assert_close(ours_s, s, rtol=1e-4, what="G")


# ---- extremes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("form", FORMS)
def test_near_singular_h_with_a_tiny_ridge(form, dtype, rng):
    """Keys in a random 2-dimensional subspace of d_k = 16, λ = 1e-6: H_t + λI has 14 eigenvalues
    near 1e-6 and 2 near N. float64 still solves to a small residual and reads the ridge
    regression's answer; float32 rounds H by about 6e-8 · ‖H‖ > λ, so its system is a different
    one: the read stays finite and the solve backward stable (a small residual relative to
    ‖A‖‖x‖), but o can be far from float64's (we measured a factor 100 here)."""
    n, d_k = 100, 16
    basis = np.linalg.qr(rng.standard_normal((d_k, 2)))[0]
    k = rng.standard_normal((n, 2)) @ basis.T
    k = (k / np.linalg.norm(k, axis=-1, keepdims=True)).astype(dtype)
    q, v = rng.standard_normal((n, d_k)).astype(dtype), rng.standard_normal((n, 3)).astype(dtype)
    out, (h, _) = la.least_squares_attention(q, k, v, np.ones(n, dtype), ridge=1e-6, scale=1.0, form=form,
                                             chunk_size=16, return_state=True)
    assert np.isfinite(out).all()
    x = ridge_solve(h, np.full(d_k, 1e-6, dtype), q[-1])
    a = h.astype(np.float64) + 1e-6 * np.eye(d_k)
    residual = np.linalg.norm(a @ x - q[-1])
    if dtype == np.float64:
        assert residual <= 1e-7 * np.linalg.norm(q[-1])
        w = np.linalg.lstsq(np.concatenate([k, 1e-3 * np.eye(d_k)]), np.concatenate([v, np.zeros((d_k, 3))]),
                            rcond=None)[0]
        assert_close(out[-1], w.T @ q[-1], rtol=1e-6, what="ridge regression")
    else:
        assert residual <= 1e-6 * (np.linalg.norm(a, 2) * np.linalg.norm(x) + np.linalg.norm(q[-1]))


def test_long_float32_sequence_with_strong_decay_stays_finite(rng):
    n, d_k = 65_536, 16
    q, k = rng.standard_normal((2, n, d_k)).astype(np.float32)
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v = rng.standard_normal((n, 8)).astype(np.float32)
    beta, g = rng.uniform(0, 1, n).astype(np.float32), -rng.uniform(0, 20, n).astype(np.float32)
    out, (h, s) = la.least_squares_attention(q, k, v, beta, g, ridge=0.5, form="chunkwise", return_state=True)
    assert out.dtype == np.float32 and np.isfinite(out).all() and np.isfinite(h).all() and np.isfinite(s).all()
    tail = la.least_squares_attention(q[-50:], k[-50:], v[-50:], beta[-50:], g[-50:], ridge=0.5)
    assert_close(out[-10:], tail[-10:], rtol=1e-4, what="strong decay forgets the far past")


# ---- bad input ---------------------------------------------------------------------------------

def bad_cases(q, k, v, beta, g, ridge):
    nan_q = q.copy()
    nan_q[0, 0, 3, 1] = np.nan
    state = (np.zeros(LEAD + (D_K, D_K)), np.zeros(LEAD + (D_K, D_V)))
    asymmetric = np.zeros(LEAD + (D_K, D_K))
    asymmetric[..., 0, 1] = 1.0
    return [
        (dict(ridge=0.0), ValueError, "ridge"),
        (dict(ridge=-1.0), ValueError, "ridge"),
        (dict(ridge=np.full(D_K, np.nan)), ValueError, "ridge"),
        (dict(ridge=np.ones(D_K + 1)), ValueError, "ridge"),
        (dict(ridge=np.ones((2, 3, 4, D_K))), ValueError, "ridge"),
        (dict(ridge="1"), TypeError, "ridge"),
        (dict(ridge=None), TypeError, "ridge"),
        (dict(beta=beta + 1.0), ValueError, "beta"),
        (dict(beta=beta - 1.0), ValueError, "beta"),
        (dict(beta=beta[..., :-1]), ValueError, "beta"),
        (dict(g=-g), ValueError, "log_decay"),
        (dict(q=nan_q), ValueError, "q"),
        (dict(k=k * np.inf), ValueError, "k"),
        (dict(v=v * np.nan), ValueError, "v"),
        (dict(solver="lu"), ValueError, "solver"),
        (dict(cg_iterations=0), ValueError, "cg_iterations"),
        (dict(cg_iterations=2.5), TypeError, "cg_iterations"),
        (dict(form="parallel"), ValueError, "form"),
        (dict(initial_state=state[1]), TypeError, "initial_state"),
        (dict(initial_state=state[::-1]), ValueError, "initial_state"),
        (dict(initial_state=(asymmetric, state[1])), ValueError, "symmetric"),
        (dict(initial_state=(-np.broadcast_to(np.eye(D_K), LEAD + (D_K, D_K)), state[1])), ValueError,
         "positive semi-definite"),
    ]


@pytest.mark.parametrize("case", range(22))
def test_bad_input_is_named(case, rng):
    q, k, v, beta, g, ridge, _ = mesa_inputs(rng, n=8)
    change, error, name = bad_cases(q, k, v, beta, g, ridge)[case]
    args = dict(q=q, k=k, v=v, beta=beta, g=g, ridge=ridge) | change
    with pytest.raises(error, match=name):
        la.least_squares_attention(args.pop("q"), args.pop("k"), args.pop("v"), args.pop("beta"), args.pop("g"),
                                   **args)


def test_a_torch_ridge_needs_torch_inputs(rng):
    torch = pytest.importorskip("torch")
    q, k, v, beta, g, ridge, _ = mesa_inputs(rng, n=8)
    with pytest.raises(TypeError, match="ridge"):
        run(q, k, v, beta, g, torch.from_numpy(ridge))
