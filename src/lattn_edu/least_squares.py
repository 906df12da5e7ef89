"""MesaNet's least-squares read: the output that best fits every past pair (chapter 14).

    H_t = exp(g_t) H_{t−1} + β_t k_t k_tᵀ        H_t [d_k, d_k]
    G_t = exp(g_t) G_{t−1} + β_t k_t v_tᵀ        G_t [d_k, d_v]
    o_t = G_tᵀ (H_t + Λ)⁻¹ (scale · q_t),         Λ = diag(λ), λ > 0

von Oswald et al. 2025, "MesaNet: Sequence Modeling by Locally Optimal Test-Time Training"
(arXiv 2506.05233). In the model table of :mod:`lattn_edu.recurrence` the layer keeps two
states, both with the transition A_t = exp(g_t) I: H with the write B_t = β_t k_t k_tᵀ and G
with B_t = β_t k_t v_tᵀ (G is gated linear attention's state, H the same with values k).
Where linear attention reads G_tᵀ q_t, MesaNet first solves (H_t + Λ) x_t = scale · q_t:
o_t = W_tᵀ q_t with the W_t that minimises the weighted, decayed, regularised squared error

    Σ_{s<=t} β_s Π_{l=s+1..t} exp(g_l) ‖W_tᵀ k_s − v_s‖² + Σ_r λ_r ‖row r of W_t‖²,

so W_t = (H_t + Λ)⁻¹ G_t is the exact optimum at every step, where DeltaNet takes one gradient
step on the newest pair's error. β_t is the paper's input gate (a sigmoid, in [0, 1]; β = 0
skips a token) and exp(g_t) its forget gate. Every β_t >= 0 keeps H_t positive semi-definite,
so with λ > 0 the system is symmetric positive definite and has one solution. In float32, H_t
is only known to about 6e-8 · ‖H_t‖: a ridge below that reads a different system (the solve
stays finite and backward stable, but o can be far from float64's).

Two solvers: ``"exact"`` (a batched LU solve, ``xp.linalg.solve``, differentiable on torch)
and ``"cg"``, a fixed number of conjugate-gradient steps from x = 0, as fla's chunked MesaNet
solver starts (its one-step decoding starts from the Jacobi guess q / (diag(H) + λ) instead).
After j steps the error in the (H + Λ)-norm is at most 2((√κ − 1)/(√κ + 1))^j of the start's;
measured on o (d_k = 16, N = 200, unit keys, λ = 0.25, g in [−1, 0], κ <= 4.6): relative error
1.1, 0.24, 9.3e-3, 3.8e-6, 2.4e-12, 6.4e-16 after 1, 2, 4, 8, 12, 16 steps in float64; in
float32 it stops at 2.6e-7 from 12 steps on (the exact float32 solve is 1.6e-7 from float64).

The forms take checked arrays — q, k [..., N, d_k], v [..., N, d_v], beta [..., N], log_decay
None or [..., N], ridge [..., d_k], a float scale, the state pair (H, G) or None — and return
``(o, (H_N, G_N))``, written once against the array API like :mod:`lattn_edu.gated`.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from array_api_compat import device

from ._checks import (array_namespace, as_float_array, broadcast_to_target, check_bool, check_choice,
                      check_finite, check_log_decay, check_per_step_range, check_positive_int, check_qkv,
                      check_scale, check_state_part, dtype_name, extreme, is_torch_tensor, match_kind)
from .gated import decay_mask, per_key_log_decay, read_state, start_state
from .recurrence import run_recurrence

LEAST_SQUARES_FORMS = ("recurrent", "chunkwise")
SOLVERS = ("exact", "cg")


def conjugate_gradient(a: Any, y: Any, iterations: int) -> Any:
    """x ≈ a⁻¹ y after ``iterations`` conjugate-gradient steps from x = 0, a symmetric positive
    definite: a [..., d, d], y [..., d] -> x [..., d]. In exact arithmetic d steps solve exactly."""
    xp = array_namespace(a, y)
    x, r = xp.zeros_like(y), y  # x_0 = 0, so the residual y − a x_0 is y  [..., d]
    p, rr = r, xp.sum(r * r, axis=-1, keepdims=True)  # search direction, ‖r‖²  [..., 1]
    for _ in range(iterations):
        ap = (a @ p[..., None])[..., 0]  # a p  [..., d]
        curvature = xp.sum(p * ap, axis=-1, keepdims=True)  # pᵀ a p, 0 only when p = r = 0
        step = rr / xp.where(curvature > 0, curvature, 1.0)  # α = ‖r‖² / pᵀ a p (0 once solved)
        x, r = x + step * p, r - step * ap
        rr_next = xp.sum(r * r, axis=-1, keepdims=True)
        p = r + (rr_next / xp.where(rr > 0, rr, 1.0)) * p  # next direction, a-conjugate to p
        rr = rr_next
    return x


def ridge_solve(h: Any, ridge: Any, y: Any, solver: str = "exact", cg_iterations: int = 30) -> Any:
    """x = (H + diag(λ))⁻¹ y for a stack of systems: h [..., d, d], ridge [..., d], y [..., d]."""
    xp = array_namespace(h, y)
    a = h + ridge[..., :, None] * xp.eye(h.shape[-1], dtype=h.dtype, device=device(h))  # H + Λ
    if solver == "cg":
        return conjugate_gradient(a, y, cg_iterations)
    return xp.linalg.solve(a, y[..., None])[..., 0]  # y as one column: no vector/matrix ambiguity


def start_states(initial_state: Any, k: Any, v: Any) -> tuple[Any, Any]:
    """(H, G) to start from, zeros when none is given: [..., d_k, d_k] and [..., d_k, d_v]."""
    if initial_state is not None:
        return initial_state
    return start_state(None, k, k), start_state(None, k, v)


def recurrent_least_squares(q: Any, k: Any, v: Any, beta: Any, log_decay: Any, ridge: Any, scale: float,
                            initial_state: Any = None, chunk_size: int | None = None, solver: str = "exact",
                            cg_iterations: int = 30) -> tuple[Any, Any]:
    """One token at a time: update both sums, then solve one d_k × d_k system."""
    xp = array_namespace(q)
    g = per_key_log_decay(log_decay, q)  # [..., N, 1]
    h, s = start_states(initial_state, k, v)  # H [..., d_k, d_k], G [..., d_k, d_v]
    outputs = []  # o_t  [..., d_v] each
    for t in range(q.shape[-2]):
        decay = xp.exp(g[..., t, :, None])  # exp(g_t)  [..., 1, 1]
        written = beta[..., t, None, None] * k[..., t, :, None]  # β_t k_t  [..., d_k, 1]
        h = decay * h + written * k[..., t, None, :]  # H_t = exp(g_t) H_{t−1} + β_t k_t k_tᵀ
        s = decay * s + written * v[..., t, None, :]  # G_t = exp(g_t) G_{t−1} + β_t k_t v_tᵀ
        x = ridge_solve(h, ridge, scale * q[..., t, :], solver, cg_iterations)  # (H_t + Λ)⁻¹ scale q_t
        outputs.append(read_state(x, s))  # o_t = G_tᵀ x_t
    return xp.stack(outputs, axis=-2), (h, s)


def chunkwise_least_squares(q: Any, k: Any, v: Any, beta: Any, log_decay: Any, ridge: Any, scale: float,
                            initial_state: Any = None, chunk_size: int = 64, solver: str = "exact",
                            cg_iterations: int = 30) -> tuple[Any, Any]:
    """Chunks of C tokens: every H_t of the chunk at once, then all C systems in one batched solve.

    With b_t = Σ g over the chunk up to t, L its decay mask and (H, G) the states before it,
    H_t = exp(b_t) H + Σ_{j<=t} L_tj β_j k_j k_jᵀ, and the read needs G_t only through
    G_tᵀ x_t = exp(b_t) Gᵀ x_t + Σ_{j<=t} L_tj β_j (k_j · x_t) v_j: gated linear attention's
    chunk with the solutions x_t as its queries.
    """
    xp = array_namespace(q)
    g = per_key_log_decay(log_decay, q)[..., 0]  # [..., N]
    h, s = start_states(initial_state, k, v)  # H, G before the chunk
    outputs = []  # one [..., C, d_v] per chunk
    for start in range(0, q.shape[-2], chunk_size):
        chunk = slice(start, start + chunk_size)
        q_c, k_c, v_c, g_c = q[..., chunk, :], k[..., chunk, :], v[..., chunk, :], g[..., chunk]
        decay_in = xp.exp(xp.cumulative_sum(g_c, axis=-1))  # exp(b_t)  [..., C]
        weights = decay_mask(g_c) * beta[..., None, chunk]  # L_tj β_j  [..., C, C]
        outer = xp.matrix_transpose(weights[..., :, :, None] * k_c[..., None, :, :])  # [..., C, d_k, C]
        h_all = decay_in[..., :, None, None] * h[..., None, :, :] + outer @ k_c[..., None, :, :]  # H_t
        x = ridge_solve(h_all, ridge[..., None, :], scale * q_c, solver, cg_iterations)  # [..., C, d_k]
        reads = (x @ xp.matrix_transpose(k_c)) * weights  # L_tj β_j (k_j · x_t)  [..., C, C]
        outputs.append(decay_in[..., None] * (x @ s) + reads @ v_c)  # o_t = G_tᵀ x_t
        last = weights[..., -1, :, None]  # L_Cj β_j, how much of step j reaches the chunk's end
        h = h_all[..., -1, :, :]  # H after the chunk is the last H_t
        s = decay_in[..., -1, None, None] * s + xp.matrix_transpose(k_c * last) @ v_c
    return xp.concat(outputs, axis=-2), (h, s)


def check_ridge(ridge: Any, q: Any) -> Any:
    """λ > 0: a float or an array that broadcasts to [..., d_k] (q's leading axes), returned as
    an array of q's kind, dtype and device of exactly that shape."""
    target = tuple(q.shape[:-2]) + (q.shape[-1],)
    if is_torch_tensor(ridge):
        ridge = match_kind(ridge, "ridge", q)  # a tensor keeps its autograd graph
    elif isinstance(ridge, bool) or not isinstance(ridge, (numbers.Real, np.ndarray)):
        raise TypeError(f"ridge must be a float or an array broadcasting to {list(target)}; "
                        f"got {type(ridge).__name__}")
    else:
        ridge = as_float_array(float(ridge) if isinstance(ridge, numbers.Real) else ridge, "ridge")
        check_finite(ridge, "ridge")
    if extreme(ridge, "min") <= 0:
        raise ValueError(f"ridge must be > 0 (λ keeps H_t + diag(λ) invertible); got a smallest value "
                         f"of {extreme(ridge, 'min')}")
    if not is_torch_tensor(ridge):  # q's kind (a tensor on q's device) before the read-only broadcast view
        ridge = array_namespace(q).asarray(ridge, dtype=q.dtype, device=device(q))
    return broadcast_to_target(ridge, "ridge", target, "[..., d_k]: one λ per head and key channel")


def check_state_pair(initial_state: Any, q: Any, v: Any) -> Any:
    """(H [..., d_k, d_k] symmetric, G [..., d_k, d_v]) with q's leading axes, kind and dtype."""
    if initial_state is None:
        return None
    if not isinstance(initial_state, tuple) or len(initial_state) != 2:
        raise TypeError(f"initial_state must be the pair (H, G) that return_state=True gives; got "
                        f"{type(initial_state).__name__}")
    lead, d_k, d_v = tuple(q.shape[:-2]), q.shape[-1], v.shape[-1]
    h = check_state_part(initial_state[0], "initial_state[0] (H)", q, lead + (d_k, d_k), "[..., d_k, d_k]")
    s = check_state_part(initial_state[1], "initial_state[1] (G)", q, lead + (d_k, d_v), "[..., d_k, d_v]")
    xp, tolerance = array_namespace(h), np.finfo(dtype_name(h)).eps ** 0.5 * max(extreme(abs(h), "max"), 1.0)
    asymmetry = extreme(abs(h - xp.matrix_transpose(h)), "max")
    if asymmetry > tolerance:
        raise ValueError(f"initial_state[0] (H) must be symmetric (a gated sum of k kᵀ); got entries that "
                         f"differ from their transpose by {asymmetry}")
    lowest = extreme(xp.linalg.eigvalsh(h.detach() if is_torch_tensor(h) else h), "min")
    if lowest < -tolerance:  # then H + Λ can be singular: the solve would have no answer
        raise ValueError(f"initial_state[0] (H) must be positive semi-definite (a sum of β k kᵀ with β >= 0); "
                         f"got an eigenvalue of {lowest}")
    return h, s


def least_squares_attention(q: Any, k: Any, v: Any, beta: Any, log_decay: Any = None, *, ridge: Any,
                            scale: float | None = None, form: str = "recurrent", backend: str = "numpy",
                            chunk_size: int = 64, initial_state: Any = None, return_state: bool = False,
                            solver: str = "exact", cg_iterations: int = 30) -> Any:
    """MesaNet's read: the output of the regularised least-squares fit to every past (k, v).

    H_t = exp(g_t) H_{t−1} + β_t k_t k_tᵀ,  G_t = exp(g_t) G_{t−1} + β_t k_t v_tᵀ,
    o_t = G_tᵀ (H_t + diag(λ))⁻¹ (scale · q_t).

    Parameters
    ----------
    q, k : array [..., N, d_k]
    v : array [..., N, d_v]
        float32 or float64, numpy arrays (or torch tensors with ``backend='torch'``), with
        equal leading (batch, head) axes. MesaNet L2-normalises q and k; this function uses
        them as given.
    beta : array [..., N]
        Input gates in [0, 1] (the paper's sigmoid gate): the weight of step t in the fit.
    log_decay : None or array [..., N]
        g_t <= 0, the log of the forget gate, one per step and head; None is no forgetting.
    ridge : float or array broadcasting to [..., d_k]
        λ > 0, the regulariser diag(λ): one per head and key channel, as fla's ``lamb`` [H, d_k].
    scale : float, optional
        Scale of the query; None means d_k**-0.5 (fla's MesaNet has no scale: pass 1 to match it).
    form : 'recurrent' | 'chunkwise'
        One step and one solve at a time, or every H_t of a chunk and one batched solve.
    backend : 'numpy' | 'torch'
    chunk_size : int
    initial_state : (H [..., d_k, d_k], G [..., d_k, d_v]), optional
        The pair to continue from (zeros when None); H symmetric positive semi-definite.
    return_state : bool
        Also return the final pair (H_N, G_N), which continues the sequence exactly.
    solver : 'exact' | 'cg'
        A direct solve (differentiable on torch), or ``cg_iterations`` conjugate-gradient
        steps from x = 0 (MesaNet's solver; exact in exact arithmetic after d_k steps).
    cg_iterations : int
        Conjugate-gradient steps per system, used with ``solver='cg'``.

    Returns
    -------
    o : array [..., N, d_v], or ``(o, (H_N, G_N))``.
    """
    form = check_choice(form, "form", LEAST_SQUARES_FORMS)
    solver = check_choice(solver, "solver", SOLVERS)
    cg_iterations = check_positive_int(cg_iterations, "cg_iterations")
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    return_state = check_bool(return_state, "return_state")
    q, k, v = check_qkv(q, k, v, causal=True)
    beta = check_per_step_range(beta, "beta", q, 0, 1, "input gate in [0, 1]",
                                "MesaNet's input gate, a sigmoid; β >= 0 keeps H_t positive semi-definite")
    log_decay = check_log_decay(log_decay, q, vector=False)
    ridge = check_ridge(ridge, q)
    initial_state = check_state_pair(initial_state, q, v)
    return run_recurrence("least_squares", (q, k, v, beta, log_decay, ridge), check_scale(scale, q.shape[-1]),
                          form, backend, chunk_size, initial_state, return_state, solver=solver,
                          cg_iterations=cg_iterations)
