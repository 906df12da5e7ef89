"""la.implicit_step_size (chapter 14): the delta rule with β / (1 + β‖k‖²) is the implicit
(proximal) step, each token's argmin solved here directly with np.linalg.solve."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la


def proximal_steps(s: np.ndarray, k: np.ndarray, v: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """argmin_S ½‖S − S_prev‖² + (β/2)‖Sᵀk − v‖² token by token: (I + β k kᵀ) S = S_prev + β k vᵀ."""
    eye = np.eye(len(s))
    for k_t, v_t, b_t in zip(k, v, beta):
        s = np.linalg.solve(eye + b_t * np.outer(k_t, k_t), s + b_t * np.outer(k_t, v_t))
    return s


def keys_of_norm(rng, shape, low=0.75, high=1.4):
    """Keys with norms in [low, high]: not unit, yet β/(1 + β‖k‖²) <= 1/‖k‖² stays within delta's 2."""
    k = rng.standard_normal(shape)
    return k / np.linalg.norm(k, axis=-1, keepdims=True) * rng.uniform(low, high, shape[:-1] + (1,))


@pytest.mark.parametrize("form", ["recurrent", "chunkwise"])
def test_delta_rule_with_the_implicit_step_is_the_proximal_argmin(form):
    rng = np.random.default_rng(14)
    n, d_k, d_v = 45, 7, 5
    k, q = keys_of_norm(rng, (2, 3, n, d_k)), rng.standard_normal((2, 3, n, d_k))
    v = rng.standard_normal((2, 3, n, d_v))
    beta = rng.uniform(0, 6, (2, 3, n))  # any β >= 0, far past the explicit step's 2
    start = rng.standard_normal((2, 3, d_k, d_v))
    steps = la.implicit_step_size(beta, k)  # [B, H, N]
    o, final = la.delta_rule(q, k, v, steps, scale=1.0, form=form, chunk_size=16, initial_state=start,
                             return_state=True)
    for b in range(2):
        for h in range(3):
            np.testing.assert_allclose(final[b, h], proximal_steps(start[b, h], k[b, h], v[b, h], beta[b, h]),
                                       rtol=1e-10, atol=1e-12)
            t = 30  # the output of step t reads the argmin after t + 1 tokens
            after = proximal_steps(start[b, h], k[b, h, :t + 1], v[b, h, :t + 1], beta[b, h, :t + 1])
            np.testing.assert_allclose(o[b, h, t], after.T @ q[b, h, t], rtol=1e-10, atol=1e-12)


def test_the_step_never_overshoots_and_tends_to_the_overwrite():
    rng = np.random.default_rng(3)
    k = keys_of_norm(rng, (63, 9), 0.2, 3.0)
    beta = np.concatenate([rng.uniform(0, 50, 62), [1e12]])
    steps = la.implicit_step_size(beta, k)
    squared = np.sum(k * k, axis=-1)
    np.testing.assert_allclose(steps, beta / (1 + beta * squared), rtol=1e-14)
    assert np.all(steps * squared < 1)  # I − β̂ k kᵀ keeps every eigenvalue in (0, 1]
    np.testing.assert_allclose(steps[-1] * squared[-1], 1, rtol=1e-10)  # β → ∞: the exact overwrite
    np.testing.assert_array_equal(la.implicit_step_size(np.zeros(63), k), 0)
    np.testing.assert_allclose(la.implicit_step_size([1.0] * 5, np.ones((5, 3))), 0.25)  # a list: 1 / (1 + 3)


def test_torch_in_torch_out_with_gradients():
    torch = pytest.importorskip("torch")
    k = torch.randn(2, 11, 4, dtype=torch.float64)
    beta = torch.rand(2, 11, dtype=torch.float64, requires_grad=True)
    steps = la.implicit_step_size(beta, k)
    assert isinstance(steps, torch.Tensor) and steps.dtype == torch.float64 and steps.shape == (2, 11)
    expected = la.implicit_step_size(beta.detach().numpy(), k.numpy())
    np.testing.assert_allclose(steps.detach().numpy(), expected, rtol=1e-14)
    assert torch.autograd.gradcheck(lambda b: la.implicit_step_size(b, k), (beta,))
    f32 = la.implicit_step_size(np.ones((5,), np.float32), np.ones((5, 3), np.float32))
    assert f32.dtype == np.float32


@pytest.mark.parametrize("beta, k, error, match", [
    (-np.ones(5), np.ones((5, 3)), ValueError, r"beta must be >= 0"),
    (np.ones(4), np.ones((5, 3)), ValueError, r"beta must have shape \[5\]"),
    (np.array([1, 1, np.nan, 1, 1.0]), np.ones((5, 3)), ValueError, "beta must be finite"),
    (np.ones(5), np.full((5, 3), np.inf), ValueError, "k must be finite"),
    (np.ones(5), np.ones(3), ValueError, r"k must have shape \[\.\.\., N, d\]"),
    (np.ones(5), np.ones((5, 3), dtype=int), TypeError, "k must have dtype float32 or float64"),
    (np.ones(5, np.float32), np.ones((5, 3)), TypeError, "beta must be a ndarray of k's dtype float64"),
], ids=["negative", "shape", "nan beta", "inf k", "1-d k", "int k", "dtype"])
def test_bad_input_is_named(beta, k, error, match):
    with pytest.raises(error, match=match):
        la.implicit_step_size(beta, k)
