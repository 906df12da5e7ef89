"""Part II exercises (chapters 10, 11 and 12): each accepts its solution and rejects the mistakes a
student is likely to make, not only perturbed numbers."""

from __future__ import annotations

import numpy as np
import pytest

from lattn_edu import exercises
from lattn_edu.exercises import ExerciseFailed, ch10, ch11, ch12

PART2 = sorted(i for i in exercises.CATALOG if i.startswith(("ch10.", "ch11.", "ch12.")))


def test_part2_has_the_exercises_the_issue_asks_for():
    assert {"ch11.decay_mask", "ch11.chunk_step", "ch11.combine", "ch11.doubling_combines",
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


def test_combine_in_the_wrong_order_is_rejected():
    def backwards(first, second):
        (a, x), (b, y) = first, second
        return a * b, a * y + x  # applies second, then first

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch11.combine"].check(backwards)


@pytest.mark.parametrize("answer", [1000 * 10, 1000 * 9, 2 * 1000], ids=["N-log-N", "N-rounds", "2N"])
def test_doubling_count_rejects_the_rough_estimates(answer):
    with pytest.raises(ExerciseFailed):
        exercises.CATALOG["ch11.doubling_combines"].check(answer)
