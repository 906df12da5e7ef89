"""Exercises for chapter 14 (the state as a learner): the delta rule as one gradient step on
½‖Sᵀk − v‖², the Sherman–Morrison update behind recursive least squares, momentum as a second
state (Titans' rule for a plain linear memory), Longhorn's implicit step in closed form, and
what exact least squares cannot store once there are more pairs than key dimensions.

What each checker compares with:

- ``ch14.delta_gradient``: ``la.delta_rule``'s state after one step from S (scale 1).
- ``ch14.sherman_morrison``: ``np.linalg.inv`` of P⁻¹ + βkkᵀ; the answer runs with the
  attributes ``np.linalg.inv``, ``pinv``, ``solve`` and ``lstsq`` switched off (they raise), so
  it has to use the formula. A guard, not a proof: a function taken before the check
  (``from numpy.linalg import inv``) or another library's inverse is not refused.
- ``ch14.momentum_state``: no package function has this rule (``la.titans_linear`` trains a
  layer-normed inner model with a residual, and no setting of its layer norm removes it), so
  the checker runs the pair as ONE linear recurrence on the stacked state Z = [S; M]
  [2 d_k, d_v], Z_t = A_t Z_{t−1} + B_t with an explicit 2d_k × 2d_k transition: a different
  computation from the solution's updates of S and M. With η = 0 the rule is ``la.delta_rule``
  with a rescaled step and values (:func:`momentum_free_state`: the order of decay and step).
- ``ch14.longhorn_step``: the argmin solved from its normal equations,
  (I + βkkᵀ) S = S_prev + βkvᵀ, with ``np.linalg.solve``.
- ``ch14.least_squares_leftover``: ``la.least_squares_attention`` with ridge 1e-10, values
  the unit vectors e_1 … e_P (so the reads at the stored keys are the hat matrix Π of the
  fit), and the expected error tr(I − Π) over random unit values.
"""

from __future__ import annotations

import contextlib

import numpy as np

import lattn_edu as la

from .base import Exercise, check_function

# --- ch14.delta_gradient


def solution_delta_gradient(state, k, v, beta):
    """S − β ∇ℓ(S) for ℓ(S) = ½‖Sᵀk − v‖²: [d_k, d_v].

    dℓ = (Sᵀk − v)·(dSᵀ k) = kᵀ dS (Sᵀk − v), so ∇ℓ = k (Sᵀk − v)ᵀ.
    """
    gradient = np.outer(k, state.T @ k - v)  # k (Sᵀk − v)ᵀ  [d_k, d_v]
    return state - beta * gradient


def _state_cases(seed):
    """States, keys of length ≠ 1 (and one unit key), values, β in [0, 2]."""
    rng = np.random.default_rng(seed)
    cases = []
    for d_k, d_v, beta, length in ((1, 2, 0.7, 1.3), (3, 5, 1.0, 0.6), (5, 3, 2.0, 1.0),
                                   (7, 4, 0.0, 0.8), (4, 7, 1.6, 1.4), (5, 5, 0.3, 0.5)):
        k = rng.standard_normal(d_k)
        cases.append({"state": rng.standard_normal((d_k, d_v)), "k": length * k / np.linalg.norm(k),
                      "v": rng.standard_normal(d_v), "beta": beta})
    return cases


def package_delta_step(state, k, v, beta):
    """la.delta_rule's state after one token from S_0 = ``state`` (scale 1): [d_k, d_v]."""
    _, after = la.delta_rule(np.ones((1, len(k))), k[None], v[None], np.array([beta]), scale=1.0,
                             form="recurrent", initial_state=state, return_state=True)
    return after


def _check_delta_gradient(answer):
    check_function(answer, package_delta_step, _state_cases(141), rtol=1e-9)


# --- ch14.sherman_morrison


def solution_sherman_morrison(inverse, k, beta):
    """(H + βkkᵀ + λI)⁻¹ from P = (H + λI)⁻¹: [d_k, d_k].

    (A + u wᵀ)⁻¹ = A⁻¹ − A⁻¹u wᵀA⁻¹ / (1 + wᵀA⁻¹u), with u = βk, w = k.
    """
    pk = inverse @ k  # P k; P is symmetric, so kᵀP = (P k)ᵀ  [d_k]
    return inverse - beta * np.outer(pk, pk) / (1 + beta * (k @ pk))


def _inverse_cases():
    """P = (H + λI)⁻¹ with H a sum of past weighted key outer products (fewer than d_k, as
    many, more), new keys of any length, β in [0, 1] (MesaNet's input gate)."""
    rng = np.random.default_rng(142)
    cases = []
    for d_k, past, ridge, beta in ((1, 2, 0.5, 0.7), (3, 1, 1.0, 1.0), (5, 5, 0.1, 0.4),
                                   (7, 12, 0.3, 0.9), (4, 9, 2.0, 0.0), (6, 3, 0.05, 1.0)):
        keys = rng.standard_normal((past, d_k))
        h = keys.T @ (rng.uniform(0, 1, past)[:, None] * keys)  # Σ β_s k_s k_sᵀ  [d_k, d_k]
        cases.append({"inverse": np.linalg.inv(h + ridge * np.eye(d_k)),
                      "k": rng.uniform(0.5, 1.5) * rng.standard_normal(d_k), "beta": beta})
    return cases


