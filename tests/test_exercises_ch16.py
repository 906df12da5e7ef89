"""Chapter 16's exercises: each accepts its solution, its checker stands on the package's own code
(lattn_edu.recall), and it rejects the slips a student is likely to make."""

from __future__ import annotations

import pytest

from lattn_edu.exercises import CATALOG, ExerciseFailed, ch16
from lattn_edu.log_linear import levels_needed
from lattn_edu.recall import window_reach

IDS = ("ch16.window_reach", "ch16.numbers_kept", "ch16.luck_chance")


def check(exercise_id, answer):
    CATALOG[exercise_id].check(answer)


def test_chapter_16_has_its_exercises():
    assert set(IDS) == {i for i in CATALOG if i.startswith("ch16.")}
    assert [CATALOG[i].kind for i in IDS] == ["code", "code", "value"]


@pytest.mark.parametrize("exercise_id", IDS)
def test_accepts_its_solution(exercise_id):
    check(exercise_id, CATALOG[exercise_id].solution)


# --- ch16.window_reach

def test_reach_of_the_study_s_windows_by_hand():
    # P = 32: a window of 64 sees the pair when i <= 2j, 768 of the 1024 (i, j)
    assert window_reach(32, 64) == ch16.solution_window_reach(32, 64) == 768 / 1024
    assert window_reach(32, 128) == 1.0  # 2P + i − 1 <= 94 < 128
    # P = 1: the query (position 2) is one token after its value (position 1)
    assert window_reach(1, 1) == 0.0  # a window of one token holds the query alone
    assert window_reach(1, 2) == 1.0


