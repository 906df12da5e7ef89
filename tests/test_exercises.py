"""Every exercise accepts its own solution and rejects wrong answers with a clear ExerciseFailed:
slightly perturbed outputs, a function that raises, the wrong shape, None, a non-function."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import types
from pathlib import Path

import nbformat
import numpy as np
import pytest

import lattn_edu as la
from lattn_edu import exercises
from lattn_edu.exercises import ExerciseFailed, Quiz, ch09

IDS = sorted(exercises.CATALOG)
CODE = [i for i in IDS if exercises.CATALOG[i].kind == "code"]
VALUES = [i for i in IDS if exercises.CATALOG[i].kind == "value"]


def perturb(result, relative=1e-3):
    """Shift the largest entry of every returned array by `relative` of the array's scale."""
    if isinstance(result, tuple):
        return tuple(perturb(part, relative) for part in result)
    array = np.array(result, dtype=np.float64)
    flat = array.reshape(-1)
    flat[np.argmax(np.abs(flat))] += relative * max(np.abs(flat).max(), 1.0)
    return array


def test_catalog_ids_name_their_chapter():
    assert IDS and all(re.fullmatch(r"ch\d\d\.\w+", i) for i in IDS)
    assert all(exercises.CATALOG[i].id == i for i in IDS)


def test_at_least_half_ask_for_code():
    assert len(CODE) >= len(IDS) / 2


@pytest.mark.parametrize("exercise_id", IDS)
def test_accepts_its_own_solution(exercise_id, capsys):
    exercise = exercises.CATALOG[exercise_id]
    exercise.check(exercise.solution)
    exercise.feedback(exercise.solution)
    assert capsys.readouterr().out == f"✓ {exercise_id}: correct.\n"


@pytest.mark.parametrize("exercise_id", CODE)
def test_rejects_a_slightly_perturbed_function(exercise_id):
    solution = exercises.CATALOG[exercise_id].solution

    def almost(**kwargs):
        return perturb(solution(**kwargs))

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG[exercise_id].check(almost)


@pytest.mark.parametrize("exercise_id", CODE)
def test_rejects_a_function_that_raises_naming_the_error_and_input(exercise_id):
    def broken(**kwargs):
        raise IndexError("index 7 is out of bounds")

    with pytest.raises(ExerciseFailed, match=r"raised IndexError: index 7 is out of bounds for input \w+"):
        exercises.CATALOG[exercise_id].check(broken)


@pytest.mark.parametrize("exercise_id", CODE)
def test_rejects_the_wrong_shape(exercise_id):
    solution = exercises.CATALOG[exercise_id].solution

    def extra_axis(**kwargs):
        result = solution(**kwargs)
        if isinstance(result, tuple):
            return tuple(np.asarray(part)[None] for part in result)
        return np.asarray(result)[None]

    with pytest.raises(ExerciseFailed, match="shape"):
        exercises.CATALOG[exercise_id].check(extra_axis)


@pytest.mark.parametrize("exercise_id", CODE)
def test_rejects_none_and_non_functions(exercise_id):
    with pytest.raises(ExerciseFailed, match="returned None"):
        exercises.CATALOG[exercise_id].check(lambda **kwargs: None)
    with pytest.raises(ExerciseFailed, match="expected a function"):
        exercises.CATALOG[exercise_id].check(42)


@pytest.mark.parametrize("exercise_id", VALUES)
def test_rejects_a_slightly_wrong_value_and_the_wrong_shape(exercise_id):
    expected = exercises.CATALOG[exercise_id].solution
    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG[exercise_id].check(perturb(expected, relative=1e-2))
    with pytest.raises(ExerciseFailed, match="shape"):
        exercises.CATALOG[exercise_id].check(np.asarray(expected)[None, None])
    with pytest.raises(ExerciseFailed, match="not a number"):
        exercises.CATALOG[exercise_id].check("seven")


