"""The (gated) delta rule as numba kernels (chapters 9, 10 and 13): the scan and the chunkwise
form on BLAS.

    S_t = (I − β_t k_t k_tᵀ)(diag(exp(g_t)) S_{t-1}) + β_t k_t v_tᵀ,     o_t = scale · S_tᵀ q_t

with g None, one log decay per step (Gated DeltaNet) or one per key channel (Kimi Delta
Attention, whose chunkwise kernel is :mod:`.numba_kda`).

The same algorithms as the numpy reference :mod:`lattn_edu.delta`, with its signatures:
``(q, k, v, beta, log_decay, scale, initial_state, chunk_size) -> (o, final_state)``.

The chunkwise kernel uses the UT transform without forming T: the pseudo-values of a chunk,

    U = T (diag(β) V − diag(β ⊙ exp(b)) K S) = U_T − W S     with T = (I + A)⁻¹,

are one triangular solve (I + A) U = diag(β)(V − diag(exp(b)) K S) by BLAS's trsm on a
[c, d_v] block, which costs c²·d_v/2 multiply-adds where forming T, W = T diag(β ⊙ exp(b)) K
and T diag(β) V costs c³/6 + c²(d_k + d_v)/2. On a CPU the chunks of one sequence run one
after another anyway, so nothing is lost by solving once S is known.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .numba_blas import (_FAST, _blas_arguments, _exp_value, _gemm, _lower_triangle_matmul,
                         _unit_lower_solve, one_blas_thread)
from .numba_gated import _SPAN, flatten_inputs
from .numba_kda import _kda_chunkwise_kernel


@njit(cache=True, fastmath=_FAST)
def _recurrent_sequence(q, k, v, beta, g, kind, scale, s, out):
    """The scan of one sequence, s [d_k, d_v] updated in place; g [N, w]: kind 0 no decay (g
    unread), 1 one decay per step (w = 1), 2 one per key channel (w = d_k, KDA).

    Per token two passes over S: the error e = β (v − (diag(exp(g)) S)ᵀk), then
    S_r ← exp(g_r) S_r + k_r e and o += scale q_r S_r, row r of S at a time.
    """
    n, d_k, d_v = k.shape[0], k.shape[1], v.shape[1]
    error = np.empty(d_v, v.dtype)
    decay = np.ones(d_k, v.dtype)  # exp(g_t), one per row of S
    for t in range(n):
        if kind == 1:
            decay[:] = np.exp(g[t, 0])
        elif kind == 2:
            for r in range(d_k):
                decay[r] = np.exp(g[t, r])
        k_t, v_t, o = k[t], v[t], out[t]
        error[:] = 0
        for r in range(d_k):
            k_r = k_t[r] * decay[r]
            for c in range(d_v):
                error[c] += k_r * s[r, c]  # (diag(exp(g)) S)ᵀk
        for c in range(d_v):
            error[c] = beta[t] * (v_t[c] - error[c])
        o[:] = 0
        for r in range(d_k):
            k_r, q_r, decay_r = k_t[r], q[t, r] * scale, decay[r]
            for c in range(d_v):
                s[r, c] = decay_r * s[r, c] + k_r * error[c]
                o[c] += q_r * s[r, c]


@njit(cache=True, parallel=True)
def _recurrent_kernel(q, k, v, beta, g, kind, scale, state, out):
    """The scan of B sequences [B, N, ·], shared among the threads."""
    for b in prange(q.shape[0]):
        _recurrent_sequence(q[b], k[b], v[b], beta[b], g[b], kind, scale, state[b], out[b])


@njit(cache=True, parallel=True, fastmath=_FAST)
def _chunkwise_kernel(q, k, v, beta, g, decayed, scale, chunk_size, reads, fast_exp, state, out):
    """The chunkwise form: per chunk of c steps, with b the cumulative log decay inside it and
    L_ij = exp(b_i − b_j) for j <= i,

        (I + A) U = diag(β)(V − diag(exp(b)) K S),   A = strict_tril(diag(β)(K Kᵀ) ⊙ L)   by trsm
        O_c = scale · (tril((Q Kᵀ) ⊙ L) U + (Q ⊙ exp(b)) S)
        S ← exp(b_last) S + (K ⊙ exp(b_last − b))ᵀ U

    k [B, N, d_k], v [B, N, d_v], beta [B, N], g [B, N]; state [B, d_k, d_v] goes in as S_0
    and comes out as S_N. The state is read after every ``reads``-th step only (1: every step;
    DeltaProduct's n_h: after each token's last step), so q [B, N / reads, d_k] and out
    [B, N / reads, d_v]; chunk_size and N are multiples of reads. With reads > 1 the chunk's
    reads are c / reads rows of Q Kᵀ, masked to the steps each has seen, times U by gemm.
    """
    n, d_k, d_v = k.shape[1], k.shape[2], v.shape[2]
    dtype = v.dtype
    for b in prange(k.shape[0]):
        blas = _blas_arguments(dtype)
        s = state[b]  # [d_k, d_v]
        system_scratch = np.empty(chunk_size * chunk_size, dtype)
        weights_scratch = np.empty(chunk_size * chunk_size, dtype)
        mask = np.ones(chunk_size * chunk_size, dtype)  # L, row by row; all ones without decay
        pseudo = np.empty((chunk_size, d_v), dtype)  # U
        scaled = np.empty((chunk_size, d_k), dtype)
        cumulative = np.zeros(chunk_size, dtype)
        for start in range(0, n, chunk_size):
            stop = min(start + chunk_size, n)
            c = stop - start
            rows = c // reads  # the chunk's reads: after steps reads − 1, 2·reads − 1, ...
            q_c, out_c = q[b, start // reads:stop // reads], out[b, start // reads:stop // reads]
            k_c, v_c, beta_c, u = k[b, start:stop], v[b, start:stop], beta[b, start:stop], pseudo[:c]
            if decayed:
                total = dtype.type(0)
                for i in range(c):
                    total += g[b, start + i]
                    cumulative[i] = total
                for i in range(c):
                    for j in range(c):
                        mask[i * c + j] = _exp_value(cumulative[i] - cumulative[j], fast_exp) if j <= i else 0
            system = system_scratch[:c * c].reshape((c, c))
            weights = weights_scratch[:rows * c].reshape((rows, c))
            _gemm(k_c, k_c, system, False, True, 0, blas)  # K Kᵀ
            _gemm(q_c, k_c, weights, False, True, 0, blas)  # Q Kᵀ  [rows, c]
            for i in range(c):
                for j in range(i):
                    system[i, j] *= beta_c[i] * mask[i * c + j]
            for row in range(rows):
                i = row * reads + reads - 1  # the step this read follows
                for j in range(i + 1):
                    weights[row, j] *= scale * mask[i * c + j]
                for j in range(i + 1, c if reads > 1 else 0):  # steps not yet taken; trmm skips them itself
                    weights[row, j] = 0
            _gemm(k_c, s, u, False, False, 0, blas)  # K S
            for i in range(c):
                decay_in = np.exp(cumulative[i]) if decayed else dtype.type(1)
                for col in range(d_v):
                    u[i, col] = beta_c[i] * (v_c[i, col] - decay_in * u[i, col])
            for row in range(rows):
                i = row * reads + reads - 1
                decay_in = np.exp(cumulative[i]) if decayed else dtype.type(1)
                for r in range(d_k):
                    scaled[row, r] = q_c[row, r] * (scale * decay_in)  # Q ⊙ exp(b), scaled
            _unit_lower_solve(system, u, blas)  # U = (I + A)⁻¹ (...)
            if reads == 1:
                out_c[:] = u
                _lower_triangle_matmul(weights, out_c, blas)  # inside the chunk
            else:
                _gemm(weights, u, out_c, False, False, 0, blas)  # inside the chunk, the mask in weights
            _gemm(scaled[:rows], s, out_c, False, False, 1, blas)  # + every chunk before it
            if decayed:
                decay_out = np.exp(cumulative[c - 1])
                for r in range(d_k):
                    for col in range(d_v):
                        s[r, col] *= decay_out
            for j in range(c):
                for r in range(d_k):
                    scaled[j, r] = k_c[j, r] * mask[(c - 1) * c + j]  # K ⊙ exp(b_last − b), L's last row
            _gemm(scaled[:c], u, s, True, False, 1, blas)  # carry the chunk into the state


def _flatten_steps(x: np.ndarray | None, batch: int, n: int, dtype: np.dtype) -> np.ndarray:
    """A per-step array [..., N] as [B, N] (C-contiguous, writeable, ``dtype``); None as an empty [B, 0]."""
    if x is None:
        return np.zeros((batch, 0), dtype)
    return np.require(x.reshape(batch, n), dtype=dtype, requirements="CW")


def recurrent_delta_rule(q: np.ndarray, k: np.ndarray, v: np.ndarray, beta: np.ndarray,
                         log_decay: np.ndarray | None, scale: float,
                         initial_state: np.ndarray | None = None,
                         chunk_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The scan in one kernel (log_decay None, [..., N] or [..., N, d_k]): (o [..., N, d_v], S_N [..., d_k, d_v])."""
    q, k, v, g, kind, state, out, unflatten = flatten_inputs(q, k, v, log_decay, initial_state)
    batch, n, dtype = v.shape[0], v.shape[1], v.dtype
    arguments = (q, k, v, _flatten_steps(beta, batch, n, dtype), g, kind, dtype.type(scale), state, out)
    if batch == 1:  # one sequence (a decoding step): waking threads would cost more than the work
        _recurrent_sequence(*(x[0] if isinstance(x, np.ndarray) else x for x in arguments))
    else:
        _recurrent_kernel(*arguments)
    return unflatten(out, state)


