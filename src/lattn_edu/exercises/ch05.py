"""Exercises for chapter 5: the worked example, by hand."""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import Exercise, ExerciseFailed, _as_array, value_exercise


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
    """The three-token S and z with token 1 taken out again (both are plain sums), stacked
    as one [m + 1, d_v] array: the rows of S, then z."""
    state = _state(SEED_TOKENS + [THIRD])
    phi_k, v = SEED_TOKENS[0]
    S = state.S - np.outer(phi_k, v)  # [m, d_v]
    z = state.z - np.asarray(phi_k, dtype=float)  # [m]
    return np.vstack([S, z])  # [3, 2]


def _check_clean_third_key(answer) -> None:
    """φ(k3) must be non-negative, not all zero, and leave the read with φ(k1) at exactly v1."""
    key = _as_array(answer, "your answer")
    if key.shape != (2,):
        raise ExerciseFailed(f"your answer has shape {list(key.shape)}; expected a key of 2 features")
    if not np.isfinite(key).all() or (key < 0).any() or not key.any():
        raise ExerciseFailed(f"φ(k3) = {key} must be finite, non-negative and not all zero")
    phi_k1, v1 = (np.asarray(x, dtype=float) for x in SEED_TOKENS[0])
    read = _state(SEED_TOKENS + [(key, THIRD[1])]).read(phi_k1)
    if not np.allclose(read, v1, rtol=0, atol=1e-12):
        raise ExerciseFailed(f"with φ(k3) = {key} the read with φ(k1) is {read}, not v1 = {v1}: "
                             "token 3 still gets weight φ(k1)·φ(k3) = "
                             f"{float(phi_k1 @ key):g}")


EXERCISES = [
    value_exercise("ch05.state", "Remove token 1 from the three-token state: the new S and z",
                   _state_without_first_token()),
    # many keys are right (any [0, c] with c > 0): checked by its property, not by a value
    Exercise("ch05.clean_third_key", "A third key that leaves the read with φ(k1) exactly v1",
             "construction", np.array([0.0, 1.0]), _check_clean_third_key),
    value_exercise("ch05.output", "Interference: the three-token state read with token 2's key φ(k2) = [0, 1]",
                   _state(SEED_TOKENS + [THIRD]).read(np.asarray(SEED_TOKENS[1][0], dtype=float))),
    value_exercise("ch05.fourth_token",
                   "Add φ(k3) = [1, 1], v3 = [2, 2] and φ(k4) = [2, 0], v4 = [0, 4]: the new o for φ(q) = [3, 1]",
                   _state(SEED_TOKENS + [THIRD, FOURTH]).read(QUERY), rtol=1e-3),
    value_exercise("ch05.balance", "The a for which φ(q) = [a, 1] reads two equal output components",
                   balanced_query_weight()),
]
