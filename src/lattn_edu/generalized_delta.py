"""The generalised delta rule: a diagonal-plus-low-rank transition (chapter 13, RWKV-7).

    S_t = (diag(exp(g_t)) + a_t b_tᵀ) S_{t-1} + k_t v_tᵀ,     o_t = scale · S_tᵀ q_t

A_t = diag(exp g_t) + a_t b_tᵀ, B_t = k_t v_tᵀ: each step decays every key channel, reads the
state along b_t (b_tᵀ S_{t-1}) and writes what it read back along a_t. RWKV-7 "Goose" (Peng et
al. 2025, arXiv 2503.14456) uses it with a = κ̂ ⊙ a_rwkv and b = −κ̂ (a unit key κ̂, an
in-context learning rate a_rwkv in [0, 1]^d_k), flash-linear-attention calls it DPLR, and with
no decay (g = 0) IPLR, identity plus low rank. Earlier models are special cases:

- DeltaNet: a = −β k, b = k, and k scaled to β k (the write β k vᵀ);
- Gated DeltaNet: a = −exp(g) β k, b = k, a scalar g per step (the decay comes first);
- Kimi Delta Attention: a = −β k, b = exp(g) ⊙ k, a vector g per step, since
  (I − β k kᵀ) diag(exp g) = diag(exp g) − β k (exp(g) ⊙ k)ᵀ.

The chunkwise form follows the UT transform of the delta rule (:mod:`lattn_edu.delta`): inside
a chunk, what step i reads, u_i = b_iᵀ S_{i-1}, depends linearly on the u_j before it, so all
C of them come from one triangular solve; after that the chunk is gated linear attention with
two kinds of keys, (a_j, u_j) and (k_j, v_j). Every decay factor is the exponential of a
segment sum of log decays (<= 0), so no form overflows however long or strongly decayed the
sequence; per-channel decays make the chunk's masks [..., d_k, C, C], fine for a reference.
"""

from __future__ import annotations

import math
from typing import Any

from array_api_compat import device

from ._checks import (array_namespace, check_bool, check_choice, check_initial_state, check_log_decay,
                      check_per_step, check_positive_int, check_qkv, check_scale)
from .gated import per_key_log_decay, read_state, segment_sums, start_state
from .recurrence import run_recurrence

GENERALIZED_DELTA_FORMS = ("recurrent", "chunkwise")


def recurrent_generalized_delta_rule(q: Any, k: Any, v: Any, a: Any, b: Any, log_decay: Any, scale: float,
                                     initial_state: Any = None,
                                     chunk_size: int | None = None) -> tuple[Any, Any]:
    """One token at a time: decay, read along b_t, write that back along a_t, add k_t v_tᵀ."""
    xp = array_namespace(q)
    g = per_key_log_decay(log_decay, q)  # [..., N, 1 | d_k]
    state = start_state(initial_state, k, v)  # S  [..., d_k, d_v]
    outputs = []  # o_t  [..., d_v] each
    for t in range(q.shape[-2]):
        read = read_state(b[..., t, :], state)  # b_tᵀ S_{t-1}  [..., d_v]
        state = (xp.exp(g[..., t, :, None]) * state + a[..., t, :, None] * read[..., None, :]
                 + k[..., t, :, None] * v[..., t, None, :])
        outputs.append(scale * read_state(q[..., t, :], state))
    return xp.stack(outputs, axis=-2), state


def decayed_products(x: Any, y: Any, mask: Any) -> Any:
    """W[..., i, j] = Σ_r x_ir y_jr L[..., r, i, j]: x, y [..., C, d] and decay masks L
    [..., 1 | d, C, C] (one for all channels, or one per channel) -> [..., C, C]."""
    xp = array_namespace(x)
    if mask.shape[-3] == 1:
        return (x @ xp.matrix_transpose(y)) * mask[..., 0, :, :]
    x_r, y_r = xp.matrix_transpose(x), xp.matrix_transpose(y)  # channel r first  [..., d, C]
    return xp.sum(x_r[..., :, None] * y_r[..., None, :] * mask, axis=-3)