def inverse_after(inverse, k, beta):
    """(P⁻¹ + βkkᵀ)⁻¹ by two matrix inversions: [d_k, d_k]."""
    return np.linalg.inv(np.linalg.inv(inverse) + beta * np.outer(k, k))


SOLVERS = ("inv", "pinv", "solve", "lstsq")


@contextlib.contextmanager
def _solvers_switched_off():
    """np.linalg.inv, pinv, solve and lstsq raise while the answer runs; restored after."""
    def refuse(*args, **kwargs):
        raise RuntimeError("this exercise asks for the Sherman–Morrison formula; np.linalg."
                           f"{' / '.join(SOLVERS)} are switched off while it is checked")

    saved = {name: getattr(np.linalg, name) for name in SOLVERS}
    for name in SOLVERS:
        setattr(np.linalg, name, refuse)
    try:
        yield
    finally:
        for name, original in saved.items():
            setattr(np.linalg, name, original)


def without_solvers(answer):
    """``answer`` wrapped so that it runs with numpy's inverses and solvers switched off (the
    checker's reference runs before it, outside); a non-function is returned unchanged."""
    if not callable(answer):
        return answer

    def wrapped(**kwargs):
        with _solvers_switched_off():
            return answer(**kwargs)

    wrapped.__name__ = getattr(answer, "__name__", "your function")
    return wrapped


def _check_sherman_morrison(answer):
    check_function(without_solvers(answer), inverse_after, _inverse_cases(), rtol=1e-8)


# --- ch14.momentum_state


def solution_momentum_state(k, v, theta, alpha, eta):
    """(S_N, M_N), both [d_k, d_v], from S_0 = M_0 = 0.

    M_t = η M_{t−1} − θ ∇ℓ_t(S_{t−1}),  S_t = (1 − α) S_{t−1} + M_t.
    S_{t−1} alone does not give S_t: it needs M_{t−1}, the η-weighted
    sum of all past gradients, so the memory's state is the pair.
    """
    state = momentum = np.zeros((k.shape[1], v.shape[1]))
    for k_t, v_t in zip(k, v):
        gradient = np.outer(k_t, state.T @ k_t - v_t)  # at S_{t−1}
        momentum = eta * momentum - theta * gradient
        state = (1 - alpha) * state + momentum
    return state, momentum


def _momentum_cases():
    """Keys near unit length, odd N and sizes, d_k ≠ d_v; η = 0 and α = 0 among them."""
    rng = np.random.default_rng(143)
    cases = []
    for n, d_k, d_v, theta, alpha, eta in ((1, 2, 3, 0.5, 0.1, 0.9), (7, 3, 2, 0.3, 0.0, 0.8),
                                           (13, 5, 4, 0.2, 0.05, 0.0), (31, 4, 5, 0.1, 0.02, 0.9),
                                           (45, 7, 3, 0.4, 0.3, 0.5), (9, 3, 3, 0.6, 1.0, 0.3)):
        k = rng.standard_normal((n, d_k))
        cases.append({"k": rng.uniform(0.7, 1.3, (n, 1)) * k / np.linalg.norm(k, axis=1, keepdims=True),
                      "v": rng.standard_normal((n, d_v)), "theta": theta, "alpha": alpha, "eta": eta})
    return cases


def stacked_momentum_state(k, v, theta, alpha, eta):
    """(S_N, M_N) from the pair as one recurrence on Z = [S; M]: Z_t = A_t Z_{t−1} + B_t with
    A_t = [[(1 − α) I − θ k kᵀ, η I], [−θ k kᵀ, η I]] and B_t = θ [k vᵀ; k vᵀ]."""
    d_k, eye = k.shape[1], np.eye(k.shape[1])
    stacked = np.zeros((2 * d_k, v.shape[1]))  # Z = [S; M]  [2 d_k, d_v]
    for k_t, v_t in zip(k, v):
        outer = theta * np.outer(k_t, k_t)  # θ k kᵀ  [d_k, d_k]
        transition = np.block([[(1 - alpha) * eye - outer, eta * eye], [-outer, eta * eye]])
        write = theta * np.outer(k_t, v_t)  # θ k vᵀ  [d_k, d_v]
        stacked = transition @ stacked + np.concatenate([write, write])
    return stacked[:d_k], stacked[d_k:]


