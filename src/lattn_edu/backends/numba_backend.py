"""The numba backend: the four forms of linear attention as JIT kernels (chapter 9, "Fast kernels").

Every form runs the same algorithm as its numpy reference in :mod:`lattn_edu.linear`,
compiled by numba to machine code:

- the leading (batch, head) axes are flattened to one axis B, and ``prange`` hands
  the B independent sequences to different threads;
- arithmetic stays in the inputs' dtype (eps, one float, is cast to it), so float32 stays
  float32.

The gated family lives in :mod:`.numba_gated` and :mod:`.numba_delta` (``GATED_FORMS`` and
``DELTA_FORMS`` are re-exported here), the BLAS wrappers every kernel shares in :mod:`.numba_blas`.

The quadratic, parallel and recurrent forms are plain loops, written to be read next to
their equations. The normaliser rides along as an extra value: with a column of ones
appended to V, the state φ(K)ᵀ[V | 1] = [S | z] is one [m, d_v + 1] matrix, so numerator
and denominator come from the same products, and a last pass divides.

The chunkwise form is the fast one. Per chunk of C tokens it does four matrix products,
φ(Q_c)φ(K_c)ᵀ [C, C], its lower triangle times V_c, φ(Q_c) S and φ(K_c)ᵀV_c, in BLAS
(the library scipy ships, called directly: ``gemm`` can add into its output, so nothing
is summed twice, and ``trmm`` multiplies by the triangle without the masked half); each
thread keeps its chunk's features and products in small scratch arrays that stay in
cache, and the BLAS library runs on one thread while numba's threads are busy
(threadpoolctl), so the two never fight over cores.
Called through :data:`FUSED` it also computes the elu+1 features inside the kernel, a
chunk at a time, instead of in separate passes over the whole input.

The softmax kernel the benchmarks compare against is not a form of linear attention and
lives in :mod:`.numba_softmax`.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numba import njit, prange

from .._checks import is_torch_tensor, nonfinite_error, nonfinite_output_error
from .numba_blas import (_FAST, _blas_arguments, _exp_nonpositive, _gemm, _lower_triangle_matmul,
                         one_blas_thread)
from .numba_delta import DELTA_FORMS  # noqa: F401  (re-exported: the backend's delta-rule forms)
from .numba_gated import GATED_FORMS  # noqa: F401  (re-exported: the backend's gated forms)


@njit(cache=True)
def _add_outer(x, y, out):
    """out += x yᵀ: a rank-one update, [p], [q] -> [p, q]."""
    for r in range(x.shape[0]):
        for c in range(y.shape[0]):
            out[r, c] += x[r] * y[c]


@njit(cache=True)
def _add_row_times_matrix(x, matrix, out):
    """out += xᵀ matrix, [p] and [p, q] -> [q]: a weighted sum of the matrix's rows."""
    for r in range(x.shape[0]):
        for c in range(matrix.shape[1]):
            out[c] += x[r] * matrix[r, c]


@njit(cache=True)
def _add_matmul(a, b, out):
    """out += a b, [n, p] @ [p, q] -> [n, q], one output row at a time."""
    for i in range(a.shape[0]):
        _add_row_times_matrix(a[i], b, out[i])


@njit(cache=True)
def _add_transposed_matmul(a, b, out):
    """out += aᵀ b, [n, p]ᵀ @ [n, q] -> [p, q]: the sum of the outer products of the rows."""
    for j in range(a.shape[0]):
        _add_outer(a[j], b[j], out)


@njit(cache=True)
def _weights(phi_q, phi_k, causal):
    """φ(Q)φ(K)ᵀ, [n_q, m] and [n, m] -> [n_q, n]; causal keeps only keys j <= i."""
    weights = np.zeros((phi_q.shape[0], phi_k.shape[0]), dtype=phi_q.dtype)
    for i in range(phi_q.shape[0]):
        last = i + 1 if causal else phi_k.shape[0]  # the masked entries stay 0
        for j in range(last):
            for r in range(phi_q.shape[1]):
                weights[i, j] += phi_q[i, r] * phi_k[j, r]
    return weights