def solve_unit_lower(m: Any, r: Any) -> Any:
    """X with (I − M) X = R for a strictly lower triangular M [..., C, C] and R [..., C, d].

    Torch has the triangular solve (one call, and autograd keeps only X); the array API
    has only the general solve, whose LU of a triangular matrix is as exact.
    """
    xp = array_namespace(m)
    system = xp.eye(m.shape[-1], dtype=m.dtype, device=device(m)) - m
    if hasattr(xp.linalg, "solve_triangular"):  # torch
        return xp.linalg.solve_triangular(system, r, upper=False, unitriangular=True)
    return xp.linalg.solve(system, r)


def chunkwise_generalized_delta_rule(q: Any, k: Any, v: Any, a: Any, b: Any, log_decay: Any, scale: float,
                                     initial_state: Any = None, chunk_size: int = 64) -> tuple[Any, Any]:
    """Chunks of C tokens: one triangular solve finds every read u_i = b_iᵀ S_{i-1} of a chunk.

    With G[r, i, j] = Σ_{l=j+1..i} g_lr and γ_i = Σ_{l<=i} g_l inside the chunk, S the state
    before it, and M_xy[i, j] = Σ_r x_ir y_jr exp(G[r, i, j]) (M⁻_xy: exp(G[r, i−1, j]), the decay
    from write j to read i, j < i only), unrolling the recurrence gives
    (I − M⁻_ba) U = M⁻_bk V + (B ⊙ exp γ_{i−1}) S,
    O = scale · ((Q ⊙ exp γ) S + M_qa U + M_qk V),
    S_after = diag(exp γ_C) S + (A ⊙ exp(γ_C − γ))ᵀ U + (K ⊙ exp(γ_C − γ))ᵀ V.
    """
    xp = array_namespace(q)
    g = per_key_log_decay(log_decay, q)  # [..., N, 1 | d_k]
    state = start_state(initial_state, k, v)  # S before the chunk  [..., d_k, d_v]
    outputs = []  # one [..., C, d_v] per chunk
    for start in range(0, q.shape[-2], chunk_size):
        chunk = slice(start, start + chunk_size)
        q_c, k_c, v_c, a_c, b_c = (x[..., chunk, :] for x in (q, k, v, a, b))  # [..., C, ·]
        g_c = g[..., chunk, :]  # [..., C, 1 | d_k]
        seg = segment_sums(xp.matrix_transpose(g_c))  # G: Σ_{l=j+1..i} g_l  [..., 1 | d_k, C, C]
        none = xp.full(seg.shape[:-2] + (1, seg.shape[-1]), -math.inf, dtype=q.dtype, device=device(q))
        mask, mask_before = xp.exp(seg), xp.exp(xp.concat([none, seg[..., :-1, :]], axis=-2))  # G[i−1, j]
        gamma = xp.cumulative_sum(g_c, axis=-2)  # γ_i  [..., C, 1 | d_k]
        gamma_before = xp.concat([xp.zeros_like(gamma[..., :1, :]), gamma[..., :-1, :]], axis=-2)  # γ_{i-1}
        # (I − M⁻_ba) U = M⁻_bk V + (B ⊙ exp γ_{i−1}) S: the reads u_i = b_iᵀ S_{i−1}  [..., C, d_v]
        reads_in = decayed_products(b_c, k_c, mask_before) @ v_c + (b_c * xp.exp(gamma_before)) @ state
        u = solve_unit_lower(decayed_products(b_c, a_c, mask_before), reads_in)
        outputs.append(scale * ((q_c * xp.exp(gamma)) @ state + decayed_products(q_c, a_c, mask) @ u
                                + decayed_products(q_c, k_c, mask) @ v_c))
        decay_out = xp.matrix_transpose(mask[..., :, -1, :])  # exp(γ_C − γ_j)  [..., C, 1 | d_k]
        state = (xp.exp(gamma[..., -1, :, None]) * state + xp.matrix_transpose(a_c * decay_out) @ u
                 + xp.matrix_transpose(k_c * decay_out) @ v_c)
    return xp.concat(outputs, axis=-2), state


