"""Why linear attention is weaker, and what it saves, in numbers (chapters 3 and 7).

- :func:`effective_attention_matrix`: the N×N weights linear attention implies;
- :func:`singular_values`, :func:`numerical_rank`: the rank <= m cap;
- :func:`row_entropy`, :func:`peak_weight`: how sharp a row of weights is;
- :func:`denominator_drift`: the causal normaliser φ(q_i)ᵀ z_i as the sequence grows;
- :func:`attention_cost`: entries, bytes and multiply-adds of softmax vs linear attention.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._checks import (as_float_array, check_bool, check_finite, check_nonnegative_float,
                      check_positive_int, check_qk, is_torch_tensor)
from .feature_maps import apply_feature_maps


def effective_attention_matrix(q: Any, k: Any, feature_map: Any = "elu+1", causal: bool = False,
                               eps: float = 1e-6) -> np.ndarray:
    """A_ij = φ(q_i)·φ(k_j) / (Σ_j' φ(q_i)·φ(k_j') + eps): the weights linear attention applies.

    It is never built by linear attention itself; building it shows what the state
    S = φ(K)ᵀV stands for. Non-causal, it is diag(1/den)·φ(Q)φ(K)ᵀ, so rank <= m.
    q [..., N_q, d], k [..., N, d] -> [..., N_q, N].
    """
    causal = check_bool(causal, "causal")
    eps = check_nonnegative_float(eps, "eps")
    q, k = check_qk(q, k, causal)
    if is_torch_tensor(q):
        raise TypeError("effective_attention_matrix takes numpy arrays; got torch.Tensor")
    phi_q, phi_k, guard = apply_feature_maps(feature_map, q, k, eps=eps, causal=causal)
    weights = phi_q @ phi_k.swapaxes(-1, -2)  # [..., N_q, N]
    if causal:
        weights = np.tril(weights)
    denominator = weights.sum(-1, keepdims=True) + guard  # [..., N_q, 1]
    if (denominator == 0).any():
        rows = np.argwhere(denominator[..., 0] == 0)[:3].tolist()
        raise ValueError(f"a row of weights sums to 0 and eps=0 (rows {rows}...): its normalised "
                         f"weights are 0/0. Use eps > 0 or a positive feature map such as 'elu+1'.")
    return np.divide(weights, denominator, out=weights if weights.dtype == denominator.dtype else None)


def _check_matrix(a: Any, name: str) -> np.ndarray:
    a = as_float_array(a, name)
    if is_torch_tensor(a):
        raise TypeError(f"{name} must be a numpy array; got torch.Tensor")
    if a.ndim < 2 or 0 in a.shape[-2:]:
        raise ValueError(f"{name} must have shape [..., rows, cols] with rows, cols >= 1; got {a.shape}")
    check_finite(a, name)
    return a


def singular_values(a: Any) -> np.ndarray:
    """Singular values of [..., M, N] matrices, largest first: [..., min(M, N)]."""
    return np.linalg.svd(_check_matrix(a, "a"), compute_uv=False)


def numerical_rank(a: Any, rtol: float | None = None) -> Any:
    """How many singular values exceed rtol·σ_max (default rtol = max(M, N)·machine eps).

    Returns an int for one matrix, an int array [...] for a stack.
    """
    a = _check_matrix(a, "a")
    if rtol is None:
        rtol = max(a.shape[-2:]) * np.finfo(a.dtype).eps
    rtol = check_nonnegative_float(rtol, "rtol")
    sigma = np.linalg.svd(a, compute_uv=False)  # [..., r]
    rank = (sigma > rtol * sigma[..., :1]).sum(-1)
    return int(rank) if rank.ndim == 0 else rank


def _check_weights(weights: Any) -> np.ndarray:
    """Rows that are probability distributions: non-negative, summing to 1 (within 1e-3)."""
    weights = _check_matrix(weights, "weights")
    if (weights < 0).any():
        raise ValueError("weights must be non-negative (rows of attention probabilities); "
                         f"got a minimum of {weights.min():.3g}")
    sums = weights.sum(-1)
    if np.abs(sums - 1).max() > 1e-3:
        raise ValueError("weights rows must sum to 1 (rows of attention probabilities); got row "
                         f"sums from {sums.min():.4g} to {sums.max():.4g}")
    return weights


def row_entropy(weights: Any) -> np.ndarray:
    """Entropy -Σ_j A_ij log A_ij of each row, in nats: 0 for a one-hot row, log N for uniform."""
    weights = _check_weights(weights)
    terms = np.zeros_like(weights)  # 0·log 0 counts as 0
    np.log(weights, out=terms, where=weights > 0)
    terms *= weights
    return -terms.sum(-1)


def peak_weight(weights: Any) -> np.ndarray:
    """The largest weight in each row: 1 for a hard lookup, 1/N for a uniform average."""
    return _check_weights(weights).max(-1)


def denominator_drift(q: Any, k: Any, feature_map: Any = "elu+1") -> np.ndarray:
    """The causal normaliser φ(q_i)ᵀ z_i with z_i = Σ_{j<=i} φ(k_j), for every position i.

    It grows roughly like i for positive maps (and can sit near 0 or change sign for maps
    that are not positive): the scale the output is divided by drifts with N.
    q, k [..., N, d] -> [..., N]. Uses the plain map (no stabilising rescale).
    """
    q, k = check_qk(q, k, causal=True)
    if is_torch_tensor(q):
        raise TypeError("denominator_drift takes numpy arrays; got torch.Tensor")
    phi_q, phi_k, _ = apply_feature_maps(feature_map, q, k, rescale=False)  # the plain map, unscaled
    return np.einsum("...nm,...nm->...n", phi_q, np.cumsum(phi_k, axis=-2))


@dataclass(frozen=True)
class AttentionCost:
    """What one head costs at sequence length N (multiply-adds, entries of memory)."""

    n: int
    d: int
    d_v: int
    m: int
    softmax_matrix_entries: int  # the N×N attention matrix
    linear_state_entries: int  # S: m·d_v (the normaliser z adds m more)
    kv_cache_entries: int  # a softmax decoder's cache: N·(d + d_v)
    softmax_macs: int  # QKᵀ (N·N·d) then A·V (N·N·d_v)
    linear_macs: int  # φ(K)ᵀV (N·m·d_v) then φ(Q)·S (N·m·d_v)

    @property
    def memory_ratio(self) -> float:
        """How many times larger the N×N matrix is than the state S."""
        return self.softmax_matrix_entries / self.linear_state_entries

    @property
    def compute_ratio(self) -> float:
        """How many times more multiply-adds softmax attention needs: N²(d + d_v) / (2 N m d_v).

        That is N(d + d_v) / (2 m d_v), which is N/d when d = d_v = m.
        """
        return self.softmax_macs / self.linear_macs


def attention_cost(n: int, d: int, d_v: int | None = None, m: int | None = None) -> AttentionCost:
    """Counts for one head: softmax attention vs linear attention with m features.

    d_v and m default to d (elu+1 keeps m = d). For n=100_000, d=128 the N×N matrix has
    10^10 entries and the state 16,384.
    """
    n, d = check_positive_int(n, "n"), check_positive_int(d, "d")
    d_v = d if d_v is None else check_positive_int(d_v, "d_v")
    m = d if m is None else check_positive_int(m, "m")
    return AttentionCost(
        n=n, d=d, d_v=d_v, m=m,
        softmax_matrix_entries=n * n,
        linear_state_entries=m * d_v,
        kv_cache_entries=n * (d + d_v),
        softmax_macs=n * n * d + n * n * d_v,
        linear_macs=2 * n * m * d_v,
    )
