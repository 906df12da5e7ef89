"""Chapter 10's exercises reject the typical wrong answers (accepting the solution and rejecting
perturbed answers is tested for every Part II exercise in test_exercises_part2.py)."""

from __future__ import annotations

import numpy as np
import pytest

from lattn_edu import exercises
from lattn_edu.exercises import ExerciseFailed

CH10 = sorted(i for i in exercises.CATALOG if i.startswith("ch10."))


def test_chapter_10_has_the_exercises_the_issue_asks_for():
    assert {"ch10.delta_update", "ch10.loss_gradient", "ch10.exact_step", "ch10.crosstalk",
            "ch10.additive_past_capacity", "ch10.t_matrix", "ch10.chunk_step"} <= set(CH10)


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


def test_chunk_step_as_additive_attention_is_rejected():
    def additive(q, k, v, beta, state):  # linear attention's chunk: no T, no pseudo-values
        values = beta[:, None] * v
        return q @ state + np.tril(q @ k.T) @ values, state + k.T @ values

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch10.chunk_step"].check(additive)


def test_paper_chunk_step_is_in_the_catalog():
    assert "ch10.paper_chunk_step" in CH10


def test_paper_chunk_step_in_the_books_layout_is_rejected():
    from lattn_edu.exercises import ch10

    def book_layout(q, k, v, beta, log_decay, state):  # forgets to transpose the state it returns
        out, after = ch10.solution_paper_chunk_step(q, k, v, beta, log_decay, state)
        return out, after.T

    with pytest.raises(ExerciseFailed, match="shape"):
        exercises.CATALOG["ch10.paper_chunk_step"].check(book_layout)


def test_paper_chunk_step_with_an_ungated_t_matrix_is_rejected():
    import lattn_edu as la
    from lattn_edu.exercises import ch10

    def ungated_t(q, k, v, beta, log_decay, state):  # Γ without the decay mask L
        real = la.ut_transform
        la.ut_transform = lambda k, beta, log_decay=None: real(k, beta)
        try:
            return ch10.solution_paper_chunk_step(q, k, v, beta, log_decay, state)
        finally:
            la.ut_transform = real

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch10.paper_chunk_step"].check(ungated_t)


def test_paper_chunk_step_without_the_decay_on_the_incoming_state_is_rejected():
    from lattn_edu.exercises import ch10

    def undecayed(q, k, v, beta, log_decay, state):  # passes the incoming state on without γ_C
        out, after = ch10.solution_paper_chunk_step(q, k, v, beta, log_decay, state)
        return out, after + (1 - np.exp(np.sum(log_decay))) * state

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch10.paper_chunk_step"].check(undecayed)


@pytest.mark.parametrize("steps", [lambda n: np.ones(n), lambda n: np.full(n, 1.0 / n),
                                   lambda n: 1.0 / np.arange(2, n + 2)],
                         ids=["beta-1-keeps-the-latest", "constant-1-over-n", "off-by-one"])
def test_mean_steps_rejects_the_likely_slips(steps):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch10.mean_steps"].check(steps)


def test_mean_steps_outside_the_stable_range_are_refused_clearly():
    with pytest.raises(ExerciseFailed, match="refused"):
        exercises.CATALOG["ch10.mean_steps"].check(lambda n: np.full(n, 3.0))


def test_exact_step_accepts_one_over_the_squared_length_only():
    exercise = exercises.CATALOG["ch10.exact_step"]
    exercise.check(1 / 1.6**2)
    for wrong in (1.0, 1 / 1.6, 2 / 1.6**2):  # unit-key habit, forgot the square, reflection
        with pytest.raises(ExerciseFailed, match="wrong value"):
            exercise.check(wrong)


def test_exact_step_refuses_a_list_by_shape():
    with pytest.raises(ExerciseFailed, match="shape"):
        exercises.CATALOG["ch10.exact_step"].check([0.39, 0.4])


def test_exact_step_outside_the_stable_range_is_refused_clearly():
    with pytest.raises(ExerciseFailed, match="refused"):
        exercises.CATALOG["ch10.exact_step"].check(2.5)


def test_additive_prediction_is_the_measured_mean_squared_error():
    """K₁K₂ᵀ is orthogonal, so the squared errors of unit values average to exactly 1."""
    from lattn_edu import memory

    for seed in range(3):
        squared = np.mean(memory.memory_errors(62, 31, 7, "additive", "orthogonal", seed=seed) ** 2)
        exercises.CATALOG["ch10.additive_past_capacity"].check(squared)


@pytest.mark.parametrize("answer", [0.0, 63 / 32, 0.5], ids=["exact", "random-key-law", "half"])
def test_additive_prediction_rejects_the_likely_slips(answer):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch10.additive_past_capacity"].check(answer)


def test_crosstalk_reference_is_the_package_term():
    from lattn_edu.exercises import ch10
    from lattn_edu.memory import crosstalk

    rng = np.random.default_rng(5)
    keys, values = rng.standard_normal((11, 7)), rng.standard_normal((11, 3))
    np.testing.assert_allclose(ch10._crosstalk_by_loops(keys, values), crosstalk(keys, values)[1],
                               rtol=1e-12, atol=1e-12)