def test_unfinished_stub_is_not_attempted_not_wrong(capsys):
    exercise = exercises.CATALOG[CODE[0]]

    def stub(**kwargs):
        raise NotImplementedError

    exercise.feedback(stub)
    assert "not attempted yet" in capsys.readouterr().out
    with pytest.raises(ExerciseFailed, match="unfinished stub"):
        exercise.check(stub)
    exercises.CATALOG[VALUES[0]].feedback(...)
    assert "not attempted yet" in capsys.readouterr().out


def test_feedback_shows_the_failure_message(capsys):
    exercise = exercises.CATALOG["ch02.elu_plus_one"]
    exercise.feedback(lambda x: x + 1)
    out = capsys.readouterr().out
    assert out.startswith("✗ ch02.elu_plus_one: ") and "expected" in out and "got" in out


def test_an_answer_that_mutates_its_input_cannot_fool_the_checker():
    exercise = exercises.CATALOG["ch02.elu_plus_one"]

    def sneaky(x):
        result = exercise.solution(x)
        x[...] = 0  # scribble over the input after computing
        return result

    exercise.check(sneaky)


def test_quiz_html_is_self_contained_and_marks_one_answer():
    quiz = Quiz("2 + 2?", ("3", "4"), 1, ("too small", "yes"))
    page = quiz._repr_html_()
    assert page.count('data-correct="1"') == 1 and "http" not in page
    assert quiz.is_correct(1) and not quiz.is_correct(0)
    with pytest.raises(ValueError, match="answer must index an option"):
        Quiz("?", ("a", "b"), 2, ("x", "y"))


def test_quiz_plain_text_lists_the_options_without_the_answer_or_its_explanations():
    quiz = Quiz("Which is even?", ("three", "four", "five"), 1, ("odd", "the one", "odd too"))
    text = repr(quiz)
    assert text.splitlines()[:4] == ["Which is even?", "  0. three", "  1. four", "  2. five"]
    assert "answer" not in text and "the one" not in text and "odd" not in text


@pytest.mark.parametrize("n,d", [(9, 3), (5, 7), (31, 3), (1, 4), (64, 4)])
def test_rank_bound_is_the_rank_random_taylor_features_reach(n, d):
    # the derivation's bound is attained: generic inputs give rank exactly min(N, m)
    rng = np.random.default_rng(n * 100 + d)
    phi_q, phi_k = la.taylor_features(rng.standard_normal((2, n, d)))
    rank = la.numerical_rank(phi_q @ phi_k.T)
    assert rank == exercises.CATALOG["ch02.rank_bound"].solution(n=n, d=d)


def test_elu_checker_refuses_an_exponential_that_overflows():
    def overflowing(x):
        return np.where(x > 0, x + 1, np.exp(x))  # right values, but exp(800) = inf on the way

    with pytest.raises(ExerciseFailed, match="overflow"):
        exercises.CATALOG["ch02.elu_plus_one"].check(overflowing)


def test_kernel_weights_checker_switches_the_package_helper_off():
    def helper(q, k):
        return la.effective_attention_matrix(q, k, "elu+1", causal=True, eps=0.0)

    with pytest.raises(ExerciseFailed, match="switched off"):
        exercises.CATALOG["ch02.kernel_weights"].check(helper)
    q = np.ones((3, 2))
    assert la.effective_attention_matrix(q, q).shape == (3, 3)  # restored afterwards


def test_one_weight_accepts_three_digits_from_a_rounded_e():
    exercise = exercises.CATALOG["ch02.one_weight"]
    exercise.check(3 + 3 * 0.37)  # 4.11, from e^-1 rounded to two digits
    with pytest.raises(ExerciseFailed):
        exercise.check(4.2)


def test_normaliser_last_pieces_divide_to_softmax_and_the_package_call_is_refused(rng):
    q, k, v = rng.standard_normal((3, 11, 5))
    numerator, row_sums = exercises.CATALOG["ch01.normaliser_last"].solution(q=q, k=k, v=v)
    assert np.allclose(numerator / row_sums[:, None], la.softmax_attention(q, k, v), rtol=1e-12)
    assert np.all(row_sums >= 1)  # the largest shifted exponential is e^0 = 1
    with pytest.raises(ExerciseFailed):
        exercises.CATALOG["ch01.normaliser_last"].check(la.softmax_attention)


