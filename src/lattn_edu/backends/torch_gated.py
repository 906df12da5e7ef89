"""Gated linear attention and the delta rule in torch ops (chapters 9 to 12).

The same forms and signatures as the numpy references :mod:`lattn_edu.gated` and
:mod:`lattn_edu.delta`, written only with torch operations: they run wherever the tensors
live and autograd flows through every form into q, k, v, the log decays, β and the initial
state. Updates are out of place (autograd keeps what each step needs), and every decay factor
is exp of a segment sum <= 0 built by a masked cumulative sum, with −inf (exp 0) above the
diagonal, so neither the values nor their gradients overflow.

The chunkwise forms loop over chunks in Python, as flash-linear-attention's naive chunk
references do: a chunk at a time keeps memory at O(N·C) even for one decay per key channel.
"""

from __future__ import annotations

import torch

Tensor = torch.Tensor


def _per_key(log_decay: Tensor | None, q: Tensor) -> Tensor | None:
    """log_decay as [..., N, 1] (one per step) or [..., N, d_k] (one per key); None stays None."""
    if log_decay is None or log_decay.ndim == q.ndim:
        return log_decay
    return log_decay.unsqueeze(-1)


def _start_state(initial_state: Tensor | None, k: Tensor, v: Tensor) -> Tensor:
    """S_0: the given state, or zeros [..., d_k, d_v]."""
    if initial_state is not None:
        return initial_state
    return k.new_zeros(k.shape[:-2] + (k.shape[-1], v.shape[-1]))


def segment_sums(log_decay: Tensor) -> Tensor:
    """G[..., i, j] = Σ_{l=j+1..i} g_l for j <= i and −inf above the diagonal: [..., n] -> [..., n, n].

    Each entry is a cumulative sum down its own column, never the difference of two long sums.
    """
    n = log_decay.shape[-1]
    lower = torch.ones(n, n, dtype=torch.bool, device=log_decay.device).tril()
    steps = log_decay.unsqueeze(-1).expand(log_decay.shape + (n,))  # [..., l, j] = g_l
    sums = torch.cumsum(steps.masked_fill(~lower.tril(-1), 0), dim=-2)  # Σ_{j<l<=i} g_l
    return sums.masked_fill(~lower, float("-inf"))


def decay_mask(log_decay: Tensor | None, n: int, like: Tensor) -> Tensor:
    """L[..., i, j] = exp(Σ_{l=j+1..i} g_l) for j <= i, else 0, [..., n, n]; tril(1) without decay."""
    if log_decay is None:
        return torch.ones(n, n, dtype=like.dtype, device=like.device).tril()
    return torch.exp(segment_sums(log_decay))


def gated_weights(q: Tensor, k: Tensor, g: Tensor | None) -> Tensor:
    """A[..., i, j] = Σ_r q_ir k_jr exp(Σ_{l=j+1..i} g_lr) for j <= i, else 0: [..., n, n].

    g is None, [..., n, 1] (A = (Q Kᵀ) ⊙ L) or [..., n, d_k] (one mask per key channel).
    """
    if g is None or g.shape[-1] == 1:
        mask = decay_mask(None if g is None else g[..., 0], q.shape[-2], q)
        return (q @ k.transpose(-1, -2)) * mask
    masks = decay_mask(g.transpose(-1, -2), q.shape[-2], q)  # [..., d_k, n, n]
    return torch.einsum("...ir,...jr,...rij->...ij", q, k, masks)


def _tail_sums(g: Tensor) -> Tensor:
    """Σ_{l=j+1..n} g_l for every j, [..., n, w]: how much key j decays before the end."""
    later = torch.cumsum(g.flip(-2)[..., :-1, :], dim=-2).flip(-2)  # j < n
    return torch.cat([later, torch.zeros_like(g[..., :1, :])], dim=-2)


def recurrent_gated_linear_attention(q: Tensor, k: Tensor, v: Tensor,
                                     log_decay: Tensor | None, scale: float,
                                     initial_state: Tensor | None = None,
                                     chunk_size: int | None = None) -> tuple[Tensor, Tensor]:
    """The scan, one token at a time: S_t = diag(exp(g_t)) S_{t-1} + k_t v_tᵀ, o_t = scale · S_tᵀ q_t."""
    g = _per_key(log_decay, q)  # [..., N, 1 | d_k] or None
    state = _start_state(initial_state, k, v)  # [..., d_k, d_v]
    outputs = []
    for t in range(q.shape[-2]):
        if g is not None:
            state = torch.exp(g[..., t, :, None]) * state
        state = state + k[..., t, :, None] * v[..., t, None, :]
        outputs.append(q[..., t, None, :] @ state)  # [..., 1, d_v]
    return scale * torch.cat(outputs, dim=-2), state


def parallel_gated_linear_attention(q: Tensor, k: Tensor, v: Tensor,
                                    log_decay: Tensor | None, scale: float,
                                    initial_state: Tensor | None = None,
                                    chunk_size: int | None = None) -> tuple[Tensor, Tensor]:
    """O = scale · A V with the masked N×N weights A, and S_N = Σ_j (k_j ⊙ exp(Σ_{l>j} g_l)) v_jᵀ."""
    g = _per_key(log_decay, q)
    out = scale * (gated_weights(q, k, g) @ v)  # [..., N, d_v]
    keys = k if g is None else k * torch.exp(_tail_sums(g))  # decayed to the end
    state = keys.transpose(-1, -2) @ v  # [..., d_k, d_v]
    if initial_state is not None:
        if g is None:
            return out + scale * (q @ initial_state), state + initial_state
        decay_from_start = torch.cumsum(g, dim=-2)  # Σ_{l<=i} g_l  [..., N, w]
        out = out + scale * ((q * torch.exp(decay_from_start)) @ initial_state)
        state = state + torch.exp(g.sum(-2))[..., :, None] * initial_state
    return out, state


