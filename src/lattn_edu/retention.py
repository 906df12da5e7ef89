"""RetNet retention: causal linear attention with an explicit decay γ (chapter 8).

    S_n = γ S_{n-1} + k_n v_nᵀ,   o_n = q_nᵀ S_n  =  Σ_{j<=n} γ^(n-j) (q_n·k_j) v_j

No feature map and no denominator (RetNet normalises afterwards with a group norm).
γ = 1 gives unnormalised causal linear attention with φ = identity. Three forms
that agree: ``parallel`` (the decay matrix D), ``recurrent`` (the scan) and
``chunkwise`` (D inside a chunk, a decayed state between chunks).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import check_choice, check_decay_values, check_positive_int, check_qkv, is_torch_tensor

RETENTION_FORMS = ("parallel", "recurrent", "chunkwise")


def _check_gamma(gamma: Any, lead: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """γ as an array broadcast to the leading axes, every value in (0, 1]."""
    gamma = check_decay_values(gamma, "gamma", dtype)
    try:
        shape = np.broadcast_shapes(gamma.shape, lead)
    except ValueError:
        shape = None
    if shape != lead:
        raise ValueError(f"gamma must broadcast against the leading axes {lead} (e.g. shape "
                         f"[H] for q of shape [B, H, N, d]); got shape {gamma.shape}")
    return np.broadcast_to(gamma, lead)


def decay_matrix(gamma: Any, n: int, dtype: Any = np.float64) -> np.ndarray:
    """D[i, j] = γ^(i-j) for j <= i, else 0: retention's causal mask with decay.

    ``gamma`` is a float or an array [...] of decays in (0, 1]; returns [..., n, n].
    """
    n = check_positive_int(n, "n")
    gamma = _check_gamma(gamma, np.shape(gamma), np.dtype(dtype))
    distance = np.subtract.outer(np.arange(n), np.arange(n))  # i - j  [n, n]
    log_gamma = np.log(gamma)[..., None, None]
    # exp((i-j) log γ) only where j <= i; the upper triangle would overflow, so mask first.
    return np.where(distance >= 0, np.exp(np.maximum(distance, 0) * log_gamma), 0).astype(dtype)


def parallel_retention(q: np.ndarray, k: np.ndarray, v: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """O = ((Q Kᵀ) ⊙ D) V with the decay matrix D: the training form."""
    decay = decay_matrix(gamma, q.shape[-2], q.dtype)  # [..., N, N]
    return ((q @ k.swapaxes(-1, -2)) * decay) @ v


def recurrent_retention(q: np.ndarray, k: np.ndarray, v: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """S_n = γ S_{n-1} + k_n v_nᵀ; o_n = q_nᵀ S_n: the decoding form."""
    gamma = gamma[..., None, None]  # broadcast over the state [..., m, d_v]
    state = np.zeros(q.shape[:-2] + (k.shape[-1], v.shape[-1]), dtype=q.dtype)
    out = np.empty(v.shape, dtype=q.dtype)
    for n in range(q.shape[-2]):
        state = gamma * state + k[..., n, :, None] * v[..., n, None, :]
        out[..., n, :] = np.einsum("...m,...mv->...v", q[..., n, :], state)
    return out


def chunkwise_retention(q: np.ndarray, k: np.ndarray, v: np.ndarray, gamma: np.ndarray,
                        chunk_size: int) -> np.ndarray:
    """Parallel inside chunks of C tokens, a decayed state S between them.

    For position t (0-based) of a chunk the earlier state counts γ^(t+1); key t of the
    chunk enters the next state with γ^(C_len-1-t); the state itself decays by γ^C_len.
    """
    gamma_col = gamma[..., None, None]
    state = np.zeros(q.shape[:-2] + (k.shape[-1], v.shape[-1]), dtype=q.dtype)  # [..., m, d_v]
    out = np.empty(v.shape, dtype=q.dtype)
    for start in range(0, q.shape[-2], chunk_size):
        chunk = slice(start, start + chunk_size)
        q_c, k_c, v_c = q[..., chunk, :], k[..., chunk, :], v[..., chunk, :]
        length = q_c.shape[-2]
        positions = np.arange(length, dtype=q.dtype)[:, None]  # t  [C, 1]
        inner = ((q_c @ k_c.swapaxes(-1, -2)) * decay_matrix(gamma, length, q.dtype)) @ v_c
        out[..., chunk, :] = inner + gamma_col ** (positions + 1) * (q_c @ state)
        key_weights = gamma_col ** (length - 1 - positions)  # [..., C, 1]
        state = gamma_col ** length * state + (k_c * key_weights).swapaxes(-1, -2) @ v_c
    return out


def retention(q: Any, k: Any, v: Any, gamma: Any, form: str = "parallel",
              chunk_size: int = 64) -> np.ndarray:
    """RetNet retention o_n = Σ_{j<=n} γ^(n-j) (q_n·k_j) v_j.

    Parameters
    ----------
    q, k : array [..., N, d]
    v : array [..., N, d_v]
        float32 or float64 numpy arrays with equal leading axes.
    gamma : float or array
        Decay in (0, 1]; an array broadcasts against the leading axes (shape [H] for
        q of shape [B, H, N, d]: multi-scale retention, one γ per head).
    form : 'parallel' | 'recurrent' | 'chunkwise'
    chunk_size : int
        Chunk length of the chunkwise form.

    Returns
    -------
    o : array [..., N, d_v] in the inputs' dtype.
    """
    form = check_choice(form, "form", RETENTION_FORMS)
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    q, k, v = check_qkv(q, k, v, causal=True)
    if is_torch_tensor(q):
        raise TypeError("retention takes numpy arrays; got torch.Tensor")
    gamma = _check_gamma(gamma, q.shape[:-2], q.dtype)
    if form == "parallel":
        return parallel_retention(q, k, v, gamma)
    if form == "recurrent":
        return recurrent_retention(q, k, v, gamma)
    return chunkwise_retention(q, k, v, gamma, chunk_size)

