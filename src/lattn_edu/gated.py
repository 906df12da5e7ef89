"""One recurrence for the whole family: gated linear attention (chapters 8 and 11).

    S_t = diag(exp(g_t)) S_{t-1} + k_t v_tᵀ,     o_t = scale · S_tᵀ q_t          S_t [d_k, d_v]

Causal and unnormalised. The log decay g_t picks the model:

- ``None`` (g = 0): plain linear attention without its normaliser (Katharopoulos et al.);
  with an extra column of ones in v the same recurrence carries the normaliser z too;
- one scalar per step and head, [..., N]: Mamba-2 and simple GLA (a constant is RetNet);
- one vector per step, [..., N, d_k]: GLA's per-channel gates.

The numpy functions below are the reference every backend is tested against. They take
checked arrays — q, k [..., N, d_k], v [..., N, d_v], ``log_decay`` None, [..., N] or
[..., N, d_k], a float ``scale``, ``initial_state`` None or [..., d_k, d_v] — and return
``(o, final_state)``. Every decay factor is the exponential of a sum of log decays that is
<= 0 (a *segment sum*), so no form overflows or underflows however long the sequence or
strong the decay: none of them ever forms exp(Σ g) and its reciprocal separately.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import (check_bool, check_choice, check_finite, check_initial_state, check_log_decay,
                      check_positive_int, check_qkv, check_scale)

GATED_FORMS = ("recurrent", "parallel", "chunkwise")


def per_key_log_decay(log_decay: np.ndarray | None, q: np.ndarray) -> np.ndarray:
    """log_decay as [..., N, 1] (scalar per step) or [..., N, d_k] (vector), zeros for None."""
    if log_decay is None:
        return np.zeros(q.shape[:-1] + (1,), dtype=q.dtype)
    return log_decay[..., None] if log_decay.ndim == q.ndim - 1 else log_decay


def start_state(initial_state: np.ndarray | None, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """A fresh copy of the state to start from, zeros when none is given: [..., d_k, d_v]."""
    if initial_state is None:
        return np.zeros(k.shape[:-2] + (k.shape[-1], v.shape[-1]), dtype=v.dtype)
    return np.array(initial_state, dtype=v.dtype)


def segment_sums(log_decay: np.ndarray) -> np.ndarray:
    """G[..., i, j] = Σ_{l=j+1..i} g_l for j <= i, and -inf above the diagonal: [..., N] -> [..., N, N].

    Each entry is summed directly over its own segment, never as a difference of two
    long cumulative sums (which loses digits in float32 and overflows once exponentiated).
    A NaN or +inf in ``log_decay`` is refused by name (-inf, a decay of exactly 0, is allowed).
    """
    if not np.max(log_decay, initial=-np.inf) < np.inf:  # max carries a NaN through; NaN < inf is False
        raise ValueError("log_decay must hold no NaN or +inf (log decays g <= 0; -inf is a decay of 0)")
    n = log_decay.shape[-1]
    steps = np.broadcast_to(log_decay[..., :, None], log_decay.shape + (n,))  # [..., l, j] = g_l
    steps = np.where(np.tri(n, k=-1, dtype=bool), steps, 0)  # keep l > j
    sums = np.cumsum(steps, axis=-2)  # [..., i, j] = Σ_{j<l<=i} g_l
    return np.where(np.tri(n, dtype=bool), sums, -np.inf)


def decay_mask(log_decay: np.ndarray) -> np.ndarray:
    """L[..., i, j] = Π_{l=j+1..i} exp(g_l) for j <= i, else 0: the 1-semiseparable decay mask."""
    return np.exp(segment_sums(log_decay))


def gated_weights(q: np.ndarray, k: np.ndarray, g: np.ndarray) -> np.ndarray:
    """A[..., i, j] = Σ_r q_ir k_jr Π_{l=j+1..i} exp(g_lr) for j <= i: the masked N×N weights.

    g is [..., N, 1] (scalar decay: A = (Q Kᵀ) ⊙ L) or [..., N, d_k] (one mask per channel).
    """
    if g.shape[-1] == 1:
        return (q @ k.swapaxes(-1, -2)) * decay_mask(g[..., 0])  # [..., N, N]
    masks = decay_mask(g.swapaxes(-1, -2))  # [..., d_k, N, N]
    return np.einsum("...ir,...jr,...rij->...ij", q, k, masks)


def recurrent_gated_linear_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                                     log_decay: np.ndarray | None, scale: float,
                                     initial_state: np.ndarray | None = None,
                                     chunk_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The scan itself, one token at a time: the reference for every other form."""
    g = per_key_log_decay(log_decay, q)  # [..., N, 1 | d_k]
    state = start_state(initial_state, k, v)  # S  [..., d_k, d_v]
    out = np.empty(v.shape, dtype=v.dtype)  # [..., N, d_v]
    for t in range(q.shape[-2]):
        state = np.exp(g[..., t, :, None]) * state + k[..., t, :, None] * v[..., t, None, :]
        out[..., t, :] = scale * np.einsum("...k,...kv->...v", q[..., t, :], state)
    return out, state


def parallel_gated_linear_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                                    log_decay: np.ndarray | None, scale: float,
                                    initial_state: np.ndarray | None = None,
                                    chunk_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """O = scale · A V with the masked N×N weights A: the training form, O(N²)."""
    g = per_key_log_decay(log_decay, q)  # [..., N, 1 | d_k]
    out = scale * (gated_weights(q, k, g) @ v)  # [..., N, d_v]
    decay_to_end = _tail_sums(g)  # Σ_{l>j} g_l  [..., N, 1 | d_k]
    state = (k * np.exp(decay_to_end)).swapaxes(-1, -2) @ v  # [..., d_k, d_v]
    if initial_state is not None:
        decay_from_start = np.cumsum(g, axis=-2)  # Σ_{l<=i} g_l  [..., N, 1 | d_k]
        out += scale * ((q * np.exp(decay_from_start)) @ initial_state)
        state += np.exp(decay_from_start[..., -1, :, None]) * initial_state
    return out, state


