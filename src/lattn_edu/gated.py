"""One recurrence for the whole family: gated linear attention (chapters 8 and 11).

    S_t = diag(exp(g_t)) S_{t-1} + k_t v_tᵀ,     o_t = scale · S_tᵀ q_t          S_t [d_k, d_v]

Causal and unnormalised. The log decay g_t picks the model:

- ``None`` (g = 0): plain linear attention without its normaliser (Katharopoulos et al.);
  with an extra column of ones in v the same recurrence carries the normaliser z too;
- one scalar per step and head, [..., N]: Mamba-2 and simple GLA (a constant is RetNet);
- one vector per step, [..., N, d_k]: GLA's per-channel gates.

The functions below are the reference every backend is tested against. They take checked
arrays — q, k [..., N, d_k], v [..., N, d_v], ``log_decay`` None, [..., N] or [..., N, d_k],
a float ``scale``, ``initial_state`` None or [..., d_k, d_v] — and return ``(o, final_state)``.
Every decay factor is the exponential of a sum of log decays that is <= 0 (a *segment sum*),
so no form overflows or underflows however long the sequence or strong the decay: none of
them ever forms exp(Σ g) and its reciprocal separately.

They are written once, in the functions every array library shares (the array API standard,
through ``array-api-compat``): numpy arrays give the numpy reference, torch tensors give the
torch backend on the tensors' device. Nothing is written into an array in place (each form
collects its outputs in a list and joins them), so torch's autograd flows through every form.
"""

from __future__ import annotations

import math
from typing import Any

from array_api_compat import device

from ._checks import (array_namespace, check_bool, check_choice, check_initial_state, check_log_decay,
                      check_positive_int, check_qkv, check_scale)
from .recurrence import checks_finite, run_recurrence

GATED_FORMS = ("recurrent", "parallel", "chunkwise")


def per_key_log_decay(log_decay: Any, q: Any) -> Any:
    """log_decay as [..., N, 1] (scalar per step) or [..., N, d_k] (vector).

    None gives zeros [1, ..., 1, N, 1]: one row that broadcasts over the leading axes, so the
    decay mask of no decay is built once per chunk, not once per batch and head.
    """
    if log_decay is None:
        shape = (1,) * (q.ndim - 2) + (q.shape[-2], 1)
        return array_namespace(q).zeros(shape, dtype=q.dtype, device=device(q))
    return log_decay[..., None] if log_decay.ndim == q.ndim - 1 else log_decay


def start_state(initial_state: Any, k: Any, v: Any) -> Any:
    """The state to start from, zeros when none is given: [..., d_k, d_v]."""
    if initial_state is not None:
        return initial_state
    shape = k.shape[:-2] + (k.shape[-1], v.shape[-1])
    return array_namespace(v).zeros(shape, dtype=v.dtype, device=device(v))


def read_state(x: Any, state: Any) -> Any:
    """Sᵀx for one vector x per leading index: [..., d_k] and [..., d_k, d_v] -> [..., d_v]."""
    return (x[..., None, :] @ state)[..., 0, :]


def lower_triangle(n: int, like: Any, k: int = 0) -> Any:
    """The boolean mask of j <= i + k, [n, n], on ``like``'s device (k = -1: strictly below)."""
    xp = array_namespace(like)
    return xp.tril(xp.ones((n, n), dtype=xp.bool, device=device(like)), k=k)


def segment_sums(log_decay: Any) -> Any:
    """G[..., i, j] = Σ_{l=j+1..i} g_l for j <= i, and -inf above the diagonal: [..., N] -> [..., N, N].

    Each entry is summed directly over its own segment, never as a difference of two
    long cumulative sums (which loses digits in float32 and overflows once exponentiated).
    A NaN or +inf in ``log_decay`` is refused by name (-inf, a decay of exactly 0, is allowed).
    """
    xp = array_namespace(log_decay)
    if not bool(xp.all(log_decay < math.inf)):  # NaN < inf is False too
        raise ValueError("log_decay must hold no NaN or +inf (log decays g <= 0; -inf is a decay of 0)")
    n = log_decay.shape[-1]
    steps = xp.broadcast_to(log_decay[..., :, None], log_decay.shape + (n,))  # [..., l, j] = g_l
    steps = xp.where(lower_triangle(n, log_decay, k=-1), steps, 0.0)  # keep l > j
    sums = xp.cumulative_sum(steps, axis=-2)  # [..., i, j] = Σ_{j<l<=i} g_l
    return xp.where(lower_triangle(n, log_decay), sums, -math.inf)


def decay_mask(log_decay: Any) -> Any:
    """L[..., i, j] = Π_{l=j+1..i} exp(g_l) for j <= i, else 0: the 1-semiseparable decay mask."""
    return array_namespace(log_decay).exp(segment_sums(log_decay))


