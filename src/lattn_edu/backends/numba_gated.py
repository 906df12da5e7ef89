"""Gated linear attention as numba kernels (chapters 9 and 11): the scan, the masked N×N form
and the chunkwise form on BLAS.

    S_t = diag(exp(g_t)) S_{t-1} + k_t v_tᵀ,     o_t = scale · S_tᵀ q_t

The same algorithms as the numpy reference :mod:`lattn_edu.gated`, with its signatures:
``(q, k, v, log_decay, scale, initial_state, chunk_size) -> (o, final_state)``. The leading
axes are flattened to one axis of B sequences that ``prange`` shares out among the threads.

Every decay factor is exp of a number <= 0 (a sum of log decays over a segment, or the
difference of two such sums inside one chunk), so nothing overflows however long the sequence
or strong the decay; a factor that underflows is one whose true value is below the dtype's
smallest number. The exceptions are deliberate and bounded by exp(θ) (θ = 20 in float32, 200
in float64): to turn a chunk of vector decays into one matrix product, the chunkwise kernel
scales queries up by at most exp(θ) and keys down by the rest, and cuts the chunk into pieces
wherever the decay inside one would exceed exp(θ) (see :mod:`.numba_decay`); and it keeps the
state as diag(frame) s with every frame in [exp(−θ), 1], so keys enter s scaled up by at most
exp(θ) (see :func:`_advance_frame`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._checks import nonfinite_error, nonfinite_output_error, overflow_error, positive_log_decay_error
from .numba_blas import (_FAST, FEATURE_CODES, _blas_arguments, _chunk_features, _exp_value, _gemm,
                         _lower_triangle_matmul, _probe, one_blas_thread)
from .numba_decay import (_chunk_cumulative, _decayed_queries, _one_piece_products, _piece_end,
                          _scalar_decay_weights, _vector_decay_weights)

# The largest decay exp(θ) a piece of a chunk may span with vector decay (query factors stay in
# [exp(-θ), 1], key factors in (0, 1]); and exponents below which exp is 0 in the dtype.
_SPAN = {np.dtype(np.float32): 20.0, np.dtype(np.float64): 200.0}
_EXP_FLOOR = {np.dtype(np.float32): -104.0, np.dtype(np.float64): -746.0}


@njit(cache=True, fastmath=_FAST)
def _recurrent_sequence(q, k, v, g, kind, scale, s, out):
    """The scan of one sequence in one fused pass over S per token, s [d_k, d_v] updated in place.

    q, k [N, d_k], v [N, d_v], g [N, w]: kind 0 no decay (g unread), 1 one decay per step
    (w = 1), 2 one per key (w = d_k). S_r ← exp(g_r) S_r + k_r v,  o += scale q_r S_r.
    """
    n, d_k, d_v = k.shape[0], k.shape[1], v.shape[1]
    one = v.dtype.type(1)
    for t in range(n):
        o, v_t = out[t], v[t]
        o[:] = 0
        decay = np.exp(g[t, 0]) if kind == 1 else one
        for r in range(d_k):
            if kind == 2:
                decay = np.exp(g[t, r])
            k_r, q_r = k[t, r], q[t, r] * scale
            for c in range(d_v):
                s[r, c] = decay * s[r, c] + k_r * v_t[c]
                o[c] += q_r * s[r, c]


@njit(cache=True, parallel=True)
def _recurrent_kernel(q, k, v, g, kind, scale, state, out):
    """The scan of B sequences [B, N, ·], shared among the threads."""
    for b in prange(q.shape[0]):
        _recurrent_sequence(q[b], k[b], v[b], g[b], kind, scale, state[b], out[b])


@njit(cache=True, parallel=True)
def _parallel_kernel(q, k, v, g, kind, scale, floor, initial, out):
    """o_i = scale · (Σ_{j<=i} (Σ_r q_ir k_jr exp(G_ijr)) v_j + (q_i ⊙ exp(G_i,-1))ᵀ S_0), one
    (sequence, query) pair per task, the N×N weights never stored.

    G_ij = Σ_{l=j+1..i} g_l is summed directly, in float64, walking j down from i; once every
    component is below ``floor`` (exp is 0 in the dtype) the older keys are skipped.
    """
    n, d_k, d_v = k.shape[1], k.shape[2], v.shape[2]
    for task in prange(q.shape[0] * n):
        b, i = task // n, task % n
        o, q_i = out[b, i], q[b, i]
        acc = np.zeros(d_v)
        segment = np.zeros(g.shape[2])  # G_ij, one per decay channel
        reached_start = True
        for j in range(i, -1, -1):
            weight = 0.0
            for r in range(d_k):
                weight += q_i[r] * k[b, j, r] * (np.exp(segment[r]) if kind == 2 else 1.0)
            if kind == 1:
                weight *= np.exp(segment[0])
            for c in range(d_v):
                acc[c] += weight * v[b, j, c]
            if kind != 0:
                segment += g[b, j]  # now G_i,j-1
                if segment.max() < floor:
                    reached_start = False
                    break
        if reached_start:  # the initial state, decayed by every step up to i
            for r in range(d_k):
                factor = q_i[r] * (np.exp(segment[r if kind == 2 else 0]) if kind != 0 else 1.0)
                for c in range(d_v):
                    acc[c] += factor * initial[b, r, c]
        for c in range(d_v):
            o[c] = scale * acc[c]


@njit(cache=True, parallel=True)
def _final_state_kernel(k, v, g, kind, floor, state):
    """S_N = diag(exp(G_N,0)) S_0 + Σ_j (k_j ⊙ exp(G_N,j))ᵀ v_j in place, G summed from the end."""
    n, d_k, d_v = k.shape[1], k.shape[2], v.shape[2]
    for b in prange(k.shape[0]):
        s = state[b]
        total = np.zeros((d_k, d_v))
        segment = np.zeros(g.shape[2])  # Σ_{l>j} g_l
        reached_start = True
        for j in range(n - 1, -1, -1):
            for r in range(d_k):
                factor = k[b, j, r] * (np.exp(segment[r if kind == 2 else 0]) if kind != 0 else 1.0)
                for c in range(d_v):
                    total[r, c] += factor * v[b, j, c]
            if kind != 0:
                segment += g[b, j]
                if segment.max() < floor:
                    reached_start = False
                    break
        for r in range(d_k):
            decay = (np.exp(segment[r if kind == 2 else 0]) if kind != 0 else 1.0) if reached_start else 0.0
            for c in range(d_v):
                s[r, c] = decay * s[r, c] + total[r, c]


@njit(cache=True, parallel=True, fastmath=_FAST)
def _chunkwise_kernel(q, k, v, g, kind, scale, chunk_size, span, fast_exp, feature, eps, state, out, probes):
    """The chunkwise form: per chunk of c tokens, with b (or B) the cumulative log decay inside it,

        W = (Q Kᵀ) ⊙ [exp(b_i − b_j)] (kind 1) or [Σ_r q_ir k_jr exp(B_ir − B_jr)] (kind 2)   [c, c]
        O_c = scale · (tril(W) V_c + (Q ⊙ exp(b)) S)          inside the chunk + before it
        S ← diag(exp(b_last)) S + (K ⊙ exp(b_last − b))ᵀ V_c     carry the chunk into the state

    q, k [B, N, d_k], v [B, N, d_v], g [B, N, w]; kind 0 no decay, 1 scalar (w = 1), 2 vector
    (w = d_k). state [B, d_k, ·] goes in as S_0 and comes out as S_N; out [B, N, d_v].

    Inside, S is kept as diag(frame) s: a chunk's decay multiplies the d_k numbers of the frame,
    not the d_k × d_v entries of s, and its keys enter s divided by the frame (in the pass that
    scales them anyway); a row takes its frame into s only when the frame would fall below
    exp(−span) (:func:`_advance_frame`), and every row does at the end.

    Linear attention runs here too, in two options that keep it to one pass over the input:
    ``feature`` 1 or 2 computes φ(q), φ(k) (elu+1, relu) a chunk at a time (0: q, k are the
    features); and when state has d_v + 1 columns, [S | z], the recurrence runs on [V | 1] and
    each output row is divided by its last column + eps. The column of ones is not stored: its
    three products are sums, tril(W) 1 (row sums), (Q ⊙ exp(b)) z (one dot product per row) and
    (K ⊙ exp(b_last − b))ᵀ 1 (column sums), so BLAS sees the same d_v columns as without it.
    probes [B, 6] receives Σ x·0 over q, k, v, out and g of each sequence (NaN marks a NaN or inf)
    and the sum of g's entries above 0 (a log decay must be <= 0), from passes over each chunk
    the kernel makes anyway, or makes while the chunk is in cache.
    """
    n, d_k, d_v = k.shape[1], k.shape[2], v.shape[2]
    normalise = state.shape[2] != d_v
    dtype = v.dtype
    floor = 1 / np.exp(span)
    for b in prange(q.shape[0]):
        blas = _blas_arguments(dtype)
        s = np.ascontiguousarray(state[b, :, :d_v]) if normalise else state[b]  # S  [d_k, d_v]
        z = state[b, :, d_v].copy() if normalise else np.zeros(0, dtype)  # z  [d_k]
        weights_scratch = np.empty(chunk_size * chunk_size, dtype)
        decayed = kind != 0 or scale != 1  # scratch that only decay (or a scale) needs
        piece_scratch = np.empty(chunk_size * chunk_size if kind == 2 else 0, dtype)
        rows, vector_rows = chunk_size if decayed else 0, chunk_size if kind == 2 else 0
        q_scaled, k_scaled = np.empty((rows, d_k), dtype), np.empty((rows, d_k), dtype)
        q_decayed, k_state = np.empty((vector_rows, d_k), dtype), np.empty((vector_rows, d_k), dtype)
        q_features, k_features = np.empty(chunk_size * d_k, dtype), np.empty(chunk_size * d_k, dtype)
        row_sums = np.empty(chunk_size, dtype)  # tril(W) 1, the denominators inside the chunk
        cumulative = np.empty((chunk_size, g.shape[2]), dtype)  # b (or B) inside the chunk
        key_decays = np.empty(chunk_size if kind == 1 else 0, dtype)  # exp(b_last − b_j)
        framed = d_k if kind != 0 else 0  # the frame and its companions, which only decay needs
        frame = np.ones(framed, dtype)  # S = diag(frame) s: the decays not yet applied to s, per row
        old_frame, inverse = np.ones(framed, dtype), np.ones(framed, dtype)  # the frame before the chunk; 1 / frame
        settle = np.empty(framed, dtype)  # per row: a factor to apply to s now, or -1
        columns = np.empty(d_k if kind == 2 else 0, dtype)  # scale · exp(b_last + span) · old_frame
        probe = np.zeros(6, dtype)  # q, k, v, out, g finite; g above 0
        for start in range(0, n, chunk_size):
            stop = min(start + chunk_size, n)
            c = stop - start
            q_c, found = _chunk_features(q[b], start, stop, feature, fast_exp, q_features)
            probe[0] += found
            k_c, found = _chunk_features(k[b], start, stop, feature, fast_exp, k_features)
            probe[1] += found
            v_c, out_c = v[b, start:stop], out[b, start:stop]  # [c, d_v]
            weights = weights_scratch[:c * c].reshape((c, c))
            if kind != 0:
                found, above = _chunk_cumulative(g[b], start, stop, cumulative)
                probe[4] += found
                probe[5] += above
                # the chunk's decay exp(b_last) into the frame; s itself waits (see _advance_frame)
                _advance_frame(cumulative[c - 1], kind, floor, frame, old_frame, inverse, settle, fast_exp)
            one_piece = kind == 2 and _piece_end(cumulative[:c], 0, span) == c  # the usual case with vector decay
            if one_piece:  # the weights (scaled) and the state's operands in one pass
                boost = scale * np.exp(span)
                for r in range(d_k):
                    columns[r] = boost * _exp_value(cumulative[c - 1, r], fast_exp) * old_frame[r]
                _one_piece_products(q_c, k_c, cumulative[:c], span, boost, columns, inverse, weights, q_scaled,
                                    k_scaled, q_decayed, k_state, fast_exp, blas)
            elif kind == 2:  # pieces: the weights, then the operands with the state in passes of their own
                _vector_decay_weights(q_c, k_c, cumulative[:c], span, weights, q_scaled, k_scaled, piece_scratch,
                                      fast_exp, blas)
                _decayed_queries(q_c, cumulative[:c], kind, scale, old_frame, q_decayed, fast_exp)
                for j in range(c):
                    for r in range(d_k):
                        k_state[j, r] = k_scaled[j, r] * inverse[r]
            else:
                _gemm(q_c, k_c, weights, False, True, 0, blas)  # Q_c K_cᵀ
            if kind == 1:
                _scalar_decay_weights(cumulative[:c, 0], weights, scale, key_decays, fast_exp)
            elif scale != 1 and not one_piece:
                for i in range(c):
                    for j in range(i + 1):
                        weights[i, j] *= scale
            if normalise:
                _lower_row_sums(weights, row_sums)
            probe[2] += _copy_rows(v_c, out_c)
            _lower_triangle_matmul(weights, out_c, blas)  # inside the chunk
            queries, keys = q_c, k_c  # as they are, or decayed (to the chunk's start, its end) and scaled
            if kind == 2:
                queries, keys = q_decayed[:c], k_state[:c]
            elif decayed:
                _decayed_queries(q_c, cumulative[:c], kind, scale, old_frame, q_scaled, fast_exp)
                queries = q_scaled[:c]
            _gemm(queries, s, out_c, False, False, 1, blas)  # + every chunk before it
            if normalise:
                probe[3] += _divide_rows(out_c, row_sums, queries, z, eps)
            else:
                probe[3] += _probe(out_c)  # while the chunk's output is still in cache
            if kind != 0:
                _settle_rows(s, z, settle)  # the rows whose frame fell below the floor take their decay now
            if kind == 1:  # K ⊙ exp(b_last − b) / frame
                for j in range(c):
                    for r in range(d_k):
                        k_scaled[j, r] = k_c[j, r] * key_decays[j] * inverse[r]
                keys = k_scaled[:c]
            _gemm(keys, v_c, s, True, False, 1, blas)  # carry the chunk into the state
            if normalise:
                for j in range(c):
                    for r in range(d_k):
                        z[r] += keys[j, r]
        for r in range(framed):  # the decays the frame still holds, into S and z
            for col in range(d_v):
                s[r, col] *= frame[r]
            if normalise:
                z[r] *= frame[r]
        if normalise:  # [S | z] back into the state
            state[b, :, :d_v] = s
            state[b, :, d_v] = z
        probes[b] = probe


@njit(cache=True, fastmath=_FAST)
def _advance_frame(last, kind, floor, frame, old_frame, inverse, settle, fast_exp):
    """A chunk's decay diag(exp(b_last)) carried into S = diag(frame) s without a pass over s:
    frame ← frame · exp(b_last) row by row (b_last = last[r] for kind 2, last[0] for kind 1),
    old_frame keeps the frame before it (the queries read S as it was) and inverse = 1 / frame
    (the keys enter s divided by it). A row whose frame would fall below ``floor`` = exp(−span)
    is marked in ``settle`` with that factor, for :func:`_settle_rows` to apply to s once the
    chunk's queries have read it, and restarts at 1; other rows get −1. So s stays within
    exp(span) of S, a decay that underflows to 0 zeroes its row as it should, and with mild
    decays a row of s is touched once in many chunks instead of once per chunk."""
    for r in range(frame.shape[0]):
        old_frame[r] = frame[r]
        factor = frame[r] * _exp_value(last[r if kind == 2 else 0], fast_exp)
        settle[r] = -1
        if factor < floor:
            settle[r] = factor
            factor = frame.dtype.type(1)
        frame[r] = factor
        inverse[r] = 1 / factor


@njit(cache=True, fastmath=_FAST)
def _settle_rows(s, z, settle):
    """s[r] *= settle[r] (and z[r], if z has entries) for the rows :func:`_advance_frame` marked."""
    for r in range(settle.shape[0]):
        if settle[r] >= 0:
            for col in range(s.shape[1]):
                s[r, col] *= settle[r]
            if z.shape[0] > 0:
                z[r] *= settle[r]


@njit(cache=True, fastmath=_FAST)
def _copy_rows(source, target):
    """target = source, [c, w]; returns Σ source·0, the rows' finiteness probe (0 or NaN)."""
    probe = source.dtype.type(0)
    for i in range(source.shape[0]):
        for j in range(source.shape[1]):
            target[i, j] = source[i, j]
            probe += source[i, j] * 0
    return probe