def test_decoding_exercise_is_not_the_package_causal_mask():
    # the package aligns the causal mask top-left (query i sees j <= i); decoding aligns it
    # bottom-right, so with N_q < N the package call must be rejected (it refuses N_q != N)
    with pytest.raises(ExerciseFailed):
        exercises.CATALOG["ch01.softmax_attention"].check(
            lambda q, k, v: la.softmax_attention(q, k, v, causal=True))


def test_prediction_exercises_state_the_powers_of_n():
    # for three times the tokens the matrix grows 3^2 against the flat state, 3^1 against
    # the KV cache; against the head width the counted multiply-adds have slopes 1 and 2
    assert np.allclose(exercises.CATALOG["ch01.decade_factors"].solution, [3**2, 3**1])
    assert np.allclose(exercises.CATALOG["ch03.count_slopes"].solution, [1, 2])


def test_generation_work_closed_form_grows_quadratically_for_the_cache():
    work = exercises.CATALOG["ch04.generation_work"].solution
    (cache_1, state_1), (cache_3, state_3) = work(n_tokens=1001, d=7), work(n_tokens=3003, d=7)
    assert state_3 == 3 * state_1
    assert 8.9 < cache_3 / cache_1 < 9.0  # T(T + 1): just under 9 for T -> 3T


def test_causal_work_ratio_counts_the_pairs_a_causal_softmax_computes(rng):
    ratio = exercises.CATALOG["ch03.work_ratio_formula"].solution
    # (N + 1)/2 d against N/d non-causal: half, plus the diagonal
    assert ratio(n=4097, d=33, d_v=33, m=33) == pytest.approx(4098 / (2 * 33), rel=1e-12)
    # the count is the multiply-adds a causal softmax really does: one row of i scores per query
    n, d, d_v, m = 9, 3, 5, 4
    pairs = int(np.tril(np.ones((n, n))).sum())
    assert ratio(n=n, d=d, d_v=d_v, m=m) == pytest.approx(pairs * (d + d_v) / (2 * n * m * d_v))
    with pytest.raises(ExerciseFailed):  # the non-causal ratio halved misses the diagonal
        exercises.CATALOG["ch03.work_ratio_formula"].check(
            lambda n, d, d_v, m: n * (d + d_v) / (4 * m * d_v))


def test_parallel_form_checker_refuses_the_n_by_n_order():
    def left_order(phi_q, phi_k, v):
        weights = phi_q @ phi_k.T  # [N_q, N]
        return (weights @ v) / weights.sum(axis=1, keepdims=True)

    with pytest.raises(ExerciseFailed, match=r"\[N, N\]"):
        exercises.CATALOG["ch03.parallel_form"].check(left_order)


@pytest.mark.parametrize("contract", ["matmul", "einsum", "dot"])
def test_parallel_form_checker_accepts_the_right_order_however_it_is_written(contract):
    def right_order(phi_q, phi_k, v):
        if contract == "einsum":
            state = np.einsum("nm,nd->md", phi_k, v)
        elif contract == "dot":
            state = np.dot(phi_k.T, v)
        else:
            state = phi_k.T @ v
        return (phi_q @ state) / (phi_q @ phi_k.sum(axis=0))[:, None]

    exercises.CATALOG["ch03.parallel_form"].check(right_order)


def test_parallel_form_checker_refuses_the_n_by_n_order_through_einsum():
    def left_order(phi_q, phi_k, v):
        weights = np.einsum("im,jm->ij", phi_q, phi_k)
        return (weights @ v) / weights.sum(axis=1, keepdims=True)

    with pytest.raises(ExerciseFailed, match=r"\[N, N\]"):
        exercises.CATALOG["ch03.parallel_form"].check(left_order)


