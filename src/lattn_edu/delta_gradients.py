"""The backward pass of the (gated) delta rule, written by hand (chapter 12).

Forward (see :mod:`lattn_edu.delta`), one step in three parts:

    P_t = a_t S_{t-1}            a_t = exp(g_t), the decayed state
    e_t = v_t − P_tᵀ k_t         what k_t should read minus what it reads
    S_t = P_t + β_t k_t e_tᵀ,    o_t = σ S_tᵀ q_t

With D_t = ∂ℓ/∂S_t, which collects σ q_t do_tᵀ from o_t and a_{t+1}(I − β k kᵀ)D_{t+1} from
the next step, and ρ_t = D_tᵀ k_t, the reverse sweep gives

    dq_t = σ S_t do_t            dv_t = β_t ρ_t              dβ_t = e_t · ρ_t
    dk_t = β_t (D_t e_t − P_t ρ_t)                           dg_t = ⟨P_t, (I − β_t k_t k_tᵀ) D_t⟩
    D_{t-1} = σ q_{t-1} do_{t-1}ᵀ + a_t (I − β_t k_t k_tᵀ) D_t

Unlike gated linear attention (:mod:`lattn_edu.gradients`) the sweep needs S_{t−1} at every
step, and S_{t−1} cannot be recovered from S_t: I − β k kᵀ is singular at β = 1. The
recurrent form stores all N states; the chunkwise form keeps only the state at each chunk
boundary, computed by the forward's chunked (UT-transform) algorithm, and recomputes one
chunk's states at a time during the sweep, so it holds N/C + C states instead of N.

Left out on purpose, as in :mod:`lattn_edu.gradients`: a gradient for ``initial_state`` and
any torch version (torch's autograd is what this module is checked against).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import check_beta, check_choice, check_log_decay, check_positive_int, check_qkv, check_scale
from .delta import chunkwise_delta_rule
from .gated import start_state
from .gradients import VJP_FORMS, _reduce_to, check_grad_o


def stretch_states(k: np.ndarray, v: np.ndarray, beta: np.ndarray, g: np.ndarray,
                   state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Replay the forward from ``state``: S_{t−1} before each step and the errors e_t.

    k [..., C, d_k], v [..., C, d_v], beta and g [..., C]; returns [..., C, d_k, d_v], [..., C, d_v].
    """
    before = np.empty(k.shape[:-1] + (k.shape[-1], v.shape[-1]), dtype=k.dtype)
    errors = np.empty(v.shape, dtype=v.dtype)
    for t in range(k.shape[-2]):
        before[..., t, :, :] = state
        state = np.exp(g[..., t, None, None]) * state  # P_t
        errors[..., t, :] = v[..., t, :] - np.einsum("...k,...kv->...v", k[..., t, :], state)
        state = state + k[..., t, :, None] * (beta[..., t, None] * errors[..., t, :])[..., None, :]
    return before, errors


def reverse_sweep(q, k, beta, g, scaled_do, before, errors, d_state) -> tuple[np.ndarray, ...]:
    """The sweep over one stretch, from its last step to its first.

    ``scaled_do`` is σ dO [..., C, d_v]; ``d_state`` is ∂ℓ/∂(state after the stretch). Returns
    dq, dk, dv, dβ, dg for the stretch and ∂ℓ/∂(state before it).
    """
    dq, dk, dv = np.empty(q.shape, q.dtype), np.empty(k.shape, k.dtype), np.empty(errors.shape, q.dtype)
    d_beta, d_g = np.empty(beta.shape, q.dtype), np.empty(beta.shape, q.dtype)
    for t in reversed(range(q.shape[-2])):
        k_t, e_t, b_t = k[..., t, :], errors[..., t, :], beta[..., t, None]  # [..., d_k | d_v | 1]
        decay = np.exp(g[..., t, None, None])
        p = decay * before[..., t, :, :]  # P_t  [..., d_k, d_v]
        s = p + k_t[..., :, None] * (b_t * e_t)[..., None, :]  # S_t
        d_state = d_state + q[..., t, :, None] * scaled_do[..., t, None, :]  # D_t
        rho = np.einsum("...kv,...k->...v", d_state, k_t)  # ρ_t = D_tᵀ k_t  [..., d_v]
        dq[..., t, :] = np.einsum("...kv,...v->...k", s, scaled_do[..., t, :])
        dv[..., t, :] = b_t * rho
        d_beta[..., t] = np.einsum("...v,...v->...", e_t, rho)
        through_write = np.einsum("...kv,...v->...k", d_state, e_t)  # D_t e_t  [..., d_k]
        through_read = np.einsum("...kv,...v->...k", p, rho)  # P_t ρ_t
        dk[..., t, :] = b_t * (through_write - through_read)
        d_p = d_state - k_t[..., :, None] * (b_t * rho)[..., None, :]  # (I − β k kᵀ) D_t
        d_g[..., t] = np.einsum("...kv,...kv->...", d_p, p)
        d_state = decay * d_p  # D_{t−1}
    return dq, dk, dv, d_beta, d_g, d_state


