"""The delta rule: overwrite what a key holds instead of adding to it (chapters 10 and 13).

    S_t = (I - β_t k_t k_tᵀ) (diag(exp(g_t)) S_{t-1}) + β_t k_t v_tᵀ,     o_t = scale · S_tᵀ q_t

that is A_t = (I − β_t k_t k_tᵀ) diag(exp(g_t)) and B_t = β_t k_t v_tᵀ. DeltaNet (g = 0), Gated
DeltaNet (a scalar log decay g_t <= 0 per step, Yang et al. 2024) and Kimi Delta Attention (KDA,
one log decay per key channel g_t [d_k], Kimi Team 2025, arXiv 2510.26692). The update is
one gradient step of size β_t on ½‖Sᵀk_t − v_t‖²: it reads what k_t retrieves now and
writes back only the difference from v_t.

Stability: with ‖k_t‖ = 1 the matrix I − β k kᵀ has eigenvalues 1 (on the plane orthogonal
to k) and 1 − β (along k), so for β in [0, 2] no step amplifies the state. Keys are used as
given: the caller L2-normalises them (:func:`delta_rule` does not, so that a chapter can show
what happens when this is violated).

The chunkwise form (Yang et al. 2024) packs the C sequential rank-1 updates of a chunk into
matrix products: with A = tril(diag(β) K Kᵀ, −1) (gated: entries times Π exp(g) between the
two steps; KDA: A_ij = β_i Σ_r k_ir k_jr exp(b_ir − b_jr), one decay per channel) and
T = (I + A)⁻¹ from one triangular solve (the UT transform),

    W = T diag(β) (K ⊙ exp(b)),   U = T diag(β) V − W S_before   (the "pseudo-values")

and then the chunk behaves like gated linear attention with values U. Every decay factor is
exp of a segment sum <= 0 (never exp(b) times exp(−b)), so no decay overflows.

:func:`implicit_step_size` (chapter 14) turns the explicit gradient step into the implicit
(proximal) one of Longhorn: the same update with step β / (1 + β‖k‖²).
"""

from __future__ import annotations

from typing import Any

from array_api_compat import device

from ._checks import (array_namespace, as_float_array, check_beta, check_bool, check_choice, check_finite,
                      check_initial_state, check_log_decay, check_positive_int, check_qkv, check_scale,
                      check_sequence, check_within, dtype_name, is_torch_tensor)
from .gated import gated_weights, per_key_log_decay, read_state, start_state, tail_sums
from .recurrence import run_recurrence

DELTA_FORMS = ("recurrent", "chunkwise")


def recurrent_delta_rule(q: Any, k: Any, v: Any, beta: Any, log_decay: Any, scale: float,
                         initial_state: Any = None, chunk_size: int | None = None) -> tuple[Any, Any]:
    """One token at a time: decay, read what k_t retrieves, write back β_t times the error."""
    xp = array_namespace(q)
    g = per_key_log_decay(log_decay, q)  # [..., N, 1 | d_k]
    state = start_state(initial_state, k, v)  # S  [..., d_k, d_v]
    outputs = []  # o_t  [..., d_v] each
    for t in range(q.shape[-2]):
        k_t, b_t = k[..., t, :], beta[..., t, None]  # [..., d_k], [..., 1]
        state = xp.exp(g[..., t, :, None]) * state
        error = v[..., t, :] - read_state(k_t, state)  # v_t − Sᵀk_t  [..., d_v]
        state = state + k_t[..., :, None] * (b_t * error)[..., None, :]
        outputs.append(scale * read_state(q[..., t, :], state))
    return xp.stack(outputs, axis=-2), state


