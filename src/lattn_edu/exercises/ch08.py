"""Exercises for chapter 8: RetNet's normalised decay mask and its clipped denominator, the
chunkwise form, an SSM's total kernel weight and the bilinear discretisation.

None of the code exercises has a package function that answers it. The checkers compare against
references built another way: ``la.decay_matrix`` with numpy's row sums, the parallel form with
the clipped division, the limit of ``la.diagonal_ssm``'s step response, and
``scipy.signal.cont2discrete``; ``tests/test_exercises_ch08_09.py`` ties each to a property.
"""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import Exercise, check_function, value_exercise


def solution_normalised_decay(gamma, n):
    """RetNet's row-normalised decay mask D̃[i, j] = γ^(i-j) / sqrt(Σ_{l<=i} γ^(i-l)) for j <= i,
    0 above, [n, n]. Row i's sum is the geometric series (1 - γ^(i+1)) / (1 - γ), or i + 1 at γ = 1."""
    distance = np.subtract.outer(np.arange(n), np.arange(n))  # i - j
    mask = np.where(distance >= 0, gamma ** np.maximum(distance, 0), 0.0)  # clip: γ^-(n-1) overflows
    rows = np.arange(1, n + 1)  # i + 1 terms in row i
    row_sums = rows.astype(float) if gamma == 1 else (1 - gamma**rows) / (1 - gamma)
    return mask / np.sqrt(row_sums)[:, None]


def _normalised_decay_cases():
    return [{"gamma": 0.8, "n": 8}, {"gamma": 1.0, "n": 5},  # γ = 1: row i divided by sqrt(i + 1)
            {"gamma": 0.9, "n": 1}, {"gamma": 1 - 2.0**-5, "n": 37},
            {"gamma": 0.05, "n": 300}]  # γ^-(n-1) overflows: the upper triangle must not use it


def _summed_decay(gamma, n):
    """The reference: the package's L with its row sums added up by numpy."""
    mask = la.decay_matrix(gamma, n)  # [n, n]
    return mask / np.sqrt(mask.sum(axis=1, keepdims=True))


def _check_normalised_decay(answer):
    check_function(answer, _summed_decay, _normalised_decay_cases(), rtol=1e-9)


def solution_clipped_retention(q, k, v, gamma):
    """Recurrent retention with RetNet's clipped denominator: S_n = γ S_{n-1} + k_n v_nᵀ,
    z_n = γ z_{n-1} + k_n, o_n = S_nᵀ q_n / max(|q_n · z_n|, 1); [N, d], [N, d_v] -> [N, d_v]."""
    state = np.zeros((k.shape[-1], v.shape[-1]))  # S_0 = 0  [d, d_v]
    normaliser = np.zeros(k.shape[-1])  # z_0 = 0  [d]
    out = np.zeros((q.shape[0], v.shape[-1]))
    for n in range(q.shape[0]):
        state = gamma * state + np.outer(k[n], v[n])
        normaliser = gamma * normaliser + k[n]
        out[n] = q[n] @ state / max(abs(q[n] @ normaliser), 1.0)
    return out


def _retention_cases():
    rng = np.random.default_rng(8)
    shapes = [(1, 4, 3, 0.9), (7, 3, 5, 0.8), (64, 16, 8, 1 - 2.0**-5), (20, 6, 6, 1.0)]  # (N, d, d_v, γ)
    cases = [{"q": rng.standard_normal((n, d)), "k": rng.standard_normal((n, d)),
              "v": rng.standard_normal((n, d_v)), "gamma": gamma} for n, d, d_v, gamma in shapes]
    q, k, v = (rng.standard_normal((33, 8)).astype(np.float32) for _ in range(3))
    return cases + [{"q": q, "k": k, "v": v, "gamma": 0.95}]


def _parallel_clipped_retention(q, k, v, gamma):
    """The reference, in the parallel form: R = (Q Kᵀ) ⊙ L, each row divided by max(|Σ_j R_nj|, 1)."""
    scores = (q @ k.T) * la.decay_matrix(gamma, q.shape[0])  # R  [N, N]
    return scores @ v / np.maximum(np.abs(scores.sum(axis=1, keepdims=True)), 1.0)


