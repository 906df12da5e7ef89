"""Log-linear attention: Mamba-2's one state split into O(log N) Fenwick buckets (chapter 15).

Guo, Yang, Goel, Xing, Dao and Kim, "Log-Linear Attention" (2025, arXiv:2506.04761). Mamba-2
keeps one state, S_t = α_t S_{t−1} + k_t v_tᵀ (A_t = α_t I, B_t = k_t v_tᵀ, α_t = exp(g_t)).
Log-linear attention keeps the same gated sum, but split by *how far back* each key lies: the
prefix [0, t] is cut into buckets the way a Fenwick tree cuts it, and token s <= t falls in

    level(t, s) = bit_length(t xor s)          (0 for s = t; absolute positions from 0)

the position of the highest bit where t and s differ, plus one. Level 0 is the token itself,
level ℓ >= 1 holds the 2^(ℓ−1) tokens before t's ℓ−1 low bits (non-empty when bit ℓ−1 of t
is set), so the recent past is held at fine resolution and the distant past in coarse blocks.
Each bucket keeps its own gated state, and a query mixes them with per-step level weights λ:

    S_t^(ℓ) = Σ_{s: level(t,s)=ℓ} exp(Σ_{s<l<=t} g_l) k_s v_sᵀ,     o_t = scale · Σ_ℓ λ_t^(ℓ) S_t^(ℓ)ᵀ q_t.

Each bucket obeys the transition A_t = α_t I and write B_t = k_t v_tᵀ of Mamba-2 (only level 0
is written), and as t advances the buckets merge as a binary counter carries: the levels up to
m_t = bit_length(t xor (t−1)) (the lowest set bit of t, plus one) join into level m_t.
With every λ = 1 the buckets add up to Mamba-2's state, so the output is Mamba-2's.

The parallel form is (Q Kᵀ ⊙ M) V with the hierarchical mask M[t, s] = λ_t^(level(t,s)) ·
exp(Σ_{s<l<=t} g_l). The chunkwise form uses it inside chunks and carries the bank of level
states across them; a query in a later chunk sees the bank's levels 0..m merged into level m
(m = bit_length(t xor (chunk start − 1))), so for chunks of C = 2^c starting at multiples of C
only the levels above c act as separate states across chunks, as in the paper's chunked
algorithm. The bank keeps all L levels so that the state after any token, in any form, is the
recurrent form's state: continuing from it is exact.

The carried state is ``(bank, position)``: the bank [..., L, d_k, d_v] of level states after
the last token, and the number of tokens seen, because the levels depend on the absolute
positions. The level weights need L >= bit_length(position + N − 1) + 1 levels (ceil(log2 N) + 1
from position 0, the paper's and fla's count); more are allowed and unused. They may be any
finite reals: the output is linear in them, so no sign is unsafe (the paper's Log-Linear Mamba-2
makes them >= 0 with a softplus of a projection of x_t; fla's own tests draw them from N(0, 1)).

Like :mod:`lattn_edu.gated`, the forms are written once against the array API: numpy arrays
give the numpy reference, torch tensors the torch backend with autograd.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from array_api_compat import device

from ._checks import (array_namespace, broadcast_to_target, check_bool, check_choice, check_log_decay,
                      check_positive_int, check_qkv, check_scale, check_state_part, match_kind)
from .gated import decay_mask, read_state, start_state, tail_sums
from .recurrence import run_recurrence

LOG_LINEAR_FORMS = ("recurrent", "parallel", "chunkwise")


def fenwick_levels(n: int, position: int = 0) -> np.ndarray:
    """level(t, s) = bit_length(t xor s) for the absolute positions t, s in [position, position + n).

    Returns an int array [n, n]: row t, column s, for s <= t; -1 above the diagonal (s > t).
    """
    t = np.arange(position, position + n)
    levels = np.frexp(np.bitwise_xor.outer(t, t))[1]  # x = m·2^e with 1/2 <= m < 1: e = bit_length(x)
    return np.where(np.tri(n, dtype=bool), levels, -1)


def levels_needed(end: int) -> int:
    """The number of levels L for positions 0..end−1: bit_length(end − 1) + 1 = ceil(log2 end) + 1."""
    return max(end - 1, 0).bit_length() + 1


def hierarchical_mask(log_decay: Any, level_weights: Any, position: int = 0) -> Any:
    """M[..., t, s] = λ_t^(level(t, s)) · exp(Σ_{s<l<=t} g_l) for s <= t, else 0: [..., N, N].

    log_decay [..., N], level_weights [..., N, L], for tokens at positions position, position + 1, ...
    """
    xp = array_namespace(log_decay)
    levels = np.maximum(fenwick_levels(log_decay.shape[-1], position), 0).astype(np.int64)  # [N, N]; any above
    index = xp.broadcast_to(xp.asarray(levels, device=device(log_decay)),
                            level_weights.shape[:-1] + levels.shape[-1:])  # [..., N, N]
    weights = xp.take_along_axis(level_weights, index, axis=-1)  # λ_t^(level(t, s))  [..., N, N]
    return weights * decay_mask(log_decay)  # the decay mask is 0 above the diagonal


def merge_matrices(positions: Any, last: int, n_levels: int) -> np.ndarray:
    """P[i, ℓ', ℓ] = 1 where ℓ' = max(ℓ, m_i), m_i = bit_length(positions[i] xor last): [n, L, L].

    Seen from a later token t, the buckets of the bank after token ``last`` keep their levels
    above m = bit_length(t xor last), and those up to m are together t's level m.
    """
    merged = np.maximum(np.arange(n_levels), np.frexp(np.bitwise_xor(positions, last))[1][:, None])
    return (merged[:, None, :] == np.arange(n_levels)[None, :, None]).astype(float)  # [n, ℓ', ℓ]


def recurrent_log_linear_attention(q: Any, k: Any, v: Any, log_decay: Any, level_weights: Any,
                                   scale: float, initial_state: Any = None, chunk_size: int | None = None,
                                   position: int = 0) -> tuple[Any, Any]:
    """The bank of level states, one token at a time (Fenwick carries): the reference form."""
    xp = array_namespace(q)
    n_levels = level_weights.shape[-1]
    empty = start_state(None, k, v)  # [..., d_k, d_v]
    bank = start_bank(initial_state, k, v, n_levels)  # S^(0..L−1)  [..., L, d_k, d_v]
    bank = [bank[..., ell, :, :] for ell in range(n_levels)]
    outputs = []  # o_t  [..., d_v] each
    for i in range(q.shape[-2]):
        t = position + i
        carry = (t & -t).bit_length()  # m_t: levels 0..m_t merge into m_t (0 at t = 0: nothing before)
        alpha = xp.exp(log_decay[..., i, None, None])  # α_t  [..., 1, 1]
        merged = [alpha * sum(bank[:carry + 1])] if carry else []  # S^(m) = α_t Σ_{ℓ<=m} S^(ℓ)
        kept = [alpha * state for state in bank[carry + 1:]]  # S^(ℓ) = α_t S^(ℓ) above m
        written = k[..., i, :, None] * v[..., i, None, :]  # S^(0) = k_t v_tᵀ  [..., d_k, d_v]
        bank = [written] + [empty] * max(carry - 1, 0) + merged + kept
        levels = [level_weights[..., i, ell, None] * read_state(q[..., i, :], s) for ell, s in enumerate(bank)]
        outputs.append(scale * sum(levels))  # o_t = scale Σ_ℓ λ_t^(ℓ) S^(ℓ)ᵀ q_t
    return xp.stack(outputs, axis=-2), xp.stack(bank, axis=-3)


def log_linear_block(q: Any, k: Any, v: Any, log_decay: Any, level_weights: Any, scale: float,
                     bank: Any, position: int) -> tuple[Any, Any]:
    """Tokens at positions position.. in one masked product, after the bank left by token position − 1.

    Inside: (Q Kᵀ ⊙ M) V with the hierarchical mask. Before: query t reads the bank with
    its levels merged as t sees them, decayed by exp(b_t), b_t = Σ g_l over the block up to t.
    After: the bank seen from the block's last token e, decayed by exp(b_e), plus the block's
    keys, each in its level(e, s) and decayed by exp(b_e − b_s).
    """
    xp = array_namespace(q)
    n, n_levels = q.shape[-2], level_weights.shape[-1]
    positions = np.arange(position, position + n)

    def on_device(table: np.ndarray) -> Any:  # a 0/1 table of levels as an array like q
        return xp.asarray(table, dtype=q.dtype, device=device(q))

    inner = ((q @ xp.matrix_transpose(k)) * hierarchical_mask(log_decay, level_weights, position)) @ v
    decay_in = xp.cumulative_sum(log_decay, axis=-1)  # b_t  [..., n]
    decay_out = tail_sums(log_decay[..., None])[..., 0]  # b_e − b_s, summed directly  [..., n]
    end = on_device(fenwick_levels(n, position)[-1] == np.arange(n_levels)[:, None])  # [L, n]: ℓ = level(e, s)
    keys = xp.matrix_transpose(end[:, :, None] * (k * xp.exp(decay_out)[..., None])[..., None, :, :])
    new_bank = keys @ v[..., None, :, :]  # Σ_{level(e,s)=ℓ} exp(b_e − b_s) k_s v_sᵀ  [..., L, d_k, d_v]
    if position == 0:  # nothing before the block: the bank is empty
        return scale * inner, new_bank
    seen = merge_matrices(positions, position - 1, n_levels)  # [n, L, L]
    weights = (xp.matrix_transpose(on_device(seen)) @ level_weights[..., None])[..., 0]  # λ_t^(max(ℓ, m_t))
    reads = q[..., None, :, :] @ bank  # q_tᵀ S^(ℓ)  [..., L, n, d_v]
    before = xp.sum(xp.matrix_transpose(weights)[..., None] * reads, axis=-3)  # [..., n, d_v]
    out = scale * (inner + xp.exp(decay_in)[..., None] * before)
    flat = xp.reshape(bank, bank.shape[:-2] + (-1,))  # [..., L, d_k·d_v]
    carried = xp.reshape(on_device(seen[-1]) @ flat, bank.shape)  # the bank as e sees it
    return out, new_bank + xp.exp(decay_in[..., -1, None, None, None]) * carried


def parallel_log_linear_attention(q: Any, k: Any, v: Any, log_decay: Any, level_weights: Any,
                                  scale: float, initial_state: Any = None, chunk_size: int | None = None,
                                  position: int = 0) -> tuple[Any, Any]:
    """O = scale · (Q Kᵀ ⊙ M) V with the hierarchical N×N mask M: the training form, O(N²)."""
    bank = start_bank(initial_state, k, v, level_weights.shape[-1])
    return log_linear_block(q, k, v, log_decay, level_weights, scale, bank, position)


def chunkwise_log_linear_attention(q: Any, k: Any, v: Any, log_decay: Any, level_weights: Any,
                                   scale: float, initial_state: Any = None, chunk_size: int = 64,
                                   position: int = 0) -> tuple[Any, Any]:
    """The masked form inside chunks of ``chunk_size`` tokens, the bank of level states between them.

    Any chunk size is exact (the bank is the recurrent form's state at every boundary); a power
    of two lines the chunks up with the Fenwick blocks. Cost O(N C d + N L d_k d_v): N log N for a fixed C.
    """
    xp = array_namespace(q)
    bank = start_bank(initial_state, k, v, level_weights.shape[-1])  # [..., L, d_k, d_v]
    outputs = []  # one [..., C, d_v] per chunk
    for start in range(0, q.shape[-2], chunk_size):
        chunk = slice(start, start + chunk_size)
        out, bank = log_linear_block(q[..., chunk, :], k[..., chunk, :], v[..., chunk, :],
                                     log_decay[..., chunk], level_weights[..., chunk, :], scale, bank,
                                     position + start)
        outputs.append(out)
    return xp.concat(outputs, axis=-2), bank


def start_bank(initial_state: Any, k: Any, v: Any, n_levels: int) -> Any:
    """The bank to start from, zeros when none is given: [..., L, d_k, d_v]."""
    if initial_state is not None:
        return initial_state
    empty = start_state(None, k, v)
    return array_namespace(v).stack([empty] * n_levels, axis=-3)


def check_position(initial_state: Any) -> tuple[Any, int]:
    """Split ``initial_state`` into its bank and position (0 when there is none)."""
    if initial_state is None:
        return None, 0
    if not isinstance(initial_state, tuple) or len(initial_state) != 2:
        raise TypeError("initial_state must be the pair (bank, position) that return_state=True gave "
                        f"(bank [..., L, d_k, d_v], position an int >= 1); got {type(initial_state).__name__}")
    bank, position = initial_state
    if isinstance(position, bool) or not isinstance(position, numbers.Integral) or position < 1:
        raise ValueError("initial_state's position must be an int >= 1 (the number of tokens the bank "
                         f"has seen; the levels depend on it); got {position!r}")
    return bank, int(position)


def check_level_weights(level_weights: Any, q: Any, position: int) -> Any:
    """λ [..., N, L] with L >= bit_length(position + N − 1) + 1, finite, broadcast to q's leading axes."""
    level_weights = match_kind(level_weights, "level_weights", q)
    lead, n = tuple(q.shape[:-2]), q.shape[-2]
    needed = levels_needed(position + n)
    if level_weights.ndim != q.ndim or level_weights.shape[-2] != n:
        raise ValueError(f"level_weights must have shape {list(lead) + [n, needed]} (one weight per step and "
                         f"level) for q of shape {list(q.shape)}; got {list(level_weights.shape)}")
    if level_weights.shape[-1] < needed:
        raise ValueError(f"level_weights must have L >= {needed} levels (ceil(log2({position + n})) + 1 for "
                         f"positions 0..{position + n - 1}); got L = {level_weights.shape[-1]}")
    target = lead + tuple(level_weights.shape[-2:])
    return broadcast_to_target(level_weights, "level_weights", target, f"q has shape {list(q.shape)}")


def log_linear_attention(q: Any, k: Any, v: Any, log_decay: Any, level_weights: Any, *,
                         scale: float | None = None, form: str = "chunkwise", backend: str = "numpy",
                         chunk_size: int = 64, initial_state: Any = None, return_state: bool = False) -> Any:
    """Log-linear attention (Log-Linear Mamba-2): a gated state per Fenwick level, mixed by λ.

    o_t = scale · Σ_ℓ λ_t^(ℓ) S_t^(ℓ)ᵀ q_t,  S_t^(ℓ) = Σ_{s: level(t,s)=ℓ} exp(Σ_{s<l<=t} g_l) k_s v_sᵀ,
    level(t, s) = bit_length(t xor s).

    Parameters
    ----------
    q, k : array [..., N, d_k]
    v : array [..., N, d_v]
        float32 or float64, numpy arrays (or torch tensors with ``backend='torch'``), with
        equal leading (batch, head) axes.
    log_decay : array [..., N]
        g_t <= 0, one per step and head (Mamba-2's scalar decay). Leading axes of size 1 broadcast.
    level_weights : array [..., N, L]
        λ_t^(ℓ), any finite reals (the paper's layer makes them >= 0 with a softplus), L >=
        ceil(log2 N) + 1 (more when continuing: ceil(log2(position + N)) + 1); extra levels are
        unused. Leading axes of size 1 broadcast.
    scale : float, optional
        Read-out scale; None means d_k**-0.5 (fla's log-linear functions default to 1.0).
    form : 'recurrent' | 'parallel' | 'chunkwise'
        The bank of level states token by token, the masked N×N form, or the masked form in
        chunks of ``chunk_size`` with the bank between them.
    backend : 'numpy' | 'torch'
        ('numba' has no kernel for this model and is refused.)
    chunk_size : int
    initial_state : (array [..., L, d_k, d_v], int), optional
        (bank, position) from an earlier call with ``return_state=True``: the level states after
        ``position`` tokens. L must equal ``level_weights``' L. Continuing from it is exact.
    return_state : bool
        Also return the final (bank, position + N).

    Returns
    -------
    o : array [..., N, d_v], or ``(o, (bank, position))`` with bank [..., L, d_k, d_v].
    """
    form = check_choice(form, "form", LOG_LINEAR_FORMS)
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    return_state = check_bool(return_state, "return_state")
    q, k, v = check_qkv(q, k, v, causal=True)
    if log_decay is None:
        raise TypeError("log_decay must be an array [..., N] of log decays g <= 0 (zeros for no decay); "
                        "got None")
    log_decay = check_log_decay(log_decay, q, vector=False)
    bank, position = check_position(initial_state)
    level_weights = check_level_weights(level_weights, q, position)
    if bank is not None:
        shape = tuple(q.shape[:-2]) + (level_weights.shape[-1], q.shape[-1], v.shape[-1])
        bank = check_state_part(bank, "initial_state's bank", q, shape,
                                "[..., L, d_k, d_v] with level_weights' L")
    result = run_recurrence("log_linear", (q, k, v, log_decay, level_weights), check_scale(scale, q.shape[-1]),
                            form, backend, chunk_size, bank, return_state, position=position)
    if not return_state:
        return result
    out, final_bank = result
    return out, (final_bank, position + q.shape[-2])