@njit(cache=True, fastmath=_FAST)
def _lower_row_sums(weights, sums):
    """sums[i] = Σ_{j<=i} weights[i, j]: tril(W) 1, [c, c] -> [c]."""
    for i in range(weights.shape[0]):
        total = weights.dtype.type(0)
        for j in range(i + 1):
            total += weights[i, j]
        sums[i] = total


@njit(cache=True, fastmath=_FAST, error_model="numpy")
def _divide_rows(out_c, row_sums, queries, z, eps):
    """out_c[i] /= row_sums[i] + queries[i]·z + eps, the denominator from inside the chunk and
    from before it; returns Σ out·0, the output's finiteness probe. One division per row
    (1/0 = inf keeps a 0/0 a NaN; the numpy error model returns it instead of raising)."""
    probe = out_c.dtype.type(0)
    for i in range(out_c.shape[0]):
        total = row_sums[i] + eps
        for r in range(z.shape[0]):
            total += queries[i, r] * z[r]
        reciprocal = 1 / total
        for j in range(out_c.shape[1]):
            out_c[i, j] *= reciprocal
            probe += out_c[i, j] * 0
    return probe


def _flatten(x: np.ndarray, trailing: int, dtype: np.dtype) -> np.ndarray:
    """[..., *trailing axes] -> [B, *trailing axes], C-contiguous and writeable in ``dtype``
    (numba compiles read-only arrays, such as broadcast views, as a type of their own)."""
    flat = x.reshape((-1,) + x.shape[x.ndim - trailing:])
    if flat.dtype == dtype and flat.flags.c_contiguous and flat.flags.writeable:  # as it is (the usual case)
        return flat
    return np.require(flat, dtype=dtype, requirements="CW")