def _tail_sums(g: np.ndarray) -> np.ndarray:
    """Σ_{l=j+1..N} g_l for every j, [..., N, w]: how much key j decays before the end."""
    later = np.cumsum(g[..., :0:-1, :], axis=-2)[..., ::-1, :]  # Σ_{l>j} g_l for j < N
    return np.concatenate([later, np.zeros_like(g[..., :1, :])], axis=-2)  # nothing after N


def chunkwise_gated_linear_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                                     log_decay: np.ndarray | None, scale: float,
                                     initial_state: np.ndarray | None = None,
                                     chunk_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Parallel inside chunks of C tokens, the decayed state carried between them.

    With b_t = Σ g_l over the chunk up to t (a sum inside one chunk, so it stays small):
    output = inside the chunk + (q_t ⊙ exp(b_t))ᵀ S_before;
    S_after = diag(exp(b_last)) S_before + Σ_j (k_j ⊙ exp(b_last - b_j)) v_jᵀ.
    """
    g = per_key_log_decay(log_decay, q)  # [..., N, 1 | d_k]
    state = start_state(initial_state, k, v)  # S before the chunk  [..., d_k, d_v]
    out = np.empty(v.shape, dtype=v.dtype)
    for start in range(0, q.shape[-2], chunk_size):
        chunk = slice(start, start + chunk_size)
        q_c, k_c, v_c, g_c = q[..., chunk, :], k[..., chunk, :], v[..., chunk, :], g[..., chunk, :]
        inner = gated_weights(q_c, k_c, g_c) @ v_c  # [..., C, d_v]
        decay_in = np.cumsum(g_c, axis=-2)  # b_t  [..., C, 1 | d_k]
        out[..., chunk, :] = scale * (inner + (q_c * np.exp(decay_in)) @ state)
        decay_out = _tail_sums(g_c)  # b_last - b_j, summed directly  [..., C, 1 | d_k]
        state = (np.exp(decay_in[..., -1, :, None]) * state
                 + (k_c * np.exp(decay_out)).swapaxes(-1, -2) @ v_c)
    return out, state


def run_recurrence(family: str, q: Any, k: Any, v: Any, gates: tuple, scale: Any, form: str,
                   backend: str, chunk_size: int, initial_state: Any, return_state: bool) -> Any:
    """Shared by :func:`gated_linear_attention` and :func:`~lattn_edu.delta_rule`: convert to the
    backend, run its form of ``family`` ('gated' or 'delta'), check the output, convert back."""
    from .backends import get_backend

    kernels = get_backend(backend)
    forms = kernels.GATED_FORMS if family == "gated" else kernels.DELTA_FORMS
    *arrays, restore = kernels.to_backend(q, k, v, *gates, initial_state)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported just below
        out, state = forms[form](*arrays[:-1], scale, arrays[-1], chunk_size)
    check_finite_result(out, state)
    return (restore(out), restore(state)) if return_state else restore(out)


def check_finite_result(out: Any, state: Any) -> None:
    """No silent NaN: with finite inputs and decays <= 0 only an overflow can make one."""
    try:
        check_finite(out, "out")
        check_finite(state, "final_state")
    except ValueError:
        raise ValueError("the recurrence overflowed (the output or the state holds inf or NaN): "
                         "q, k or v are too large for their dtype; rescale them or use float64") from None


def gated_linear_attention(q: Any, k: Any, v: Any, log_decay: Any = None, *, scale: float | None = None,
                           form: str = "chunkwise", backend: str = "numpy", chunk_size: int = 64,
                           initial_state: Any = None, return_state: bool = False) -> Any:
    """Causal, unnormalised linear attention with a decaying state.

    S_t = diag(exp(g_t)) S_{t-1} + k_t v_tᵀ,  o_t = scale · S_tᵀ q_t.

    Parameters
    ----------
    q, k : array [..., N, d_k]
    v : array [..., N, d_v]
        float32 or float64, numpy arrays (or torch tensors with ``backend='torch'``), with
        equal leading (batch, head) axes.
    log_decay : None, array [..., N] or array [..., N, d_k]
        g_t <= 0. None: no decay (plain linear attention). [..., N]: one decay per step and
        head (Mamba-2, simple GLA; a constant is RetNet's γ). [..., N, d_k]: one per key
        channel (GLA). Leading axes of size 1 broadcast.
    scale : float, optional
        Read-out scale; None means d_k**-0.5.
    form : 'recurrent' | 'parallel' | 'chunkwise'
        The scan, the masked N×N form, or chunks of ``chunk_size`` with the state between them.
    backend : 'numpy' | 'numba' | 'torch'
    chunk_size : int
    initial_state : array [..., d_k, d_v], optional
        The state S_0 to continue from (zeros when None).
    return_state : bool
        Also return the final state S_N, which continues the sequence exactly.

    Returns
    -------
    o : array [..., N, d_v], or ``(o, final_state)`` with final_state [..., d_k, d_v].
    """
    form = check_choice(form, "form", GATED_FORMS)
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    return_state = check_bool(return_state, "return_state")
    q, k, v = check_qkv(q, k, v, causal=True)
    log_decay = check_log_decay(log_decay, q)
    initial_state = check_initial_state(initial_state, q, v)
    return run_recurrence("gated", q, k, v, (log_decay,), check_scale(scale, q.shape[-1]), form,
                          backend, chunk_size, initial_state, return_state)
