"""Exercises for chapter 10: the delta update, its gradient-step derivation and the step that
makes one read exact, the step sizes that make it a running mean, the crosstalk term and a
prediction of the additive error past capacity, a chunk's T matrix, one chunkwise step of the
delta rule, and the gated chunkwise step derived in the papers' transposed layout.

The checkers compare against ``la.delta_rule`` (recurrent form, with an initial state and the
final state returned; with β = 1 its step is S minus the gradient) or against direct
computations from the definitions (an explicit double loop for the crosstalk, the inverse of
I + Γ for T), never against the solutions.
"""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import (Exercise, ExerciseFailed, _as_array, assert_matches, check_function,
                   call_answer, value_exercise)


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def solution_delta_update(state, k, v, beta):
    """S + β k (v − Sᵀk)ᵀ: one write of the delta rule. state [m, d_v], k [m], v [d_v]."""
    return state + beta * np.outer(k, v - state.T @ k)


def _update_cases():
    rng = np.random.default_rng(10)
    cases = []
    for m, d_v, beta in ((3, 2, 1.0), (7, 5, 0.4), (16, 9, 1.7)):
        cases.append({"state": rng.standard_normal((m, d_v)), "k": _unit(rng.standard_normal(m)),
                      "v": rng.standard_normal(d_v), "beta": beta})
    return cases


def _update_reference(state, k, v, beta):
    return la.delta_rule(k[None], k[None], v[None], np.array([beta]), form="recurrent",
                         initial_state=state, return_state=True)[1]


def _check_delta_update(answer):
    check_function(answer, _update_reference, _update_cases(), rtol=1e-10)


def solution_loss_gradient(state, k, v):
    """∂/∂S of ½‖Sᵀk − v‖²: k (Sᵀk − v)ᵀ, [m, d_v]."""
    return np.outer(k, state.T @ k - v)


def _gradient_cases():
    rng = np.random.default_rng(101)
    return [{"state": rng.standard_normal((m, d_v)), "k": rng.standard_normal(m),
             "v": rng.standard_normal(d_v)} for m, d_v in ((2, 3), (5, 5), (11, 4))]


def _gradient_reference(state, k, v):
    # The delta rule with β = 1 is S − ∇: the package's step gives the gradient back.
    after = la.delta_rule(k[None], k[None], v[None], np.ones(1), form="recurrent",
                          initial_state=state, return_state=True)[1]
    return state - after


def _check_loss_gradient(answer):
    check_function(answer, _gradient_reference, _gradient_cases(), rtol=1e-10)


def solution_mean_steps(n):
    """β_t = 1/t: the blend (1 − β_t)·old + β_t·v_t of a repeated key is then the running mean."""
    return 1.0 / np.arange(1, n + 1)


def _mean_steps_reads(answer, n, keys, values):
    """The reads Sᵀk after each write with the answer's step sizes, or ExerciseFailed saying why not."""
    name = getattr(answer, "__name__", "your function")
    beta = np.asarray(call_answer(answer, {"n": n}), dtype=np.float64)
    if beta.shape != (n,):
        raise ExerciseFailed(f"{name} returned shape {list(beta.shape)} for n = {n}; expected [{n}]")
    try:
        return la.delta_rule(keys, keys, values, beta, scale=1.0, form="recurrent")
    except ValueError as error:
        raise ExerciseFailed(f"la.delta_rule refused the step sizes for n = {n}: {error}") from None


def _check_mean_steps(answer):
    if not callable(answer):
        raise ExerciseFailed(f"expected a function of n; got {type(answer).__name__}")
    rng = np.random.default_rng(106)
    for n in (1, 4, 9, 25):
        keys = np.tile(_unit(rng.standard_normal(5)), (n, 1))  # one unit key, written n times
        values = rng.standard_normal((n, 3))
        means = np.cumsum(values, axis=0) / np.arange(1, n + 1)[:, None]  # [n, d_v]
        assert_matches(_mean_steps_reads(answer, n, keys, values), means, 1e-10,
                       "the reads with your step sizes", f"n = {n}")