@njit(cache=True, parallel=True)
def _quadratic_kernel(phi_q, phi_k, values, causal, acc):
    """acc[b] = W [V | 1] with the N_q×N weight matrix W = φ(Q)φ(K)ᵀ materialised."""
    for b in prange(phi_q.shape[0]):
        _add_matmul(_weights(phi_q[b], phi_k[b], causal), values[b], acc[b])  # [N_q, N] @ [N, w]


@njit(cache=True)
def _prefix_sum_read(phi_q, phi_k, values, acc):
    """acc_i += φ(q_i)ᵀ [S_i | z_i] with S_i = Σ_{j<=i} φ(k_j)[v_j | 1]ᵀ, by prefix sums.

    Row r of every S_i is a prefix sum over tokens of φ(k_j)_r [v_j | 1]; computing one
    row at a time needs [w] of memory instead of the reference's [N, m, w] stack of states.
    """
    prefix = np.empty(values.shape[1], dtype=values.dtype)  # row r of S_i  [w]
    for r in range(phi_k.shape[1]):
        prefix[:] = 0
        for i in range(phi_k.shape[0]):
            for c in range(values.shape[1]):
                prefix[c] += phi_k[i, r] * values[i, c]
            for c in range(values.shape[1]):
                acc[i, c] += phi_q[i, r] * prefix[c]


@njit(cache=True, parallel=True)
def _parallel_kernel(phi_q, phi_k, values, causal, acc):
    """acc[b] = φ(Q)(φ(K)ᵀ[V | 1]): the state first, then one read per query."""
    for b in prange(phi_q.shape[0]):
        if causal:
            _prefix_sum_read(phi_q[b], phi_k[b], values[b], acc[b])
        else:
            state = np.zeros((phi_k.shape[2], values.shape[2]), dtype=values.dtype)  # [S | z]  [m, w]
            _add_transposed_matmul(phi_k[b], values[b], state)
            _add_matmul(phi_q[b], state, acc[b])  # [N_q, m] @ [m, w]


@njit(cache=True, parallel=True)
def _recurrent_kernel(phi_q, phi_k, values, causal, acc):
    """The scan: [S_i | z_i] = [S_{i-1} | z_{i-1}] + φ(k_i)[v_i | 1]ᵀ, one token at a time."""
    for b in prange(phi_q.shape[0]):
        state = np.zeros((phi_k.shape[2], values.shape[2]), dtype=values.dtype)  # [m, w]
        for i in range(phi_k.shape[1]):
            _add_outer(phi_k[b, i], values[b, i], state)
            if causal:  # query i reads the state right after token i
                _add_row_times_matrix(phi_q[b, i], state, acc[b, i])
        if not causal:  # every query reads the final state
            for i in range(phi_q.shape[1]):
                _add_row_times_matrix(phi_q[b, i], state, acc[b, i])


@njit(cache=True, fastmath=_FAST)
def _elu_plus_one_block(x, out, fast_exp, high, low):
    """out = elu(x) + 1 for a block [c, m]: exp(x) where x <= 0, x + 1 elsewhere.

    Returns Σ x·0 over the block, 0 if x is finite and NaN if it holds a NaN or an inf: the
    check of the input, from the pass that reads it anyway."""
    probe = x.dtype.type(0)
    for i in range(x.shape[0]):
        for r in range(x.shape[1]):
            out[i, r] = x[i, r]
            probe += x[i, r] * 0
    _exp_nonpositive(out.reshape(out.size), out.size, fast_exp, high, low)  # exp(min(x, 0))
    for i in range(x.shape[0]):
        for r in range(x.shape[1]):
            if x[i, r] > 0:
                out[i, r] += x[i, r]  # exp(0) = 1 exactly, so this is x + 1
    return probe


