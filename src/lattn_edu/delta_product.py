"""(Gated) DeltaProduct: n_h delta-rule steps per token, a product of Householder-like factors (chapter 13).

    A_t = (I − β_t,n_h k_t,n_h k_t,n_hᵀ) ··· (I − β_t,1 k_t,1 k_t,1ᵀ) · exp(g_t)
    B_t = Σ_j (Π_{i>j} (I − β_t,i k_t,i k_t,iᵀ)) β_t,j k_t,j v_t,jᵀ        (rank n_h)
    S_t = A_t S_{t−1} + B_t,     o_t = scale · S_tᵀ q_t

Siems et al. 2025, "DeltaProduct: Improving State-Tracking in Linear RNNs via Householder
Products" (arXiv 2502.10297). A token brings n_h keys, values and step sizes; the state decays
once (Gated DeltaProduct, one scalar log decay g_t <= 0 per token), then takes n_h delta-rule
steps S ← (I − β k kᵀ) S + β k vᵀ, and only then is read. With unit keys and β = 2 each factor
is a reflection, so A_t can be any product of n_h reflections: a rotation when n_h = 2, which
one step of DeltaNet (a single reflection at best, eigenvalues in [−1, 1] along one direction)
cannot express; that is what lets the model track the state of a permutation group. n_h = 1 is
the (gated) delta rule.

Keys are used as given, as in :mod:`lattn_edu.delta`: L2-normalise each k_t,j for a stable
recurrence (then, with β in [0, 2], no factor amplifies the state).
"""

from __future__ import annotations

from typing import Any

from array_api_compat import device

from ._checks import (array_namespace, check_bool, check_choice, check_initial_state, check_log_decay,
                      check_positive_int, check_scale, check_sequence, check_within, match_kind)
from .delta import chunkwise_delta_rule
from .gated import per_key_log_decay, read_state, start_state
from .recurrence import run_recurrence

DELTA_PRODUCT_FORMS = ("recurrent", "chunkwise")


def recurrent_delta_product(q: Any, k: Any, v: Any, beta: Any, log_decay: Any, scale: float,
                            initial_state: Any = None, chunk_size: int | None = None) -> tuple[Any, Any]:
    """One token at a time: decay once, take the token's n_h delta-rule steps, then read."""
    xp = array_namespace(q)
    g = per_key_log_decay(log_decay, q)  # [..., N, 1]
    state = start_state(initial_state, q, v[..., 0, :])  # S  [..., d_k, d_v]
    outputs = []  # o_t  [..., d_v] each
    for t in range(q.shape[-2]):
        state = xp.exp(g[..., t, :, None]) * state  # S ← exp(g_t) S, once per token
        for j in range(k.shape[-2]):
            k_tj, b_tj = k[..., t, j, :], beta[..., t, j, None]  # [..., d_k], [..., 1]
            error = v[..., t, j, :] - read_state(k_tj, state)  # v_tj − Sᵀk_tj  [..., d_v]
            state = state + k_tj[..., :, None] * (b_tj * error)[..., None, :]  # (I − β k kᵀ) S + β k vᵀ
        outputs.append(scale * read_state(q[..., t, :], state))  # after the last step
    return xp.stack(outputs, axis=-2), state


def interleave(q: Any, k: Any, v: Any, beta: Any, log_decay: Any) -> tuple[Any, Any, Any, Any, Any]:
    """The N tokens as N·n_h delta-rule steps, token-major: step (t, j) has k_tj, v_tj and β_tj,
    the log decay g_t on j = 1 and 0 on the others, and q_t on j = n_h and zeros on the others.

    q [..., N, d_k], k [..., N, n_h, d_k], v [..., N, n_h, d_v], beta [..., N, n_h], log_decay
    None or [..., N] -> q, k [..., N·n_h, d_k], v [..., N·n_h, d_v], beta, log_decay [..., N·n_h].
    """
    xp = array_namespace(q)
    lead, (n, n_h) = tuple(k.shape[:-3]), tuple(k.shape[-3:-1])

    def steps(x: Any) -> Any:  # [..., N, n_h, ·] -> [..., N·n_h, ·]
        return xp.reshape(x, lead + (n * n_h,) + tuple(x.shape[len(lead) + 2:]))

    def on_one_step(x: Any, axis: int, first: bool) -> Any:  # x on one step of each token, zeros on the others
        at = x.ndim + 1 + axis  # the new step axis, counted from the front
        zeros = xp.zeros(x.shape[:at] + (n_h - 1,) + x.shape[at:], dtype=x.dtype, device=device(x))
        parts = [xp.expand_dims(x, axis=axis), zeros]
        return xp.concat(parts if first else parts[::-1], axis=axis)

    q_steps = steps(on_one_step(q, -2, first=False))  # q_t on the last step  [..., N·n_h, d_k]
    g_steps = None if log_decay is None else steps(on_one_step(log_decay, -1, first=True))  # g_t on the first
    return q_steps, steps(k), steps(v), steps(beta), g_steps


def on_substeps(delta_form: Any, q: Any, k: Any, v: Any, beta: Any, log_decay: Any, scale: float,
                initial_state: Any = None, chunk_size: int = 64) -> tuple[Any, Any]:
    """A delta-rule form (the reference's or a fast backend's) run on the steps :func:`interleave`
    makes, in chunks of ``chunk_size`` tokens (chunk_size·n_h steps), read at each token's last
    step: (o [..., N, d_v], a strided view, and S_N)."""
    n_h = k.shape[-2]
    out, state = delta_form(*interleave(q, k, v, beta, log_decay), scale, initial_state, chunk_size * n_h)
    return out[..., n_h - 1::n_h, :], state  # the reads at the other steps are zeros (q = 0 there)