def test_taylor_work_ratio_is_softmax_over_the_right_order_and_says_it_still_wins_at_4096():
    m = 1 + 64 + 64 * 65 // 2
    expected = 4096 * (64 + 128) / (2 * m * 128)  # softmax N²(d + d_v) over 2Nm·d_v
    first_cheaper = next(n for n in range(1, 10_000) if n * (64 + 128) > 2 * m * 128)
    left_order = 4096 * (m + 128) / (2 * m * 128)  # N²(m + d_v): the left order's scores use m
    first_below_left = next(n for n in range(1, 10_000) if n * (m + 128) > 2 * m * 128)
    exercise = exercises.CATALOG["ch03.work_ratio"]
    assert exercise.solution == pytest.approx([expected, first_cheaper])
    assert 1 < expected < 2 and first_cheaper == 2861
    exercise.check((round(expected, 3), first_cheaper))
    for wrong in (expected, (expected, first_cheaper - 1), (expected * 1.01, first_cheaper),
                  (expected, first_cheaper, 0), (left_order, first_below_left)):
        with pytest.raises(ExerciseFailed):
            exercise.check(wrong)


def test_causal_scan_refuses_the_masked_square_product_by_name():
    def masked_square(phi_q, phi_k, v):
        weights = np.tril(phi_q @ phi_k.T)  # [N, N]: right outputs, no scan
        return weights @ v / weights.sum(axis=1, keepdims=True)

    with pytest.raises(ExerciseFailed, match=r"\[N, N\] = \[1001, 1001\].*carry the state"):
        exercises.CATALOG["ch04.causal_scan"].check(masked_square)
    exercises.CATALOG["ch04.causal_scan"].check(exercises.CATALOG["ch04.causal_scan"].solution)


def test_chunk_step_solution_run_over_every_chunk_is_the_package_chunkwise_form(rng):
    n, m, d_v, chunk = 23, 5, 3, 6  # the last chunk is shorter
    phi_q, phi_k = rng.uniform(0.1, 2.0, (2, n, m))
    v = rng.standard_normal((n, d_v))
    state, normaliser, outputs = np.zeros((m, d_v)), np.zeros(m), []
    for s in range(0, n, chunk):
        out, state, normaliser = ch09.solution_chunk_step(phi_q[s:s + chunk], phi_k[s:s + chunk],
                                                          v[s:s + chunk], state, normaliser)
        outputs.append(out)
    expected = la.chunkwise_linear_attention(phi_q, phi_k, v, causal=True, eps=0.0, chunk_size=chunk)
    np.testing.assert_allclose(np.concatenate(outputs), expected, rtol=1e-10)
    np.testing.assert_allclose(state, phi_k.T @ v, rtol=1e-10)


# --- Chapters 5-9: the derivation and predict-then-measure exercises, tied to the package ---

def test_balanced_query_reads_equal_components():
    from lattn_edu.exercises import ch05
    a = exercises.CATALOG["ch05.balance"].solution
    state = la.LinearAttentionState(m=2, d_v=2, eps=0.0)
    state.update(phi_k=np.eye(2), v=np.array([[1.0, 0.0], [0.0, 2.0]]))
    o = state.read(np.array([a, 1.0]))
    assert o[0] == pytest.approx(o[1], rel=1e-12)
    assert a == ch05.balanced_query_weight()
    assert not np.isclose(*state.read(np.array([1.0, 1.0])))  # a = 1 does not balance


def test_favor_variance_solution_matches_a_measurement():
    from lattn_edu.exercises import ch06
    rng = np.random.default_rng(64)
    for m in (1, 5):
        q, k = 0.25 * rng.standard_normal((2, 7))  # ||q+k||² near 1: a light enough tail
        predicted = ch06.solution_favor_variance(q, k, m)
        measured = ch06.measured_favor_variance(q, k, m, draws=40_000, seed=m)
        assert measured == pytest.approx(predicted, rel=0.05)


def test_features_for_ten_percent_is_the_smallest_such_m():
    constant = np.exp(3.0) - 1  # eq-ch06-variance at unit q, k with q·k = 0.5
    m = exercises.CATALOG["ch06.features_for_accuracy"].solution
    assert constant / m <= 0.01 < constant / (m - 1)