@njit(cache=True, fastmath=_FAST)
def _chunk_features(x, start, stop, apply_elu, fast_exp, scratch, high, low):
    """Rows start:stop of one sequence's features [c, m]: x itself, or elu(x) + 1 in scratch;
    and the block's finiteness probe (0 or NaN; 0 when x is passed through unread)."""
    block = x[start:stop]
    if not apply_elu:
        return block, x.dtype.type(0)
    features = scratch[:block.size].reshape(block.shape)
    return features, _elu_plus_one_block(block, features, fast_exp, high, low)


@njit(cache=True, parallel=True, fastmath=_FAST)
def _chunkwise_kernel(q, k, v, causal, chunk_size, apply_elu, fast_exp, eps, out, probes):
    """Chunks of C tokens, four BLAS products each; writes the normalised output [B, N_q, d_v].

    q [B, N_q, m], k [B, N, m] are features (or raw inputs when ``apply_elu``), v [B, N, d_v],
    eps [B, N_q] one guard per query. probes [B, 4] receives Σ x·0 over q, k (when
    ``apply_elu``), v and the output of each sequence: NaN marks a NaN or inf, found by
    passes the kernel makes anyway. Per chunk c (causal):

        A = φ(Q_c)φ(K_c)ᵀ                                       [C, C]   intra-chunk weights
        O_c = (tril(A) V_c + φ(Q_c) S) / (tril(A) 1 + φ(Q_c) z + eps)   inside the chunk + before it
        S += φ(K_c)ᵀ V_c,  z += φ(K_c)ᵀ 1                                carry the chunk into the state
    """
    n, m, d_v = k.shape[1], k.shape[2], v.shape[2]
    dtype = v.dtype
    for b in prange(q.shape[0]):
        blas = _blas_arguments(dtype)
        q_probe, k_probe, v_probe, out_probe = dtype.type(0), dtype.type(0), dtype.type(0), dtype.type(0)
        state = np.zeros((m, d_v), dtype)  # S  [m, d_v]
        normaliser = np.zeros(m, dtype)  # z  [m]
        q_scratch, k_scratch = np.empty(chunk_size * m, dtype), np.empty(chunk_size * m, dtype)
        weights_scratch = np.empty(chunk_size * chunk_size, dtype)
        reciprocal = np.empty(chunk_size, dtype)  # 1 / denominator of each row
        high, low = np.empty(chunk_size * m, np.int32), np.empty(chunk_size * m, np.int32)
        for start in range(0, n, chunk_size):
            stop = min(start + chunk_size, n)
            c = stop - start
            k_c, probe = _chunk_features(k[b], start, stop, apply_elu, fast_exp, k_scratch, high, low)
            k_probe += probe
            v_c = v[b, start:stop]  # [c, d_v]
            if causal:
                q_c, probe = _chunk_features(q[b], start, stop, apply_elu, fast_exp, q_scratch, high, low)
                q_probe += probe
                weights = weights_scratch[:c * c].reshape((c, c))
                _gemm(q_c, k_c, weights, False, True, 0, blas)  # φ(Q_c)φ(K_c)ᵀ
                for i in range(c):  # the denominator: keys j <= i of the chunk, then the state
                    total = eps[b, start + i]
                    for j in range(i + 1):
                        total += weights[i, j]
                    for r in range(m):
                        total += q_c[i, r] * normaliser[r]
                    reciprocal[i] = 1 / total  # one division per row (1/0 = inf keeps 0/0 a NaN)
                out_c = out[b, start:stop]  # [c, d_v]
                for i in range(c):
                    for j in range(d_v):
                        out_c[i, j] = v_c[i, j]
                        v_probe += v_c[i, j] * 0
                _lower_triangle_matmul(weights, out_c, blas)  # inside the chunk, the future masked
                _gemm(q_c, state, out_c, False, False, 1, blas)  # + every chunk before it
                for i in range(c):
                    for j in range(d_v):
                        out_c[i, j] *= reciprocal[i]
                        out_probe += out_c[i, j] * 0
            else:
                for i in range(c):
                    for j in range(d_v):
                        v_probe += v_c[i, j] * 0
            _gemm(k_c, v_c, state, True, False, 1, blas)  # carry the chunk into the state
            for i in range(c):
                for r in range(m):
                    normaliser[r] += k_c[i, r]
        if not causal:  # one read of the full state for every query, a chunk at a time
            for start in range(0, q.shape[1], chunk_size):
                stop = min(start + chunk_size, q.shape[1])
                q_c, probe = _chunk_features(q[b], start, stop, apply_elu, fast_exp, q_scratch, high, low)
                q_probe += probe
                out_c = out[b, start:stop]
                _gemm(q_c, state, out_c, False, False, 0, blas)
                for i in range(stop - start):
                    total = eps[b, start + i]
                    for r in range(m):
                        total += q_c[i, r] * normaliser[r]
                    for j in range(d_v):
                        out_c[i, j] = out_c[i, j] / total
                        out_probe += out_c[i, j] * 0
        probes[b, 0], probes[b, 1], probes[b, 2], probes[b, 3] = q_probe, k_probe, v_probe, out_probe


