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


def solution_decoding_attention(q, k, v):
    """Causal softmax attention for the last N_q of N tokens: query i sits at position
    N - N_q + i and sees keys 0 .. N - N_q + i. [N_q, d], [N, d], [N, d_v] -> [N_q, d_v]."""
    n_q, n = len(q), len(k)
    scores = q @ k.T / np.sqrt(q.shape[-1])  # [N_q, N]
    visible = np.tri(n_q, n, n - n_q, dtype=bool)  # the diagonal shifted right by N - N_q
    scores = np.where(visible, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (weights @ v) / weights.sum(axis=-1, keepdims=True)


def _reference_decoding_attention(q, k, v):
    """Each query on its own, over exactly the prefix it may see (no mask involved)."""
    offset = len(k) - len(q)
    return np.concatenate([la.softmax_attention(q[i:i + 1], k[:offset + i + 1], v[:offset + i + 1])
                           for i in range(len(q))])


def _output_cases():
    rng = np.random.default_rng(102)
    cases = []
    for n_q, n, d, d_v in ((1, 1, 3, 2), (1, 9, 4, 3), (6, 6, 4, 3), (5, 9, 4, 3), (3, 31, 7, 5)):
        cases.append({"q": rng.standard_normal((n_q, d)), "k": rng.standard_normal((n, d)),
                      "v": rng.standard_normal((n, d_v))})
    q, k, v = rng.standard_normal((3, 12, 8)).astype(np.float32)
    cases.append({"q": q[:4], "k": k, "v": v})
    return cases


def solution_normaliser_last(q, k, v):
    """The two pieces of D⁻¹(E V), before the division: (E V, E 1), each row of E scaled by
    e^(-row maximum of the scores). [N_q, d], [N, d], [N, d_v] -> ([N_q, d_v], [N_q])."""
    scores = q @ k.T / np.sqrt(q.shape[-1])  # [N_q, N]
    # subtracting the row maximum scales row i of E by one number, which D⁻¹ cancels
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))  # E, up to a factor per row
    unnormalised = e @ v  # E V  [N_q, d_v]
    row_sums = e @ np.ones(len(k))  # E 1: the diagonal of D  [N_q]
    return unnormalised, row_sums


def _reference_normaliser_last(q, k, v):
    """E V and E 1 from the package's weights: A = D⁻¹E, so E = A·D with D_ii = Σ_j E_ij, and
    after the shift D_ii = Σ_j exp(s_ij - max_j s_ij)."""
    scores = q @ k.T / np.sqrt(q.shape[-1])
    row_sums = np.exp(scores - scores.max(axis=-1, keepdims=True)).sum(axis=-1)  # [N_q]
    return la.softmax_attention(q, k, v) * row_sums[:, None], row_sums


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


def _growth_factors():
    """How many times the N×N matrix outgrows (the state, the KV cache) from N = 4,000 to 12,000."""
    before, after = (la.attention_cost(n=n, d=128) for n in (4_000, 12_000))
    over_cache = [c.softmax_matrix_entries / c.kv_cache_entries for c in (before, after)]
    return np.array([after.memory_ratio / before.memory_ratio, over_cache[1] / over_cache[0]])


EXERCISES = [
    Exercise("ch01.causal_weights", "Build the causal softmax attention matrix A", "code",
             solution_causal_weights,
             lambda answer: check_function(answer, _reference_causal_weights, _weight_cases(), rtol=1e-5)),
    Exercise("ch01.softmax_attention",
             "Causal softmax attention for the last N_q of N tokens (decoding)", "code",
             solution_decoding_attention,
             lambda answer: check_function(answer, _reference_decoding_attention, _output_cases(),
                                           rtol=1e-5)),
    value_exercise("ch01.matrix_entries",
                   "Derive: the smallest N at which one head's N×N matrix outgrows its KV cache "
                   "(d = d_v = 128)", _matrix_overtakes_cache()),
    Exercise("ch01.normaliser_last", "The two pieces of D⁻¹(E V), E V and E 1, after the row-max shift",
             "code", solution_normaliser_last,
             lambda answer: check_function(answer, _reference_normaliser_last, _normaliser_cases(),
                                           rtol=1e-9, outputs=2)),
    value_exercise("ch01.decade_factors",
                   "Predict: from N = 4,000 to 12,000, how many times does the N×N matrix grow "
                   "relative to the state, and relative to the KV cache?", _growth_factors()),
]
