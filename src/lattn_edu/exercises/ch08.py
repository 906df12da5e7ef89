"""Exercises for chapter 8: retention, its decay mask and its three forms; an SSM's kernel and
its discretisation.

The checkers compare against ``la.decay_matrix``, ``la.retention`` (recurrent and
chunkwise forms), the impulse response of ``la.diagonal_ssm`` and the zero-order hold computed
by a block matrix exponential; ``tests/test_exercises_ch08_09.py`` also ties the hold to the
closed-form step response of the continuous system.
"""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import Exercise, check_function, value_exercise


def solution_decay_matrix(gamma, n):
    """L[i, j] = γ^(i-j) for j <= i and 0 above the diagonal, [n, n]."""
    distance = np.subtract.outer(np.arange(n), np.arange(n))  # i - j
    return np.where(distance >= 0, gamma ** np.maximum(distance, 0), 0.0)


def _decay_cases():
    return [{"gamma": 0.8, "n": 8}, {"gamma": 1.0, "n": 5},  # γ = 1: the plain causal mask
            {"gamma": 0.9, "n": 1}, {"gamma": 0.5, "n": 37},
            {"gamma": 0.05, "n": 300}]  # γ^-(n-1) overflows: the upper triangle must not use it


def _check_decay_matrix(answer):
    check_function(answer, lambda gamma, n: la.decay_matrix(gamma, n), _decay_cases(), rtol=1e-9)


def solution_recurrent_retention(q, k, v, gamma):
    """S_n = γ S_{n-1} + k_n v_nᵀ, o_n = S_nᵀ q_n, token by token: [N, d], [N, d_v] -> [N, d_v]."""
    state = np.zeros((k.shape[-1], v.shape[-1]))  # S_0 = 0  [d, d_v]
    out = np.zeros((q.shape[0], v.shape[-1]))
    for n in range(q.shape[0]):
        state = gamma * state + np.outer(k[n], v[n])
        out[n] = q[n] @ state
    return out


def _retention_cases():
    rng = np.random.default_rng(8)
    shapes = [(1, 4, 3, 0.9), (7, 3, 5, 0.8), (64, 16, 8, 1 - 2.0**-5), (20, 6, 6, 1.0)]  # (N, d, d_v, γ)
    cases = [{"q": rng.standard_normal((n, d)), "k": rng.standard_normal((n, d)),
              "v": rng.standard_normal((n, d_v)), "gamma": gamma} for n, d, d_v, gamma in shapes]
    q, k, v = (rng.standard_normal((33, 8)).astype(np.float32) for _ in range(3))
    return cases + [{"q": q, "k": k, "v": v, "gamma": 0.95}]


def _check_recurrent_retention(answer):
    check_function(answer, lambda q, k, v, gamma: la.retention(q, k, v, gamma, form="recurrent"),
                   _retention_cases(), rtol=1e-5)


def solution_chunkwise_retention(q, k, v, gamma, chunk_size):
    """Retention chunk by chunk: the parallel form inside a chunk, the decayed state S between chunks."""
    state = np.zeros((k.shape[-1], v.shape[-1]))  # S left by the earlier chunks  [d, d_v]
    out = np.zeros((q.shape[0], v.shape[-1]))
    for s in range(0, q.shape[0], chunk_size):
        q_c, k_c, v_c = q[s:s + chunk_size], k[s:s + chunk_size], v[s:s + chunk_size]
        t = np.arange(len(q_c))[:, None]  # offset in the chunk  [C, 1]
        inside = ((q_c @ k_c.T) * la.decay_matrix(gamma, len(q_c))) @ v_c
        out[s:s + chunk_size] = inside + gamma ** (t + 1) * (q_c @ state)
        state = gamma ** len(q_c) * state + (gamma ** (len(q_c) - 1 - t) * k_c).T @ v_c
    return out


def _chunkwise_cases():
    rng = np.random.default_rng(81)
    shapes = [(1, 4, 3, 0.9, 4),  # (N, d, d_v, γ, C): N = 1
              (10, 3, 2, 0.8, 3),  # C does not divide N
              (64, 16, 8, 1 - 2.0**-5, 16),
              (9, 5, 4, 0.7, 1),  # C = 1 is the recurrent form
              (12, 4, 4, 1.0, 20)]  # C > N is the parallel form
    cases = [{"q": rng.standard_normal((n, d)), "k": rng.standard_normal((n, d)),
              "v": rng.standard_normal((n, d_v)), "gamma": gamma, "chunk_size": c}
             for n, d, d_v, gamma, c in shapes]
    q, k, v = (rng.standard_normal((45, 8)).astype(np.float32) for _ in range(3))
    return cases + [{"q": q, "k": k, "v": v, "gamma": 0.95, "chunk_size": 8}]


def _check_chunkwise_retention(answer):
    check_function(answer, lambda q, k, v, gamma, chunk_size: la.retention(
        q, k, v, gamma, form="chunkwise", chunk_size=chunk_size), _chunkwise_cases(), rtol=1e-5)


