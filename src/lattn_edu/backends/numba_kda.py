"""Kimi Delta Attention's chunkwise form as a numba kernel (chapter 13): the delta rule with one
log decay per key channel, on BLAS.

    S_t = (I − β_t k_t k_tᵀ) diag(exp(g_t)) S_{t-1} + β_t k_t v_tᵀ,     o_t = scale · S_tᵀ q_t

:func:`lattn_edu.backends.numba_delta.chunkwise_delta_rule` calls it when ``log_decay`` is
[..., N, d_k]. As in the scalar-decay kernel there, T = (I + A)⁻¹ is never formed: the
pseudo-values come from one triangular solve (trsm) on a [c, d_v] block. What the channel
decays change are the chunk's two [c, c] matrices, Σ_r x_ir k_jr exp(B_ir − B_jr) for x = K
(the system) and x = Q (the output weights): each is a matrix product after scaling rows, in
pieces of the chunk that span a decay of at most exp(θ), as GLA's kernel builds its weights
(:func:`.numba_decay._vector_decay_weights`); every other decay factor is exp of a number <= 0.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .numba_blas import _FAST, _blas_arguments, _gemm, _lower_triangle_matmul, _unit_lower_solve
from .numba_decay import _chunk_cumulative, _decayed_queries, _vector_decay_weights


@njit(cache=True, parallel=True, fastmath=_FAST)
def _kda_chunkwise_kernel(q, k, v, beta, g, scale, chunk_size, span, fast_exp, state, out):
    """Per chunk of c tokens, with B [c, d_k] the cumulative log decays inside it:

        (I + A) U = diag(β)(V − (K ⊙ exp(B)) S),  A_ij = β_i Σ_r k_ir k_jr exp(B_ir − B_jr), j < i
        O_c = scale · (M U + (Q ⊙ exp(B)) S),       M_ij = Σ_r q_ir k_jr exp(B_ir − B_jr), j <= i
        S ← diag(exp(B_last)) S + (K ⊙ exp(B_last − B))ᵀ U

    q, k [B, N, d_k], v [B, N, d_v], beta [B, N], g [B, N, d_k]; state [B, d_k, d_v] goes in
    as S_0 and comes out as S_N; out [B, N, d_v].
    """
    n, d_k, d_v = k.shape[1], k.shape[2], v.shape[2]
    dtype = v.dtype
    one = dtype.type(1)
    for b in prange(q.shape[0]):
        blas = _blas_arguments(dtype)
        s = state[b]  # [d_k, d_v]
        system_scratch = np.empty(chunk_size * chunk_size, dtype)
        weights_scratch = np.empty(chunk_size * chunk_size, dtype)
        piece_scratch = np.empty(chunk_size * chunk_size, dtype)
        pseudo = np.empty((chunk_size, d_v), dtype)  # U
        x_scaled, k_scaled = np.empty((chunk_size, d_k), dtype), np.empty((chunk_size, d_k), dtype)
        decayed = np.empty((chunk_size, d_k), dtype)  # K ⊙ exp(B), then scale · Q ⊙ exp(B)
        cumulative = np.empty((chunk_size, d_k), dtype)  # B
        no_frame = np.ones(d_k, dtype)  # the state is kept as it is
        for start in range(0, n, chunk_size):
            stop = min(start + chunk_size, n)
            c = stop - start
            q_c, k_c, v_c, out_c = q[b, start:stop], k[b, start:stop], v[b, start:stop], out[b, start:stop]
            beta_c, u = beta[b, start:stop], pseudo[:c]
            _chunk_cumulative(g[b], start, stop, cumulative)
            system = system_scratch[:c * c].reshape((c, c))
            weights = weights_scratch[:c * c].reshape((c, c))
            _vector_decay_weights(k_c, k_c, cumulative[:c], span, system, x_scaled, k_scaled, piece_scratch,
                                  fast_exp, blas)  # Σ_r k_ir k_jr exp(B_ir − B_jr)
            _vector_decay_weights(q_c, k_c, cumulative[:c], span, weights, x_scaled, k_scaled, piece_scratch,
                                  fast_exp, blas)  # M; k_scaled = K ⊙ exp(B_last − B)
            for i in range(c):
                for j in range(i):
                    system[i, j] *= beta_c[i]
                for j in range(i + 1):
                    weights[i, j] *= scale
            _decayed_queries(k_c, cumulative[:c], 2, one, no_frame, decayed, fast_exp)  # K ⊙ exp(B)
            _gemm(decayed[:c], s, u, False, False, 0, blas)  # (K ⊙ exp(B)) S
            for i in range(c):
                for col in range(d_v):
                    u[i, col] = beta_c[i] * (v_c[i, col] - u[i, col])
            _unit_lower_solve(system, u, blas)  # U = (I + A)⁻¹ (...)
            out_c[:] = u
            _lower_triangle_matmul(weights, out_c, blas)  # inside the chunk
            _decayed_queries(q_c, cumulative[:c], 2, scale, no_frame, decayed, fast_exp)
            _gemm(decayed[:c], s, out_c, False, False, 1, blas)  # + every chunk before it
            for r in range(d_k):
                decay_out = np.exp(cumulative[c - 1, r])
                for col in range(d_v):
                    s[r, col] *= decay_out
            _gemm(k_scaled[:c], u, s, True, False, 1, blas)  # carry the chunk into the state