def boundary_states(q, k, v, beta, g, scale: float, chunk_size: int) -> list:
    """The state before each chunk, S_0 = 0 first, from the forward's chunked algorithm."""
    states = [start_state(None, k, v)]
    for start in range(0, k.shape[-2] - chunk_size, chunk_size):
        chunk = slice(start, start + chunk_size)
        _, after = chunkwise_delta_rule(q[..., chunk, :], k[..., chunk, :], v[..., chunk, :],
                                        beta[..., chunk], g[..., chunk], scale, states[-1], chunk_size)
        states.append(after)
    return states


def delta_vjp(q, k, v, beta, g, grad_o, scale: float, form: str, chunk_size: int) -> tuple[np.ndarray, ...]:
    """dq, dk, dv, dβ, dg of the checked inputs; the recurrent form is one stretch of N steps."""
    if form == "recurrent":
        chunk_size = q.shape[-2]
    states = boundary_states(q, k, v, beta, g, scale, chunk_size)
    grads = [np.empty(x.shape, q.dtype) for x in (q, k, v, beta, g)]
    d_state = np.zeros_like(states[0])  # ∂ℓ/∂(state after the chunk)  [..., d_k, d_v]
    for index in reversed(range(len(states))):
        chunk = slice(index * chunk_size, (index + 1) * chunk_size)
        k_c, beta_c, g_c = k[..., chunk, :], beta[..., chunk], g[..., chunk]
        before, errors = stretch_states(k_c, v[..., chunk, :], beta_c, g_c, states[index])
        *chunk_grads, d_state = reverse_sweep(q[..., chunk, :], k_c, beta_c, g_c, scale * grad_o[..., chunk, :],
                                              before, errors, d_state)
        for grad, part in zip(grads, chunk_grads):  # per-step grads [..., C], the rest [..., C, d]
            grad[(..., chunk) if part.ndim == beta_c.ndim else (..., chunk, slice(None))] = part
    return tuple(grads)


def delta_rule_vjp(q: Any, k: Any, v: Any, beta: Any, grad_o: Any, log_decay: Any = None, *,
                   scale: float | None = None, form: str = "recurrent",
                   chunk_size: int = 64) -> tuple[np.ndarray, ...]:
    """Gradients of :func:`lattn_edu.delta_rule` given ∂ℓ/∂O (a vector-Jacobian product).

    Parameters
    ----------
    q, k : array [..., N, d_k]
    v : array [..., N, d_v]
        float32 or float64 numpy arrays with equal leading (batch, head) axes.
    beta : array [..., N]
        Step sizes in [0, 2], as in the forward (leading axes of size 1 broadcast).
    grad_o : array [..., N, d_v]
        ∂ℓ/∂O, the gradient of the loss with respect to the forward's output.
    log_decay : None or array [..., N]
        g_t <= 0 (Gated DeltaNet); None is DeltaNet.
    scale : float, optional
        The read-out scale; None means d_k**-0.5.
    form : 'recurrent' | 'chunkwise'
        One reverse sweep over all N stored states, or chunks of ``chunk_size`` whose states
        are recomputed from the boundary states of the forward's chunked algorithm.
    chunk_size : int

    Returns
    -------
    (dq, dk, dv, dbeta) shaped like q, k, v, beta when ``log_decay`` is None; otherwise
    (dq, dk, dv, dbeta, dlog_decay), dlog_decay shaped like the ``log_decay`` passed in.
    """
    form = check_choice(form, "form", VJP_FORMS)
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    q, k, v = check_qkv(q, k, v, causal=True)
    grad_o = check_grad_o(grad_o, q, v, "delta_rule_vjp")
    given = {"beta": tuple(np.shape(beta)), "log_decay": None if log_decay is None else tuple(np.shape(log_decay))}
    beta = check_beta(beta, q)
    if np.ndim(log_decay) == q.ndim:  # the hand-written sweep carries one decay per step
        raise ValueError(f"log_decay must have shape [..., N] (one log decay per step) or be None in "
                         f"delta_rule_vjp; got {list(np.shape(log_decay))}: a per-key-channel log decay (KDA) "
                         f"has no hand-written gradient here, differentiate la.delta_rule(..., backend='torch') "
                         f"with autograd instead")
    checked_decay = check_log_decay(log_decay, q, vector=False)
    g = np.zeros(beta.shape, q.dtype) if checked_decay is None else checked_decay  # [..., N]
    dq, dk, dv, d_beta, d_g = delta_vjp(q, k, v, beta, g, grad_o, check_scale(scale, q.shape[-1]), form,
                                        chunk_size)
    grads = (dq, dk, dv, _reduce_to(d_beta, given["beta"]))
    return grads if checked_decay is None else grads + (_reduce_to(d_g, given["log_decay"]),)
