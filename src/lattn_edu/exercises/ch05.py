"""Exercises for chapter 5: the worked example, by hand."""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import value_exercise


def _state(tokens):
    state = la.LinearAttentionState(m=2, d_v=2, eps=0.0)
    for phi_k, v in tokens:
        state.update(phi_k=phi_k, v=v)
    return state


SEED_TOKENS = [([1, 0], [1, 0]), ([0, 1], [0, 2])]
THIRD = ([1, 1], [2, 2])
FOURTH = ([2, 0], [0, 4])
QUERY = np.array([3.0, 1.0])


def balanced_query_weight() -> float:
    """The a for which φ(q) = [a, 1] reads equal components from the two-token state.

    The denominator is shared, so o_1 = o_2 where the numerators Sᵀφ(q) agree:
    a·S[0, 0] + S[1, 0] = a·S[0, 1] + S[1, 1].
    """
    S = _state(SEED_TOKENS).S  # [m, d_v] = [2, 2]
    return float((S[1, 1] - S[1, 0]) / (S[0, 0] - S[0, 1]))


def _state_without_first_token() -> np.ndarray:
    """The three-token S with token 1's outer product taken out again (S is a plain sum)."""
    state = _state(SEED_TOKENS + [THIRD])
    phi_k, v = SEED_TOKENS[0]
    return state.S - np.outer(phi_k, v)  # [m, d_v]


EXERCISES = [
    value_exercise("ch05.state", "Remove token 1 from the three-token state: the new S",
                   _state_without_first_token()),
    value_exercise("ch05.output", "Interference: the three-token state read with token 2's key φ(k2) = [0, 1]",
                   _state(SEED_TOKENS + [THIRD]).read(np.asarray(SEED_TOKENS[1][0], dtype=float))),
    value_exercise("ch05.fourth_token",
                   "Add φ(k3) = [1, 1], v3 = [2, 2] and φ(k4) = [2, 0], v4 = [0, 4]: the new o for φ(q) = [3, 1]",
                   _state(SEED_TOKENS + [THIRD, FOURTH]).read(QUERY), rtol=1e-4),
    value_exercise("ch05.balance", "The a for which φ(q) = [a, 1] reads two equal output components",
                   balanced_query_weight()),
]
