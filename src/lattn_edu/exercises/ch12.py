"""Exercises for chapter 12: the recurrent backward pass, the causal-product dq, and the
gradient of a scalar log decay.

The checkers compare against ``la.gated_linear_attention_vjp``.
"""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import Exercise, check_function


def solution_recurrent_backward(q, k, v, log_decay, grad_o):
    """(dq, dk, dv) of o_t = S_tᵀ q_t, S_t = a_t S_{t-1} + k_t v_tᵀ (scale 1, a_t = exp(g_t))."""
    n, state = len(q), np.zeros((k.shape[1], v.shape[1]))
    dq = np.zeros_like(q)
    for t in range(n):  # forward: dq_t = S_t do_t
        state = np.exp(log_decay[t]) * state + np.outer(k[t], v[t])
        dq[t] = state @ grad_o[t]
    d_state, dk, dv = np.zeros_like(state), np.zeros_like(k), np.zeros_like(v)
    for t in reversed(range(n)):  # backward: dS_t = q_t do_tᵀ + a_{t+1} dS_{t+1}
        decay_next = np.exp(log_decay[t + 1]) if t + 1 < n else 1.0
        d_state = decay_next * d_state + np.outer(q[t], grad_o[t])
        dk[t], dv[t] = d_state @ v[t], d_state.T @ k[t]
    return dq, dk, dv


def _problems(seed, decay=True):
    rng = np.random.default_rng(seed)
    cases = []
    for n, d_k, d_v in ((1, 2, 3), (9, 4, 3), (30, 5, 7)):
        case = {"q": rng.standard_normal((n, d_k)), "k": rng.standard_normal((n, d_k)),
                "v": rng.standard_normal((n, d_v))}
        if decay:
            case["log_decay"] = -rng.uniform(0, 0.8, n)
        case["grad_o"] = rng.standard_normal((n, d_v))
        cases.append(case)
    return cases


def _check_recurrent_backward(answer):
    check_function(answer, lambda q, k, v, log_decay, grad_o: la.gated_linear_attention_vjp(
        q, k, v, grad_o, log_decay, scale=1.0, form="recurrent")[:3], _problems(12), rtol=1e-8, outputs=3)


def solution_causal_dq(q, k, v, grad_o):
    """dq_i = S_i do_i with S_i = Σ_{j<=i} k_j v_jᵀ, one running state: O(N) memory."""
    state, dq = np.zeros((k.shape[1], v.shape[1])), np.zeros_like(q)
    for i in range(len(q)):
        state += np.outer(k[i], v[i])
        dq[i] = state @ grad_o[i]
    return dq


def _check_causal_dq(answer):
    check_function(answer, lambda q, k, v, grad_o: la.gated_linear_attention_vjp(
        q, k, v, grad_o, scale=1.0)[0], _problems(121, decay=False), rtol=1e-8)


def solution_log_decay_gradient(q, k, dq, dk):
    """dg_t = Σ_{i>=t} Σ_r (q_ir dq_ir − k_ir dk_ir): a reverse cumulative sum, [N]."""
    per_step = (q * dq - k * dk).sum(-1)  # [N]
    return np.cumsum(per_step[::-1])[::-1]


def _gradient_cases():
    cases = []
    for case in _problems(122):
        dq, dk, _ = la.gated_linear_attention_vjp(case["q"], case["k"], case["v"], case["grad_o"],
                                                  case["log_decay"], scale=1.0)[:3]
        cases.append({"q": case["q"], "k": case["k"], "dq": dq, "dk": dk})
    return cases


def _check_log_decay_gradient(answer):
    check_function(answer, solution_log_decay_gradient, _gradient_cases(), rtol=1e-8)


EXERCISES = [
    Exercise("ch12.recurrent_backward", "The backward pass of the gated recurrence", "code",
             solution_recurrent_backward, _check_recurrent_backward),
    Exercise("ch12.causal_dq", "The causal-product gradient dq in O(N) memory", "code",
             solution_causal_dq, _check_causal_dq),
    Exercise("ch12.log_decay_gradient", "The gradient of a scalar log decay", "code",
             solution_log_decay_gradient, _check_log_decay_gradient),
]
