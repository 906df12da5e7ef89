"""Exercises for chapter 1: softmax attention and its N×N matrix."""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import Exercise, check_function, value_exercise


def solution_causal_weights(q, k):
    """A = softmax(q kᵀ / √d) with the scores above the diagonal masked: [N, d] x [N, d] -> [N, N]."""
    scores = q @ k.T / np.sqrt(q.shape[-1])
    scores = np.where(np.tri(len(q), len(k), dtype=bool), scores, -np.inf)  # query i sees j <= i
    scores = scores - scores.max(axis=-1, keepdims=True)  # exp never overflows; rows unchanged
    weights = np.exp(scores)
    return weights / weights.sum(axis=-1, keepdims=True)


def _reference_causal_weights(q, k):
    return la.softmax_attention_weights(q, k, causal=True)


def _weight_cases():
    rng = np.random.default_rng(101)
    cases = [{"q": rng.standard_normal((n, d)), "k": rng.standard_normal((n, d))}
             for n, d in ((1, 3), (2, 1), (7, 4), (33, 5))]
    cases.append({"q": rng.standard_normal((9, 8)).astype(np.float32),
                  "k": rng.standard_normal((9, 8)).astype(np.float32)})
    cases.append({"q": 30 * rng.standard_normal((5, 4)), "k": 30 * rng.standard_normal((5, 4))})  # huge scores
    return cases


def solution_softmax_attention(q, k, v, causal):
    """O = A V with A = softmax(q kᵀ / √d), causal or not: [N_q, d], [N, d], [N, d_v] -> [N_q, d_v]."""
    weights = la.softmax_attention_weights(q, k, causal=causal)  # [N_q, N]
    return weights @ v


def _output_cases():
    rng = np.random.default_rng(102)
    cases = []
    for n_q, n, d, d_v, causal in ((1, 1, 3, 2, True), (6, 6, 4, 3, True), (5, 9, 4, 3, False),
                                   (31, 31, 7, 5, True)):
        cases.append({"q": rng.standard_normal((n_q, d)), "k": rng.standard_normal((n, d)),
                      "v": rng.standard_normal((n, d_v)), "causal": causal})
    q, k, v = rng.standard_normal((3, 12, 8)).astype(np.float32)
    cases.append({"q": q, "k": k, "v": v, "causal": True})
    return cases


EXERCISES = [
    Exercise("ch01.causal_weights", "Build the causal softmax attention matrix A", "code",
             solution_causal_weights,
             lambda answer: check_function(answer, _reference_causal_weights, _weight_cases(), rtol=1e-5)),
    Exercise("ch01.softmax_attention", "Softmax attention output O = A V, causal or not", "code",
             solution_softmax_attention,
             lambda answer: check_function(answer, la.softmax_attention, _output_cases(), rtol=1e-5)),
    value_exercise("ch01.matrix_entries", "Entries of one head's N×N attention matrix at N = 100,000",
                   la.attention_cost(n=100_000, d=128).softmax_matrix_entries),
]
