"""The torch backend: the four forms of linear attention in torch ops (chapter 9).

Same algorithms and signatures as the numpy reference in :mod:`lattn_edu.linear`,
written only with torch operations, so they run wherever the tensors live (CPU or
CUDA) and stay differentiable: ``loss.backward()`` flows into q, k and v. ``eps`` is one
float, as in the reference.

The chunkwise form is the one production kernels (flash-linear-attention) build on:
all chunks at once as batched matrix products, C×C masked inside a chunk, and the
state carried between chunks by a prefix sum over chunks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._checks import is_torch_tensor
from .torch_gated import DELTA_FORMS, GATED_FORMS  # noqa: F401  (re-exported: the backend's gated forms)


def quadratic_linear_attention(phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor,
                               causal: bool = False, eps: float = 1e-6) -> torch.Tensor:
    """(φ(Q)φ(K)ᵀ) V: materialise the N_q×N weights, then normalise each row."""
    weights = phi_q @ phi_k.transpose(-1, -2)  # [..., N_q, N]
    if causal:
        weights = torch.tril(weights)  # query i sees keys j <= i
    numerator = weights @ v  # [..., N_q, d_v]
    denominator = weights.sum(-1, keepdim=True)  # [..., N_q, 1]
    return numerator / (denominator + eps)


def parallel_linear_attention(phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor,
                              causal: bool = False, eps: float = 1e-6) -> torch.Tensor:
    """φ(Q)(φ(K)ᵀV): contract the sequence axis first; causal uses prefix sums of states."""
    if not causal:
        state = phi_k.transpose(-1, -2) @ v  # S = φ(K)ᵀV   [..., m, d_v]
        normaliser = phi_k.sum(-2).unsqueeze(-1)  # z = φ(K)ᵀ1   [..., m, 1]
        return (phi_q @ state) / (phi_q @ normaliser + eps)
    states = torch.cumsum(phi_k.unsqueeze(-1) * v.unsqueeze(-2), dim=-3)  # S_i  [..., N, m, d_v]
    normalisers = torch.cumsum(phi_k, dim=-2)  # z_i  [..., N, m]
    numerator = torch.einsum("...nm,...nmv->...nv", phi_q, states)  # φ(q_i)ᵀ S_i
    denominator = (phi_q * normalisers).sum(-1, keepdim=True)  # φ(q_i)ᵀ z_i  [..., N, 1]
    return numerator / (denominator + eps)


def recurrent_linear_attention(phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor,
                               causal: bool = False, eps: float = 1e-6) -> torch.Tensor:
    """The RNN view: S_i = S_{i-1} + φ(k_i)v_iᵀ, z_i = z_{i-1} + φ(k_i), one token at a time."""
    lead, m, d_v = phi_k.shape[:-2], phi_k.shape[-1], v.shape[-1]
    state = phi_k.new_zeros(lead + (m, d_v))  # S  [..., m, d_v]
    normaliser = phi_k.new_zeros(lead + (m, 1))  # z  [..., m, 1]
    outputs = []
    for i in range(phi_k.shape[-2]):
        # Out-of-place updates: autograd keeps every S_i it needs for the backward pass.
        state = state + phi_k[..., i, :, None] * v[..., i, None, :]  # rank-1 update
        normaliser = normaliser + phi_k[..., i, :, None]
        if causal:
            outputs.append(_read(phi_q[..., i:i + 1, :], state, normaliser, eps))  # [..., 1, d_v]
    if not causal:  # every query reads the final state
        return _read(phi_q, state, normaliser, eps)
    return torch.cat(outputs, dim=-2)


def _read(phi_q: torch.Tensor, state: torch.Tensor, normaliser: torch.Tensor,
          eps: float) -> torch.Tensor:
    """o = φ(q)ᵀ S / (φ(q)ᵀ z + eps) for a block of queries: [..., n, m] -> [..., n, d_v]."""
    return (phi_q @ state) / (phi_q @ normaliser + eps)


def chunkwise_linear_attention(phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor,
                               causal: bool = False, eps: float = 1e-6,
                               chunk_size: int = 64) -> torch.Tensor:
    """Chunks of C tokens: quadratic (masked) inside a chunk, the carried state S, z across chunks.

    Every chunk is processed at once by batched matmuls; the state each chunk starts
    from is an exclusive prefix sum of the per-chunk states φ(K_c)ᵀV_c.
    """
    n = phi_k.shape[-2]
    chunk_size = min(chunk_size, n)  # a single short chunk needs no padding
    k_c, v_c = _chunks(phi_k, chunk_size), _chunks(v, chunk_size)  # [..., n_c, C, m], [..., n_c, C, d_v]
    chunk_states = k_c.transpose(-1, -2) @ v_c  # φ(K_c)ᵀV_c  [..., n_c, m, d_v]
    if not causal:  # the full state is the sum of the chunk states; one read for every query
        state = chunk_states.sum(-3)  # [..., m, d_v]
        normaliser = phi_k.sum(-2).unsqueeze(-1)  # [..., m, 1]
        return (phi_q @ state) / (phi_q @ normaliser + eps)
    q_c = _chunks(phi_q, chunk_size)  # [..., n_c, C, m]
    chunk_normalisers = k_c.sum(-2).unsqueeze(-1)  # [..., n_c, m, 1]
    weights = torch.tril(q_c @ k_c.transpose(-1, -2))  # intra-chunk  [..., n_c, C, C]
    # Inside the chunk + everything before it.
    numerator = weights @ v_c + q_c @ _exclusive_prefix_sum(chunk_states)  # [..., n_c, C, d_v]
    denominator = weights.sum(-1, keepdim=True) + q_c @ _exclusive_prefix_sum(chunk_normalisers)
    # Drop the padded rows before dividing: with eps = 0 they would be 0/0 and poison the gradients.
    return _unchunk(numerator, n) / (_unchunk(denominator, n) + eps)


def _chunks(x: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """[..., N, w] -> [..., n_chunks, C, w], zero-padding N up to a multiple of C.

    Zero rows add nothing to any state or weight, so the padding never changes the output.
    """
    padding = -x.shape[-2] % chunk_size
    x = torch.nn.functional.pad(x, (0, 0, 0, padding))  # [..., n_chunks·C, w]
    return x.reshape(x.shape[:-2] + (-1, chunk_size, x.shape[-1]))


def _unchunk(x: torch.Tensor, n: int) -> torch.Tensor:
    """[..., n_chunks, C, w] -> [..., N, w]: merge the chunks and drop the padding."""
    return x.flatten(-3, -2)[..., :n, :]


def _exclusive_prefix_sum(chunk_states: torch.Tensor) -> torch.Tensor:
    """The state before each chunk: Σ of the chunk states strictly before it, [..., n_c, a, b].

    Shifting the inclusive sum by one chunk (rather than subtracting each chunk's own
    state from it) keeps the result exact: no cancellation in float32.
    """
    totals = torch.cumsum(chunk_states, dim=-3)
    return torch.cat([torch.zeros_like(totals[..., :1, :, :]), totals[..., :-1, :, :]], dim=-3)


FORMS = {
    "quadratic": quadratic_linear_attention,
    "parallel": parallel_linear_attention,
    "recurrent": recurrent_linear_attention,
    "chunkwise": chunkwise_linear_attention,
}


def to_backend(*arrays: Any) -> tuple[Any, ...]:
    """The arrays as tensors, then ``restore`` for the outputs. Tensors pass through (tensors
    out, same device); numpy arrays become CPU tensors sharing their memory and the outputs go
    back to numpy; None passes through."""
    if any(is_torch_tensor(x) for x in arrays):
        return (*arrays, _unchanged)
    # torch.from_numpy shares memory but refuses negative strides and warns on read-only
    # arrays (broadcast views among them); np.require copies exactly those (and other
    # non-contiguous) inputs.
    return (*(None if x is None else torch.from_numpy(np.require(x, requirements="CW")) for x in arrays),
            _to_numpy)


def _unchanged(out: torch.Tensor) -> torch.Tensor:
    """Tensors in, tensors out: the output stays on its device with its autograd graph."""
    return out


def _to_numpy(out: torch.Tensor) -> np.ndarray:
    """numpy in, numpy out (detached: a numpy array has no gradient)."""
    return out.numpy(force=True)