def solution_crosstalk(keys, values):
    """Σ_{j≠i} (k_j·k_i) v_j for every i: keys [P, m], values [P, d_v] -> [P, d_v]."""
    gram = keys @ keys.T
    return (gram - np.diag(np.diag(gram))) @ values


def _crosstalk_cases():
    rng = np.random.default_rng(102)
    return [{"keys": _unit(rng.standard_normal((p, m))), "values": rng.standard_normal((p, d_v))}
            for p, m, d_v in ((2, 3, 2), (9, 5, 4), (40, 16, 8))]


def _crosstalk_by_loops(keys, values):
    """The definition, one pair at a time: independent of the package and of the solution."""
    out = np.zeros((len(keys), values.shape[1]))  # [P, d_v]
    for i in range(len(keys)):
        for j in range(len(keys)):
            if j != i:
                out[i] += (keys[j] @ keys[i]) * values[j]
    return out


def _check_crosstalk(answer):
    check_function(answer, _crosstalk_by_loops, _crosstalk_cases(), rtol=1e-10)


def solution_t_matrix(k, beta):
    """T = (I + Γ)⁻¹ with Γ = tril(diag(β) K Kᵀ, −1): k [C, d_k], beta [C] -> [C, C]."""
    a = np.tril(beta[:, None] * (k @ k.T), -1)
    return np.linalg.inv(np.eye(len(k)) + a)


def _t_cases():
    rng = np.random.default_rng(103)
    return [{"k": _unit(rng.standard_normal((c, d_k))), "beta": rng.uniform(0, 2, c)}
            for c, d_k in ((1, 3), (4, 4), (9, 5), (16, 8))]


def _t_by_definition(k, beta):
    """(I + Γ)⁻¹ by a dense inverse, and checked against la.ut_transform's forward substitution."""
    gamma = np.tril(beta[:, None] * (k @ k.T), -1)  # Γ  [C, C]
    inverse = np.linalg.inv(np.eye(len(k)) + gamma)
    assert np.allclose(inverse, la.ut_transform(k, beta), rtol=1e-9, atol=1e-12)
    return inverse


def _check_t_matrix(answer):
    check_function(answer, _t_by_definition, _t_cases(), rtol=1e-9)


def solution_chunk_step(q, k, v, beta, state):
    """One chunk of the delta rule, scale 1: (outputs [C, d_v], state after [d_k, d_v])."""
    t_matrix = solution_t_matrix(k, beta)  # [C, C]
    w = t_matrix @ (beta[:, None] * k)  # W  [C, d_k]
    u = t_matrix @ (beta[:, None] * v) - w @ state  # pseudo-values Ṽ  [C, d_v]
    out = q @ state + np.tril(q @ k.T) @ u
    return out, state + k.T @ u


def _chunk_cases():
    rng = np.random.default_rng(104)
    return [{"q": rng.standard_normal((c, d_k)), "k": _unit(rng.standard_normal((c, d_k))),
             "v": rng.standard_normal((c, d_v)), "beta": rng.uniform(0, 2, c),
             "state": rng.standard_normal((d_k, d_v))}
            for c, d_k, d_v in ((1, 3, 2), (5, 4, 3), (13, 6, 5), (32, 16, 8))]


def _chunk_reference(q, k, v, beta, state):
    return la.delta_rule(q, k, v, beta, scale=1.0, form="recurrent", initial_state=state,
                         return_state=True)


def _check_chunk_step(answer):
    check_function(answer, _chunk_reference, _chunk_cases(), rtol=1e-9, outputs=2)


def solution_paper_chunk_step(q, k, v, beta, log_decay, state):
    """One gated chunk in the papers' layout: state [d_v, d_k] -> (outputs [C, d_v], state after [d_v, d_k]).

    The book's S is the papers' state transposed, so every place S enters is transposed.
    """
    gamma = np.exp(np.cumsum(log_decay))  # γ_t = e^{ḡ_t}  [C]
    mask = la.decay_mask(log_decay)  # L  [C, C]
    t_matrix = la.ut_transform(k, beta, log_decay)  # (I + Γ^g)⁻¹  [C, C]
    w = t_matrix @ ((beta * gamma)[:, None] * k)  # W  [C, d_k]
    u = t_matrix @ (beta[:, None] * v) - w @ state.T  # new values U − W Sᵀ  [C, d_v]
    out = gamma[:, None] * (q @ state.T) + ((q @ k.T) * mask) @ u
    return out, gamma[-1] * state + (mask[-1][:, None] * u).T @ k


