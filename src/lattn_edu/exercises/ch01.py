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


def solution_normaliser_last(q, k, v):
    """Softmax attention as D⁻¹(E V): V enters before the division. [N_q, d], [N, d], [N, d_v]."""
    scores = q @ k.T / np.sqrt(q.shape[-1])  # [N_q, N]
    # subtracting the row maximum scales row i of E by one number, which D⁻¹ cancels too
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))  # E, up to a factor per row
    unnormalised = e @ v  # E V  [N_q, d_v]
    row_sums = e @ np.ones(len(k))  # E 1: the diagonal of D  [N_q]
    return unnormalised / row_sums[:, None]


def _reference_normaliser_last(q, k, v):
    return la.softmax_attention(q, k, v)


def _normaliser_cases():
    rng = np.random.default_rng(103)
    cases = [{"q": rng.standard_normal((n_q, d)), "k": rng.standard_normal((n, d)),
              "v": rng.standard_normal((n, d_v))}
             for n_q, n, d, d_v in ((1, 1, 2, 1), (3, 7, 4, 5), (13, 13, 3, 2))]
    cases.append({"q": 25 * rng.standard_normal((5, 4)), "k": 25 * rng.standard_normal((9, 4)),
                  "v": rng.standard_normal((9, 3))})  # scores in the hundreds: exp overflows
    return cases


def overflow_case_peaks():
    """The largest |score| q·k/√d among the inputs the two overflow-checking exercises try."""
    def peak(cases):
        return max(float(np.abs(c["q"] @ c["k"].T).max() / np.sqrt(c["q"].shape[-1])) for c in cases)
    return {"causal_weights": peak(_weight_cases()), "normaliser_last": peak(_normaliser_cases())}


def _matrix_overtakes_cache(d: int = 128, d_v: int = 128) -> int:
    """The smallest N whose N×N matrix holds more entries than its KV cache, counted by the package."""
    def matrix_is_larger(n):
        cost = la.attention_cost(n=n, d=d, d_v=d_v)
        return cost.softmax_matrix_entries > cost.kv_cache_entries
    return next(n for n in range(1, 10 * (d + d_v)) if matrix_is_larger(n))


def _decade_factors():
    """How many times the N×N matrix outgrows (the state, the KV cache) from N = 10⁴ to 10⁵."""
    before, after = (la.attention_cost(n=n, d=128) for n in (10_000, 100_000))
    over_cache = [c.softmax_matrix_entries / c.kv_cache_entries for c in (before, after)]
    return np.array([after.memory_ratio / before.memory_ratio, over_cache[1] / over_cache[0]])


EXERCISES = [
    Exercise("ch01.causal_weights", "Build the causal softmax attention matrix A", "code",
             solution_causal_weights,
             lambda answer: check_function(answer, _reference_causal_weights, _weight_cases(), rtol=1e-5)),
    Exercise("ch01.softmax_attention", "Softmax attention output O = A V, causal or not", "code",
             solution_softmax_attention,
             lambda answer: check_function(answer, la.softmax_attention, _output_cases(), rtol=1e-5)),
    value_exercise("ch01.matrix_entries",
                   "Derive: the smallest N at which one head's N×N matrix outgrows its KV cache "
                   "(d = d_v = 128)", _matrix_overtakes_cache()),
    Exercise("ch01.normaliser_last", "Softmax attention with the normaliser applied last, D⁻¹(E V)",
             "code", solution_normaliser_last,
             lambda answer: check_function(answer, _reference_normaliser_last, _normaliser_cases(),
                                           rtol=1e-9)),
    value_exercise("ch01.decade_factors",
                   "Predict: from N = 10⁴ to 10⁵, how many times does the N×N matrix grow "
                   "relative to the state, and relative to the KV cache?", _decade_factors()),
]