def _check_clipped_retention(answer):
    check_function(answer, _parallel_clipped_retention, _retention_cases(), rtol=1e-5)


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


def solution_kernel_total(a, b, c):
    """Σ_{s>=0} κ_s = Σ_r c_r b_r / (1 - a_r) for decays |a_r| < 1: the weight the kernel gives the
    whole past, and the level the step response settles at. [m] each -> a number."""
    return float((c * b / (1 - a)).sum())


def _total_cases():
    rng = np.random.default_rng(82)
    return [{"a": np.array([0.5, 0.8, 0.95, 0.99]), "b": rng.standard_normal(4), "c": rng.standard_normal(4)},
            {"a": np.array([0.3]), "b": np.array([2.0]), "c": np.array([-1.5])},  # m = 1
            {"a": rng.uniform(0.1, 0.9, 7), "b": rng.standard_normal(7), "c": rng.standard_normal(7)},
            {"a": np.array([1e-3, 0.6]), "b": np.array([1.0, -2.0]), "c": np.array([3.0, 0.5])}]  # a fast mode: κ_0 almost alone


def _step_response_limit(a, b, c):
    """The total measured rather than derived: the SSM's output after 20,000 steps of a unit input,
    when every mode (a <= 0.99) has settled to within 0.99^20000 ≈ 1e-87."""
    return float(la.diagonal_ssm(np.ones((20_000, 1)), a, b, c)[-1, 0])


def _check_kernel_total(answer):
    check_function(answer, _step_response_limit, _total_cases(), rtol=1e-9)


def solution_bilinear(rates, b, step):
    """S4's bilinear (trapezoid) discretisation of h' = diag(rates) h + b u over a step Δ:
    a = (1 + Δ A_r / 2) / (1 - Δ A_r / 2), b̄ = Δ B_r / (1 - Δ A_r / 2); [m], [m] -> ([m], [m])."""
    half = step * rates / 2
    return (1 + half) / (1 - half), step * b / (1 - half)


def _bilinear_cases():
    rng = np.random.default_rng(83)
    return [{"rates": np.array([-0.5, -2.0, -8.0]), "b": np.array([1.0, 0.5, 2.0]), "step": 0.1},
            {"rates": -rng.uniform(0.1, 5.0, 7), "b": rng.standard_normal(7), "step": 0.37},
            {"rates": np.array([-3.0]), "b": np.array([-1.5]), "step": 5.0}]  # ΔA = -15: a < 0, |a| < 1


def _scipy_bilinear(rates, b, step):
    """The reference: scipy's generalised bilinear transform (Tustin), one mode at a time."""
    from scipy.signal import cont2discrete

    pairs = [cont2discrete((np.array([[rate]]), np.array([[weight]]), np.ones((1, 1)), np.zeros((1, 1))),
                           step, method="bilinear")[:2] for rate, weight in zip(rates, b)]
    return np.array([a[0, 0] for a, _ in pairs]), np.array([b_bar[0, 0] for _, b_bar in pairs])


def _check_bilinear(answer):
    check_function(answer, _scipy_bilinear, _bilinear_cases(), rtol=1e-9, outputs=2)


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
    Exercise("ch08.normalised_decay", "RetNet's row-normalised decay mask", "code",
             solution_normalised_decay, _check_normalised_decay),
    Exercise("ch08.clipped_retention", "Recurrent retention with RetNet's clipped denominator", "code",
             solution_clipped_retention, _check_clipped_retention),
    Exercise("ch08.chunkwise_retention", "Chunkwise retention: parallel inside a chunk, a state between",
             "code", solution_chunkwise_retention, _check_chunkwise_retention),
    value_exercise("ch08.gamma_for_memory",
                   "The smallest γ that keeps 1% of a key's weight 500 tokens back",
                   smallest_gamma_keeping(0.01, 500), rtol=1e-5),
    Exercise("ch08.kernel_total", "The total weight of a diagonal SSM's kernel", "code",
             solution_kernel_total, _check_kernel_total),
    value_exercise("ch08.steady_level",
                   "Where retention's output RMS levels off at γ = 0.99, in units of one term",
                   steady_rms_level(0.99), rtol=4e-3),
    Exercise("ch08.bilinear", "S4's bilinear discretisation of a diagonal system", "code",
             solution_bilinear, _check_bilinear),
]