def _paper_cases():
    rng = np.random.default_rng(105)
    return [{"q": rng.standard_normal((c, d_k)), "k": _unit(rng.standard_normal((c, d_k))),
             "v": rng.standard_normal((c, d_v)), "beta": rng.uniform(0, 2, c),
             "log_decay": -rng.uniform(0, 0.4, c), "state": rng.standard_normal((d_v, d_k))}
            for c, d_k, d_v in ((1, 3, 2), (6, 5, 3), (13, 4, 7), (24, 9, 6))]  # d_k ≠ d_v: layouts differ


def _paper_reference(q, k, v, beta, log_decay, state):
    out, book_state = la.delta_rule(q, k, v, beta, log_decay, scale=1.0, form="recurrent",
                                    initial_state=state.T, return_state=True)
    return out, book_state.T


def _check_paper_chunk_step(answer):
    check_function(answer, _paper_reference, _paper_cases(), rtol=1e-9, outputs=2)


EXACT_STEP_KEY_LENGTH = 1.6  # ‖k‖ of the exact-step exercise


def _exact_step(length):
    """β = 1/‖k‖²: then (1 − β‖k‖²) = 0 and the read after one step is exactly v."""
    return 1.0 / length**2


def _check_exact_step_by_running_it(beta):
    """The answer's β, run through la.delta_rule on a key of the exercise's length."""
    step = _as_array(beta, "your answer")
    if step.shape != ():
        raise ExerciseFailed(f"your answer has shape {list(step.shape)}; expected shape [] (one number β)")
    rng = np.random.default_rng(107)
    k = _unit(rng.standard_normal(7)) * EXACT_STEP_KEY_LENGTH
    v, state = rng.standard_normal(4), rng.standard_normal((7, 4))
    try:
        after = la.delta_rule(k[None], k[None], v[None], step[None], form="recurrent",
                              initial_state=state, return_state=True)[1]
    except ValueError as error:
        raise ExerciseFailed(f"la.delta_rule refused your β = {float(step):g}: {error}") from None
    assert_matches(after.T @ k, v, 1e-9, "the read Sᵀk after one step with your β",
                   f"‖k‖ = {EXACT_STEP_KEY_LENGTH}")


EXERCISES = [
    Exercise("ch10.delta_update", "One write of the delta rule", "code", solution_delta_update,
             _check_delta_update),
    Exercise("ch10.loss_gradient", "The gradient of ½‖Sᵀk − v‖² with respect to S", "code",
             solution_loss_gradient, _check_loss_gradient),
    Exercise("ch10.exact_step", "The step size that makes one read exact for a key of length 1.6",
             "value", _exact_step(EXACT_STEP_KEY_LENGTH), _check_exact_step_by_running_it),
    value_exercise("ch10.additive_past_capacity",
                   "Predict the mean squared error at P = 2m, orthogonal keys", 1.0),
    Exercise("ch10.mean_steps", "Step sizes that make the delta rule a running mean", "code",
             solution_mean_steps, _check_mean_steps),
    Exercise("ch10.crosstalk", "The crosstalk term of every stored pair", "code", solution_crosstalk,
             _check_crosstalk),
    Exercise("ch10.t_matrix", "A chunk's T matrix (the UT transform)", "code", solution_t_matrix,
             _check_t_matrix),
    Exercise("ch10.chunk_step", "One chunkwise step of the delta rule", "code", solution_chunk_step,
             _check_chunk_step),
    Exercise("ch10.paper_chunk_step", "Gated DeltaNet's chunkwise step, derived in the papers' layout",
             "code", solution_paper_chunk_step, _check_paper_chunk_step),
]