def gated_weights(q: Any, k: Any, g: Any) -> Any:
    """A[..., i, j] = Σ_r q_ir k_jr Π_{l=j+1..i} exp(g_lr) for j <= i: the masked N×N weights.

    g is [..., N, 1] (scalar decay: A = (Q Kᵀ) ⊙ L) or [..., N, d_k] (one mask per channel).
    """
    xp = array_namespace(q)
    if g.shape[-1] == 1:
        return (q @ xp.matrix_transpose(k)) * decay_mask(g[..., 0])  # [..., N, N]
    masks = decay_mask(xp.matrix_transpose(g))  # [..., d_k, N, N]
    q_r, k_r = xp.matrix_transpose(q), xp.matrix_transpose(k)  # channel r first  [..., d_k, N]
    return xp.sum(q_r[..., :, None] * k_r[..., None, :] * masks, axis=-3)  # Σ_r q_ir k_jr L^(r)_ij


def recurrent_gated_linear_attention(q: Any, k: Any, v: Any, log_decay: Any, scale: float,
                                     initial_state: Any = None,
                                     chunk_size: int | None = None) -> tuple[Any, Any]:
    """The scan itself, one token at a time: the reference for every other form."""
    xp = array_namespace(q)
    g = per_key_log_decay(log_decay, q)  # [..., N, 1 | d_k]
    state = start_state(initial_state, k, v)  # S  [..., d_k, d_v]
    outputs = []  # o_t  [..., d_v] each
    for t in range(q.shape[-2]):
        state = xp.exp(g[..., t, :, None]) * state + k[..., t, :, None] * v[..., t, None, :]
        outputs.append(scale * read_state(q[..., t, :], state))
    return xp.stack(outputs, axis=-2), state


def parallel_gated_linear_attention(q: Any, k: Any, v: Any, log_decay: Any, scale: float,
                                    initial_state: Any = None,
                                    chunk_size: int | None = None) -> tuple[Any, Any]:
    """O = scale · A V with the masked N×N weights A: the training form, O(N²)."""
    xp = array_namespace(q)
    g = per_key_log_decay(log_decay, q)  # [..., N, 1 | d_k]
    out = scale * (gated_weights(q, k, g) @ v)  # [..., N, d_v]
    decay_to_end = tail_sums(g)  # Σ_{l>j} g_l  [..., N, 1 | d_k]
    state = xp.matrix_transpose(k * xp.exp(decay_to_end)) @ v  # [..., d_k, d_v]
    if initial_state is not None:
        decay_from_start = xp.cumulative_sum(g, axis=-2)  # Σ_{l<=i} g_l  [..., N, 1 | d_k]
        out = out + scale * ((q * xp.exp(decay_from_start)) @ initial_state)
        state = state + xp.exp(decay_from_start[..., -1, :, None]) * initial_state
    return out, state


def tail_sums(g: Any) -> Any:
    """Σ_{l=j+1..N} g_l for every j, [..., N, w]: how much key j decays before the end."""
    xp = array_namespace(g)
    backwards = xp.flip(g, axis=-2)[..., :-1, :]  # g_N, ..., g_2
    later = xp.flip(xp.cumulative_sum(backwards, axis=-2), axis=-2)  # Σ_{l>j} g_l for j < N
    return xp.concat([later, xp.zeros_like(g[..., :1, :])], axis=-2)  # nothing after N


def chunkwise_gated_linear_attention(q: Any, k: Any, v: Any, log_decay: Any, scale: float,
                                     initial_state: Any = None,
                                     chunk_size: int = 64) -> tuple[Any, Any]:
    """Parallel inside chunks of C tokens, the decayed state carried between them.

    With b_t = Σ g_l over the chunk up to t (a sum inside one chunk, so it stays small):
    output = inside the chunk + (q_t ⊙ exp(b_t))ᵀ S_before;
    S_after = diag(exp(b_last)) S_before + Σ_j (k_j ⊙ exp(b_last - b_j)) v_jᵀ.
    """
    xp = array_namespace(q)
    g = per_key_log_decay(log_decay, q)  # [..., N, 1 | d_k]
    state = start_state(initial_state, k, v)  # S before the chunk  [..., d_k, d_v]
    outputs = []  # one [..., C, d_v] per chunk
    for start in range(0, q.shape[-2], chunk_size):
        chunk = slice(start, start + chunk_size)
        q_c, k_c, v_c, g_c = q[..., chunk, :], k[..., chunk, :], v[..., chunk, :], g[..., chunk, :]
        inner = gated_weights(q_c, k_c, g_c) @ v_c  # [..., C, d_v]
        decay_in = xp.cumulative_sum(g_c, axis=-2)  # b_t  [..., C, 1 | d_k]
        outputs.append(scale * (inner + (q_c * xp.exp(decay_in)) @ state))
        decay_out = tail_sums(g_c)  # b_last - b_j, summed directly  [..., C, 1 | d_k]
        state = (xp.exp(decay_in[..., -1, :, None]) * state
                 + xp.matrix_transpose(k_c * xp.exp(decay_out)) @ v_c)
    return xp.concat(outputs, axis=-2), state


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
    kernel_checks = checks_finite("gated", form, backend)
    q, k, v = check_qkv(q, k, v, causal=True, finite=not kernel_checks)
    log_decay = check_log_decay(log_decay, q, values=not kernel_checks)
    initial_state = check_initial_state(initial_state, q, v)
    return run_recurrence("gated", (q, k, v, log_decay), check_scale(scale, q.shape[-1]), form, backend,
                          chunk_size, initial_state, return_state)
