"""Exercises for chapter 7: the quality gap, measured by rank, sharpness and normalisation.

The code checkers compare against the package's measurements, ``la.row_entropy`` and
``la.denominator_drift``; the rank predictions are confirmed by ``la.numerical_rank`` in the tests.
"""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import Exercise, check_function, value_exercise


def state_rank(tokens, m, d_v):
    """The largest rank of the state S = Σ_j φ(k_j) v_jᵀ after ``tokens`` rank-one updates: an
    m x d_v matrix that is a sum of that many outer products."""
    return min(tokens, m, d_v)


def squared_kernel_rank(d):
    """The largest rank of the N x N matrix [(q_i·k_j)²] for N >= d(d+1)/2: (q·k)² = Σ_{a,b} q_a q_b
    k_a k_b, and the products q_a q_b with a <= b are only d(d+1)/2 different features."""
    return d * (d + 1) // 2


# The state after 5 and after 256 tokens (m = 8, d_v = 32), and [(q_i·k_j)²] for N = 256, d = 4.
RANK_PREDICTIONS = np.array([state_rank(5, 8, 32), state_rank(256, 8, 32), squared_kernel_rank(4)],
                            dtype=float)


def solution_row_entropy(weights):
    """H_i = -Σ_j A_ij log A_ij for every row, in nats, with 0·log 0 = 0."""
    logs = np.log(np.where(weights > 0, weights, 1.0))  # log 1 = 0 where the weight is 0
    return -(weights * logs).sum(-1)


def _entropy_cases():
    rng = np.random.default_rng(71)
    q, k = rng.standard_normal((2, 7, 4))
    q32, k32 = rng.standard_normal((2, 33, 8)).astype(np.float32)
    q_wide, k_wide = rng.standard_normal((6, 4)), rng.standard_normal((9, 4))
    return [{"weights": la.softmax_attention_weights(q_wide, k_wide)},  # N_q != N
            {"weights": la.softmax_attention_weights(q, k, causal=True)},  # zeros above the diagonal
            {"weights": np.vstack([np.eye(5)[[3, 0, 4]], np.full((1, 5), 0.2)])},  # 0, 0, 0, log 5
            {"weights": la.softmax_attention_weights(q[:1], k)},  # one query: N_q = 1
            {"weights": la.effective_attention_matrix(q32, k32, feature_map="elu+1")}]


def _check_row_entropy(answer):
    check_function(answer, lambda weights: la.row_entropy(weights), _entropy_cases(), rtol=1e-5)


def solution_causal_denominator(q, k):
    """φ(q_i)ᵀ z_i with z_i = Σ_{j<=i} φ(k_j) and φ = elu+1, for every position i: [N, d] -> [N]."""
    z = np.cumsum(la.elu_plus_one(k), axis=0)  # z_i for every i  [N, m]
    return (la.elu_plus_one(q) * z).sum(-1)


def _denominator_cases():
    rng = np.random.default_rng(72)
    shapes = [(1, 4), (9, 3), (100, 16)]  # (N, d)
    cases = [{"q": rng.standard_normal(shape), "k": rng.standard_normal(shape)} for shape in shapes]
    q32, k32 = rng.standard_normal((2, 65, 5)).astype(np.float32)
    return cases + [{"q": q32, "k": k32}]


def _check_causal_denominator(answer):
    check_function(answer, lambda q, k: la.denominator_drift(q, k, feature_map="elu+1"),
                   _denominator_cases(), rtol=1e-5)


def solution_elu_limit_weights(q, k):
    """The elu+1 weights of the queries s·q on the keys k in the limit s -> ∞: [N_q, d], [N, d]
    -> [N_q, N]. For large s, φ(s q) ≈ s·max(q, 0), and s cancels in each row's normalisation.
    Every query needs a positive coordinate (otherwise max(q, 0) = 0 and the limit differs)."""
    scores = np.maximum(q, 0) @ la.elu_plus_one(k).T  # [N_q, N]
    return scores / scores.sum(-1, keepdims=True)


def _limit_cases():
    rng = np.random.default_rng(73)
    q, k = rng.standard_normal((7, 5)), rng.standard_normal((11, 5))
    q[:, 0] = np.abs(q[:, 0]) + 0.1  # every query has a positive coordinate
    one_hot = np.eye(4)[[2]]  # a single positive coordinate: the limit reads one feature
    q32, k32 = rng.uniform(0.1, 1.0, (2, 9, 3)).astype(np.float32)
    return [{"q": q, "k": k}, {"q": one_hot, "k": rng.standard_normal((6, 4))},
            {"q": q32, "k": k32}, {"q": q[:1], "k": k[:1]}]  # N = 1: the weight is 1


def _scale_cases():
    """Queries no single large s brings near the limit, while the closed form is exact on them.

    Rows at scale 1e-9 need s·q ≫ 1/rtol (s ≳ 1e15) before φ(s q) ≈ s max(q, 0); the row at
    scale 1e300 overflows φ(s q) to inf once s ≳ 1e8. The closed form is scale-free per row.
    """
    rng = np.random.default_rng(74)
    q = rng.standard_normal((5, 4))
    q[:, 0] = np.abs(q[:, 0]) + 0.1  # every query has a positive coordinate
    q[:4] *= 1e-9
    q[4] *= 1e300
    return [{"q": q, "k": rng.standard_normal((8, 4))}]


def _check_elu_limit(answer):
    check_function(answer, solution_elu_limit_weights, _limit_cases() + _scale_cases(), rtol=1e-5)


def largest_block_rank(n, m, t):
    """The largest rank of the causal block rows >= t, columns < t of an N x N linear-attention
    matrix with m features: an (N - t) x t matrix that factors through m dimensions."""
    return min(m, t, n - t)


# Cuts after 8, 128 and 250 of 256 tokens with m = 16: the short side or m, whichever is smaller.
BLOCK_CUTS = (8, 128, 250)
BLOCK_RANKS = np.array([largest_block_rank(256, 16, t) for t in BLOCK_CUTS], dtype=float)

EXERCISES = [
    value_exercise("ch07.numerical_rank",
                   "Predict the ranks of two states and of a squared-kernel matrix, then measure them",
                   RANK_PREDICTIONS, rtol=1e-6),
    Exercise("ch07.row_entropy", "The entropy of each row of attention weights", "code",
             solution_row_entropy, _check_row_entropy),
    Exercise("ch07.causal_denominator", "The causal denominator φ(q_i)ᵀz_i at every position", "code",
             solution_causal_denominator, _check_causal_denominator),
    Exercise("ch07.elu_limit", "Derive the zero-temperature limit of elu+1 attention weights",
             "code", solution_elu_limit_weights, _check_elu_limit),
    value_exercise("ch07.block_rank",
                   "The largest rank of the causal block from queries >= t to keys < t, N = 256, m = 16",
                   BLOCK_RANKS, rtol=1e-6),
]