def ut_transform(k: Any, beta: Any, log_decay: Any = None) -> Any:
    """T = (I + A)⁻¹ for one chunk, A[i, j] = β_i Σ_r k_ir k_jr Π_{l=j+1..i} exp(g_lr) for j < i.

    k [..., C, d_k], beta [..., C], log_decay None, [..., C] (one decay per step: A's entries
    are β_i (k_i·k_j) times one factor) or [..., C, d_k] (one per key channel, KDA); returns
    [..., C, C], lower triangular with a unit diagonal. Row i needs rows j < i: this forward
    substitution is the part of a chunk that stays sequential. NaN or inf in k or beta is
    refused by name.

    On torch the same solve is one call to ``torch.linalg.solve_triangular`` (the array API
    has no triangular solve): C dependent steps would be C small launches on a GPU, and
    autograd would keep every partial T, O(C³) numbers per chunk, where the solve keeps T.
    """
    check_finite(k, "k")
    check_finite(beta, "beta")
    xp, c = array_namespace(k), k.shape[-2]
    g = per_key_log_decay(log_decay, k)  # [..., C, 1 | d_k]
    a = xp.tril(beta[..., :, None] * gated_weights(k, k, g), k=-1)  # strictly lower  [..., C, C]
    identity = xp.eye(c, dtype=k.dtype, device=device(k))
    if hasattr(xp.linalg, "solve_triangular"):  # torch
        return xp.linalg.solve_triangular(identity + a, xp.broadcast_to(identity, a.shape), upper=False,
                                          unitriangular=True)
    t_matrix = xp.zeros(a.shape[:-2] + (0, c), dtype=k.dtype, device=device(k))  # rows of T so far
    for i in range(c):  # row i of (I + A) T = I:  T_i = e_i − Σ_{j<i} A_ij T_j
        row = identity[i:i + 1, :] - a[..., i:i + 1, :i] @ t_matrix  # [..., 1, C]
        t_matrix = xp.concat([t_matrix, row], axis=-2)
    return t_matrix


def chunkwise_delta_rule(q: Any, k: Any, v: Any, beta: Any, log_decay: Any, scale: float,
                         initial_state: Any = None, chunk_size: int = 64) -> tuple[Any, Any]:
    """Chunks of C tokens: the UT transform turns the chunk's C updates into matrix products.

    With b_t = Σ g over the chunk up to t (one per step, or one per key channel), S the state
    before the chunk and M_ij = Σ_r q_ir k_jr exp(b_ir − b_jr) for j <= i:
    U = T diag(β) (V − (K ⊙ exp(b)) S),   O = scale · ((Q ⊙ exp(b)) S + M U),
    S_after = diag(exp(b_last)) S + (K ⊙ exp(b_last − b))ᵀ U.
    """
    xp = array_namespace(q)
    g = per_key_log_decay(log_decay, q)  # [..., N, 1 | d_k]
    state = start_state(initial_state, k, v)  # S before the chunk  [..., d_k, d_v]
    outputs = []  # one [..., C, d_v] per chunk
    for start in range(0, q.shape[-2], chunk_size):
        chunk = slice(start, start + chunk_size)
        q_c, k_c, v_c, g_c = q[..., chunk, :], k[..., chunk, :], v[..., chunk, :], g[..., chunk, :]
        b_c = beta[..., chunk, None]  # [..., C, 1]
        decay_in = xp.exp(xp.cumulative_sum(g_c, axis=-2))  # exp(b_t)  [..., C, 1 | d_k]
        t_matrix = ut_transform(k_c, beta[..., chunk], g_c)  # [..., C, C]
        w = t_matrix @ (b_c * decay_in * k_c)  # W  [..., C, d_k]
        u = t_matrix @ (b_c * v_c) - w @ state  # pseudo-values U  [..., C, d_v]
        weights = gated_weights(q_c, k_c, g_c)  # M  [..., C, C]
        outputs.append(scale * ((decay_in * q_c) @ state + weights @ u))
        decay_out = xp.exp(tail_sums(g_c))  # exp(b_last − b_j), summed directly  [..., C, 1 | d_k]
        state = (xp.matrix_transpose(decay_in[..., -1:, :]) * state
                 + xp.matrix_transpose(k_c * decay_out) @ u)
    return xp.concat(outputs, axis=-2), state


