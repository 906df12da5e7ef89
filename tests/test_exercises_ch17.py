"""Chapter 17's exercises: each accepts its solution, its checker stands on the package's own code
(lattn_edu.lm.probes), and it rejects the slips a student is likely to make."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lattn_edu.exercises import CATALOG, ExerciseFailed, ch17
from lattn_edu.lm import probes

IDS = ("ch17.bits_per_character", "ch17.margin")


def check(exercise_id, answer):
    CATALOG[exercise_id].check(answer)


def test_chapter_17_has_its_exercises():
    assert set(IDS) == {i for i in CATALOG if i.startswith("ch17.")}
    assert [CATALOG[i].kind for i in IDS] == ["code", "code"]


@pytest.mark.parametrize("exercise_id", IDS)
def test_accepts_its_solution(exercise_id):
    check(exercise_id, CATALOG[exercise_id].solution)


# --- ch17.bits_per_character

def test_a_uniform_guess_among_72_characters_costs_log2_72_bits():
    uniform = np.full((2, 3), math.log(72))  # −ln(1/72) nats at every position
    assert ch17.package_bits_per_character(uniform, [3, 1]) == pytest.approx(math.log2(72))


def per_context(losses, lengths):  # each context weighs the same, whatever its length
    return float(np.mean([losses[b, :n].mean() for b, n in enumerate(lengths)])) / math.log(2)


def test_weighting_each_context_equally_differs_on_some_case():
    differs = [case for case in ch17._bits_cases()
               if abs(per_context(**case) - ch17.package_bits_per_character(**case)) > 1e-3]
    assert differs, "no case tells a per-context mean from a per-character one"


@pytest.mark.parametrize("wrong", [
    lambda losses, lengths: float(losses.mean()) / math.log(2),  # padding scored too
    per_context,  # every context weighs the same
    lambda losses, lengths: ch17.solution_bits_per_character(losses, lengths) * math.log(2),  # nats
    lambda losses, lengths: ch17.solution_bits_per_character(losses, lengths) * math.log(2) ** 2,
    lambda losses, lengths: float(losses[:, 0].mean()) / math.log(2),  # the first position only
], ids=["padding scored", "per context", "nats", "times ln 2", "first position"])
def test_bits_per_character_slips_are_rejected(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch17.bits_per_character", wrong)


# --- ch17.margin

def test_margin_by_hand():
    model = np.array([3.0, 2.0, 2.0, 1.0, 1.0])  # gain 2 − 1 = 1 with early 1:3, late 3:5
    window = np.array([3.0, 2.5, 2.5, 2.0, 2.0])  # gain 0.5
    assert probes.stretch_gain(model, slice(1, 3), slice(3, 5)) == 1.0
    assert probes.window_margin(model, window, slice(1, 3), slice(3, 5)) == 0.5
    assert ch17.solution_margin(model, window, slice(1, 3), slice(3, 5)) == 0.5


def test_margin_cases_have_odd_sizes_and_the_lab_s_stretches():
    cases = ch17._margin_cases()
    assert any(len(c["position_bits"]) % 2 for c in cases)
    assert any((c["early"], c["late"]) == (probes.EARLY_STRETCH, probes.LATE_STRETCH) for c in cases)
    assert any(c["early"].stop - c["early"].start != c["late"].stop - c["late"].start for c in cases)


@pytest.mark.parametrize("wrong", [
    lambda position_bits, window_bits, early, late:  # late − early: the sign flipped
        -ch17.solution_margin(position_bits, window_bits, early, late),
    lambda position_bits, window_bits, early, late:  # the gain alone, no control
        float(np.mean(position_bits[early]) - np.mean(position_bits[late])),
    lambda position_bits, window_bits, early, late:  # the window model's gain minus the model's
        ch17.solution_margin(window_bits, position_bits, early, late),
    lambda position_bits, window_bits, early, late:  # sums, not means
        float(np.sum(position_bits[early]) - np.sum(position_bits[late])
              - np.sum(window_bits[early]) + np.sum(window_bits[late])),
], ids=["sign", "no control", "swapped", "sums"])
def test_margin_slips_are_rejected(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch17.margin", wrong)
