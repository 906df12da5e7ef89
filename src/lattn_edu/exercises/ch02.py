"""Exercises for chapter 2: kernel feature maps."""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import code_exercise, value_exercise


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


EXERCISES = [
    code_exercise("ch02.elu_plus_one", "Write the elu+1 feature map", solution_elu_plus_one,
                  _elu_cases, rtol=1e-6),
    code_exercise("ch02.kernel_weights", "Normalised weights of a factorised kernel",
                  solution_kernel_weights, _weight_cases,
                  rtol=1e-6),
    value_exercise("ch02.one_weight", "One weight by hand: φ(q)·φ(k) with elu+1 for q = [1, -1], k = [0.5, 2]",
                   float(la.elu_plus_one(np.array([1.0, -1.0])) @ la.elu_plus_one(np.array([0.5, 2.0]))),
                   rtol=1e-3),
]