def delta_rule(q: Any, k: Any, v: Any, beta: Any, log_decay: Any = None, *, scale: float | None = None,
               form: str = "chunkwise", backend: str = "numpy", chunk_size: int = 64,
               initial_state: Any = None, return_state: bool = False) -> Any:
    """The (gated) delta rule of DeltaNet, Gated DeltaNet and Kimi Delta Attention (KDA).

    S_t = (I − β_t k_t k_tᵀ)(diag(exp(g_t)) S_{t−1}) + β_t k_t v_tᵀ,  o_t = scale · S_tᵀ q_t.

    Parameters
    ----------
    q, k : array [..., N, d_k]
        Keys are used as given: L2-normalise them (‖k_t‖ = 1) for a stable recurrence.
    v : array [..., N, d_v]
    beta : array [..., N]
        Step sizes in [0, 2]: with unit keys, I − β k kᵀ then has eigenvalues in [−1, 1].
    log_decay : None, array [..., N] or array [..., N, d_k]
        g_t <= 0: one per step and head (Gated DeltaNet), or one per key channel (KDA's
        fine-grained gate); None is DeltaNet.
    scale : float, optional
        Read-out scale; None means d_k**-0.5.
    form : 'recurrent' | 'chunkwise'
        The scan, or chunks in the WY / UT-transform representation.
    backend : 'numpy' | 'numba' | 'torch'
    chunk_size : int
    initial_state : array [..., d_k, d_v], optional
    return_state : bool

    Returns
    -------
    o : array [..., N, d_v], or ``(o, final_state)`` with final_state [..., d_k, d_v].
    """
    form = check_choice(form, "form", DELTA_FORMS)
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    return_state = check_bool(return_state, "return_state")
    q, k, v = check_qkv(q, k, v, causal=True)
    beta = check_beta(beta, q)
    log_decay = check_log_decay(log_decay, q)
    initial_state = check_initial_state(initial_state, q, v)
    return run_recurrence("delta", (q, k, v, beta, log_decay), check_scale(scale, q.shape[-1]), form, backend,
                          chunk_size, initial_state, return_state)


def implicit_step_size(beta: Any, k: Any) -> Any:
    """The step size that makes the delta rule the implicit (proximal) step: β_t / (1 + β_t ‖k_t‖²).

    The proximal step S_t = argmin_S ½‖S − S_{t−1}‖²_F + (β_t/2)‖Sᵀk_t − v_t‖² solves
    (I + β_t k_t k_tᵀ) S = S_{t−1} + β_t k_t v_tᵀ, and by Sherman–Morrison its solution is the
    delta step S_t = S_{t−1} + β̂_t k_t (v_t − S_{t−1}ᵀk_t)ᵀ with β̂_t = β_t / (1 + β_t ‖k_t‖²):
    :func:`delta_rule` with these steps is the implicit rule (Longhorn, Liu et al. 2024, "Longhorn:
    State Space Models are Amortized Online Learners", arXiv 2407.14207, derives its layer from
    this step). β̂_t ‖k_t‖² < 1 for every β_t >= 0: the implicit step never overshoots, and a
    large β_t tends to the exact overwrite β̂ = 1/‖k‖². With unit keys β̂ lies in [0, 1);
    :func:`delta_rule` takes steps up to 2, so keys with ‖k‖² < 1/2 and a large β can exceed it.

    Parameters
    ----------
    beta : array [..., N]
        β_t >= 0: the weight of the newest pair's loss against staying near S_{t−1}.
    k : array [..., N, d_k]
        The keys, as they will be given to :func:`delta_rule`.

    Returns
    -------
    array [..., N]: β̂_t, numpy or torch like k, in k's dtype.
    """
    k, beta = check_sequence(k, "k"), as_float_array(beta, "beta")
    if is_torch_tensor(beta) != is_torch_tensor(k) or dtype_name(beta) != dtype_name(k):
        raise TypeError(f"beta must be a {type(k).__name__} of k's dtype {dtype_name(k)}; got a "
                        f"{type(beta).__name__} of {dtype_name(beta)}")
    if tuple(beta.shape) != tuple(k.shape[:-1]):
        raise ValueError(f"beta must have shape {list(k.shape[:-1])} (one step per key of k, shape "
                         f"{list(k.shape)}); got {list(beta.shape)}")
    check_finite(beta, "beta")
    check_within(beta, "beta", 0.0, float("inf"), "the weight of the newest pair's loss")
    xp = array_namespace(k)
    return beta / (1 + beta * xp.sum(k * k, axis=-1))  # β / (1 + β‖k‖²)  [..., N]
