"""The numba backend: the four forms of linear attention as JIT kernels (chapter 9, "Fast kernels").

Every form runs the same algorithm as its numpy reference in :mod:`lattn_edu.linear`,
written as loops that numba compiles to machine code:

- the leading (batch, head) axes are flattened to one axis B, and ``prange`` hands
  the B independent sequences to different threads;
- the normaliser rides along as an extra value: with a column of ones appended to V,
  the state φ(K)ᵀ[V | 1] = [S | z] is one [m, d_v + 1] matrix, so every form computes
  numerator and denominator in the same products, and a last pass divides;
- arithmetic stays in the inputs' dtype (eps is cast to it), so float32 stays float32;
  eps may be one float or a guard per query [..., N_q, 1] (see the reference forms).

The block products are plain row-by-row loops rather than ``@``: numba's ``@`` calls
BLAS through scipy, which lattn_edu does not depend on.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numba import njit, prange

from .._checks import is_torch_tensor


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


@njit(cache=True, parallel=True)
def _chunkwise_kernel(phi_q, phi_k, values, causal, chunk_size, acc):
    """Chunks of C tokens: masked C×C weights inside a chunk, the carried [S | z] across chunks."""
    n = phi_k.shape[1]
    for b in prange(phi_q.shape[0]):
        state = np.zeros((phi_k.shape[2], values.shape[2]), dtype=values.dtype)  # [m, w]
        for start in range(0, n, chunk_size):
            stop = min(start + chunk_size, n)
            k_c, v_c = phi_k[b, start:stop], values[b, start:stop]  # [C, m], [C, w]
            if causal:
                q_c, acc_c = phi_q[b, start:stop], acc[b, start:stop]  # [C, m], [C, w]
                _add_matmul(_weights(q_c, k_c, True), v_c, acc_c)  # inside the chunk
                _add_matmul(q_c, state, acc_c)  # every chunk before it
            _add_transposed_matmul(k_c, v_c, state)  # carry the chunk into the state
        if not causal:  # one read of the full state for every query
            _add_matmul(phi_q[b], state, acc[b])


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
    guard = np.ascontiguousarray(np.broadcast_to(eps, lead + (n_q, 1)), dtype=dtype)  # [..., N_q, 1]
    _normalise(acc, guard.reshape(-1, n_q), out)
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
    return _run(_chunkwise_kernel, phi_q, phi_k, v, causal, eps, int(chunk_size))


FORMS = {
    "quadratic": quadratic_linear_attention,
    "parallel": parallel_linear_attention,
    "recurrent": recurrent_linear_attention,
    "chunkwise": chunkwise_linear_attention,
}


def to_backend(q: Any, k: Any, v: Any) -> tuple[Any, Any, Any, Callable[[Any], Any]]:
    """numpy arrays pass through; torch tensors are refused with a pointer to backend='torch'."""
    if is_torch_tensor(q):
        raise TypeError("backend='numba' takes numpy arrays; got torch.Tensor. "
                        "Use backend='torch' for tensors.")
    return q, k, v, lambda out: out
