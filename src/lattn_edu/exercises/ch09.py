"""Exercises for chapter 9: one step of the chunkwise form, and what a chunk costs.

The chunk step's checker compares against the package's recurrent form started from the
carried state; ``tests/test_exercises.py`` checks that the solution, run over every chunk,
reproduces ``la.chunkwise_linear_attention``.
"""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import Exercise, check_function, value_exercise


def solution_chunk_step(q_c, k_c, v_c, state, normaliser):
    """One chunk of causal linear attention from features q_c, k_c [C, m], values v_c [C, d_v]
    and the state S [m, d_v], normaliser z [m] left by the earlier chunks.
    Returns the chunk's outputs [C, d_v] and the state and normaliser after it."""
    weights = np.tril(q_c @ k_c.T)  # inside the chunk, keys j <= i only  [C, C]
    numerator = weights @ v_c + q_c @ state  # [C, d_v]
    denominator = weights.sum(axis=1) + q_c @ normaliser  # [C]
    out = numerator / denominator[:, None]
    return out, state + k_c.T @ v_c, normaliser + k_c.sum(axis=0)


def _chunk_cases():
    rng = np.random.default_rng(9)
    cases = []
    for earlier, c, m, d_v, dtype in [(0, 5, 3, 4, np.float64),  # the first chunk: S = 0, z = 0
                                      (12, 7, 5, 3, np.float64), (40, 1, 4, 4, np.float64),  # C = 1
                                      (64, 16, 8, 6, np.float32)]:
        k = rng.uniform(0.1, 2.0, (earlier + c, m)).astype(dtype)  # positive features
        v = rng.standard_normal((earlier + c, d_v)).astype(dtype)
        cases.append({"q_c": rng.uniform(0.1, 2.0, (c, m)).astype(dtype), "k_c": k[earlier:],
                      "v_c": v[earlier:], "state": k[:earlier].T @ v[:earlier],
                      "normaliser": k[:earlier].sum(axis=0)})
    return cases


def _reference_chunk_step(q_c, k_c, v_c, state, normaliser):
    """The package's recurrent form, started from the carried (S, z), on the chunk's features."""
    out, (after, normaliser_after) = la.linear_attention(
        q_c, k_c, v_c, feature_map="identity", causal=True, form="recurrent", eps=0.0,
        initial_state=(state, normaliser), return_state=True)
    return out, after, normaliser_after


def multiply_adds_per_number(a: int, b: int, c: int) -> float:
    """A product [a, b]·[b, c]: abc multiply–adds over the ab + bc + ac numbers it reads and writes."""
    return a * b * c / (a * b + b * c + a * c)


EXERCISES = [
    Exercise("ch09.chunk_step", "One chunk of the chunkwise form: outputs, then the carried state",
             "code", solution_chunk_step,
             lambda answer: check_function(answer, _reference_chunk_step, _chunk_cases(), rtol=1e-5,
                                           outputs=3)),
    value_exercise("ch09.work_ratio", "Chunkwise over recurrent work per token at C = m = d_v = 64",
                   (64 * (64 + 64) + 2 * 64 * 64) / (2 * 64 * 64)),
    value_exercise("ch09.state_kib", "The float32 state S of one head at m = d_v = 128, in KiB",
                   128 * 128 * 4 / 1024),
    value_exercise("ch09.read_reuse",
                   "Multiply–adds per number moved by the read Q_c S at C = 64, m = d_v = 128",
                   multiply_adds_per_number(64, 128, 128)),
    value_exercise("ch09.slopes",
                   "The log–log slopes of time against N: chunkwise linear, then causal softmax",
                   np.array([1.0, 2.0]), rtol=1e-3),
]
