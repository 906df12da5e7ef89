"""Softmax attention as a numba kernel that never builds the N×N matrix (chapter 9's baseline).

``lattn-edu bench`` times linear attention against softmax attention computed the fast
way: blocks of queries against blocks of keys with a running maximum and sum (the online
softmax of FlashAttention), so memory stays O(N) and the comparison is with a softmax that
is not slowed by materialising its weights. It is a benchmark baseline, not a backend of
:func:`lattn_edu.softmax_attention`, whose materialised N×N matrix is the point of chapter 1.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._checks import check_bool, check_positive_int, check_qkv, check_scale, is_torch_tensor
from .numba_blas import _FAST, _exp_nonpositive, one_blas_thread


@njit(cache=True, parallel=True, fastmath=_FAST)
def _softmax_kernel(q, k, v, causal, scale, block, fast_exp, out):
    """Softmax attention a block of queries at a time, online over blocks of keys (FlashAttention's
    running maximum and sum), writing out [B, N_q, d_v]; q [B, N_q, d], k [B, N, d], v [B, N, d_v].

    For each key block:  L = Q_b K_jᵀ · scale (masked),  m' = max(m, rowmax L),
    acc = acc · exp(m - m') + exp(L - m') V_j,  l = l · exp(m - m') + rowsum exp(L - m');  o = acc / l.
    """
    n_q, n, d_v = q.shape[1], k.shape[1], v.shape[2]
    dtype = v.dtype
    n_blocks = (n_q + block - 1) // block
    for task in prange(q.shape[0] * n_blocks):  # (sequence, query block) pairs: balanced threads
        b, first = task // n_blocks, (task % n_blocks) * block
        last = min(first + block, n_q)
        rows = last - first
        q_b = q[b, first:last]  # [rows, d]
        logits_scratch = np.empty(rows * block, dtype)
        product = np.empty((rows, d_v), dtype)
        acc = np.zeros((rows, d_v), dtype)
        running_max = np.full(rows, -np.inf, dtype)
        running_sum = np.zeros(rows, dtype)
        key_end = last if causal else n
        for key_start in range(0, key_end, block):
            key_stop = min(key_start + block, key_end)
            cols = key_stop - key_start
            logits = logits_scratch[:rows * cols].reshape((rows, cols))
            np.dot(q_b, k[b, key_start:key_stop].T, logits)  # [rows, cols]
            for i in range(rows):
                visible = min(cols, first + i - key_start + 1) if causal else cols  # keys j <= i
                block_max = running_max[i]
                for j in range(visible):
                    logits[i, j] *= scale
                    block_max = max(block_max, logits[i, j])
                for j in range(visible):
                    logits[i, j] -= block_max
                for j in range(max(visible, 0), cols):
                    logits[i, j] = -np.inf  # exp(-inf) = 0: masked keys get no weight
                shrink = np.exp(running_max[i] - block_max) if visible > 0 else 1.0
                running_max[i] = block_max
                running_sum[i] *= shrink
                for c in range(d_v):
                    acc[i, c] *= shrink
            weights = logits_scratch[:rows * cols]
            _exp_nonpositive(weights, rows * cols, fast_exp)  # exp(L - m')
            for i in range(rows):
                for j in range(cols):
                    running_sum[i] += logits[i, j]
            np.dot(logits, v[b, key_start:key_stop], product)  # [rows, d_v]
            for i in range(rows):
                for c in range(d_v):
                    acc[i, c] += product[i, c]
        for i in range(rows):
            for c in range(d_v):
                out[b, first + i, c] = acc[i, c] / running_sum[i]


def softmax_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False,
                      scale: float | None = None, block_size: int = 64) -> np.ndarray:
    """Softmax attention softmax(q kᵀ · scale) v as a numba kernel that never builds the N×N matrix.

    The same output as :func:`lattn_edu.softmax_attention` (to rounding) for numpy arrays
    q [..., N_q, d], k [..., N, d], v [..., N, d_v], float32 or float64; ``scale`` None
    means 1/sqrt(d). Memory is O(N): blocks of ``block_size`` queries meet blocks of keys
    with a running maximum and sum. The softmax baseline of ``lattn-edu bench``.
    """
    causal = check_bool(causal, "causal")
    q, k, v = check_qkv(q, k, v, causal)
    if is_torch_tensor(q):
        raise TypeError("numba softmax_attention takes numpy arrays; got torch.Tensor")
    block_size = check_positive_int(block_size, "block_size")
    scale = check_scale(scale, q.shape[-1])  # None -> 1/sqrt(d)
    lead, dtype = v.shape[:-2], v.dtype
    n_q, d_v = q.shape[-2], v.shape[-1]
    flat = [np.ascontiguousarray(x.reshape((-1,) + x.shape[-2:]), dtype=dtype) for x in (q, k, v)]
    out = np.empty((flat[0].shape[0], n_q, d_v), dtype)
    with one_blas_thread():
        _softmax_kernel(*flat, causal, dtype.type(scale), block_size, dtype == np.float32, out)
    return out.reshape(lead + (n_q, d_v))
