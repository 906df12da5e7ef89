"""The backward pass of gated linear attention, written by hand (chapter 12).

Forward (see :mod:`lattn_edu.gated`):  S_t = diag(exp(g_t)) S_{t-1} + k_t v_tᵀ,  o_t = scale · S_tᵀ q_t.
Given the gradient of a loss with respect to every output, dO = ∂ℓ/∂O, the gradients are

    dq_t = scale · S_t do_t                                      a forward scan over S
    dS_t = scale · q_t do_tᵀ + diag(exp(g_{t+1})) dS_{t+1}        a reverse scan over dS
    dk_t = dS_t v_t,      dv_t = dS_tᵀ k_t
    dg_t = Σ_{i>=t} (q_i ⊙ dq_i − k_i ⊙ dk_i)                    a reverse cumulative sum

With g = 0 these are the causal-product gradients of Katharopoulos et al. (2020, §3.3.1):
neither scan stores more than one [d_k, d_v] state. The chunkwise form keeps only the
state at each chunk boundary and recomputes the rest chunk by chunk, as training kernels do.

Left out on purpose: a gradient for ``initial_state`` (the forward's continuation argument)
and any torch or numba version — torch's autograd is what this module is checked against.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import (check_choice, check_log_decay, check_positive_int, check_qkv, check_scale,
                      check_sequence, is_torch_tensor)
from .gated import gated_weights, per_key_log_decay, segment_sums, start_state, tail_sums

VJP_FORMS = ("recurrent", "chunkwise")


def log_decay_gradient(q: np.ndarray, k: np.ndarray, dq: np.ndarray, dk: np.ndarray) -> np.ndarray:
    """dg_t = Σ_{i>=t} (q_i ⊙ dq_i − k_i ⊙ dk_i), per key channel: [..., N, d_k].

    g enters only through b_t = Σ_{l<=t} g_l, as q_t exp(b_t) and k_t exp(−b_t); so
    ∂ℓ/∂b_t = q_t ⊙ dq_t − k_t ⊙ dk_t, and g_t is in every b_i with i >= t.
    """
    per_step = q * dq - k * dk  # ∂ℓ/∂b_t  [..., N, d_k]
    return np.cumsum(per_step[..., ::-1, :], axis=-2)[..., ::-1, :]


def recurrent_vjp(q: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray,
                  grad_o: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """dq by a forward scan over S, dk and dv by a reverse scan over dS; g is [..., N, 1 | d_k]."""
    state = start_state(None, k, v)  # S_t  [..., d_k, d_v]
    dq = np.empty(q.shape, dtype=q.dtype)
    for t in range(q.shape[-2]):
        state = np.exp(g[..., t, :, None]) * state + k[..., t, :, None] * v[..., t, None, :]
        dq[..., t, :] = scale * np.einsum("...kv,...v->...k", state, grad_o[..., t, :])
    d_state = np.zeros_like(state)  # dS_t = ∂ℓ/∂S_t, through o_t and S_{t+1}  [..., d_k, d_v]
    dk, dv = np.empty(k.shape, dtype=k.dtype), np.empty(v.shape, dtype=v.dtype)
    decay_next = np.ones_like(g[..., 0, :, None])  # exp(g_{t+1}); nothing after the last step
    for t in reversed(range(q.shape[-2])):
        d_state = decay_next * d_state + scale * q[..., t, :, None] * grad_o[..., t, None, :]
        dk[..., t, :] = np.einsum("...kv,...v->...k", d_state, v[..., t, :])
        dv[..., t, :] = np.einsum("...kv,...k->...v", d_state, k[..., t, :])
        decay_next = np.exp(g[..., t, :, None])
    return dq, dk, dv


def _masked_products(weights: np.ndarray, x: np.ndarray, g: np.ndarray, transpose: bool) -> np.ndarray:
    """Σ_j W_ij x_jr L^(r)_ij (or, transposed, Σ_i W_ij x_ir L^(r)_ij) inside one chunk.

    W [..., C, C] is already causal; L^(r) is channel r's decay mask (one mask when g is [..., C, 1]).
    """
    if g.shape[-1] == 1:
        masked = weights * np.exp(segment_sums(g[..., 0]))  # [..., C, C]
        return (masked.swapaxes(-1, -2) if transpose else masked) @ x
    masks = np.exp(segment_sums(g.swapaxes(-1, -2)))  # [..., d_k, C, C]
    pattern = "...ij,...ir,...rij->...jr" if transpose else "...ij,...jr,...rij->...ir"
    return np.einsum(pattern, weights, x, masks)


def chunk_boundary_states(k: np.ndarray, v: np.ndarray, g: np.ndarray, chunk_size: int) -> list:
    """The state before each chunk, S_0 = 0 first: all the forward pass keeps, [..., d_k, d_v] each."""
    states = [start_state(None, k, v)]
    for start in range(0, k.shape[-2] - chunk_size, chunk_size):
        chunk = slice(start, start + chunk_size)
        g_c = g[..., chunk, :]
        decay_out = np.exp(tail_sums(g_c))  # Π_{l>j} a_l inside the chunk  [..., C, w]
        states.append(np.exp(g_c.sum(-2))[..., None] * states[-1]
                      + (k[..., chunk, :] * decay_out).swapaxes(-1, -2) @ v[..., chunk, :])
    return states


def chunkwise_vjp(q: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray, grad_o: np.ndarray,
                  scale: float, chunk_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same gradients chunk by chunk: boundary states forward, dS between chunks backward."""
    states = chunk_boundary_states(k, v, g, chunk_size)
    dq, dk, dv = np.empty_like(q), np.empty_like(k), np.empty_like(v)
    d_state = np.zeros_like(states[0])  # ∂ℓ/∂(state after this chunk)  [..., d_k, d_v]
    for index in reversed(range(len(states))):
        chunk = slice(index * chunk_size, (index + 1) * chunk_size)
        q_c, k_c, v_c, g_c = q[..., chunk, :], k[..., chunk, :], v[..., chunk, :], g[..., chunk, :]
        do_c = scale * grad_o[..., chunk, :]  # [..., C, d_v]
        decay_in = np.exp(np.cumsum(g_c, axis=-2))  # Π_{l<=t} a_l from the chunk start  [..., C, w]
        decay_out = np.exp(tail_sums(g_c))  # Π_{l>t} a_l to the chunk end  [..., C, w]
        causal = np.tri(q_c.shape[-2], dtype=q.dtype) * (do_c @ v_c.swapaxes(-1, -2))  # do_i·v_j
        dq[..., chunk, :] = (_masked_products(causal, k_c, g_c, transpose=False)
                             + decay_in * (do_c @ states[index].swapaxes(-1, -2)))
        dk[..., chunk, :] = (_masked_products(causal, q_c, g_c, transpose=True)
                             + decay_out * (v_c @ d_state.swapaxes(-1, -2)))
        dv[..., chunk, :] = (gated_weights(q_c, k_c, g_c).swapaxes(-1, -2) @ do_c
                             + (k_c * decay_out) @ d_state)
        d_state = (np.exp(g_c.sum(-2))[..., None] * d_state
                   + (q_c * decay_in).swapaxes(-1, -2) @ do_c)
    return dq, dk, dv