@pytest.mark.parametrize("wrong", [
    lambda num_pairs, window: ch16.solution_window_reach(num_pairs, window + 1),  # <= instead of <
    lambda num_pairs, window: min(1.0, window / (3 * num_pairs)),  # share of the sequence
    lambda num_pairs, window: ch16.solution_window_reach(num_pairs, window - 1),  # the value's key
], ids=["distance <= W", "share of the sequence", "key, not value"])
def test_reach_slips_are_rejected(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch16.window_reach", wrong)


# --- ch16.numbers_kept

def test_numbers_kept_after_96_tokens_are_the_study_s():
    # the recall study places each stack at these (d_model 64, four heads of 16, 96 tokens)
    kept = {layers: ch16.package_numbers_kept(layers, 64, 4, 32, 96)
            for layers in (("softmax",) * 4, ("gated_deltanet",) * 3 + ("softmax",), ("mamba2",) * 4)}
    assert kept[("softmax",) * 4] == 4 * 96 * 4 * 2 * 16 == 49_152
    assert kept[("gated_deltanet",) * 3 + ("softmax",)] == 3 * 4 * 16 * 16 + 96 * 4 * 2 * 16 == 15_360
    assert kept[("mamba2",) * 4] == 4 * 4 * 16 * 16 == 4096


def test_log_linear_keeps_one_state_per_level():
    # 96 tokens need 8 levels (chapter 15): 8 states of 16 × 16 per head, four heads
    assert ch16.package_numbers_kept(("log_linear",), 64, 4, 32, 96) == 8 * 4 * 16 * 16
    assert ch16.solution_numbers_kept(("log_linear",), 64, 4, 32, 96) == 8 * 4 * 16 * 16


def test_kept_cases_cover_every_kind_a_short_sequence_and_a_window_wider_than_it():
    cases = ch16._kept_cases()
    assert {layer for case in cases for layer in case["layers"]} == set(ch16.NUMBERS_KEPT_KINDS)
    assert any(case["n"] < case["window"] and "sliding_window" in case["layers"] for case in cases)
    assert any(case["n"] > case["window"] and "sliding_window" in case["layers"] for case in cases)
    assert any(case["d_model"] % 2 for case in cases)


@pytest.mark.parametrize("wrong", [
    lambda **c: ch16.solution_numbers_kept(**{**c, "window": 10**9}),  # the window caches everything
    lambda **c: ch16.solution_numbers_kept(**c) - sum(  # keys only
        min(c["n"], c["window"] if layer == "sliding_window" else c["n"]) * c["d_model"]
        for layer in c["layers"] if layer in ("softmax", "sliding_window")),
    lambda **c: ch16.solution_numbers_kept(**{**c, "num_heads": 1}),  # one state of d_model²
    lambda **c: ch16.solution_numbers_kept(**c) - sum(  # log-linear: one state, as Mamba-2
        (levels_needed(c["n"]) - 1) * c["d_model"] ** 2 // c["num_heads"]
        for layer in c["layers"] if layer == "log_linear"),
], ids=["window ignored", "keys only", "one big state", "log-linear as one state"])
def test_numbers_kept_slips_are_rejected(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch16.numbers_kept", wrong)


# --- ch16.luck_chance

def test_luck_chances_are_the_formula_s_counted_over_every_outcome():
    # S stacks on n seeds: S · (1/S)^n; the chapter's 3 stacks on 3 seeds is 1 in 9
    assert ch16.chance_one_stack_first_on_every_seed(3, 3) == pytest.approx(1 / 9)
    assert ch16.chance_one_stack_first_on_every_seed(2, 3) == pytest.approx(2 / 2**3)
    for stacks, seeds in ((4, 3), (3, 5), (5, 2)):
        assert ch16.chance_one_stack_first_on_every_seed(stacks, seeds) == pytest.approx(
            stacks * (1 / stacks) ** seeds)
    assert list(ch16.LUCK_CHANCES) == pytest.approx([1 / 16, 1 / 81, 1 / 36])


def test_same_ranking_chances_are_the_formula_s_counted_over_every_outcome():
    # S stacks on n seeds: S! orders, one of them on every seed: S! · (1/S!)^n
    assert ch16.chance_same_ranking_on_every_seed(3, 3) == pytest.approx(1 / 36)
    assert ch16.chance_same_ranking_on_every_seed(2, 3) == pytest.approx(
        ch16.chance_one_stack_first_on_every_seed(2, 3))  # two stacks: first fixes the order
    assert ch16.chance_same_ranking_on_every_seed(3, 1) == 1.0
    assert ch16.chance_same_ranking_on_every_seed(4, 2) == pytest.approx(1 / 24)


@pytest.mark.parametrize("wrong", [
    [1 / 4**3, 1 / 3**5, 1 / 6**3],  # a given stack or ranking, not any of them
    [1 / 2**3, 1 / 2**5, 1 / 36],  # a 3-0 win's chance, not a first place
    [3 * (1 / 3) ** 4, 5 * (1 / 5) ** 3, 1 / 36],  # stacks and seeds swapped
    [1 / 9, 1 / 9, 1 / 9],  # the chapter's case copied
    [1 / 16, 1 / 81, 1 / 9],  # (c) as "some stack first", not the full ranking
], ids=["a given stack", "3-0 win", "swapped", "chapter's case", "first, not ranking"])
def test_luck_slips_are_rejected(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch16.luck_chance", wrong)


def test_luck_without_part_c_is_rejected_by_its_shape():
    with pytest.raises(ExerciseFailed, match="shape"):
        check("ch16.luck_chance", [1 / 16, 1 / 81])  # the two numbers of (a) and (b) alone


@pytest.mark.parametrize("exercise_id", [i for i in IDS if CATALOG[i].kind == "code"])
def test_each_solution_runs_as_the_book_shows_it_in_the_chapter_s_namespace(exercise_id):
    # the book shows a solution's source (literalinclude); pasted into the exercise cell, it sees
    # only what the chapter's exercise section imports: numpy as np and exercises
    import inspect
    import textwrap

    import numpy as np

    from lattn_edu import exercises

    solution = CATALOG[exercise_id].solution
    namespace = {"np": np, "exercises": exercises}
    exec(textwrap.dedent(inspect.getsource(solution)), namespace)
    check(exercise_id, namespace[solution.__name__])
