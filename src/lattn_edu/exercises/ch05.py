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


EXERCISES = [
    value_exercise("ch05.state", "The state S after the two tokens of the example",
                   _state(SEED_TOKENS).S.copy()),
    value_exercise("ch05.output", "The output o for φ(q) = [3, 1]", _state(SEED_TOKENS).read(QUERY)),
    value_exercise("ch05.fourth_token",
                   "Add φ(k3) = [1, 1], v3 = [2, 2] and φ(k4) = [2, 0], v4 = [0, 4]: the new o for φ(q) = [3, 1]",
                   _state(SEED_TOKENS + [THIRD, FOURTH]).read(QUERY), rtol=1e-4),
    value_exercise("ch05.balance", "The a for which φ(q) = [a, 1] reads two equal output components",
                   balanced_query_weight()),
]
