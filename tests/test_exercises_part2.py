"""Part II exercises (chapters 10, 11 and 12): each accepts its solution and rejects the mistakes a
student is likely to make, not only perturbed numbers."""

from __future__ import annotations

import numpy as np
import pytest

from lattn_edu import exercises
from lattn_edu.exercises import ExerciseFailed, ch10, ch11

PART2 = sorted(i for i in exercises.CATALOG if i.startswith(("ch10.", "ch11.", "ch12.")))


def test_part2_has_the_exercises_the_issue_asks_for():
    assert {"ch11.decay_mask", "ch11.chunk_step", "ch11.underflow_step", "ch11.doubling_combines",
            "ch12.initial_state_gradient", "ch12.delta_log_decay", "ch12.ut_backward"} <= set(PART2)


@pytest.mark.parametrize("exercise_id", PART2)
def test_accepts_its_solution(exercise_id):
    exercise = exercises.CATALOG[exercise_id]
    exercise.check(exercise.solution)


@pytest.mark.parametrize("exercise_id", [i for i in PART2 if exercises.CATALOG[i].kind == "code"])
def test_rejects_a_perturbed_answer(exercise_id):
    solution = exercises.CATALOG[exercise_id].solution

    def perturbed(**kwargs):
        result = solution(**kwargs)
        parts = result if isinstance(result, tuple) else (result,)
        moved = tuple(np.asarray(p, dtype=np.float64) * (1 + 1e-3) + 1e-3 for p in parts)
        return moved if isinstance(result, tuple) else moved[0]

    with pytest.raises(ExerciseFailed):
        exercises.CATALOG[exercise_id].check(perturbed)


def test_decay_mask_by_cumulative_products_is_rejected():
    def by_products(log_decay):  # Π_{l<=i} a_l / Π_{l<=j} a_l: 0/0 once the products underflow
        prefix = np.cumprod(np.exp(log_decay))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.tril(prefix[:, None] / prefix[None, :])

    with pytest.raises(ExerciseFailed, match="NaN or inf"):
        exercises.CATALOG["ch11.decay_mask"].check(by_products)


@pytest.mark.parametrize("chapter", [ch10, ch11], ids=["ch10", "ch11"])
def test_chunk_step_without_the_carried_state_is_rejected(chapter):
    def forgets_the_state(**case):
        return chapter.solution_chunk_step(**{**case, "state": np.zeros_like(case["state"])})

    exercise_id = f"{chapter.__name__.rsplit('.', 1)[-1]}.chunk_step"
    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG[exercise_id].check(forgets_the_state)


def test_underflow_prediction_accepts_the_derivation_with_either_rounding():
    exercises.CATALOG["ch11.underflow_step"].check(745)  # 1075 ln 2
    exercises.CATALOG["ch11.underflow_step"].check(744)  # 1074 ln 2, the smallest subnormal


@pytest.mark.parametrize("answer", [708, 1075, 372, 753], ids=["smallest-normal", "log2-not-ln", "half",
                                                                "one-measured-run"])
def test_underflow_prediction_rejects_the_likely_slips(answer):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch11.underflow_step"].check(answer)


def test_underflow_prediction_is_near_seeded_runs():
    """A random walk around −t: seeded runs land within 3√(t/12) of the prediction."""
    expected = exercises.CATALOG["ch11.underflow_step"].solution
    for seed in (111, 117, 119):
        prefix = np.cumprod(np.exp(-np.random.default_rng(seed).uniform(0.5, 1.5, 3001)))
        assert abs(int(np.argmax(prefix == 0)) + 1 - expected) < 3 * np.sqrt(expected / 12)


@pytest.mark.parametrize("answer", [1000 * 10, 1000 * 9, 2 * 1000], ids=["N-log-N", "N-rounds", "2N"])
def test_doubling_count_rejects_the_rough_estimates(answer):
    with pytest.raises(ExerciseFailed):
        exercises.CATALOG["ch11.doubling_combines"].check(answer)


def test_ssd_matrix_is_in_the_catalog():
    assert "ch11.ssd_matrix" in PART2


@pytest.mark.parametrize("mistake", ["no step size in b", "step size of the row", "no skip"])
def test_ssd_matrix_rejects_the_likely_slips(mistake):
    def slipped(delta, a, b, c, d_skip):
        mask = ch11.solution_decay_mask(a * delta)
        if mistake == "no step size in b":
            return (c @ b.T) * mask + d_skip * np.eye(len(delta))
        if mistake == "step size of the row":  # Δ_i instead of Δ_j
            return delta[:, None] * (c @ b.T) * mask + d_skip * np.eye(len(delta))
        return (c @ (delta[:, None] * b).T) * mask

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch11.ssd_matrix"].check(slipped)


def test_ssd_matrix_from_products_of_decays_is_rejected():
    def by_products(delta, a, b, c, d_skip):  # P_i / P_j: 0/0 once the products underflow
        prefix = np.cumprod(np.exp(a * delta))
        with np.errstate(divide="ignore", invalid="ignore"):
            mask = np.tril(prefix[:, None] / prefix[None, :])
        return (c @ (delta[:, None] * b).T) * mask + d_skip * np.eye(len(delta))

    with pytest.raises(ExerciseFailed, match="NaN or inf"):
        exercises.CATALOG["ch11.ssd_matrix"].check(by_products)