def chunkwise_delta_product(q: Any, k: Any, v: Any, beta: Any, log_decay: Any, scale: float,
                            initial_state: Any = None, chunk_size: int = 64) -> tuple[Any, Any]:
    """The chunkwise delta rule (UT transform) on the N·n_h interleaved steps, C tokens a chunk.

    Exact, not an approximation: the delta rule's step S ← (I − β k kᵀ)(exp(g) S) + β k vᵀ with
    g = g_t on a token's first step and 0 (a factor 1) on the others composes to exactly the
    token's update, exp(g_t) once, then its n_h steps; a read never changes the state, so the
    reads at the other steps (zeros, q = 0 there) are simply dropped, and the UT transform is
    exact for any sequence of steps. A chunk of C tokens is C·n_h steps, so chunk_size counts
    tokens, as in every other model, and a chunk never splits a token.
    """
    return on_substeps(chunkwise_delta_rule, q, k, v, beta, log_decay, scale, initial_state, chunk_size)


def _check_steps(q: Any, k: Any, v: Any, beta: Any) -> tuple[Any, Any, Any, Any]:
    """q [..., N, d_k] and per-step k [..., N, n_h, d_k], v [..., N, n_h, d_v], β [..., N, n_h] in [0, 2]."""
    q = check_sequence(q, "q")
    k, v, beta = match_kind(k, "k", q), match_kind(v, "v", q), match_kind(beta, "beta", q)
    tokens, d_k = tuple(q.shape[:-1]), q.shape[-1]
    if k.ndim != q.ndim + 1 or tuple(k.shape[:-2]) != tokens or k.shape[-1] != d_k or k.shape[-2] == 0:
        raise ValueError(f"k must have shape {list(tokens)} + [n_h, {d_k}] ([..., N, n_h, d_k]: n_h >= 1 keys "
                         f"per token of q, shape {list(q.shape)}); got {list(k.shape)}")
    steps = tuple(k.shape[:-1])  # [..., N, n_h]
    if v.ndim != k.ndim or tuple(v.shape[:-1]) != steps or v.shape[-1] == 0:
        raise ValueError(f"v must have shape {list(steps)} + [d_v] ([..., N, n_h, d_v]: one value per key, "
                         f"k has shape {list(k.shape)}); got {list(v.shape)}")
    if tuple(beta.shape) != steps:
        raise ValueError(f"beta must have shape {list(steps)} ([..., N, n_h]: one step size per key, k has "
                         f"shape {list(k.shape)}); got {list(beta.shape)}")
    check_within(beta, "beta", 0, 2, "with unit-norm keys, I - β k kᵀ then never amplifies the state; 2 is a "
                 "reflection")
    return q, k, v, beta


def delta_product(q: Any, k: Any, v: Any, beta: Any, log_decay: Any = None, *, scale: float | None = None,
                  form: str = "chunkwise", backend: str = "numpy", chunk_size: int = 64,
                  initial_state: Any = None, return_state: bool = False) -> Any:
    """(Gated) DeltaProduct: per token, decay once, then n_h delta-rule steps, then read.

    S ← exp(g_t) S;  for j = 1..n_h: S ← (I − β_tj k_tj k_tjᵀ) S + β_tj k_tj v_tjᵀ;  o_t = scale · Sᵀ q_t.

    Parameters
    ----------
    q : array [..., N, d_k]
    k : array [..., N, n_h, d_k]
        n_h keys per token, used in order; L2-normalise them (‖k_tj‖ = 1) for a stable recurrence.
    v : array [..., N, n_h, d_v]
    beta : array [..., N, n_h]
        Step sizes in [0, 2]; β = 2 with a unit key is a reflection (a negative eigenvalue).
    log_decay : None or array [..., N]
        g_t <= 0, one scalar per token and head, applied once before the token's n_h steps
        (Gated DeltaProduct); None is DeltaProduct. Per-channel decays are refused.
    scale : float, optional
        Read-out scale; None means d_k**-0.5.
    form : 'recurrent' | 'chunkwise'
        The scan, or the chunkwise delta rule on the N·n_h interleaved steps.
    backend : 'numpy' | 'numba' | 'torch'
    chunk_size : int
        Tokens per chunk (each chunk holds chunk_size·n_h delta-rule steps); N need not be a
        multiple of it.
    initial_state : array [..., d_k, d_v], optional
    return_state : bool

    Returns
    -------
    o : array [..., N, d_v], or ``(o, final_state)`` with final_state [..., d_k, d_v].
    """
    form = check_choice(form, "form", DELTA_PRODUCT_FORMS)
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    return_state = check_bool(return_state, "return_state")
    q, k, v, beta = _check_steps(q, k, v, beta)
    if getattr(log_decay, "ndim", None) == q.ndim:  # [..., N, d_k], as GLA and KDA take
        raise ValueError(f"log_decay must have shape {list(q.shape[:-1])} ([..., N]: DeltaProduct decays by one "
                         f"scalar per token); got the per-channel shape {list(log_decay.shape)}")
    log_decay = check_log_decay(log_decay, q, vector=False)
    initial_state = check_initial_state(initial_state, q, v[..., 0, :])
    return run_recurrence("delta_product", (q, k, v, beta, log_decay), check_scale(scale, q.shape[-1]), form,
                          backend, chunk_size, initial_state, return_state)
