"""Peers for ``lattn-edu bench`` and ``benchmarks/gpu.py``: how the field computes attention in torch.

These are deliberately *not* lattn_edu code: each is the well-known way production
libraries and papers write the computation, so that the benchmark measures our kernels
against an independent baseline rather than against themselves.

- :func:`torch_chunkwise_linear_attention`: causal linear attention with elu+1 features,
  normalised, in chunks of 64 tokens: a masked C×C matmul inside each chunk plus the
  state carried from the chunks before it (an exclusive prefix sum over per-chunk states),
  all chunks at once as batched matmuls. This is the chunkwise algorithm of
  flash-linear-attention and of the GLA / RetNet papers, written in plain torch.
- :func:`sdpa_causal_softmax_attention`: ``torch.nn.functional.scaled_dot_product_attention``
  with ``is_causal=True`` (a fused, FlashAttention-style kernel on CPU and on CUDA).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def torch_chunkwise_linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                     chunk_size: int = 64, eps: float = 1e-6) -> torch.Tensor:
    """Causal linear attention o_i = φ(q_i)ᵀS_i / (φ(q_i)ᵀz_i + eps), φ = elu + 1, chunkwise.

    q, k [..., N, d], v [..., N, d_v] (any float dtype, any device) -> [..., N, d_v].
    """
    q, k = F.elu(q) + 1, F.elu(k) + 1
    n, d, d_v = q.shape[-2], q.shape[-1], v.shape[-1]
    padding = -n % chunk_size  # zero rows: no weight, no state
    if padding:
        q, k, v = (F.pad(x, (0, 0, 0, padding)) for x in (q, k, v))
    lead, n_chunks = q.shape[:-2], (n + padding) // chunk_size
    q = q.reshape(*lead, n_chunks, chunk_size, d)
    k = k.reshape(*lead, n_chunks, chunk_size, d)
    v = v.reshape(*lead, n_chunks, chunk_size, d_v)
    chunk_states = k.transpose(-1, -2) @ v  # φ(K_c)ᵀV_c  [..., n_c, d, d_v]
    states = torch.cumsum(chunk_states, dim=-3) - chunk_states  # S before each chunk
    chunk_sums = k.sum(-2)  # [..., n_c, d]
    normalisers = torch.cumsum(chunk_sums, dim=-2) - chunk_sums  # z before each chunk
    weights = torch.tril(q @ k.transpose(-1, -2))  # intra-chunk  [..., n_c, C, C]
    numerator = weights @ v + q @ states
    denominator = weights.sum(-1) + (q @ normalisers.unsqueeze(-1)).squeeze(-1)
    out = numerator / (denominator.unsqueeze(-1) + eps)
    return out.reshape(*lead, n_chunks * chunk_size, d_v)[..., :n, :]


def sdpa_causal_softmax_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal softmax attention by torch's fused kernel; q, k, v [B, H, N, d] (4-D keeps the
    fused path on CPU) -> [B, H, N, d_v]. Scale 1/sqrt(d)."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
