"""Exercises for chapter 3: moving the parentheses, and what each order costs."""

from __future__ import annotations

import math

import numpy as np

import lattn_edu as la
from lattn_edu.timing import loglog_slope

from .base import (Exercise, ExerciseFailed, _as_array, assert_matches, check_function,
                   value_exercise)


def solution_parallel_form(phi_q, phi_k, v):
    """O = φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1), non-causal, no eps: [N_q, m], [N, m], [N, d_v] -> [N_q, d_v]."""
    S = phi_k.T @ v  # [m, d_v]: the sequence axis is contracted first
    z = phi_k.sum(axis=0)  # [m], the same as φ(K)ᵀ1
    return (phi_q @ S) / (phi_q @ z)[:, None]  # row i divided by its own denominator


def _reference_parallel_form(phi_q, phi_k, v):
    return la.parallel_linear_attention(phi_q, phi_k, v, causal=False, eps=0.0)


class SequenceOnly(np.ndarray):
    """An array whose arithmetic refuses to produce a result with two sequence-long axes.

    The checker hands the parallel form inputs of this type, so an answer that builds the
    [N_q, N] weights (the order the exercise rules out) fails with a message saying so.
    """

    sequence_length: int = 0
    advice = "the parallel form must contract the sequence axis first (φ(K)ᵀV)"

    @classmethod
    def wrap(cls, array: np.ndarray) -> "SequenceOnly":
        wrapped = np.asarray(array).view(cls)
        wrapped.sequence_length = array.shape[0]
        return wrapped

    def __array_finalize__(self, parent):
        self.sequence_length = getattr(parent, "sequence_length", 0)

    def _refuse_square(self, result):
        n = self.sequence_length
        shapes = [r.shape for r in (result if isinstance(result, tuple) else (result,))
                  if isinstance(r, np.ndarray)]
        if n > 1 and any(sum(size == n for size in shape) >= 2 for shape in shapes):
            raise ValueError(f"this computes an [N, N] = [{n}, {n}] array; {self.advice}")
        return result

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [np.asarray(x) if isinstance(x, SequenceOnly) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(np.asarray(x) for x in kwargs["out"])
        result = getattr(ufunc, method)(*plain, **kwargs)
        return self._refuse_square(result)

    def __array_function__(self, func, types, args, kwargs):
        def plain(x):
            return np.asarray(x) if isinstance(x, SequenceOnly) else x
        args = [plain(a) if not isinstance(a, (list, tuple)) else type(a)(plain(x) for x in a)
                for a in args]
        return self._refuse_square(func(*args, **{k: plain(v) for k, v in kwargs.items()}))


def _feature_cases():
    rng = np.random.default_rng(301)
    cases = []
    for n_q, n, m, d_v in ((1, 1, 1, 1), (1, 1, 3, 2), (7, 7, 4, 3), (5, 11, 6, 2), (63, 63, 8, 5)):
        cases.append({"phi_q": la.elu_plus_one(rng.standard_normal((n_q, m))),
                      "phi_k": la.elu_plus_one(rng.standard_normal((n, m))),
                      "v": rng.standard_normal((n, d_v))})
    q, k, v = rng.standard_normal((3, 17, 16)).astype(np.float32)
    cases.append({"phi_q": la.elu_plus_one(q), "phi_k": la.elu_plus_one(k), "v": v})
    # Last, a longer sequence whose arrays refuse to build any [N_q, N] product (SequenceOnly),
    # so the order (φ(Q)φ(K)ᵀ)V is reported by name instead of merely running slowly.
    n_long = 1_001
    cases.append({name: SequenceOnly.wrap(la.elu_plus_one(rng.standard_normal((n_long, 2))))
                  for name in ("phi_q", "phi_k")}
                 | {"v": SequenceOnly.wrap(rng.standard_normal((n_long, 2)))})
    return cases


def solution_two_costs(n, d):
    """Multiply-adds of (φ(Q)φ(K)ᵀ)V and of φ(Q)(φ(K)ᵀV) for one head, with d_v = m = d."""
    d_v = m = d
    left = n * n * m + n * n * d_v  # the N×N weights, then weights times V
    right = n * m * d_v + n * m * d_v  # S = φ(K)ᵀV, then φ(Q) S
    return left, right


def _reference_two_costs(n, d):
    cost = la.attention_cost(n=n, d=d)
    return cost.softmax_macs, cost.linear_macs


def _cost_cases():
    return [{"n": n, "d": d} for n, d in ((1, 1), (1, 64), (7, 3), (128, 128), (1000, 64),
                                           (100_000, 128))]


def solution_causal_work_ratio(n, d, d_v, m):
    """How many times more multiply-adds causal softmax attention needs than the causal
    running-state form, counted exactly.

    Query i meets the keys j <= i: N(N + 1)/2 pairs, each d for the score and d_v for the
    weighted value. The running state adds φ(k_i) v_iᵀ (m d_v) and reads φ(q_i)ᵀ S_i (m d_v)
    once per token: 2 N m d_v. The ratio is (N + 1)(d + d_v) / (4 m d_v).
    """
    softmax = n * (n + 1) // 2 * (d + d_v)
    linear = 2 * n * m * d_v
    return softmax / linear


def _reference_causal_work_ratio(n, d, d_v, m):
    """The pairs counted one query at a time, over the package's count of the state form."""
    pairs = sum(range(1, n + 1))  # query i (from 1) meets i keys
    return pairs * (d + d_v) / la.attention_cost(n=n, d=d, d_v=d_v, m=m).linear_macs


def _ratio_cases():
    return [{"n": n, "d": d, "d_v": d_v, "m": m}
            for n, d, d_v, m in ((1, 1, 1, 1), (2, 1, 1, 1), (7, 3, 5, 11), (1000, 64, 64, 64),
                                 (4097, 32, 128, 256), (100_000, 128, 64, 16))]


def _taylor_work_ratio(n: int = 4096, d: int = 64, d_v: int = 128) -> np.ndarray:
    """(softmax attention over the right order at n, first N from which the right order is
    cheaper than softmax attention) with the second-order Taylor map (m = 1 + d + d(d+1)/2)."""
    m = la.taylor_features(np.zeros((1, d))).shape[-1]
    ratio = la.attention_cost(n=n, d=d, d_v=d_v, m=m).compute_ratio
    first_cheaper = 2 * m * d_v // (d + d_v) + 1  # the ratio N(d + d_v)/(2 m d_v) exceeds 1
    return np.array([ratio, first_cheaper])


def _check_ratio_and_first_n(answer) -> None:
    """The ratio within 0.2% (it is read off a formula), the first N exactly."""
    expected = _taylor_work_ratio()
    pair = _as_array(answer, "your answer")
    if pair.shape != (2,):
        raise ExerciseFailed(f"expected a pair (ratio, first N); got shape {list(pair.shape)}")
    assert_matches(pair[0], expected[0], 2e-3, "your ratio")
    assert_matches(pair[1], expected[1], 0.0, "your first N")


def _taylor_state_and_crossover(d: int = 128, d_v: int = 128) -> np.ndarray:
    """(entries of S and z with the second-order Taylor map, smallest N whose N×N matrix is larger)."""
    m = la.taylor_features(np.zeros((1, d))).shape[-1]  # 1 + d + d(d+1)/2
    entries = la.attention_cost(n=1, d=d, d_v=d_v, m=m).linear_state_entries + m  # S, then z
    smallest_n = math.isqrt(entries) + 1  # the first N with N² > entries
    return np.array([entries, smallest_n])


def _width_slopes():
    """The log–log slopes of the softmax and linear multiply-add counts against the head width
    d = d_v = m, with N fixed: N²·2d has slope 1, 2N·d² slope 2 (the reverse of the N slopes)."""
    widths = np.array([16, 32, 64, 128, 256])
    counts = [la.attention_cost(n=4096, d=int(d)) for d in widths]
    return np.array([loglog_slope(widths, [c.softmax_macs for c in counts]),
                     loglog_slope(widths, [c.linear_macs for c in counts])])


EXERCISES = [
    Exercise("ch03.parallel_form", "The parallel form φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1) from features",
             "code", solution_parallel_form,
             lambda answer: check_function(answer, _reference_parallel_form, _feature_cases(),
                                           rtol=1e-5)),
    Exercise("ch03.two_costs", "Count the multiply-adds of both parenthesisations", "code",
             solution_two_costs,
             lambda answer: check_function(answer, _reference_two_costs, _cost_cases(), rtol=1e-9)),
    value_exercise("ch03.state_entries",
                   "Derive: the entries of S and z with the Taylor map at d = d_v = 128, and the "
                   "smallest N whose N×N matrix is larger", _taylor_state_and_crossover(),
                   rtol=0.0),  # two integers: an off-by-one in either is wrong
    Exercise("ch03.work_ratio",
             "Predict: softmax over right-order work with the Taylor map at N = 4096, d = 64, "
             "d_v = 128, and the first N from which the right order is cheaper", "value",
             _taylor_work_ratio(), _check_ratio_and_first_n),
    Exercise("ch03.work_ratio_formula",
             "Derive the work ratio of the causal forms, counting the pairs j <= i exactly", "code",
             solution_causal_work_ratio,
             lambda answer: check_function(answer, _reference_causal_work_ratio, _ratio_cases(),
                                           rtol=1e-9)),
    value_exercise("ch03.count_slopes",
                   "Predict the log–log slopes of the two multiply-add counts against the head width",
                   _width_slopes(), rtol=1e-6),
]