def chunkwise_gated_linear_attention(q: Tensor, k: Tensor, v: Tensor,
                                     log_decay: Tensor | None, scale: float,
                                     initial_state: Tensor | None = None,
                                     chunk_size: int | None = 64) -> tuple[Tensor, Tensor]:
    """Chunks of C tokens: the masked C×C weights inside, the decayed state between them.

    With b_t = Σ g over the chunk up to t: o = scale · (A_c V_c + (q ⊙ exp(b))ᵀ S),
    S ← diag(exp(b_last)) S + (K ⊙ exp(b_last − b))ᵀ V_c.
    """
    g = _per_key(log_decay, q)
    state = _start_state(initial_state, k, v)
    outputs = []
    for start in range(0, q.shape[-2], chunk_size):
        chunk = slice(start, start + chunk_size)
        q_c, k_c, v_c = q[..., chunk, :], k[..., chunk, :], v[..., chunk, :]
        g_c = None if g is None else g[..., chunk, :]
        inner = gated_weights(q_c, k_c, g_c) @ v_c  # [..., C, d_v]
        if g_c is None:
            outputs.append(scale * (inner + q_c @ state))
            state = state + k_c.transpose(-1, -2) @ v_c
            continue
        decay_in = torch.cumsum(g_c, dim=-2)  # b  [..., C, w]
        outputs.append(scale * (inner + (q_c * torch.exp(decay_in)) @ state))
        state = (torch.exp(decay_in[..., -1, :, None]) * state
                 + (k_c * torch.exp(_tail_sums(g_c))).transpose(-1, -2) @ v_c)
    return torch.cat(outputs, dim=-2), state


def recurrent_delta_rule(q: Tensor, k: Tensor, v: Tensor, beta: Tensor,
                         log_decay: Tensor | None, scale: float,
                         initial_state: Tensor | None = None,
                         chunk_size: int | None = None) -> tuple[Tensor, Tensor]:
    """The scan: decay, read what k_t retrieves, write back β_t times the error."""
    state = _start_state(initial_state, k, v)
    outputs = []
    for t in range(q.shape[-2]):
        if log_decay is not None:
            state = torch.exp(log_decay[..., t, None, None]) * state
        k_t = k[..., t, None, :]  # [..., 1, d_k]
        error = v[..., t, None, :] - k_t @ state  # v_t − Sᵀk_t  [..., 1, d_v]
        state = state + k_t.transpose(-1, -2) @ (beta[..., t, None, None] * error)
        outputs.append(q[..., t, None, :] @ state)
    return scale * torch.cat(outputs, dim=-2), state


def ut_transform(k: Tensor, beta: Tensor, log_decay: Tensor | None) -> Tensor:
    """T = (I + A)⁻¹ for a chunk, [..., C, C]: A[i, j] = β_i (k_i·k_j) exp(Σ_{l=j+1..i} g_l), j < i."""
    c = k.shape[-2]
    a = (beta[..., :, None] * (k @ k.transpose(-1, -2)) * decay_mask(log_decay, c, k)).tril(-1)
    eye = torch.eye(c, dtype=k.dtype, device=k.device)
    return torch.linalg.solve_triangular(a + eye, eye.expand_as(a), upper=False, unitriangular=True)


def chunkwise_delta_rule(q: Tensor, k: Tensor, v: Tensor, beta: Tensor,
                         log_decay: Tensor | None, scale: float,
                         initial_state: Tensor | None = None,
                         chunk_size: int | None = 64) -> tuple[Tensor, Tensor]:
    """Chunks in the WY / UT-transform representation: W = T diag(β ⊙ exp(b)) K,
    U = T diag(β) V − W S, and then the chunk is gated linear attention with values U."""
    state = _start_state(initial_state, k, v)
    outputs = []
    for start in range(0, q.shape[-2], chunk_size):
        chunk = slice(start, start + chunk_size)
        q_c, k_c, v_c, b_c = q[..., chunk, :], k[..., chunk, :], v[..., chunk, :], beta[..., chunk, None]
        g_c = None if log_decay is None else log_decay[..., chunk]
        mask = decay_mask(g_c, q_c.shape[-2], q_c)  # L  [..., C, C]
        decay_in = torch.ones_like(b_c) if g_c is None else torch.exp(torch.cumsum(g_c, -1))[..., None]
        t_matrix = ut_transform(k_c, beta[..., chunk], g_c)
        w = t_matrix @ (b_c * decay_in * k_c)  # [..., C, d_k]
        u = t_matrix @ (b_c * v_c) - w @ state  # the pseudo-values  [..., C, d_v]
        outputs.append(scale * ((decay_in * q_c) @ state + ((q_c @ k_c.transpose(-1, -2)) * mask) @ u))
        state = decay_in[..., -1, :, None] * state + (k_c * mask[..., -1, :, None]).transpose(-1, -2) @ u
    return torch.cat(outputs, dim=-2), state


GATED_FORMS = {
    "recurrent": recurrent_gated_linear_attention,
    "parallel": parallel_gated_linear_attention,
    "chunkwise": chunkwise_gated_linear_attention,
}

DELTA_FORMS = {
    "recurrent": recurrent_delta_rule,
    "chunkwise": chunkwise_delta_rule,
}
