"""Chapter 10's exercises accept their solutions and reject perturbed or typical wrong answers."""

from __future__ import annotations

import numpy as np
import pytest

from lattn_edu import exercises
from lattn_edu.exercises import ExerciseFailed, ch10

CH10 = sorted(i for i in exercises.CATALOG if i.startswith("ch10."))


def test_chapter_10_has_the_exercises_the_issue_asks_for():
    assert {"ch10.delta_update", "ch10.loss_gradient", "ch10.crosstalk", "ch10.t_matrix",
            "ch10.chunk_step"} <= set(CH10)


@pytest.mark.parametrize("exercise_id", CH10)
def test_accepts_its_solution(exercise_id):
    exercise = exercises.CATALOG[exercise_id]
    exercise.check(exercise.solution)


@pytest.mark.parametrize("exercise_id", CH10)
def test_rejects_a_perturbed_answer(exercise_id):
    solution = exercises.CATALOG[exercise_id].solution

    def perturbed(**kwargs):
        result = solution(**kwargs)
        parts = result if isinstance(result, tuple) else (result,)
        moved = tuple(np.asarray(p, dtype=np.float64) * (1 + 1e-3) + 1e-3 for p in parts)
        return moved if isinstance(result, tuple) else moved[0]

    with pytest.raises(ExerciseFailed):
        exercises.CATALOG[exercise_id].check(perturbed)


def test_additive_update_is_rejected_as_a_delta_update():
    def additive(state, k, v, beta):
        return state + beta * np.outer(k, v)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch10.delta_update"].check(additive)


def test_gradient_with_the_wrong_sign_is_rejected():
    def ascent(state, k, v):
        return np.outer(k, v - state.T @ k)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch10.loss_gradient"].check(ascent)


def test_crosstalk_that_keeps_the_signal_is_rejected():
    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch10.crosstalk"].check(lambda keys, values: keys @ keys.T @ values)


def test_t_matrix_without_the_inverse_is_rejected():
    def forgot_inverse(k, beta):  # I + A instead of (I + A)⁻¹
        return np.eye(len(k)) + np.tril(beta[:, None] * (k @ k.T), -1)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch10.t_matrix"].check(forgot_inverse)


def test_chunk_step_that_ignores_the_carried_state_is_rejected():
    def forgets_the_state(q, k, v, beta, state):
        out, after = ch10.solution_chunk_step(q, k, v, beta, np.zeros_like(state))
        return out, after

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch10.chunk_step"].check(forgets_the_state)


def test_chunk_step_as_additive_attention_is_rejected():
    def additive(q, k, v, beta, state):  # linear attention's chunk: no T, no pseudo-values
        values = beta[:, None] * v
        return q @ state + np.tril(q @ k.T) @ values, state + k.T @ values

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch10.chunk_step"].check(additive)