def solution_convolution_kernel(a, b, c, n):
    """κ_s = Σ_r c_r a_r^s b_r for s = 0 .. n-1: a diagonal SSM's kernel, [m] each -> [n]."""
    lags = np.arange(n)[:, None]  # [n, 1]
    return (c * b * a ** lags).sum(axis=-1)


def _kernel_cases():
    rng = np.random.default_rng(82)
    cases = [{"a": np.array([0.5, 0.8, 0.95, 0.99]), "b": rng.standard_normal(4),
              "c": rng.standard_normal(4), "n": 64},
             {"a": np.array([0.3]), "b": np.array([2.0]), "c": np.array([-1.5]), "n": 9},  # m = 1
             {"a": rng.uniform(0.1, 1.0, 7), "b": rng.standard_normal(7),
              "c": rng.standard_normal(7), "n": 1},  # n = 1: κ_0 = c·b
             {"a": np.array([1.0, 0.9, 0.05]), "b": rng.standard_normal(3),  # a = 1: never fades
              "c": rng.standard_normal(3), "n": 13}]
    return cases


def _impulse_response(a, b, c, n):
    """κ measured rather than derived: the SSM's output for a unit input at step 0, [n]."""
    impulse = np.zeros((n, 1))  # [n, 1]
    impulse[0] = 1.0
    return la.diagonal_ssm(impulse, a, b, c)[:, 0]


def _check_convolution_kernel(answer):
    check_function(answer, _impulse_response, _kernel_cases(), rtol=1e-9)


def solution_zero_order_hold(rates, b, step):
    """Discretise h' = diag(rates) h + b u over a step Δ with u held constant:
    a = e^(Δ A_r), b̄ = (e^(Δ A_r) - 1) / A_r · b_r, rates < 0 [m], b [m] -> ([m], [m]).
    expm1 keeps e^x - 1 accurate when Δ|A_r| is tiny, where exp(x) - 1 cancels."""
    return np.exp(step * rates), np.expm1(step * rates) / rates * b


def _hold_cases():
    rng = np.random.default_rng(83)
    return [{"rates": np.array([-0.5, -2.0, -8.0]), "b": np.array([1.0, 0.5, 2.0]), "step": 0.1},
            {"rates": -rng.uniform(0.1, 5.0, 7), "b": rng.standard_normal(7), "step": 0.37},
            {"rates": np.array([-3.0]), "b": np.array([-1.5]), "step": 5.0},  # e^(-15): almost wiped
            # Δ|A| = 1e-12: exp(x) - 1 loses four digits here, expm1 none
            {"rates": np.array([-1e-8, -3.0]), "b": np.array([1.0, 2.0]), "step": 1e-4}]


def _exact_hold(rates, b, step):
    """The hold computed another way, by Van Loan's block exponential: for each mode,
    expm([[A_r Δ, B_r Δ], [0, 0]]) = [[a_r, b̄_r], [0, 1]], since the augmented state (h, u)
    with u' = 0 is the input held over the step."""
    from scipy.linalg import expm

    blocks = [expm(np.array([[rate * step, weight * step], [0.0, 0.0]])) for rate, weight in zip(rates, b)]
    return np.array([block[0, 0] for block in blocks]), np.array([block[0, 1] for block in blocks])


def _check_zero_order_hold(answer):
    check_function(answer, _exact_hold, _hold_cases(), rtol=1e-6, outputs=2)


def smallest_gamma_keeping(weight: float, distance: int) -> float:
    """The smallest decay γ with γ^distance >= weight: a key `distance` tokens back keeps at
    least `weight` of its strength."""
    return float(weight ** (1 / distance))


def steady_rms_level(gamma: float) -> float:
    """lim RMS|o_n| / RMS|one term| for retention on independent zero-mean q, k, v: the
    terms γ^(n-j) (q_n·k_j) v_j are uncorrelated, so their variances add up to
    Σ_t γ^(2t) = 1 / (1 - γ²)."""
    return float(1 / np.sqrt(1 - gamma**2))


EXERCISES = [
    Exercise("ch08.decay_matrix", "Write retention's decay mask L", "code",
             solution_decay_matrix, _check_decay_matrix),
    Exercise("ch08.recurrent_retention", "Recurrent retention, one token at a time", "code",
             solution_recurrent_retention, _check_recurrent_retention),
    Exercise("ch08.chunkwise_retention", "Chunkwise retention: parallel inside a chunk, a state between",
             "code", solution_chunkwise_retention, _check_chunkwise_retention),
    value_exercise("ch08.gamma_for_memory",
                   "The smallest γ that keeps 1% of a key's weight 500 tokens back",
                   smallest_gamma_keeping(0.01, 500), rtol=1e-5),
    Exercise("ch08.convolution_kernel", "Derive a diagonal SSM's convolution kernel κ", "code",
             solution_convolution_kernel, _check_convolution_kernel),
    value_exercise("ch08.steady_level",
                   "Where retention's output RMS levels off at γ = 0.99, in units of one term",
                   steady_rms_level(0.99), rtol=4e-3),
    Exercise("ch08.zero_order_hold", "Discretise a diagonal continuous-time system exactly", "code",
             solution_zero_order_hold, _check_zero_order_hold),
]