@njit(cache=True, parallel=True)
def _normalise(acc, eps, out):
    """out = numerator / (denominator + eps), with acc = [numerator | denominator]  [B, N_q, d_v + 1]
    and one guard per query, eps [B, N_q]."""
    d_v = out.shape[2]
    for b in prange(acc.shape[0]):
        for i in range(acc.shape[1]):
            denominator = acc[b, i, d_v] + eps[b, i]
            for c in range(d_v):
                out[b, i, c] = acc[b, i, c] / denominator


def _run(kernel: Callable[..., None], phi_q: np.ndarray, phi_k: np.ndarray, v: np.ndarray,
         causal: bool, eps: Any, *options: Any) -> np.ndarray:
    """Flatten the leading axes to B, append the ones column, run ``kernel``, normalise, reshape back."""
    lead, dtype = v.shape[:-2], v.dtype
    n_q, (n, d_v) = phi_q.shape[-2], v.shape[-2:]
    phi_q = np.ascontiguousarray(phi_q.reshape((-1,) + phi_q.shape[-2:]))  # [B, N_q, m]
    phi_k = np.ascontiguousarray(phi_k.reshape((-1,) + phi_k.shape[-2:]))  # [B, N, m]
    flat_v = v.reshape(-1, n, d_v)
    values = np.concatenate([flat_v, np.ones(flat_v.shape[:-1] + (1,), dtype)], axis=-1)  # [V | 1]
    acc = np.zeros((values.shape[0], n_q, d_v + 1), dtype)  # [numerator | denominator]
    kernel(phi_q, phi_k, values, bool(causal), *options, acc)
    out = np.empty((values.shape[0], n_q, d_v), dtype)
    _normalise(acc, np.full((values.shape[0], n_q), eps, dtype), out)  # the kernel's guard per query [B, N_q]
    return out.reshape(lead + (n_q, d_v))


def quadratic_linear_attention(phi_q: np.ndarray, phi_k: np.ndarray, v: np.ndarray,
                               causal: bool = False, eps: Any = 1e-6) -> np.ndarray:
    """(φ(Q)φ(K)ᵀ) V with the N_q×N weights materialised per sequence: [..., N_q, d_v]."""
    return _run(_quadratic_kernel, phi_q, phi_k, v, causal, eps)


def parallel_linear_attention(phi_q: np.ndarray, phi_k: np.ndarray, v: np.ndarray,
                              causal: bool = False, eps: Any = 1e-6) -> np.ndarray:
    """φ(Q)(φ(K)ᵀV); causal by prefix sums of the states: [..., N_q, d_v]."""
    return _run(_parallel_kernel, phi_q, phi_k, v, causal, eps)


def recurrent_linear_attention(phi_q: np.ndarray, phi_k: np.ndarray, v: np.ndarray,
                               causal: bool = False, eps: Any = 1e-6) -> np.ndarray:
    """The token-by-token scan of the running state S_i, z_i: [..., N_q, d_v]."""
    return _run(_recurrent_kernel, phi_q, phi_k, v, causal, eps)


