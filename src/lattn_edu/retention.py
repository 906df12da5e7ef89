"""RetNet retention: causal linear attention with an explicit decay γ (chapter 8).

    S_n = γ S_{n-1} + k_n v_nᵀ,   o_n = q_nᵀ S_n  =  Σ_{j<=n} γ^(n-j) (q_n·k_j) v_j

No feature map and no denominator (RetNet normalises afterwards with a group norm).
Retention is gated linear attention with a constant log decay log γ and scale 1, so it
has no forms of its own: ``parallel`` (the decay mask L), ``recurrent`` (the scan) and
``chunkwise`` (L inside a chunk, a decayed state between chunks) are those of
:func:`lattn_edu.gated_linear_attention`, on any backend. γ = 1 gives unnormalised causal
linear attention with φ = identity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import check_decay_values, check_positive_int, check_sequence, is_torch_tensor
from .gated import GATED_FORMS, decay_mask, gated_linear_attention

RETENTION_FORMS = GATED_FORMS


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
    """L[i, j] = γ^(i-j) for j <= i, else 0: retention's causal mask with decay.

    ``gamma`` is a float or an array [...] of decays in (0, 1]; returns [..., n, n].
    """
    n = check_positive_int(n, "n")
    gamma = _check_gamma(gamma, np.shape(gamma), np.dtype(dtype))
    log_gamma = np.broadcast_to(np.log(gamma)[..., None], gamma.shape + (n,))  # [..., n]
    return decay_mask(log_gamma).astype(dtype)


def retention(q: Any, k: Any, v: Any, gamma: Any, form: str = "parallel",
              chunk_size: int = 64, backend: str = "numpy") -> Any:
    """RetNet retention o_n = Σ_{j<=n} γ^(n-j) (q_n·k_j) v_j.

    Parameters
    ----------
    q, k : array [..., N, d]
    v : array [..., N, d_v]
        float32 or float64 with equal leading axes (torch tensors with ``backend='torch'``).
    gamma : float or numpy array
        Decay in (0, 1]; an array broadcasts against the leading axes (shape [H] for
        q of shape [B, H, N, d]: multi-scale retention, one γ per head).
    form : 'parallel' | 'recurrent' | 'chunkwise'
    chunk_size : int
        Chunk length of the chunkwise form.
    backend : 'numpy' | 'numba' | 'torch'

    Returns
    -------
    o : array [..., N, d_v] in the inputs' dtype.
    """
    q = check_sequence(q, "q")
    dtype = np.dtype(str(q.dtype).replace("torch.", ""))
    lead, n = tuple(q.shape[:-2]), q.shape[-2]
    log_gamma = np.log(_check_gamma(gamma, lead, dtype))  # [...]
    log_decay = np.ascontiguousarray(np.broadcast_to(log_gamma[..., None], lead + (n,)))  # [..., N]
    if is_torch_tensor(q):
        import torch

        log_decay = torch.as_tensor(log_decay, device=q.device)
    return gated_linear_attention(q, k, v, log_decay, scale=1.0, form=form, backend=backend,
                                  chunk_size=chunk_size)
