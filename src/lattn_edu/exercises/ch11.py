"""Exercises for chapter 11: segment sums, one chunked step with a scalar gate, a prediction of
the step at which a running product of decays underflows, the cost of the doubling scan, and
Mamba-2's SSD matrix derived from the paper's recurrence.

The checkers compare against ``la.decay_mask``, ``la.gated_linear_attention`` (with an initial
state and the final state returned) and ``la.ssm_mixing_matrix``; the underflow prediction
against −ln of the smallest double that does not round to zero.
"""

from __future__ import annotations

import math

import numpy as np

import lattn_edu as la

from .base import Exercise, check_function, value_exercise


def solution_decay_mask(log_decay):
    """L[i, j] = exp(Σ_{l=j+1..i} g_l) for j <= i, 0 above: [N] -> [N, N], without underflow."""
    n = len(log_decay)
    sums = np.cumsum(np.tril(np.broadcast_to(log_decay[:, None], (n, n)), k=-1), axis=0)  # [i, j]
    return np.where(np.tri(n, dtype=bool), np.exp(sums), 0.0)


def _mask_cases():
    rng = np.random.default_rng(11)
    return [{"log_decay": -rng.uniform(0, 1, 7)}, {"log_decay": np.zeros(5)},  # no decay: causal ones
            {"log_decay": np.array([-0.3])},
            {"log_decay": -rng.uniform(0, 0.1, 64)},
            {"log_decay": np.full(40, -50.0)}]  # Π a_l underflows to 0 after 15 steps: ratios give NaN


def _check_decay_mask(answer):
    check_function(answer, lambda log_decay: la.decay_mask(log_decay), _mask_cases(), rtol=1e-9)


def solution_chunk_step(q, k, v, log_decay, state):
    """One chunk with a scalar gate: (outputs [C, d_v], state after [d_k, d_v]), scale 1."""
    inside = np.cumsum(log_decay)  # b_t = Σ_{l<=t} g_l within the chunk  [C]
    mask = solution_decay_mask(log_decay)  # L  [C, C]
    out = ((q @ k.T) * mask) @ v + np.exp(inside)[:, None] * (q @ state)
    to_end = inside[-1] - inside  # Σ_{l>t} g_l  [C]
    return out, np.exp(inside[-1]) * state + (np.exp(to_end)[:, None] * k).T @ v


def _chunk_cases():
    rng = np.random.default_rng(111)
    cases = []
    for c, d_k, d_v in ((1, 3, 2), (8, 4, 5), (13, 6, 3), (32, 16, 8)):
        cases.append({"q": rng.standard_normal((c, d_k)), "k": rng.standard_normal((c, d_k)),
                      "v": rng.standard_normal((c, d_v)), "log_decay": -rng.uniform(0, 0.5, c),
                      "state": rng.standard_normal((d_k, d_v))})
    return cases


def _chunk_reference(q, k, v, log_decay, state):
    return la.gated_linear_attention(q, k, v, log_decay, scale=1.0, form="recurrent",
                                     initial_state=state, return_state=True)


def _check_chunk_step(answer):
    check_function(answer, _chunk_reference, _chunk_cases(), rtol=1e-8, outputs=2)


def _underflow_step(mean_decay=1.0):
    """Steps until e^(−t·mean) rounds to 0 in float64: half the smallest subnormal, 2^−1075."""
    return 1075 * math.log(2) / mean_decay


def _doubling_combines(n):
    """Σ_r (N − 2^r) over the ⌈log2 N⌉ rounds: element t combines with t − 2^r when t >= 2^r."""
    return sum(n - 2**r for r in range(math.ceil(math.log2(n))))


def solution_ssd_matrix(delta, a, b, c, d_skip):
    """Mamba-2's M with Y = M X: delta [N], a < 0, b, c [N, m], d_skip -> [N, N]."""
    mask = solution_decay_mask(a * delta)  # exp(A Σ_{l=j+1..i} Δ_l)  [N, N]
    return (c @ (delta[:, None] * b).T) * mask + d_skip * np.eye(len(delta))


def _ssd_cases():
    rng = np.random.default_rng(113)
    cases = [{"delta": rng.uniform(0.01, 1.0, n), "a": -rng.uniform(0.5, 2.0),
              "b": rng.standard_normal((n, m)), "c": rng.standard_normal((n, m)),
              "d_skip": rng.standard_normal()} for n, m in ((1, 2), (7, 3), (19, 5))]
    strong = np.full(30, 40.0)  # e^{ΔA} underflows: products of decays give 0/0
    cases.append({"delta": strong, "a": -1.5, "b": rng.standard_normal((30, 4)),
                  "c": rng.standard_normal((30, 4)), "d_skip": 0.7})
    return cases


def _ssd_reference(delta, a, b, c, d_skip):
    decay = np.exp(a * delta)[:, None]  # one scalar a_t per step  [N, 1]
    return la.ssm_mixing_matrix(decay, delta[:, None] * b, c) + d_skip * np.eye(len(delta))


def _check_ssd_matrix(answer):
    check_function(answer, _ssd_reference, _ssd_cases(), rtol=1e-9)


EXERCISES = [
    Exercise("ch11.decay_mask", "The decay mask from segment sums, without underflow", "code",
             solution_decay_mask, _check_decay_mask),
    Exercise("ch11.chunk_step", "One chunk of the chunked algorithm with a scalar gate", "code",
             solution_chunk_step, _check_chunk_step),
    value_exercise("ch11.underflow_step", "Predict when a running product of e^-1 decays underflows",
                   _underflow_step(), rtol=0.004),
    value_exercise("ch11.doubling_combines", "Combines of the doubling scan at N = 1000",
                   _doubling_combines(1000), rtol=0),
    Exercise("ch11.ssd_matrix", "Mamba-2's SSD matrix, with the step size and the D skip", "code",
             solution_ssd_matrix, _check_ssd_matrix),
]
