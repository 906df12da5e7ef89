"""Peers for ``lattn-edu bench`` and ``benchmarks/gpu.py``: how the field computes attention in torch.

They ship with the package so that the command and the scripts import the same code, but
they share nothing with lattn_edu's own kernels: each is the well-known way production
libraries and papers write the computation, so that the benchmark measures our kernels
against an independent baseline rather than against themselves. Importing this module
imports torch.

- :func:`torch_chunkwise_linear_attention`: causal linear attention with elu+1 features,
  normalised, in chunks of C tokens (64 by default; ``lattn-edu bench`` passes the length
  :func:`.methods.peer_chunk_size` picks): a masked C×C matmul inside each chunk plus the
  state carried from the chunks before it (an exclusive prefix sum over per-chunk states),
  all chunks at once as batched matmuls. This is the chunkwise algorithm of
  flash-linear-attention and of the GLA / RetNet papers, written in plain torch.
- :func:`sdpa_causal_softmax_attention`: ``torch.nn.functional.scaled_dot_product_attention``
  with ``is_causal=True`` (a fused, FlashAttention-style kernel on CPU and on CUDA).

For the gated family (``lattn-edu bench --gated``), chunkwise forms written the way
flash-linear-attention's naive chunk references are (``fla/ops/simple_gla/naive.py``,
``fla/ops/gated_delta_rule/naive.py``; its GLA kernels for the vector gate): zero-pad to whole
chunks, reshape to [..., n_chunks, C, d], compute everything a chunk needs of itself for all
chunks at once in batched matmuls, and pass the state from chunk to chunk in a Python loop.
Each takes q, k [..., N, d_k], v [..., N, d_v] and scales q by d_k^-1/2:

- :func:`torch_chunkwise_simple_gla`: one log decay per step, g [..., N] (Mamba-2, simple GLA);
- :func:`torch_chunkwise_gla`: one log decay per key channel, g [..., N, d_k] (GLA), the
  intra-chunk weights from sub-chunks of 16 as GLA's kernels build them;
- :func:`torch_chunkwise_delta_rule`: the gated delta rule with β [..., N] and g [..., N],
  in the WY / UT-transform representation.
- :func:`torch_chunkwise_kda`: Kimi Delta Attention, the delta rule with g [..., N, d_k]
  (``fla/ops/kda/naive.py``'s chunk form), its two per-channel [C, C] matrices from sub-chunks
  of 16 as for GLA, the UT transform by a triangular solve.

Every chunkwise peer also runs compiled (``compiled=True``): each of its stages under
``torch.compile`` (inductor, static shapes), which is how a CPU user who wants speed from
torch runs it. The stages are what the peer computes for all chunks at once and, for the
peers that pass a state from chunk to chunk, that loop in blocks of
:data:`CHUNKS_PER_GRAPH` chunks. Compiling the whole function would unroll the loop over
every chunk into one graph, whose compile time grows with N (minutes per shape at 16k
tokens); a compiled step per chunk compiles once but pays torch.compile's call overhead on
every chunk and fuses nothing across chunks (30–40% slower than the whole function at
N = 2,048, d = 64 and 128, measured here); a block of chunks is one graph of bounded size,
called N / (64 · 32) times with chunks of 64 (at N = 2,048, the whole loop). A
compiled stage is compiled on its first call at each new shape. torch.compile keeps only a
few shapes per stage (8 in torch 2.13) and past them runs the stage eagerly without saying
so, so a caller that goes through many shapes calls ``torch.compiler.reset()`` between them,
as ``lattn-edu bench`` does before each shape. :func:`compiler_problem` says whether this
machine can compile at all (inductor needs a C++ compiler).
"""

from __future__ import annotations

import functools
import warnings
from typing import Callable

import torch
import torch.nn.functional as F

CHUNKS_PER_GRAPH = 32  # chunks of the carried loop in one call (one compiled graph)