def generalized_delta_rule(q: Any, k: Any, v: Any, a: Any, b: Any, log_decay: Any = None, *,
                           scale: float | None = None, form: str = "chunkwise", backend: str = "numpy",
                           chunk_size: int = 64, initial_state: Any = None,
                           return_state: bool = False) -> Any:
    """The generalised delta rule, diagonal plus low rank (RWKV-7; fla's DPLR and IPLR).

    S_t = (diag(exp g_t) + a_t b_tᵀ) S_{t−1} + k_t v_tᵀ,  o_t = scale · S_tᵀ q_t.

    flash-linear-attention writes the same step as exp(g) ⊙ S + b (aᵀ S): its ``a`` is our
    ``b`` (the read) and its ``b`` our ``a`` (the write).

    Stability. If every ‖A_t‖₂ <= 1 the state never grows faster than the writes add to it
    (‖S_t‖ <= ‖S_{t−1}‖ + ‖k_t‖‖v_t‖). Cases where this holds (d = exp(g) in (0, 1]):

    - a = −c k̂, b = k̂ with ‖k̂‖ = 1 (DeltaNet, and RWKV-7 with an a_rwkv equal in every
      channel): A = diag(d) − c k̂k̂ᵀ is symmetric with eigenvalues in [min d − c, max d], so
      ‖A‖₂ <= 1 for 0 <= c <= 1 + min d (c <= 2 without decay).
    - RWKV-7 with a per-channel a_rwkv in [0, 1]^d_k, A = diag(d) − (a_rwkv ⊙ k̂) k̂ᵀ, is similar
      (by diag(a_rwkv)^½) to diag(d) − u uᵀ with u = √a_rwkv ⊙ k̂, ‖u‖ <= 1: its eigenvalues lie
      in [−1, 1], but ‖A‖₂ can exceed 1 (d = 0.99, a_rwkv = (1, 0), k̂ = (1, 1)/√2 gives 1.13),
      and products of such steps can grow (a_rwkv = (1, 0), k̂ = (1, 2)/√5 alternating with
      a_rwkv = (0, 1), k̂ = (2, 1)/√5 at d = 0.99 multiplies the state by 1.22 every two steps):
      RWKV-7's parametrisation bounds each step's spectrum, not the state.

    An exact test of ‖A_t‖₂ <= 1 would be cheap (I − A_tᵀA_t is a diagonal minus a rank-2
    matrix: O(d_k) per step), but it would refuse RWKV-7's own transitions, so no transition is
    refused: a state that does overflow is reported (a ValueError, never a NaN).

    Parameters
    ----------
    q, k : array [..., N, d_k]
    v : array [..., N, d_v]
    a, b : array [..., N, d_k]
        The low-rank part a_t b_tᵀ: b_t reads the state, a_t writes what it read.
    log_decay : None, array [..., N] or array [..., N, d_k]
        g_t <= 0, one per step (all channels) or per key channel; None is IPLR (no decay).
    scale : float, optional
        Read-out scale; None means d_k**-0.5.
    form : 'recurrent' | 'chunkwise'
        The scan, or chunks whose reads come from one triangular solve each.
    backend : 'numpy' | 'torch'
        The reference backends; 'numba' has no kernel for this model and is refused.
    chunk_size : int
    initial_state : array [..., d_k, d_v], optional
    return_state : bool

    Returns
    -------
    o : array [..., N, d_v], or ``(o, final_state)`` with final_state [..., d_k, d_v].
    """
    form = check_choice(form, "form", GENERALIZED_DELTA_FORMS)
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    return_state = check_bool(return_state, "return_state")
    q, k, v = check_qkv(q, k, v, causal=True)
    a = check_per_step(a, "a", q, ("vector",), "write vector a_t of d_k entries")
    b = check_per_step(b, "b", q, ("vector",), "read vector b_t of d_k entries")
    log_decay = check_log_decay(log_decay, q)
    initial_state = check_initial_state(initial_state, q, v)
    return run_recurrence("generalized_delta", (q, k, v, a, b, log_decay), check_scale(scale, q.shape[-1]),
                          form, backend, chunk_size, initial_state, return_state)