def check_grad_o(grad_o: Any, q: Any, v: Any, function: str = "gated_linear_attention_vjp") -> np.ndarray:
    """dO: a numpy array shaped like the output [..., N, d_v], in q's dtype, finite."""
    if is_torch_tensor(grad_o) or is_torch_tensor(q):
        raise TypeError(f"{function} is plain numpy: pass numpy arrays "
                        "(torch computes this gradient itself with autograd)")
    grad_o = check_sequence(grad_o, "grad_o")
    expected = tuple(q.shape[:-1]) + (v.shape[-1],)
    if tuple(grad_o.shape) != expected:
        raise ValueError(f"grad_o must have the output's shape {list(expected)} ([..., N, d_v]); "
                         f"got {list(grad_o.shape)}")
    if grad_o.dtype != q.dtype:
        raise TypeError(f"grad_o must have q's dtype {q.dtype}; got {grad_o.dtype}")
    return grad_o


def _reduce_to(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum a gradient over the axes its argument was broadcast along, back to ``shape``."""
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra else grad
    axes = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


def gated_linear_attention_vjp(q: Any, k: Any, v: Any, grad_o: Any, log_decay: Any = None, *,
                               scale: float | None = None, form: str = "chunkwise",
                               chunk_size: int = 64) -> tuple[np.ndarray, ...]:
    """Gradients of :func:`lattn_edu.gated_linear_attention` given ∂ℓ/∂O (a vector-Jacobian product).

    Parameters
    ----------
    q, k : array [..., N, d_k]
    v : array [..., N, d_v]
        float32 or float64 numpy arrays with equal leading (batch, head) axes.
    grad_o : array [..., N, d_v]
        ∂ℓ/∂O, the gradient of the loss with respect to the forward's output.
    log_decay : None, array [..., N] or array [..., N, d_k]
        g_t <= 0, as in the forward (leading axes of size 1 broadcast).
    scale : float, optional
        The read-out scale; None means d_k**-0.5.
    form : 'recurrent' | 'chunkwise'
        Two scans over the sequence, or chunks of ``chunk_size`` with only the boundary
        states kept from the forward pass.
    chunk_size : int

    Returns
    -------
    (dq, dk, dv) shaped like q, k, v when ``log_decay`` is None; otherwise
    (dq, dk, dv, dlog_decay) with dlog_decay shaped like the ``log_decay`` passed in — a vector
    decay [..., N, d_k] gets its gradient too, since the same reverse cumulative sum gives it
    channel by channel (a scalar decay sums it over the channels).
    """
    form = check_choice(form, "form", VJP_FORMS)
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    q, k, v = check_qkv(q, k, v, causal=True)
    grad_o = check_grad_o(grad_o, q, v)
    given_shape = None if log_decay is None else tuple(np.shape(log_decay))
    checked = check_log_decay(log_decay, q)
    scale = check_scale(scale, q.shape[-1])
    g = per_key_log_decay(checked, q)  # [..., N, 1 | d_k]
    if form == "recurrent":
        dq, dk, dv = recurrent_vjp(q, k, v, g, grad_o, scale)
    else:
        dq, dk, dv = chunkwise_vjp(q, k, v, g, grad_o, scale, chunk_size)
    if checked is None:
        return dq, dk, dv
    d_log_decay = log_decay_gradient(q, k, dq, dk)  # [..., N, d_k]
    if checked.ndim == q.ndim - 1:
        d_log_decay = d_log_decay.sum(-1)  # one g per step feeds every channel  [..., N]
    return dq, dk, dv, _reduce_to(d_log_decay, given_shape)