def flatten_inputs(q: np.ndarray, k: np.ndarray, v: np.ndarray, log_decay: np.ndarray | None,
                   initial_state: np.ndarray | None, with_normaliser: bool = False) -> tuple:
    """The kernels' arguments: q, k, v [B, N, ·]; g [B, N, w] and its kind (0: None, g empty;
    1: one decay per step, w = 1; 2: one per key, w = d_k); a fresh state [B, d_k, d_v] (S_0,
    zeros for None), or [B, d_k, d_v + 1] ``with_normaliser``; an empty output [B, N, d_v];
    and ``unflatten(o, s)``, which puts the leading axes back."""
    lead, dtype = v.shape[:-2], v.dtype
    n, d_k, d_v = k.shape[-2], k.shape[-1], v.shape[-1]
    flat_q, flat_k, flat_v = (_flatten(x, 2, dtype) for x in (q, k, v))
    batch = flat_v.shape[0]
    if log_decay is None:
        kind, g = 0, np.zeros((batch, 0, 1), dtype)
    elif log_decay.ndim == q.ndim:  # [..., N, d_k]
        kind, g = 2, _flatten(log_decay, 2, dtype)
    else:  # [..., N]
        kind, g = 1, _flatten(log_decay[..., None], 2, dtype)
    width = d_v + 1 if with_normaliser else d_v
    if initial_state is None:
        state = np.zeros((batch, d_k, width), dtype)
    else:
        state = np.array(initial_state.reshape((batch, d_k, width)), dtype=dtype)  # a copy: updated in place
    out = np.empty((batch, n, d_v), dtype)

    def unflatten(o: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return o.reshape(lead + (n, d_v)), s.reshape(lead + (d_k, width))
    return flat_q, flat_k, flat_v, g, kind, state, out, unflatten


def recurrent_gated_linear_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                                     log_decay: np.ndarray | None, scale: float,
                                     initial_state: np.ndarray | None = None,
                                     chunk_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The scan, one fused pass over the state per token: (o [..., N, d_v], S_N [..., d_k, d_v])."""
    q, k, v, g, kind, state, out, unflatten = flatten_inputs(q, k, v, log_decay, initial_state)
    arguments = (q, k, v, g, kind, v.dtype.type(scale), state, out)
    if q.shape[0] == 1:  # one sequence (a decoding step): waking threads would cost more than the work
        _recurrent_sequence(*(x[0] if isinstance(x, np.ndarray) else x for x in arguments))
    else:
        _recurrent_kernel(*arguments)
    return unflatten(out, state)


def parallel_gated_linear_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                                    log_decay: np.ndarray | None, scale: float,
                                    initial_state: np.ndarray | None = None,
                                    chunk_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The masked N×N form, one query per task, weights made on the fly: (o, S_N)."""
    q, k, v, g, kind, state, out, unflatten = flatten_inputs(q, k, v, log_decay, initial_state)
    floor = _EXP_FLOOR[v.dtype]
    _parallel_kernel(q, k, v, g, kind, float(scale), floor, state, out)
    _final_state_kernel(k, v, g, kind, floor, state)
    return unflatten(out, state)


def chunkwise_gated_linear_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                                     log_decay: np.ndarray | None, scale: float,
                                     initial_state: np.ndarray | None = None, chunk_size: int = 64, *,
                                     feature_map: str = "identity",
                                     normaliser_eps: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Chunks of ``chunk_size`` tokens on BLAS (one BLAS thread per numba thread): (o, S_N).

    Linear attention's options (see :func:`_chunkwise_kernel`): ``feature_map`` 'elu+1' or
    'relu' takes raw q, k and computes their features chunk by chunk; ``normaliser_eps`` (a
    float) runs the recurrence on [V | 1] and returns the normalised output [..., N, d_v] with
    the state [S | z] [..., d_k, d_v + 1] (initial_state, if any, in that shape too).

    The kernel checks q, k, v, the log decays and the output for NaN and inf itself, and the
    log decays for entries above 0, in passes over each chunk, and raises the ``ValueError``
    that names the culprit (the callers' own checks would read each whole array again; the
    backend lists this form in ``CHECKS_FINITE``). The final state is the caller's to check.
    """
    normalise = normaliser_eps is not None
    q, k, v, g, kind, state, out, unflatten = flatten_inputs(q, k, v, log_decay, initial_state, normalise)
    dtype = v.dtype
    probes = np.zeros((v.shape[0], 6), dtype)  # q, k, v, out, log_decay: NaN where one was not finite
    eps = dtype.type(normaliser_eps if normalise else -1)
    with one_blas_thread():
        _chunkwise_kernel(q, k, v, g, kind, dtype.type(scale), int(chunk_size), dtype.type(_SPAN[dtype]),
                          dtype == np.float32, FEATURE_CODES[feature_map], eps, state, out, probes)
    _raise_for_probes(probes, feature_map, normaliser_eps, g)
    return unflatten(out, state)


def _raise_for_probes(probes: np.ndarray, feature_map: str, eps: float | None, log_decay: np.ndarray) -> None:
    """The errors the public functions' own checks would raise, in their order, read from the
    kernel's probes: la.linear_attention's when it computes features or divides, otherwise
    the recurrence's."""
    found = np.isnan(probes[:, :5]).any(axis=0)  # [q, k, v, out, log_decay]
    for name, bad in zip(("q", "k", "v", "log_decay"), found[[0, 1, 2, 4]]):
        if bad:
            raise nonfinite_error(name)
    if probes[:, 5].max() > 0:
        raise positive_log_decay_error(float(log_decay.max()))
    if found[3]:
        linear = eps is not None or feature_map != "identity"
        raise nonfinite_output_error(feature_map, eps) if linear else overflow_error()


GATED_FORMS = {
    "recurrent": recurrent_gated_linear_attention,
    "parallel": parallel_gated_linear_attention,
    "chunkwise": chunkwise_gated_linear_attention,
}