def momentum_free_state(k, v, theta, alpha):
    """S_N of the rule with η = 0 (M_t is then the step alone) through ``la.delta_rule``: [d_k, d_v].

    S_t = (1 − α) S_{t−1} − θ ∇ℓ_t(S_{t−1}) takes its gradient at the state before the decay,
    where the gated delta rule decays first, S_t = γ S_{t−1} − β ∇ℓ_t(γ S_{t−1}). The two agree
    with γ = 1 − α, β = θ/γ and values γ v (needs α < 1 and θ/(1 − α) <= 2):
    γ S + (θ/γ) k (γ v − γ Sᵀk)ᵀ = γ S + θ k (v − Sᵀk)ᵀ. With α = 0 it is DeltaNet at β = θ.
    """
    n, keep = len(k), 1 - alpha
    _, state = la.delta_rule(k, k, keep * v, np.full(n, theta / keep), np.full(n, np.log(keep)),
                             scale=1.0, form="recurrent", return_state=True)
    return state


def _check_momentum_state(answer):
    check_function(answer, stacked_momentum_state, _momentum_cases(), rtol=1e-9, outputs=2)


# --- ch14.longhorn_step


def solution_longhorn_step(state, k, v, beta):
    """argmin_S ½‖S − S_prev‖² + (β/2)‖Sᵀk − v‖²: [d_k, d_v].

    A delta step at the new state's error, solved: the step size
    shrinks to β/(1 + β‖k‖²), so any β >= 0 is stable.
    """
    step = beta / (1 + beta * (k @ k))
    return state + step * np.outer(k, v - state.T @ k)


def _longhorn_cases():
    """The delta exercise's states and keys, with β from 0 to far above 2 (no bound applies)."""
    cases = _state_cases(144)
    for case, beta in zip(cases, (0.7, 3.0, 2.0, 0.0, 25.0, 1e4)):
        case["beta"] = beta
    return cases


def normal_equations_step(state, k, v, beta):
    """The argmin from its normal equations (I + β k kᵀ) S = S_prev + β k vᵀ: [d_k, d_v]."""
    return np.linalg.solve(np.eye(len(k)) + beta * np.outer(k, k), state + beta * np.outer(k, v))


def _check_longhorn_step(answer):
    check_function(answer, normal_equations_step, _longhorn_cases(), rtol=1e-9)


# --- ch14.least_squares_leftover


def solution_least_squares_leftover(d_k, pairs):
    """E Σ_i ‖Wᵀk_i − v_i‖², exact fit W (λ → 0), P random unit values.

    The reads are K W = Π V, Π the projection onto K's column space, of
    rank min(P, d_k); E‖(I − Π) V‖² = tr(I − Π) since E[V Vᵀ] = I.
    """
    return max(0, pairs - d_k)


def _leftover_cases():
    return [{"d_k": d_k, "pairs": p}
            for d_k, p in ((1, 1), (1, 4), (3, 2), (5, 5), (5, 7), (8, 13), (4, 17), (16, 9))]


def measured_leftover(d_k, pairs, seed=0):
    """tr(I − Π) from la.least_squares_attention: P writes of (k_i, e_i), then P reads at the
    stored keys with β = 0 (they write nothing), whose outputs are the rows of Π."""
    keys = np.random.default_rng(seed).standard_normal((pairs, d_k))  # in general position
    q = np.concatenate([keys, keys])  # the writes' own reads are not used  [2P, d_k]
    k = np.concatenate([keys, np.zeros_like(keys)])
    v = np.concatenate([np.eye(pairs), np.zeros((pairs, pairs))])  # v_i = e_i  [2P, P]
    beta = np.concatenate([np.ones(pairs), np.zeros(pairs)])
    out = la.least_squares_attention(q, k, v, beta, ridge=1e-10, scale=1.0)
    return round(pairs - float(np.trace(out[pairs:])), 6)  # λ = 1e-10 moves it by < 1e-7


def _check_least_squares_leftover(answer):
    check_function(answer, measured_leftover, _leftover_cases(), rtol=1e-9)


EXERCISES = [
    Exercise("ch14.delta_gradient", "The delta rule as one gradient step on ½‖Sᵀk − v‖²",
             "code", solution_delta_gradient, _check_delta_gradient),
    Exercise("ch14.sherman_morrison", "Recursive least squares: one key into the inverse by Sherman–Morrison",
             "code", solution_sherman_morrison, _check_sherman_morrison),
    Exercise("ch14.momentum_state", "Momentum as a second state: a linear memory trained with Titans' rule",
             "code", solution_momentum_state, _check_momentum_state),
    Exercise("ch14.longhorn_step", "Longhorn's implicit step in closed form",
             "code", solution_longhorn_step, _check_longhorn_step),
    Exercise("ch14.least_squares_leftover", "What exact least squares cannot store when P > d_k",
             "code", solution_least_squares_leftover, _check_least_squares_leftover),
]