def test_elu_limit_solution_is_the_package_at_a_huge_scale():
    from lattn_edu.exercises import ch07
    for case in ch07._limit_cases():
        q, k = case["q"].astype(np.float64), case["k"].astype(np.float64)
        far = la.effective_attention_matrix(1e6 * q, k, feature_map="elu+1", eps=0.0)
        np.testing.assert_allclose(ch07.solution_elu_limit_weights(q, k), far, atol=1e-5)


def test_kernel_total_solution_is_the_sum_of_the_impulse_response():
    from lattn_edu.exercises import ch08
    for case in ch08._total_cases():
        impulse = np.zeros((5_000, 1))
        impulse[0] = 1.0
        response = la.diagonal_ssm(impulse, case["a"], case["b"], case["c"])[:, 0]  # κ_0 .. κ_4999
        assert ch08.solution_kernel_total(**case) == pytest.approx(response.sum(), rel=1e-9)


def test_steady_level_matches_retention_on_random_sequences():
    from lattn_edu.exercises import ch08
    rng = np.random.default_rng(83)
    q, k, v = rng.standard_normal((3, 16, 301, 5))
    out = la.retention(q, k, v, 0.9)  # [16, N, d_v]
    one_term = np.sqrt(((q * k).sum(-1) ** 2 * (v**2).sum(-1)).mean())
    level = np.sqrt((out[:, 100:] ** 2).sum(-1).mean())  # 100 steps: 0.9^200 is negligible
    assert level / one_term == pytest.approx(ch08.steady_rms_level(0.9), rel=0.05)


def test_square_product_moves_n_over_3_multiply_adds_per_number():
    from lattn_edu.exercises import ch09
    for n in (1, 7, 64):
        assert ch09.multiply_adds_per_number(n, n, n) == pytest.approx(n / 3)
    assert exercises.CATALOG["ch09.read_reuse"].solution == ch09.multiply_adds_per_number(64, 128, 128)


def test_every_chapter_module_of_the_package_is_in_the_catalog():
    """Exercise modules are found by name: each chNN.py is loaded, and only its own ids are in it."""
    folder = Path(exercises.__file__).parent
    files = sorted(path.stem for path in folder.glob("ch[0-9][0-9].py"))
    assert [module.__name__.rsplit(".", 1)[1] for module in exercises.CHAPTERS] == files
    for module in exercises.CHAPTERS:
        chapter = module.__name__.rsplit(".", 1)[1]
        assert module.EXERCISES and all(e.id.startswith(f"{chapter}.") for e in module.EXERCISES)
    assert len(exercises.CATALOG) == sum(len(module.EXERCISES) for module in exercises.CHAPTERS)


# Checkers that compare with their solution function, each for a reason the instructor guide
# gives; every other code exercise's checker compares with the package and needs no solution.
CHECKED_AGAINST_THEIR_SOLUTION = {"ch06.favor_attention", "ch06.favor_variance", "ch07.elu_limit"}


@pytest.mark.parametrize("exercise_id", CODE)
def test_only_the_listed_checkers_call_their_solution(exercise_id, monkeypatch):
    """With the solution's body swapped for one that raises, a checker that does not need it
    still accepts the solution and rejects a perturbed answer."""
    exercise = exercises.CATALOG[exercise_id]
    original = exercise.solution
    solution = types.FunctionType(original.__code__, original.__globals__, original.__name__,
                                  original.__defaults__)

    def unavailable(*args, **kwargs):
        raise RuntimeError("the checker called the solution: compare with the package instead, or "
                           "name the exercise in CHECKED_AGAINST_THEIR_SOLUTION and in the instructor "
                           "guide's table, with the reason")

    monkeypatch.setattr(original, "__code__", unavailable.__code__)  # seen by every reference to it
    if exercise_id in CHECKED_AGAINST_THEIR_SOLUTION:
        with pytest.raises(RuntimeError, match="called the solution"):
            exercise.check(solution)
        return
    exercise.check(solution)
    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercise.check(lambda *args, **case: perturb(solution(*args, **case)))


