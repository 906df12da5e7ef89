"""Exercises for chapter 12, each a derivation on paper that a function then checks: the gradient
a segment hands to the one before it, the gated delta rule's dg, and the backward pass through
the UT transform (the step DeltaNet's chunkwise training adds to the forward's chain rule).

The checkers measure each gradient from the package's forward passes (exactly, for a function
affine in S_0, or by central differences), never from the package's own backward.
"""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import Exercise, check_function


def solution_initial_state_gradient(q, k, v, log_decay, grad_o):
    """dS_0 = Σ_t exp(ḡ_t) q_t do_tᵀ with ḡ_t = g_1 + … + g_t (scale 1): [d_k, d_v].

    S_t = exp(ḡ_t) S_0 + (terms without S_0), and o_t = S_tᵀ q_t reads it.
    """
    return (np.exp(np.cumsum(log_decay))[:, None] * q).T @ grad_o


def _segment_cases(seed):
    rng = np.random.default_rng(seed)
    cases = []
    for n, d_k, d_v in ((1, 2, 3), (9, 4, 3), (30, 5, 7)):
        cases.append({"q": rng.standard_normal((n, d_k)), "k": rng.standard_normal((n, d_k)),
                      "v": rng.standard_normal((n, d_v)), "log_decay": -rng.uniform(0, 0.8, n),
                      "grad_o": rng.standard_normal((n, d_v))})
    return cases


def measured_initial_state_gradient(q, k, v, log_decay, grad_o):
    """ℓ = Σ O ⊙ dO is affine in S_0, so ∂ℓ/∂(S_0)_rc = ℓ(E_rc) − ℓ(0), E_rc a unit matrix."""
    def loss(state):
        out = la.gated_linear_attention(q, k, v, log_decay, scale=1.0, form="recurrent", initial_state=state)
        return float((out * grad_o).sum())

    zero = np.zeros((q.shape[1], v.shape[1]))
    base, grad = loss(zero), np.empty_like(zero)
    for index in np.ndindex(zero.shape):
        unit = zero.copy()
        unit[index] = 1.0
        grad[index] = loss(unit) - base
    return grad


def _check_initial_state_gradient(answer):
    check_function(answer, measured_initial_state_gradient, _segment_cases(120), rtol=1e-8)


def solution_delta_log_decay(q, k, v, dq, dk, dv):
    """dg_t = Σ_{i>=t} (q_i·dq_i − v_i·dv_i) (scale 1): the decay moves onto q and v, not k.

    With S̃_t = exp(−ḡ_t) S_t the recurrence loses its decay, v_t becomes exp(−ḡ_t) v_t and
    q_t becomes exp(ḡ_t) q_t; k_t and β_t are untouched, since I − β_t k_t k_tᵀ is linear in S.
    """
    per_step = (q * dq).sum(1) - (v * dv).sum(1)  # ∂ℓ/∂ḡ_t  [N]
    return np.cumsum(per_step[::-1])[::-1]


def _delta_cases(seed):
    rng = np.random.default_rng(seed)
    cases = []
    for n, d_k, d_v in ((2, 2, 3), (9, 4, 3), (31, 5, 6)):  # N = 1 has dg = 0 exactly
        k = rng.standard_normal((n, d_k))
        cases.append({"q": rng.standard_normal((n, d_k)), "k": k / np.linalg.norm(k, axis=1, keepdims=True),
                      "v": rng.standard_normal((n, d_v)), "beta": rng.uniform(0, 2, n),
                      "log_decay": -rng.uniform(0, 0.8, n), "grad_o": rng.standard_normal((n, d_v))})
    return cases


def measured_delta_log_decay(q, k, v, beta, log_decay, grad_o, step=1e-6):
    """dg by central differences of ``la.delta_rule``'s forward: ℓ = Σ O ⊙ dO, one g_t at a time."""
    def loss(g):
        out = la.delta_rule(q, k, v, beta, g, scale=1.0, form="recurrent")
        return float((out * grad_o).sum())

    grad = np.empty_like(log_decay)
    for t in range(len(log_decay)):
        moved = np.zeros_like(log_decay)
        moved[t] = step
        grad[t] = (loss(log_decay + moved) - loss(log_decay - moved)) / (2 * step)
    return grad


def delta_backward_inputs(q, k, v, beta, log_decay, grad_o):
    """The answer's arguments: q, k, v and the backward's dq, dk, dv (never dg itself)."""
    dq, dk, dv, _, _ = la.delta_rule_vjp(q, k, v, beta, grad_o, log_decay, scale=1.0)
    return {"q": q, "k": k, "v": v, "dq": dq, "dk": dk, "dv": dv}


def _check_delta_log_decay(answer):
    for case in _delta_cases(121):
        measured = measured_delta_log_decay(**case)  # from the forward alone
        check_function(answer, lambda **_: measured, [delta_backward_inputs(**case)], rtol=1e-6)


def solution_ut_backward(k, beta, d_t):
    """(dk, dβ) through T = (I + Γ)⁻¹, Γ = tril(diag(β) K Kᵀ, −1), given dT = ∂ℓ/∂T.

    dΓ = −Tᵀ dT Tᵀ on the strict lower triangle; Γ_ij = β_i k_i·k_j gives
    dβ_i = Σ_j dΓ_ij k_i·k_j and, with B = diag(β) dΓ, dK = (B + Bᵀ) K.
    """
    t_matrix = np.linalg.inv(np.eye(len(k)) + np.tril(beta[:, None] * (k @ k.T), -1))
    d_gamma = np.tril(-t_matrix.T @ d_t @ t_matrix.T, -1)  # [C, C]
    weighted = beta[:, None] * d_gamma  # B
    return (weighted + weighted.T) @ k, (d_gamma * (k @ k.T)).sum(1)


def measured_ut_gradient(k, beta, d_t, step=1e-6):
    """(dk, dβ) by central differences of ``la.ut_transform``: ℓ = Σ T ⊙ dT."""
    def loss(k, beta):
        return float((la.ut_transform(k, beta) * d_t).sum())

    grads = []
    for position, arg in enumerate((k, beta)):
        grad = np.empty_like(arg)
        for index in np.ndindex(arg.shape):
            moved = [[k.copy(), beta.copy()] for _ in range(2)]
            moved[0][position][index] += step
            moved[1][position][index] -= step
            grad[index] = (loss(*moved[0]) - loss(*moved[1])) / (2 * step)
        grads.append(grad)
    return tuple(grads)


def _ut_cases(seed):
    rng = np.random.default_rng(seed)
    cases = []
    for c, d_k in ((2, 3), (5, 4), (9, 6)):
        k = rng.standard_normal((c, d_k))
        cases.append({"k": k / np.linalg.norm(k, axis=1, keepdims=True), "beta": rng.uniform(0, 1, c),
                      "d_t": rng.standard_normal((c, c))})
    return cases


def _check_ut_backward(answer):
    check_function(answer, measured_ut_gradient, _ut_cases(122), rtol=1e-6, outputs=2)


EXERCISES = [
    Exercise("ch12.initial_state_gradient", "The gradient a segment hands to the one before it",
             "code", solution_initial_state_gradient, _check_initial_state_gradient),
    Exercise("ch12.delta_log_decay", "Derive dg for the gated delta rule", "code",
             solution_delta_log_decay, _check_delta_log_decay),
    Exercise("ch12.ut_backward", "Paper derivation: the backward pass through the UT transform",
             "code", solution_ut_backward, _check_ut_backward),
]
