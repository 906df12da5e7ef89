"""Softmax attention, materialised: the quadratic baseline (chapter 1).

    O = softmax(Q Kᵀ · scale) V,   A = softmax(Q Kᵀ · scale)  is [N_q, N]

The N×N matrix is the point: it is what linear attention avoids. Building it
beyond a memory budget is refused with a message pointing at linear attention.

``window=W`` gives sliding-window attention, the local half of the hybrids of chapter 15:
query i sees its last W keys, i − W < j <= i (itself included). It is causal by definition
here (a window needs ``causal=True``), and W >= N is plain causal attention. The matrix is
still built in full (masked), as the chapter's comparison needs; the numba softmax kernel of
:mod:`lattn_edu.backends.numba_softmax` is a benchmark baseline that this function never calls.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._checks import check_bool, check_positive_int, check_qk, check_qkv, check_scale, is_torch_tensor

MAX_MATRIX_BYTES = 2**30  # 1 GiB of attention weights: far past anything the book needs


def _matrices(count: int) -> str:
    return "one attention matrix" if count == 1 else f"{count} attention matrices"


def _check_budget(q: np.ndarray, k: np.ndarray, max_matrix_bytes: int) -> None:
    lead, n_q, n = q.shape[:-2], q.shape[-2], k.shape[-2]
    needed = math.prod(lead) * n_q * n * q.dtype.itemsize
    if needed > max_matrix_bytes:
        raise ValueError(
            f"softmax attention would materialise {_matrices(math.prod(lead))} of "
            f"[{n_q}, {n}] = {needed:,} bytes ({needed / 2**30:.2f} GiB), above "
            f"max_matrix_bytes={max_matrix_bytes:,} bytes. Use lattn_edu.linear_attention, whose "
            f"memory is O(N), or raise max_matrix_bytes if you really want the N×N matrix.")


def softmax_attention_weights(q: Any, k: Any, causal: bool = False, scale: float | None = None,
                              max_matrix_bytes: int = MAX_MATRIX_BYTES, *,
                              window: int | None = None) -> np.ndarray:
    """The attention matrix A = softmax(q kᵀ · scale), [..., N_q, d] x [..., N, d] -> [..., N_q, N].

    Each row is a probability distribution over keys (causal: over keys j <= i; with
    ``window=W``: over keys i − W < j <= i).
    """
    causal = check_bool(causal, "causal")
    window = _check_window(window, causal)
    q, k = check_qk(q, k, causal)
    return _weights(q, k, causal, check_scale(scale, q.shape[-1]), max_matrix_bytes, window)


def _check_window(window: Any, causal: bool) -> int | None:
    """None, or an int W >= 1 with causal=True (a window is the last W keys of a causal query)."""
    if window is None:
        return None
    window = check_positive_int(window, "window")
    if not causal:
        raise ValueError(f"window={window} needs causal=True: the window is the W keys i − W < j <= i "
                         "ending at query i; got causal=False")
    return window


def _weights(q: np.ndarray, k: np.ndarray, causal: bool, scale: float,
             max_matrix_bytes: int, window: int | None = None) -> np.ndarray:
    if is_torch_tensor(q):
        raise TypeError("softmax attention takes numpy arrays; got torch.Tensor "
                        "(use torch.nn.functional.scaled_dot_product_attention for tensors)")
    _check_budget(q, k, max_matrix_bytes)
    # one [..., N_q, N] buffer, worked on in place: a new matrix per step costs more than the
    # arithmetic at the sizes the book uses (each is a fresh allocation the OS must map)
    weights = q @ k.swapaxes(-1, -2)  # [..., N_q, N]: the logits, until exp
    weights *= q.dtype.type(scale)
    if causal:
        weights[..., ~np.tri(q.shape[-2], k.shape[-2], dtype=bool)] = -np.inf
    if window is not None:  # keys j <= i − W fall out of the window (each row keeps key i)
        weights[..., np.tri(q.shape[-2], k.shape[-2], -window, dtype=bool)] = -np.inf
    weights -= weights.max(-1, keepdims=True)  # exp(x - max) never overflows; rows still sum to 1
    np.exp(weights, out=weights)
    weights /= weights.sum(-1, keepdims=True)
    return weights


def softmax_attention(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None,
                      max_matrix_bytes: int = MAX_MATRIX_BYTES, *, window: int | None = None) -> np.ndarray:
    """Softmax attention O = softmax(q kᵀ · scale) v, with the N×N matrix built explicitly.

    Parameters
    ----------
    q : array [..., N_q, d]
    k : array [..., N, d]
    v : array [..., N, d_v]
        float32 or float64, equal leading axes. Causal needs N_q == N.
    causal : bool
        Query i sees keys j <= i only.
    scale : float or None
        Multiplies q·k; None means 1/sqrt(d).
    max_matrix_bytes : int
        Refuse (``ValueError``) to build attention matrices larger than this.
    window : int or None
        Sliding window W >= 1 (needs ``causal=True``): query i sees keys i − W < j <= i, its
        last W keys including itself. None (or W >= N) is plain causal attention.

    Returns
    -------
    o : array [..., N_q, d_v] in the inputs' dtype.
    """
    causal = check_bool(causal, "causal")
    window = _check_window(window, causal)
    q, k, v = check_qkv(q, k, v, causal)
    weights = _weights(q, k, causal, check_scale(scale, q.shape[-1]), max_matrix_bytes, window)
    return weights @ v