@functools.cache
def compiler_problem() -> str | None:
    """None when ``torch.compile`` works here, else why not (e.g. no C++ compiler for inductor)."""
    try:
        with warnings.catch_warnings():  # inductor's first import trips torch's own deprecation of jit.script_method
            warnings.filterwarnings("ignore", message=".*torch.jit.script_method.*", category=DeprecationWarning)
            torch.compile(lambda x: x * 2 + 1, dynamic=False)(torch.ones(3))
    except Exception as err:  # inductor raises many kinds of errors for a missing toolchain
        first_line = (str(err).splitlines() or [""])[0][:200]  # some errors carry no message
        return f"torch.compile does not work here: {type(err).__name__}: {first_line}"
    return None


@functools.cache
def _compiled(stage: Callable) -> Callable:
    return torch.compile(stage, dynamic=False)


def _stage(stage: Callable, compiled: bool) -> Callable:
    """``stage`` itself, or its compiled version (one per stage, kept for the process)."""
    if not compiled:
        return stage
    problem = compiler_problem()
    if problem is not None:
        raise RuntimeError(problem)
    return _compiled(stage)


def _linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, chunk_size: int,
                      eps: float) -> torch.Tensor:
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


def torch_chunkwise_linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                     chunk_size: int = 64, eps: float = 1e-6,
                                     compiled: bool = False) -> torch.Tensor:
    """Causal linear attention o_i = φ(q_i)ᵀS_i / (φ(q_i)ᵀz_i + eps), φ = elu + 1, chunkwise.

    q, k [..., N, d], v [..., N, d_v] (any float dtype, any device) -> [..., N, d_v]. The
    chunks pass their states on by prefix sums, with no loop, so compiled it is one stage."""
    return _stage(_linear_attention, compiled)(q, k, v, chunk_size, eps)