def test_an_instructor_variant_on_fresh_inputs_accepts_the_right_function_only():
    def fresh_inputs():
        rng = np.random.default_rng(4127)
        return [{"x": 4 * rng.standard_normal((n, 5))} for n in (1, 17, 63)]

    variant = exercises.code_exercise("hw.elu_plus_one", "elu+1 on fresh inputs", la.elu_plus_one,
                                      fresh_inputs)
    variant.check(exercises.CATALOG["ch02.elu_plus_one"].solution)
    with pytest.raises(ExerciseFailed, match="wrong value"):
        variant.check(lambda x: np.maximum(x, 0) + 1)  # relu+1: wrong for x < 0


def _ran_notebook(path, answers):
    """A notebook as nbconvert leaves it: each exercise cell's output is feedback's printout."""
    cells = []
    for exercise_id, answer in answers.items():
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exercises.CATALOG[exercise_id].feedback(answer)
        cell = nbformat.v4.new_code_cell(f'exercises.CATALOG["{exercise_id}"].feedback(answer)')
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=buffer.getvalue())]
        cells.append(cell)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)


def test_grading_reads_every_verdict_of_an_executed_notebook(tmp_path, capsys):
    from lattn_edu.exercises import ch02, grading
    path = tmp_path / "ran.ipynb"
    _ran_notebook(path, {"ch02.elu_plus_one": ch02.solution_elu_plus_one,
                         "ch02.one_weight": 4.5,
                         "ch02.kernel_weights": ...,
                         "ch05.output": exercises.CATALOG["ch05.output"].solution})
    assert grading.notebook_verdicts(path) == {"ch02.elu_plus_one": "correct", "ch02.one_weight": "wrong",
                                               "ch02.kernel_weights": "not attempted",
                                               "ch05.output": "correct"}
    assert grading.main([str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"{path}\t2 of 4 correct"


def test_grading_refuses_a_file_that_is_not_a_notebook(tmp_path):
    from lattn_edu.exercises import grading
    path = tmp_path / "answers.json"
    path.write_text('{"answer": 1}', encoding="utf-8")
    with pytest.raises(ValueError, match="path: .*not a Jupyter notebook"):
        grading.notebook_verdicts(path)


def test_grading_can_run_a_submission_first_so_saved_verdicts_do_not_count(tmp_path):
    from lattn_edu.exercises import grading
    stale = nbformat.v4.new_code_cell('exercises.CATALOG["ch02.one_weight"].feedback(4.5)')
    stale.outputs = [nbformat.v4.new_output("stream", name="stdout", text="✓ ch02.one_weight: correct.\n")]
    cells = [nbformat.v4.new_code_cell("from lattn_edu import exercises"),
             nbformat.v4.new_code_cell('raise NotImplementedError("an unfinished cell")'),
             nbformat.v4.new_code_cell('exercises.CATALOG["ch05.output"].feedback('
                                       'exercises.CATALOG["ch05.output"].solution)'),
             stale]
    path = tmp_path / "submission.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    assert grading.notebook_verdicts(path) == {"ch02.one_weight": "correct"}  # as saved
    assert grading.notebook_verdicts(path, execute=True) == {"ch05.output": "correct",
                                                             "ch02.one_weight": "wrong"}


# --- Chapters 1-5: derivation exercises that replaced copy-a-number ones ---

def test_matrix_overtakes_cache_just_past_d_plus_d_v():
    n = exercises.CATALOG["ch01.matrix_entries"].solution
    assert n == 2 * 128 + 1
    below, at = (la.attention_cost(n=x, d=128) for x in (n - 1, n))
    assert below.softmax_matrix_entries == below.kv_cache_entries  # N = d + d_v: a tie
    assert at.softmax_matrix_entries > at.kv_cache_entries


def test_overflow_cases_pass_the_float64_limit_of_exp():
    from lattn_edu.exercises import ch01
    limit = np.log(np.finfo(np.float64).max)  # about 709.8
    peaks = ch01.overflow_case_peaks()
    assert set(peaks) == {"causal_weights", "normaliser_last"}
    assert all(peak > limit for peak in peaks.values())


def test_taylor_state_entries_and_the_n_where_the_matrix_is_larger():
    entries, n = exercises.CATALOG["ch03.state_entries"].solution
    m = la.taylor_features(np.zeros((1, 128))).shape[-1]
    assert m == 1 + 128 + 128 * 129 // 2
    assert entries == m * (128 + 1)  # S [m, d_v] and z [m]
    assert (n - 1) ** 2 <= entries < n**2


def test_removing_token_one_leaves_the_state_of_tokens_two_and_three():
    from lattn_edu.exercises import ch05
    rebuilt = la.LinearAttentionState(m=2, d_v=2, eps=0.0)
    for phi_k, v in (ch05.SEED_TOKENS[1], ch05.THIRD):
        rebuilt.update(phi_k=phi_k, v=v)
    np.testing.assert_array_equal(exercises.CATALOG["ch05.state"].solution,
                                  np.vstack([rebuilt.S, rebuilt.z]))


def test_token_two_read_shows_interference_only_after_the_third_token():
    from lattn_edu.exercises import ch05
    key_2, v_2 = (np.asarray(x, dtype=float) for x in ch05.SEED_TOKENS[1])
    two = la.LinearAttentionState(m=2, d_v=2, eps=0.0)
    for phi_k, v in ch05.SEED_TOKENS:
        two.update(phi_k=phi_k, v=v)
    np.testing.assert_array_equal(two.read(key_2), v_2)  # orthogonal keys: a clean lookup
    read = exercises.CATALOG["ch05.output"].solution
    np.testing.assert_allclose(read, (v_2 + np.asarray(ch05.THIRD[1])) / 2)  # v_2 and v_3 blend
    assert not np.allclose(read, v_2)


def test_causal_scan_checker_switches_the_package_forms_off():
    def package_call(phi_q, phi_k, v):
        return la.recurrent_linear_attention(phi_q, phi_k, v, causal=True, eps=0.0)

    with pytest.raises(ExerciseFailed, match="switched off"):
        exercises.CATALOG["ch04.causal_scan"].check(package_call)
    assert la.recurrent_linear_attention.__name__ == "recurrent_linear_attention"  # restored


def test_cache_overtakes_state_after_33_tokens():
    # 128 N > 64 * 64 + 64 = 4160 first at N = 33
    assert exercises.CATALOG["ch04.cache_overtakes_state"].solution == 33
    assert 32 * 128 < 64 * 64 + 64 < 33 * 128


def test_clean_third_key_accepts_every_key_orthogonal_to_token_one():
    exercise = exercises.CATALOG["ch05.clean_third_key"]
    for key in ([0.0, 1.0], [0.0, 7.5], np.array([0, 3])):
        exercise.check(key)
    for wrong in ([1.0, 1.0], [0.01, 2.0], [0.0, -1.0], [0.0, 0.0], [0.0, 1.0, 0.0], "seven"):
        with pytest.raises(ExerciseFailed):
            exercise.check(wrong)


def test_fourth_token_accepts_three_digit_decimals():
    exercises.CATALOG["ch05.fourth_token"].check(np.array([0.786, 2.429]))
    with pytest.raises(ExerciseFailed):
        exercises.CATALOG["ch05.fourth_token"].check(np.array([0.79, 2.43]) * 1.01)


@pytest.mark.parametrize("answer", [(1081665, 1040), (1081665, 1042), (1081664, 1041)])
def test_taylor_state_entries_refuses_an_off_by_one(answer):
    with pytest.raises(ExerciseFailed):
        exercises.CATALOG["ch03.state_entries"].check(np.array(answer))
    exercises.CATALOG["ch03.state_entries"].check(np.array([1081665, 1041]))
