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

from .numba_blas import _FAST, _exp_value, _gemm


@njit(cache=True, fastmath=_FAST)
def _chunk_cumulative(g, start, stop, out):
    """out[i] = g[start] + … + g[start + i] for the chunk's rows, b (or B) [c, w] from g [N, w];
    row after row, so that the inner loop over the w channels vectorises. From the same pass it
    returns the rows' finiteness probe (Σ g·0: 0, or NaN if one is NaN or inf) and the sum of
    their entries above 0 (a log decay must be <= 0; a sum rather than a max, which would not
    vectorise)."""
    probe, above = g.dtype.type(0), g.dtype.type(0)
    for i in range(stop - start):
        for r in range(g.shape[1]):
            x = g[start + i, r]
            out[i, r] = x if i == 0 else out[i - 1, r] + x
            probe += x * 0
            above += x if x > 0 else 0
    return probe, above


@njit(cache=True, fastmath=_FAST)
def _scalar_decay_weights(cumulative, weights, scale, last_row, fast_exp):
    """weights[i, j] *= scale · exp(b_i − b_j) for j <= i: the chunk's decay mask, b [c]; and
    last_row[j] = exp(b_last − b_j), the keys' decay to the chunk's end (the mask's last row).

    Whole rows are scaled, so that the loop over j has one length and vectorises: above the
    diagonal, which no later step reads, the exponent is >= 0 and its exp clamped to 1."""
    c = weights.shape[0]
    b = last_row[:c]
    for j in range(c):  # b contiguous (a column of the cumulative sums is strided), so the loops vectorise
        b[j] = cumulative[j]
    for i in range(c):
        for j in range(c):
            weights[i, j] *= scale * _exp_value(b[i] - b[j], fast_exp)
    b_last = b[c - 1]
    for j in range(c):
        b[j] = _exp_value(b_last - b[j], fast_exp)


@njit(cache=True)
def _piece_end(cumulative, p0, span):
    """The end of the piece starting at row p0: rows are added while B_p0 − B_row <= span in
    every channel (a decay of at most exp(span) inside the piece); at least one row.

    Log decays are <= 0, so B_p0 − B_row only grows with the row: when the chunk's last row is
    within the span, every row is (the usual case, checked first in one pass over d_k)."""
    c, d_k = cumulative.shape
    whole_chunk = True
    for r in range(d_k):
        if cumulative[p0, r] - cumulative[c - 1, r] > span:
            whole_chunk = False
    if whole_chunk:
        return c
    p1 = p0 + 1
    while p1 < c:
        for r in range(d_k):
            if cumulative[p0, r] - cumulative[p1, r] > span:
                return p1
        p1 += 1
    return p1


@njit(cache=True, fastmath=_FAST)
def _vector_decay_weights(q_c, k_c, cumulative, span, weights, q_scaled, k_scaled, piece_scratch,
                          fast_exp, blas):
    """weights[i, j] = Σ_r q_ir k_jr exp(B_ir − B_jr) for j <= i, with B [c, d_k] the chunk's
    cumulative log decays, as matrix products over pieces of the chunk. Leaves
    K ⊙ exp(B_last − B) in k_scaled[:c] (what the state update needs).

    For a piece of rows p0..p1 − 1 with its last row as reference, B_ir − B_jr = (B_ir − B_last,r)
    + (B_last,r − B_jr): the key factor is <= 1 for every key up to the piece's end, and the query
    factor lies in [1, exp(span)] while the piece spans a decay of at most exp(span). The query
    side is computed as exp(· − span) and exp(span) put back after the product. A new piece
    starts where the next row would exceed the span (a single row always fits), so one piece
    covers the chunk unless the decay is strong. (The gated kernel builds a chunk that is one
    piece with :func:`_one_piece_products` instead, which also makes the operands of its
    products with the state in the same pass.)
    """
    c, d_k = k_c.shape
    boost = np.exp(span)
    p0 = 0
    while p0 < c:
        p1 = _piece_end(cumulative, p0, span)
        last, rows = p1 - 1, p1 - p0
        for i in range(rows):  # Q ⊙ exp(B − B_last − span) for the piece's rows
            for r in range(d_k):
                q_scaled[i, r] = q_c[p0 + i, r] * _exp_value(cumulative[p0 + i, r] - cumulative[last, r] - span,
                                                             fast_exp)
        for j in range(p1):  # K ⊙ exp(B_last − B) for every key up to the piece's end
            for r in range(d_k):
                k_scaled[j, r] = k_c[j, r] * _exp_value(cumulative[last, r] - cumulative[j, r], fast_exp)
        piece = piece_scratch[:rows * p1].reshape((rows, p1))
        _gemm(q_scaled[:rows], k_scaled[:p1], piece, False, True, 0, blas)  # [rows, p1]
        for i in range(rows):
            for j in range(p0 + i + 1):
                weights[p0 + i, j] = piece[i, j] * boost
        p0 = p1