def _chunked(x: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """[..., N, w] -> [..., n_chunks, C, w], zero rows appended (no weight, no decay, no state)."""
    x = F.pad(x, (0, 0, 0, -x.shape[-2] % chunk_size))
    return x.reshape(*x.shape[:-2], -1, chunk_size, x.shape[-1])


def _carry_block(state: torch.Tensor, chunk_decays: torch.Tensor,
                 chunk_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A block of chunks of the additive rule, S ← diag(decay_c) S + chunk_state_c: (S before
    each chunk of the block [..., b, d_k, d_v], S after the block)."""
    before = []
    for c in range(chunk_states.shape[-3]):
        before.append(state)
        state = chunk_decays[..., c, :, :] * state + chunk_states[..., c, :, :]
    return torch.stack(before, dim=-3), state


def _states_before_chunks(chunk_states: torch.Tensor, chunk_decays: torch.Tensor, compiled: bool) -> torch.Tensor:
    """S before each chunk, [..., n_c, d_k, d_v], chunk by chunk in blocks.

    chunk_decays [..., n_c, d_k, 1] are exp(Σ g) over each chunk (one per key row of S, or [..., n_c, 1, 1]
    for one per chunk)."""
    carry = _stage(_carry_block, compiled)
    state = torch.zeros_like(chunk_states[..., 0, :, :])
    parts = []
    for start in range(0, chunk_states.shape[-3], CHUNKS_PER_GRAPH):
        block = slice(start, start + CHUNKS_PER_GRAPH)
        part, state = carry(state, chunk_decays[..., block, :, :], chunk_states[..., block, :, :])
        parts.append(part)
    return torch.cat(parts, dim=-3)


def _read_out(inner: torch.Tensor, q_decayed: torch.Tensor, states: torch.Tensor, n: int) -> torch.Tensor:
    """o = the chunk's own part + the decayed queries read against the state before the chunk."""
    return (inner + q_decayed @ states).flatten(-3, -2)[..., :n, :]


def _simple_gla_chunks(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                       chunk_size: int) -> tuple[torch.Tensor, ...]:
    d_k = q.shape[-1]
    q, k, v = (_chunked(x, chunk_size) for x in (q * d_k**-0.5, k, v))  # [..., n_c, C, ·]
    b = torch.cumsum(_chunked(g[..., None], chunk_size)[..., 0], dim=-1)  # in-chunk cumulative  [..., n_c, C]
    lower = torch.ones(chunk_size, chunk_size, dtype=torch.bool, device=q.device).tril()
    mask = torch.exp((b[..., :, None] - b[..., None, :]).masked_fill(~lower, float("-inf")))  # [..., C, C]
    inner = ((q @ k.transpose(-1, -2)) * mask) @ v
    last = b[..., -1:]  # [..., n_c, 1]
    chunk_states = (k * torch.exp(last - b)[..., None]).transpose(-1, -2) @ v  # [..., n_c, d_k, d_v]
    return inner, q * torch.exp(b)[..., None], chunk_states, torch.exp(last)[..., None]


def torch_chunkwise_simple_gla(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                               chunk_size: int = 64, compiled: bool = False) -> torch.Tensor:
    """o_t = d_k^-1/2 · S_tᵀ q_t with S_t = exp(g_t) S_{t-1} + k_t v_tᵀ; g [..., N] -> [..., N, d_v]."""
    inner, q_decayed, chunk_states, chunk_decays = _stage(_simple_gla_chunks, compiled)(q, k, v, g, chunk_size)
    states = _states_before_chunks(chunk_states, chunk_decays, compiled)
    return _stage(_read_out, compiled)(inner, q_decayed, states, q.shape[-2])


def _gla_chunks(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, chunk_size: int,
                sub_chunk: int) -> tuple[torch.Tensor, ...]:
    d_k = q.shape[-1]
    q, k, v, g = (_chunked(x, chunk_size) for x in (q * d_k**-0.5, k, v, g))
    b = torch.cumsum(g, dim=-2)  # [..., n_c, C, d_k]
    inner = _per_channel_weights(q, k, b, sub_chunk) @ v
    last = b[..., -1:, :]  # [..., n_c, 1, d_k]
    chunk_states = (k * torch.exp(last - b)).transpose(-1, -2) @ v
    return inner, q * torch.exp(b), chunk_states, torch.exp(last).transpose(-1, -2)


def torch_chunkwise_gla(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                        chunk_size: int = 64, sub_chunk: int = 16, compiled: bool = False) -> torch.Tensor:
    """GLA: S_t = diag(exp(g_t)) S_{t-1} + k_t v_tᵀ, o_t = d_k^-1/2 · S_tᵀ q_t; g [..., N, d_k].

    Inside a chunk the weights Σ_r q_ir k_jr exp(b_ir − b_jr) come from sub-chunks
    (:func:`_per_channel_weights`), as GLA's kernels build them."""
    inner, q_decayed, chunk_states, chunk_decays = _stage(_gla_chunks, compiled)(q, k, v, g, chunk_size, sub_chunk)
    states = _states_before_chunks(chunk_states, chunk_decays, compiled)
    return _stage(_read_out, compiled)(inner, q_decayed, states, q.shape[-2])


def _delta_block(state: torch.Tensor, w: torch.Tensor, u: torch.Tensor, q_decayed: torch.Tensor,
                 inner_weights: torch.Tensor, k_decayed: torch.Tensor,
                 chunk_decays: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A block of chunks of the delta rule, in order: (their outputs [..., b, C, d_v], the state
    after them). The pseudo-values U − W S feed the output and the state; chunk_decays
    [..., b, d_k, 1] (or [..., b, 1, 1]) over each whole chunk."""
    outs = []
    for c in range(w.shape[-3]):
        pseudo = u[..., c, :, :] - w[..., c, :, :] @ state
        outs.append(q_decayed[..., c, :, :] @ state + inner_weights[..., c, :, :] @ pseudo)
        state = chunk_decays[..., c, :, :] * state + k_decayed[..., c, :, :].transpose(-1, -2) @ pseudo
    return torch.stack(outs, dim=-3), state


def _delta_loop(w: torch.Tensor, u: torch.Tensor, q_decayed: torch.Tensor, inner_weights: torch.Tensor,
                k_decayed: torch.Tensor, chunk_decays: torch.Tensor, n: int, compiled: bool) -> torch.Tensor:
    """The delta rule's chunks in order, in blocks, the state carried; inputs [..., n_c, C, ·] -> [..., N, d_v]."""
    carry = _stage(_delta_block, compiled)
    state = q_decayed.new_zeros(*q_decayed.shape[:-3], q_decayed.shape[-1], u.shape[-1])
    outs = []
    for start in range(0, q_decayed.shape[-3], CHUNKS_PER_GRAPH):
        block = slice(start, start + CHUNKS_PER_GRAPH)
        out, state = carry(state, *(x[..., block, :, :] for x in (w, u, q_decayed, inner_weights, k_decayed,
                                                                  chunk_decays)))
        outs.append(out)
    return torch.cat(outs, dim=-3).flatten(-3, -2)[..., :n, :]


def _delta_chunks(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor, g: torch.Tensor | None,
                  chunk_size: int) -> tuple[torch.Tensor, ...]:
    d_k = q.shape[-1]
    q, k, v = (_chunked(x, chunk_size) for x in (q * d_k**-0.5, k, v))
    beta = _chunked(beta[..., None], chunk_size)  # [..., n_c, C, 1]
    b = (torch.zeros_like(beta[..., 0]) if g is None
         else torch.cumsum(_chunked(g[..., None], chunk_size)[..., 0], dim=-1))  # [..., n_c, C]
    lower = torch.ones(chunk_size, chunk_size, dtype=torch.bool, device=q.device).tril()
    mask = torch.exp((b[..., :, None] - b[..., None, :]).masked_fill(~lower, float("-inf")))  # L
    eye = torch.eye(chunk_size, dtype=q.dtype, device=q.device)
    system = eye + (beta * (k @ k.transpose(-1, -2)) * mask).tril(-1)
    t_matrix = torch.linalg.solve_triangular(system, eye.expand_as(system), upper=False, unitriangular=True)
    w = t_matrix @ (beta * torch.exp(b)[..., None] * k)  # [..., n_c, C, d_k]
    u = t_matrix @ (beta * v)  # [..., n_c, C, d_v]
    inner_weights = (q @ k.transpose(-1, -2)) * mask
    q_decayed, k_decayed = q * torch.exp(b)[..., None], k * mask[..., -1, :, None]  # exp(b), exp(b_last − b)
    return w, u, q_decayed, inner_weights, k_decayed, torch.exp(b[..., -1, None, None])


def torch_chunkwise_delta_rule(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor,
                               g: torch.Tensor | None = None, chunk_size: int = 64,
                               compiled: bool = False) -> torch.Tensor:
    """The (gated) delta rule S_t = (I − β_t k_t k_tᵀ) exp(g_t) S_{t-1} + β_t k_t v_tᵀ,
    o_t = d_k^-1/2 · S_tᵀ q_t, with β [..., N] and g [..., N] (None: no decay) -> [..., N, d_v].

    Per chunk, T = (I + strict_tril(diag(β) K Kᵀ ⊙ L))⁻¹ by a triangular solve for all chunks
    at once, W = T diag(β ⊙ exp(b)) K and U = T diag(β) V; then chunk by chunk the pseudo-values
    U − W S feed the output and the state."""
    stages = _stage(_delta_chunks, compiled)(q, k, v, beta, g, chunk_size)
    return _delta_loop(*stages, q.shape[-2], compiled)


def sdpa_causal_softmax_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal softmax attention by torch's fused kernel; q, k, v [B, H, N, d] (4-D keeps the
    fused path on CPU) -> [B, H, N, d_v]. Scale 1/sqrt(d)."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def torch_chunkwise_delta_product(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor,
                                  g: torch.Tensor | None = None, chunk_size: int = 64,
                                  compiled: bool = False) -> torch.Tensor:
    """(Gated) DeltaProduct the way flash-linear-attention's chunk reference computes it
    (``fla/ops/gated_delta_product/chunk_ref.py``): the gated delta rule on the N·n_h steps,
    token-major, q on each token's last step (zeros before it), g on its first (zeros after),
    in chunks of ``chunk_size`` steps, then every n_h-th output.

    q [..., N, d_k], k [..., N, n_h, d_k], v [..., N, n_h, d_v], beta [..., N, n_h], g [..., N]
    (None: no decay) -> [..., N, d_v], q scaled by d_k^-1/2."""
    n_h = k.shape[-2]
    q_steps = F.pad(q[..., None, :], (0, 0, n_h - 1, 0)).flatten(-3, -2)  # [..., N·n_h, d_k]
    g_steps = None if g is None else F.pad(g[..., None], (0, n_h - 1)).flatten(-2)  # [..., N·n_h]
    out = torch_chunkwise_delta_rule(q_steps, k.flatten(-3, -2), v.flatten(-3, -2), beta.flatten(-2), g_steps,
                                     chunk_size, compiled)
    return out[..., n_h - 1::n_h, :]


def _per_channel_weights(x: torch.Tensor, k: torch.Tensor, b: torch.Tensor, sub_chunk: int) -> torch.Tensor:
    """Σ_r x_ir k_jr exp(b_ir − b_jr) for j <= i (0 above), [..., n_c, C, C], from x, k, b
    [..., n_c, C, d_k]: between sub-chunks both sides rescaled to the start of x's sub-chunk
    (factors <= 1) and multiplied; inside one, a loop over its key positions."""
    chunk_size = x.shape[-2]
    weights = x.new_zeros(*x.shape[:-1], chunk_size)
    for start in range(0, chunk_size, sub_chunk):
        rows = slice(start, start + sub_chunk)
        reference = b[..., start:start + 1, :]
        x_sub, b_sub = x[..., rows, :], b[..., rows, :]
        if start > 0:
            x_scaled = x_sub * torch.exp(b_sub - reference)
            k_scaled = k[..., :start, :] * torch.exp(reference - b[..., :start, :])
            weights[..., rows, :start] = x_scaled @ k_scaled.transpose(-1, -2)
        for j in range(start, min(start + sub_chunk, chunk_size)):
            exponent = (b_sub - b[..., j:j + 1, :]).clamp(max=0)  # rows before j are masked below
            column = (x_sub * k[..., j:j + 1, :] * torch.exp(exponent)).sum(-1)
            weights[..., rows, j] = column * (torch.arange(start, start + sub_chunk, device=x.device) >= j)
    return weights


def _kda_chunks(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor, g: torch.Tensor,
                chunk_size: int, sub_chunk: int) -> tuple[torch.Tensor, ...]:
    d_k = q.shape[-1]
    q, k, v, g = (_chunked(x, chunk_size) for x in (q * d_k**-0.5, k, v, g))
    beta = _chunked(beta[..., None], chunk_size)  # [..., n_c, C, 1]
    b = torch.cumsum(g, dim=-2)  # [..., n_c, C, d_k]
    eye = torch.eye(chunk_size, dtype=q.dtype, device=q.device)
    system = eye + (beta * _per_channel_weights(k, k, b, sub_chunk)).tril(-1)
    t_matrix = torch.linalg.solve_triangular(system, eye.expand_as(system), upper=False, unitriangular=True)
    w = t_matrix @ (beta * torch.exp(b) * k)  # [..., n_c, C, d_k]
    u = t_matrix @ (beta * v)  # [..., n_c, C, d_v]
    inner_weights = _per_channel_weights(q, k, b, sub_chunk)
    last = b[..., -1:, :]  # [..., n_c, 1, d_k]
    return w, u, q * torch.exp(b), inner_weights, k * torch.exp(last - b), torch.exp(last).transpose(-1, -2)


def torch_chunkwise_kda(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor,
                        g: torch.Tensor, chunk_size: int = 64, sub_chunk: int = 16,
                        compiled: bool = False) -> torch.Tensor:
    """Kimi Delta Attention S_t = (I − β_t k_t k_tᵀ) diag(exp(g_t)) S_{t-1} + β_t k_t v_tᵀ,
    o_t = d_k^-1/2 · S_tᵀ q_t, with β [..., N] and g [..., N, d_k] -> [..., N, d_v].

    Per chunk, with b the in-chunk cumulative g, T = (I + strict_tril(diag(β) A_kk))⁻¹ by a
    triangular solve for all chunks at once, W = T diag(β) (K ⊙ exp(b)) and U = T diag(β) V;
    then chunk by chunk the pseudo-values U − W S feed the output (with A_qk) and the state."""
    stages = _stage(_kda_chunks, compiled)(q, k, v, beta, g, chunk_size, sub_chunk)
    return _delta_loop(*stages, q.shape[-2], compiled)
