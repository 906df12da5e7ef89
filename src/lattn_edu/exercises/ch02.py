"""Exercises for chapter 2: kernel feature maps."""

from __future__ import annotations

import warnings

import numpy as np

import lattn_edu as la

from .base import Exercise, check_function, value_exercise, without_package


def solution_elu_plus_one(x):
    """φ(x) = x + 1 for x > 0 and exp(x) otherwise, elementwise."""
    return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))


def _elu_cases():
    rng = np.random.default_rng(2)
    return [{"x": np.array([-2.0, -0.5, 0.0, 0.5, 3.0])},
            {"x": 3 * rng.standard_normal((7, 5))},
            {"x": rng.standard_normal((2, 63, 4)).astype(np.float32)},
            {"x": np.array([[-800.0, 800.0]])}]


def solution_kernel_weights(q, k):
    """Causal normalised elu+1 weights A_ij = φ(q_i)·φ(k_j) / Σ_{j' <= i} φ(q_i)·φ(k_j') for
    j <= i and 0 above the diagonal, [N, d] -> [N, N]."""
    weights = la.elu_plus_one(q) @ la.elu_plus_one(k).T  # [N, N], all positive
    weights = np.tril(weights)  # query i sees keys j <= i
    return weights / weights.sum(-1, keepdims=True)


def _weight_cases():
    rng = np.random.default_rng(22)
    return [{"q": rng.standard_normal((n, d)), "k": rng.standard_normal((n, d))}
            for n, d in ((1, 3), (5, 4), (63, 8))]


def solution_rank_bound(n, d):
    """The largest rank of the second-order Taylor kernel matrix φ(Q)φ(K)ᵀ for N tokens of
    width d: min(N, m) with m = 1 + d + d(d+1)/2 features.

    φ(Q)φ(K)ᵀ = F Gᵀ with F, G of shape [N, m]; every column of F Gᵀ is F times a vector, so
    it lies in the column space of F, whose dimension is at most min(N, m).
    """
    m = 1 + d + d * (d + 1) // 2  # the constant, the d entries, the products x_a x_b, a <= b
    return min(n, m)


def _reference_rank_bound(n, d):
    return min(n, la.taylor_features(np.zeros((1, d))).shape[-1])


def _rank_cases():
    return [{"n": n, "d": d} for n, d in ((1, 1), (1, 5), (6, 1), (7, 3), (3, 7), (64, 4),
                                           (100_000, 128))]


def _check_elu_plus_one(answer):
    if not callable(answer):  # check_function says what is wrong
        return check_function(answer, la.elu_plus_one, _elu_cases())

    def without_overflow(x):
        # an exponential that overflows (exp(800) = inf) raises here, even if np.where
        # later discards it: "must not overflow" is part of the task
        with np.errstate(over="raise"), warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            return answer(x=x)

    without_overflow.__name__ = getattr(answer, "__name__", "your function")
    check_function(without_overflow, lambda x: la.elu_plus_one(x), _elu_cases(), rtol=1e-6)


def _check_kernel_weights(answer):
    check_function(without_package(answer, "effective_attention_matrix"),
                   lambda q, k: la.effective_attention_matrix(q, k, "elu+1", causal=True, eps=0.0),
                   _weight_cases(), rtol=1e-6)


# The checkers compare with the package's own functions, so they need none of the solutions.
EXERCISES = [
    Exercise("ch02.elu_plus_one", "Write the elu+1 feature map", "code", solution_elu_plus_one,
             _check_elu_plus_one),
    Exercise("ch02.kernel_weights", "Causal normalised weights of a factorised kernel", "code",
             solution_kernel_weights, _check_kernel_weights),
    value_exercise("ch02.one_weight", "One weight by hand: φ(q)·φ(k) with elu+1 for q = [1, -1], k = [0.5, 2]",
                   float(la.elu_plus_one(np.array([1.0, -1.0])) @ la.elu_plus_one(np.array([0.5, 2.0]))),
                   rtol=2e-3),
    Exercise("ch02.rank_bound", "Prove the rank bound of φ(Q)φ(K)ᵀ and predict it for the Taylor "
             "map", "code", solution_rank_bound,
             lambda answer: check_function(answer, _reference_rank_bound, _rank_cases(), rtol=1e-9)),
]
