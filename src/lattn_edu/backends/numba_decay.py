"""Decay inside one chunk for the numba chunkwise kernel of :mod:`.numba_gated` (chapter 11):
the chunk's decayed weights and decayed queries, with b (or B) the cumulative log decays in it.

With one decay per step (scalar) the weights are (Q Kᵀ) ⊙ exp(b_i − b_j), every exponent <= 0.
With one per key channel (vector) each weight is Σ_r q_ir k_jr exp(B_ir − B_jr), which is one
matrix product only after scaling queries and keys: queries go up by at most exp(θ) and keys
down by the rest, and the chunk is cut into pieces wherever the decay inside one would exceed
exp(θ) (:func:`_vector_decay_weights`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .numba_blas import _FAST, _exp_nonpositive, _gemm


@njit(cache=True, fastmath=_FAST)
def _rows_times_exp(x, exponents, out, fast_exp, high, low):
    """out[:n] = x ⊙ exp(exponents) for x [n, d], exponents a flat scratch holding n·d values <= 0
    row by row (overwritten by their exp)."""
    n, d = x.shape
    _exp_nonpositive(exponents, n * d, fast_exp, high, low)
    for i in range(n):
        for r in range(d):
            out[i, r] = x[i, r] * exponents[i * d + r]


@njit(cache=True, fastmath=_FAST)
def _scalar_decay_weights(cumulative, weights, scale, factors, fast_exp, high, low):
    """weights[i, j] *= scale · exp(b_i − b_j) for j <= i: the chunk's decay mask, b [c]."""
    c = weights.shape[0]
    for i in range(c):
        for j in range(c):
            factors[i * c + j] = cumulative[i] - cumulative[j] if j <= i else 0
    _exp_nonpositive(factors, c * c, fast_exp, high, low)
    for i in range(c):
        for j in range(i + 1):
            weights[i, j] *= scale * factors[i * c + j]


@njit(cache=True)
def _piece_end(cumulative, p0, span):
    """The end of the piece starting at row p0: rows are added while B_p0 − B_row <= span in
    every channel (a decay of at most exp(span) inside the piece); at least one row."""
    c, d_k = cumulative.shape
    p1 = p0 + 1
    while p1 < c:
        for r in range(d_k):
            if cumulative[p0, r] - cumulative[p1, r] > span:
                return p1
        p1 += 1
    return p1


@njit(cache=True, fastmath=_FAST)
def _vector_decay_weights(q_c, k_c, cumulative, span, weights, q_scaled, k_scaled, piece_scratch,
                          exponents, fast_exp, high, low, blas):
    """weights[i, j] = Σ_r q_ir k_jr exp(B_ir − B_jr) for j <= i, with B [c, d_k] the chunk's
    cumulative log decays, as matrix products over pieces of the chunk. Leaves
    K ⊙ exp(B_last − B) in k_scaled[:c] (what the state update needs).

    For a piece of rows p0..p1 − 1 with its last row as reference, B_ir − B_jr = (B_ir − B_last,r)
    + (B_last,r − B_jr): the key factor is <= 1 for every key up to the piece's end, and the query
    factor lies in [1, exp(span)] while the piece spans a decay of at most exp(span). The query
    side is computed as exp(· − span) and exp(span) put back after the product. A new piece
    starts where the next row would exceed the span (a single row always fits), so one piece
    covers the chunk unless the decay is strong.
    """
    c, d_k = k_c.shape
    boost = np.exp(span)
    p0 = 0
    while p0 < c:
        p1 = _piece_end(cumulative, p0, span)
        last, rows = p1 - 1, p1 - p0
        for i in range(rows):
            for r in range(d_k):
                exponents[i * d_k + r] = cumulative[p0 + i, r] - cumulative[last, r] - span
        _rows_times_exp(q_c[p0:p1], exponents, q_scaled, fast_exp, high, low)
        for j in range(p1):
            for r in range(d_k):
                exponents[j * d_k + r] = cumulative[last, r] - cumulative[j, r]
        _rows_times_exp(k_c[:p1], exponents, k_scaled, fast_exp, high, low)
        piece = piece_scratch[:rows * p1].reshape((rows, p1))
        _gemm(q_scaled[:rows], k_scaled[:p1], piece, False, True, 0, blas)  # [rows, p1]
        for i in range(rows):
            for j in range(p0 + i + 1):
                weights[p0 + i, j] = piece[i, j] * boost
        p0 = p1


@njit(cache=True, fastmath=_FAST)
def _decayed_queries(q_c, cumulative, kind, scale, out, exponents, fast_exp, high, low):
    """out[:c] = scale · Q ⊙ exp(b): the queries decayed back to the chunk's start (one factor per
    row for kind 1, per entry for kind 2; none for kind 0). exponents is overwritten for kind 2."""
    c, d_k = q_c.shape
    if kind == 2:
        for i in range(c):
            for r in range(d_k):
                exponents[i * d_k + r] = cumulative[i, r]
        _rows_times_exp(q_c, exponents, out, fast_exp, high, low)
    for i in range(c):
        factor = scale * np.exp(cumulative[i, 0]) if kind == 1 else scale
        for r in range(d_k):
            out[i, r] = (out[i, r] if kind == 2 else q_c[i, r]) * factor