def chunkwise_linear_attention(phi_q: np.ndarray, phi_k: np.ndarray, v: np.ndarray,
                               causal: bool = False, eps: Any = 1e-6,
                               chunk_size: int = 64) -> np.ndarray:
    """Quadratic inside chunks of ``chunk_size`` tokens, the carried state between them: [..., N_q, d_v]."""
    return _run_chunkwise(phi_q, phi_k, v, causal, eps, chunk_size, apply_elu=False)


def chunkwise_elu_linear_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                                   causal: bool = False, eps: Any = 1e-6,
                                   chunk_size: int = 64) -> np.ndarray:
    """The chunkwise form with φ = elu + 1 applied inside the kernel: raw q [..., N_q, d],
    k [..., N, d], v [..., N, d_v] -> [..., N_q, d_v]. The same output as
    ``chunkwise_linear_attention(elu_plus_one(q), elu_plus_one(k), v, ...)``, without the
    two passes over the whole input that computing the features first would cost.

    It checks its inputs and output for NaN and inf itself, in passes it makes anyway, and
    raises the ``ValueError`` that ``la.linear_attention``'s separate checks would (which
    is why ``linear_attention`` skips those for a fused kernel; see :data:`FUSED`)."""
    return _run_chunkwise(q, k, v, causal, eps, chunk_size, apply_elu=True)


def _run_chunkwise(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, eps: Any,
                   chunk_size: int, apply_elu: bool) -> np.ndarray:
    """Flatten the leading axes to B, run the chunkwise kernel with one BLAS thread, reshape back."""
    lead, dtype = v.shape[:-2], v.dtype
    n_q, d_v = q.shape[-2], v.shape[-1]
    flat = [np.ascontiguousarray(x.reshape((-1,) + x.shape[-2:]), dtype=dtype) for x in (q, k, v)]
    out = np.empty((flat[2].shape[0], n_q, d_v), dtype)
    probes = np.zeros((out.shape[0], 4), dtype)  # q, k, v, out: NaN where one was not finite
    with one_blas_thread():
        _chunkwise_kernel(*flat, bool(causal), int(chunk_size), apply_elu, dtype == np.float32,
                          np.full((out.shape[0], n_q), eps, dtype), out, probes)  # eps per query [B, N_q]
    if apply_elu:  # given features are checked by the caller, as for the other forms
        _raise_for_probes(probes, eps)
    return out.reshape(lead + (n_q, d_v))


def _raise_for_probes(probes: np.ndarray, eps: Any) -> None:
    """The errors la.linear_attention's own checks would raise, read from the kernel's probes."""
    found = np.isnan(probes).any(axis=0)  # [q, k, v, out]
    for name, bad in zip(("q", "k", "v"), found[:3]):
        if bad:
            raise nonfinite_error(name)
    if found[3]:
        raise nonfinite_output_error("elu+1", eps)


FORMS = {
    "quadratic": quadratic_linear_attention,
    "parallel": parallel_linear_attention,
    "recurrent": recurrent_linear_attention,
    "chunkwise": chunkwise_linear_attention,
}

# (form, feature map) -> a kernel that takes raw q, k and applies the feature map itself, and
# checks q, k, v and its output for NaN and inf as it goes (linear_attention skips its own
# passes for these).
FUSED = {("chunkwise", "elu+1"): chunkwise_elu_linear_attention}


def to_backend(*arrays: Any) -> tuple[Any, ...]:
    """numpy arrays (and None) pass through, then the identity as ``restore``; torch tensors
    are refused with a pointer to backend='torch'."""
    if any(is_torch_tensor(x) for x in arrays):
        raise TypeError("backend='numba' takes numpy arrays; got torch.Tensor. "
                        "Use backend='torch' for tensors.")
    return (*arrays, lambda out: out)