def chunkwise_delta_rule(q: np.ndarray, k: np.ndarray, v: np.ndarray, beta: np.ndarray,
                         log_decay: np.ndarray | None, scale: float,
                         initial_state: np.ndarray | None = None,
                         chunk_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Chunks of ``chunk_size`` tokens on BLAS (one BLAS thread per numba thread): (o, S_N).
    A log_decay [..., N, d_k] (KDA) runs :func:`.numba_kda._kda_chunkwise_kernel`."""
    if log_decay is not None and log_decay.ndim == q.ndim:
        q, k, v, g, _, state, out, unflatten = flatten_inputs(q, k, v, log_decay, initial_state)
        batch, n, dtype = v.shape[0], v.shape[1], v.dtype
        with one_blas_thread():
            _kda_chunkwise_kernel(q, k, v, _flatten_steps(beta, batch, n, dtype), g, dtype.type(scale),
                                  int(chunk_size), dtype.type(_SPAN[dtype]), dtype == np.float32, state, out)
        return unflatten(out, state)
    q, k, v, _, _, state, out, unflatten = flatten_inputs(q, k, v, None, initial_state)
    batch, n, dtype = v.shape[0], v.shape[1], v.dtype
    beta, g = _flatten_steps(beta, batch, n, dtype), _flatten_steps(log_decay, batch, n, dtype)
    with one_blas_thread():
        _chunkwise_kernel(q, k, v, beta, g, log_decay is not None, dtype.type(scale), int(chunk_size), 1,
                          dtype == np.float32, state, out)
    return unflatten(out, state)


def chunkwise_delta_product(q: np.ndarray, k: np.ndarray, v: np.ndarray, beta: np.ndarray,
                            log_decay: np.ndarray | None, scale: float,
                            initial_state: np.ndarray | None = None,
                            chunk_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """(Gated) DeltaProduct in chunks of ``chunk_size`` tokens: the chunkwise delta rule on the
    N·n_h steps of :func:`lattn_edu.delta_product.interleave`, read only after each token's
    last step, so that q and o stay [..., N, ·] (no zero queries, no reads thrown away).

    q [..., N, d_k], k [..., N, n_h, d_k], v [..., N, n_h, d_v], beta [..., N, n_h], log_decay
    None or [..., N] -> (o [..., N, d_v], S_N [..., d_k, d_v]).
    """
    lead, (n, n_h), d_k, d_v, dtype = q.shape[:-2], k.shape[-3:-1], q.shape[-1], v.shape[-1], v.dtype
    batch, steps = int(np.prod(lead, dtype=np.int64)), n * n_h

    def flat(x: np.ndarray, shape: tuple) -> np.ndarray:  # C-contiguous and writeable, for numba
        if x.shape[:len(lead)] != lead:  # leading axes of size 1 (a broadcast view is read-only: copied below)
            x = np.broadcast_to(x, lead + x.shape[len(lead):])
        return np.require(x.reshape(shape), dtype=dtype, requirements="CW")  # no copy when it already is

    state = (np.zeros((batch, d_k, d_v), dtype) if initial_state is None
             else np.array(initial_state.reshape((batch, d_k, d_v)), dtype=dtype))  # a copy: updated in place
    g = np.zeros((batch, 0), dtype)
    if log_decay is not None:  # g_t on each token's first step, 0 (a factor 1) on the others
        g = np.zeros((batch, n, n_h), dtype)
        g[:, :, 0] = flat(log_decay, (batch, n))
        g = g.reshape((batch, steps))
    out = np.empty((batch, n, d_v), dtype)
    with one_blas_thread():
        _chunkwise_kernel(flat(q, (batch, n, d_k)), flat(k, (batch, steps, d_k)), flat(v, (batch, steps, d_v)),
                          flat(beta, (batch, steps)), g, log_decay is not None, dtype.type(scale),
                          int(chunk_size) * n_h, n_h, dtype == np.float32, state, out)
    return out.reshape(lead + (n, d_v)), state.reshape(lead + (d_k, d_v))


DELTA_FORMS = {
    "recurrent": recurrent_delta_rule,
    "chunkwise": chunkwise_delta_rule,
}
