"""Chapter 13's exercises: each accepts its solution and rejects the mistakes a student is likely
to make, with a message that says what went wrong; the checkers' references (the package's
transitions, a simulation, an enumeration) agree with the closed forms."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lattn_edu import exercises
from lattn_edu.exercises import ExerciseFailed, ch13

IDS = ("ch13.householder_spectrum", "ch13.settling_steps", "ch13.two_step_transition",
       "ch13.kda_extra_exponentials", "ch13.s3_reflections")


def check(exercise_id, answer):
    exercises.CATALOG[exercise_id].check(answer)


def test_chapter_13_has_its_exercises():
    assert set(IDS) == {i for i in exercises.CATALOG if i.startswith("ch13.")}
    assert exercises.CATALOG["ch13.s3_reflections"].kind == "construction"


@pytest.mark.parametrize("exercise_id", IDS)
def test_accepts_its_solution(exercise_id):
    check(exercise_id, exercises.CATALOG[exercise_id].solution)


# --- ch13.householder_spectrum

def test_spectrum_cases_include_a_reflection_and_an_eigenvalue_below_minus_one():
    smallest = [ch13.solution_householder_spectrum(**case)[0] for case in ch13._spectrum_cases()]
    assert -1.0 in smallest and min(smallest) < -1
    assert {len(case["k"]) for case in ch13._spectrum_cases()} == {1, 3, 5, 7}


def test_spectrum_that_forgets_the_key_length_is_rejected():
    def unit_key_formula(k, beta):  # 1 − β holds only for ‖k‖ = 1
        return np.sort(np.append(np.ones(len(k) - 1), 1 - beta))

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch13.householder_spectrum", unit_key_formula)


def test_spectrum_unsorted_or_descending_is_rejected():
    def unsorted(k, beta):
        return np.append(np.ones(len(k) - 1), 1 - beta * (k @ k))

    def descending(k, beta):
        return ch13.solution_householder_spectrum(k, beta)[::-1]

    for answer in (unsorted, descending):
        with pytest.raises(ExerciseFailed, match="wrong value"):
            check("ch13.householder_spectrum", answer)


def test_package_transition_is_the_householder_matrix(rng):
    k = rng.standard_normal(4)
    np.testing.assert_allclose(ch13.package_transition(k, 1.3), np.eye(4) - 1.3 * np.outer(k, k),
                               rtol=0, atol=1e-14)


# --- ch13.settling_steps

def test_settling_floor_instead_of_ceil_is_rejected():
    def floor(decay, write, initial, tolerance):
        gap = np.abs(initial - write / (1 - decay))
        return max(0, int(np.floor((np.log(tolerance / gap) / np.log(decay)).max())))

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch13.settling_steps", floor)


def test_settling_with_the_fastest_channel_is_rejected():
    def fastest(decay, write, initial, tolerance):
        gap = np.abs(initial - write / (1 - decay))
        return max(0, int(np.ceil((np.log(tolerance / gap) / np.log(decay)).min())))

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch13.settling_steps", fastest)


def test_settling_cases_have_no_near_ties_and_cover_the_spec():
    """At T − 1 the error is clearly above tolerance, at T clearly below, so the closed form and
    the simulation cannot round to different integers."""
    cases = ch13._settling_cases()
    steps = [ch13.solution_settling_steps(**case) for case in cases]
    assert 0 in steps and max(steps) > 700
    assert {len(case["decay"]) for case in cases} >= {1, 3, 5, 7}
    for case, t in zip(cases, steps):
        gap = np.abs(case["initial"] - case["write"] / (1 - case["decay"]))
        assert (case["decay"] ** t * gap).max() <= case["tolerance"] * (1 - 1e-6)
        if t > 0:
            assert (case["decay"] ** (t - 1) * gap).max() > case["tolerance"] * (1 + 1e-6)


def test_simulation_carries_the_state_across_blocks():
    case = ch13._settling_cases()[1]
    assert ch13.simulated_settling_steps(**case, block=7) == ch13.simulated_settling_steps(**case)


# --- ch13.two_step_transition

def householders(k, beta):
    return [np.eye(k.shape[1]) - b * np.outer(key, key) for key, b in zip(k, beta)]


def test_two_step_in_the_wrong_order_is_rejected():
    def wrong_order(k, v, beta):  # H1 H2: step 2 applied first
        h1, h2 = householders(k, beta)
        return h1 @ h2, h2 @ (beta[0] * np.outer(k[0], v[0])) + beta[1] * np.outer(k[1], v[1])

    with pytest.raises(ExerciseFailed, match=r"output 1\) gave a wrong value"):
        check("ch13.two_step_transition", wrong_order)


def test_two_step_write_without_the_second_householder_is_rejected():
    def plain_sum(k, v, beta):  # β1 k1 v1ᵀ + β2 k2 v2ᵀ: the second step would not correct the first
        h1, h2 = householders(k, beta)
        return h2 @ h1, beta[0] * np.outer(k[0], v[0]) + beta[1] * np.outer(k[1], v[1])

    with pytest.raises(ExerciseFailed, match=r"output 2\) gave a wrong value"):
        check("ch13.two_step_transition", plain_sum)


# --- ch13.kda_extra_exponentials

def test_kda_count_of_the_largest_case():
    assert ch13.solution_kda_extra_exponentials(64, 128) == 280416
    assert ch13.counted_exponentials(64, 128) - ch13.counted_exponentials(64, 1) == 280416


def test_kda_count_over_the_full_square_is_rejected():
    def square(c, d_k):
        return (d_k - 1) * (c * c + 2 * c)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch13.kda_extra_exponentials", square)


def test_kda_total_instead_of_extra_is_rejected():
    def total(c, d_k):
        return d_k * (c * (c + 1) // 2 + 2 * c)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch13.kda_extra_exponentials", total)


# --- ch13.s3_reflections

def test_s3_solution_uses_one_reflection_for_a_transposition_and_two_for_a_cycle():
    for permutation in itertools.permutations(range(3)):
        fixed = sum(i == s for i, s in enumerate(permutation))
        _, betas = ch13.solution_s3_reflections(permutation)
        assert sorted(betas) == {3: [0, 0], 1: [0, 2], 0: [2, 2]}[fixed]


def test_s3_with_the_reflections_swapped_is_rejected():
    def swapped(permutation):
        keys, betas = ch13.solution_s3_reflections(permutation)
        return keys[::-1], betas[::-1]

    with pytest.raises(ExerciseFailed, match=r"for σ = \(1, 2, 0\): .*wrong order"):
        check("ch13.s3_reflections", swapped)


def test_s3_with_keys_that_are_not_unit_is_rejected():
    def long_keys(permutation):
        keys, betas = ch13.solution_s3_reflections(permutation)
        return 2 * keys, betas / 4  # the same transition, but not a reflection with a unit key

    with pytest.raises(ExerciseFailed, match="norm 1"):
        check("ch13.s3_reflections", long_keys)


def test_s3_with_a_step_size_above_two_is_rejected():
    def too_large(permutation):
        keys, betas = ch13.solution_s3_reflections(permutation)
        return keys, np.where(betas == 2, 2.5, betas)

    with pytest.raises(ExerciseFailed, match=r"β must lie in \[0, 2\]"):
        check("ch13.s3_reflections", too_large)


def test_s3_transposition_as_two_equal_reflections_is_rejected():
    def twice(permutation):  # a transposition from two β = 2 reflections with one key: they cancel
        keys, betas = ch13.solution_s3_reflections(permutation)
        if sorted(betas) == [0, 2]:
            key = keys[np.argmax(betas)]
            return np.stack([key, key]), np.array([2.0, 2.0])
        return keys, betas

    with pytest.raises(ExerciseFailed, match=r"permutation matrix of \(0, 1, 2\).*determinant −1"):
        check("ch13.s3_reflections", twice)


@pytest.mark.parametrize("answer,message", [
    (lambda permutation: None, "returned None"),
    (lambda permutation: np.eye(3)[:2], "must return a pair"),
    (lambda permutation: (np.eye(3)[:2],), "must return a pair"),
    (lambda permutation: ("keys", "betas"), "not a number"),
    (lambda permutation: (np.eye(3), np.zeros(2)), r"shape \[3, 3\]"),
    (lambda permutation: (np.full((2, 3), np.nan), np.zeros(2)), "NaN"),
    (lambda permutation: 1 / 0, "raised ZeroDivisionError"),
    (42, "expected a function"),
])
def test_s3_rejects_malformed_answers_clearly(answer, message):
    with pytest.raises(ExerciseFailed, match=message):
        check("ch13.s3_reflections", answer)