@njit(cache=True, fastmath=_FAST)
def _one_piece_products(q_c, k_c, cumulative, span, boost, columns, inverse, weights, q_scaled, k_scaled,
                        q_decayed, k_state, fast_exp, blas):
    """For a chunk that is one piece (B_0 − B_last <= span in every channel, so every factor
    below lies in [exp(−span), 1]): its weights, as :func:`_vector_decay_weights` makes them
    but times the attention scale, and the operands of its products with the state, from one pass with
    two exps per entry:

        q_scaled = Q ⊙ exp(B − B_last − span),  k_scaled = K ⊙ exp(B_last − B)   the weights
        q_decayed = q_scaled ⊙ columns,           k_state = k_scaled ⊙ inverse     for the state

    (weights = boost · q_scaled k_scaledᵀ on and below the diagonal, boost = scale · exp(span)).

    ``columns`` [d_k] is boost · exp(B_last) · the state's frame before the chunk, which
    turns q_scaled into scale · Q ⊙ exp(B) ⊙ frame (each factor exp(B_last) · exp(span) is 0 where
    B_last < −104 in float32, and the decayed queries are then below 1e-36 of the queries);
    ``inverse`` [d_k] is 1 / the frame after it (see :mod:`.numba_gated`)."""
    c, d_k = q_c.shape
    for i in range(c):
        for r in range(d_k):
            to_end = cumulative[c - 1, r] - cumulative[i, r]  # B_last − B_i <= 0
            q_piece = q_c[i, r] * _exp_value(-to_end - span, fast_exp)
            k_piece = k_c[i, r] * _exp_value(to_end, fast_exp)
            q_scaled[i, r], k_scaled[i, r] = q_piece, k_piece
            q_decayed[i, r], k_state[i, r] = q_piece * columns[r], k_piece * inverse[r]
    _gemm(q_scaled[:c], k_scaled[:c], weights, False, True, 0, blas)  # [c, c]
    for i in range(c):
        for j in range(i + 1):
            weights[i, j] *= boost


@njit(cache=True, fastmath=_FAST)
def _decayed_queries(q_c, cumulative, kind, scale, frame, out, fast_exp):
    """out[:c] = scale · Q ⊙ exp(b) ⊙ frame: the queries decayed back to the chunk's start (one
    factor per row for kind 1, per entry for kind 2), times frame [d_k], the factors the state
    is kept in per key channel (ones for a state kept as it is); scale · Q for kind 0, which
    has neither (frame may be empty)."""
    c, d_k = q_c.shape
    for i in range(c):
        if kind == 2:
            for r in range(d_k):
                out[i, r] = scale * q_c[i, r] * _exp_value(cumulative[i, r], fast_exp) * frame[r]
        elif kind == 1:
            factor = scale * _exp_value(cumulative[i, 0], fast_exp)
            for r in range(d_k):
                out[i, r] = q_c[i, r] * factor * frame[r]
        else:
            for r in range(d_k):
                out[i, r] = q_c[i, r] * scale
