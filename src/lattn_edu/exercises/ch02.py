"""Exercises for chapter 2: kernel feature maps."""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import Exercise, check_function, value_exercise


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
    """Normalised elu+1 weights A_ij = φ(q_i)·φ(k_j) / Σ_j' φ(q_i)·φ(k_j'), [N, d] -> [N, N]."""
    weights = la.elu_plus_one(q) @ la.elu_plus_one(k).T
    return weights / weights.sum(-1, keepdims=True)


def _weight_cases():
    rng = np.random.default_rng(22)
    return [{"q": rng.standard_normal((n, d)), "k": rng.standard_normal((n, d))}
            for n, d in ((1, 3), (5, 4), (63, 8))]


def solution_rank_bound(n, m):
    """The largest rank φ(Q)φ(K)ᵀ can have for N tokens and m features: min(N, m).

    φ(Q)φ(K)ᵀ = F Gᵀ with F, G of shape [N, m]; every column of F Gᵀ is F times a vector, so
    it lies in the column space of F, whose dimension is at most min(N, m).
    """
    return min(n, m)


def _reference_rank_bound(n, m):
    return min(n, m)


def _rank_cases():
    return [{"n": n, "m": m} for n, m in ((1, 1), (1, 5), (6, 1), (7, 3), (3, 7), (64, 16),
                                           (100_000, 128))]


def _check_elu_plus_one(answer):
    check_function(answer, lambda x: la.elu_plus_one(x), _elu_cases(), rtol=1e-6)


def _check_kernel_weights(answer):
    check_function(answer, lambda q, k: la.effective_attention_matrix(q, k, "elu+1", eps=0.0),
                   _weight_cases(), rtol=1e-6)


# The checkers compare with the package's own functions, so they need none of the solutions.
EXERCISES = [
    Exercise("ch02.elu_plus_one", "Write the elu+1 feature map", "code", solution_elu_plus_one,
             _check_elu_plus_one),
    Exercise("ch02.kernel_weights", "Normalised weights of a factorised kernel", "code",
             solution_kernel_weights, _check_kernel_weights),
    value_exercise("ch02.one_weight", "One weight by hand: φ(q)·φ(k) with elu+1 for q = [1, -1], k = [0.5, 2]",
                   float(la.elu_plus_one(np.array([1.0, -1.0])) @ la.elu_plus_one(np.array([0.5, 2.0]))),
                   rtol=1e-3),
    Exercise("ch02.rank_bound", "Prove and state the largest rank of φ(Q)φ(K)ᵀ for N tokens, "
             "m features", "code", solution_rank_bound,
             lambda answer: check_function(answer, _reference_rank_bound, _rank_cases(), rtol=1e-9)),
]
