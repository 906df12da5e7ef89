"""The instructor guide and the syllabus stay true to the package and the chapters.

- the guide's table of exercises is the one tools/exercise_table.py writes from the chapters
  and lattn_edu.exercises.CATALOG (every exercise, its number, its checker), so it cannot
  drift when an exercise is added;
- every package function the course pages name exists;
- the claims the guide's model answers and projects rest on hold (the delta rule with
  β_t = 1/t computes the running mean; recursive least squares fits P ≤ m pairs in one
  pass up to its ridge term; a fixed decay bounds the error of reading the latest value;
  the delta rule at β = 2 composes permutations; the triangular solve's share of a chunk),
  and the course pages quote the recorded retraining time.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu import exercises, memory

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import exercise_table  # noqa: E402

COURSE = sorted((ROOT / "book" / "course").glob("*.md"))


def test_guide_lists_every_exercise_as_the_tool_writes_it():
    text = exercise_table.GUIDE.read_text(encoding="utf-8")
    assert text == exercise_table.guide_with_table(text), (
        "the guide's exercise table is out of date: run python tools/exercise_table.py --write")


def test_the_table_has_each_catalog_exercise_once_numbered_per_chapter():
    rows = re.findall(r"^\| (\d+)\.(\d+) \| `(ch\d\d\.\w+)` \|", exercise_table.table(), re.M)
    assert sorted(i for _, _, i in rows) == sorted(exercises.CATALOG)
    for chapter, _, exercise_id in rows:
        assert exercise_id.startswith(f"ch{int(chapter):02d}."), exercise_id
    by_chapter: dict[str, list[int]] = {}
    for chapter, position, _ in rows:
        by_chapter.setdefault(chapter, []).append(int(position))
    assert all(p == list(range(1, len(p) + 1)) for p in by_chapter.values())


def test_the_table_and_the_checker_test_agree_on_which_checkers_call_their_solution():
    from test_exercises import CHECKED_AGAINST_THEIR_SOLUTION

    assert exercise_table.CHECKED_AGAINST_THEIR_SOLUTION == CHECKED_AGAINST_THEIR_SOLUTION


MODULES = {"la": "lattn_edu", "memory": "lattn_edu.memory", "recall": "lattn_edu.recall",
           "gradients": "lattn_edu.gradients", "scan": "lattn_edu.scan",
           "explorers": "lattn_edu.explorers", "exercises": "lattn_edu.exercises"}
# `la.delta_rule`, `memory.write_memory(...)`, `lattn_edu.recall.register_mixer`
# functions and classes; "lattn_edu.exercises.chNN" is a pattern, not a name, and
# `recall.json` a recorded file, not a name
PACKAGE_NAME = re.compile(r"`((?:la|lattn_edu|memory|recall|gradients|scan)"
                          r"(?:\.(?:[a-z_][a-z0-9_]*|[A-Z][A-Za-z0-9]*))+)(?<!\.json)(?!\w)")


def resolves(dotted: str) -> bool:
    head, *rest = dotted.split(".")
    module = importlib.import_module(MODULES.get(head, head))
    obj = module
    for part in rest:
        if not hasattr(obj, part):
            try:
                obj = importlib.import_module(f"{obj.__name__}.{part}")
                continue
            except (ImportError, AttributeError):
                return False
        obj = getattr(obj, part)
    return True


@pytest.mark.parametrize("page", COURSE, ids=[p.name for p in COURSE])
def test_every_package_name_the_course_pages_use_exists(page):
    names = set(PACKAGE_NAME.findall(page.read_text(encoding="utf-8")))
    missing = sorted(n for n in names if not resolves(n))
    assert not missing, f"{page.name} names what the package does not have: {missing}"


def test_the_name_check_catches_a_missing_function():
    assert resolves("la.delta_rule") and resolves("memory.write_memory")
    assert resolves("lattn_edu.recall.register_mixer")
    assert not resolves("la.kimi_delta_attention") and not resolves("memory.no_such_thing")
    assert PACKAGE_NAME.findall("`recall.json` and `recall.train_one`") == ["recall.train_one"]


# --- claims of the model answers ------------------------------------------------------------

def test_delta_rule_with_step_one_over_t_computes_the_running_mean():
    # a unit key written n times: the read after write t is the mean of v_1..v_t
    rng = np.random.default_rng(7)
    n, d_k, d_v = 13, 5, 3
    key = rng.standard_normal(d_k)
    key /= np.linalg.norm(key)
    k = np.tile(key, (n, 1))  # [n, d_k]
    v = rng.standard_normal((n, d_v))  # [n, d_v]
    beta = 1.0 / np.arange(1, n + 1)  # [n]
    for form in ("recurrent", "chunkwise"):
        reads = la.delta_rule(k, k, v, beta, scale=1.0, form=form, chunk_size=4)  # [n, d_v]
        running_mean = np.cumsum(v, axis=0) / np.arange(1, n + 1)[:, None]
        np.testing.assert_allclose(reads, running_mean, atol=1e-12)
    # a constant step does not: it weights recent values more (an exponential average)
    constant = la.delta_rule(k, k, v, np.full(n, 0.5), scale=1.0, form="recurrent")
    assert np.abs(constant[-1] - running_mean[-1]).max() > 1e-2


def recursive_least_squares(keys, values, ridge):
    """One pass, an extra m×m state: the ridge fit (KᵀK + ridge·I)⁻¹KᵀV after every pair."""
    m, d_v = keys.shape[1], values.shape[1]
    state = np.zeros((m, d_v))  # [m, d_v]
    inverse = np.eye(m) / ridge  # [m, m]: (KᵀK + ridge·I)⁻¹ before any key
    for key, value in zip(keys, values):
        gain = inverse @ key / (1.0 + key @ inverse @ key)  # Sherman–Morrison
        state += np.outer(gain, value - state.T @ key)
        inverse -= np.outer(gain, key @ inverse)
    return state


def test_least_squares_in_one_pass_misses_by_about_its_ridge_term_the_delta_rule_far_more():
    # project 3 and the "four points": P = 11 ≤ m = 16 pairs, errors shrink in proportion to λ
    m, p, d_v = 16, 11, 4
    keys = memory.make_keys(p, m, seed=3)  # [P, m], unit, random
    values = np.random.default_rng(3).standard_normal((p, d_v))  # [P, d_v]
    errors = [memory.retrieval_error(recursive_least_squares(keys, values, ridge), keys,
                                     values).max() for ridge in (1e-4, 1e-8, 1e-12)]
    assert 1e-4 < errors[0] < 1e-2 and 1e-8 < errors[1] < 1e-6 and 1e-12 < errors[2] < 1e-10
    batch = np.linalg.solve(keys.T @ keys + 1e-4 * np.eye(m), keys.T @ values)  # the ridge fit
    np.testing.assert_allclose(recursive_least_squares(keys, values, 1e-4), batch, atol=1e-9)
    delta = memory.write_memory(keys, values, rule="delta", beta=1.0)
    assert memory.retrieval_error(delta, keys, values).max() > 1.0


def test_a_fixed_decay_bounds_the_error_of_reading_the_latest_value():
    # week 9's model answer: a key rewritten n times; the stale values weigh γ, γ², ...
    rng = np.random.default_rng(0)
    n, d_k, d_v, draws = 40, 8, 64, 50
    for gamma, tolerance in ((0.8, 0.1), (0.5, 0.05), (1.0, 0.1)):
        errors = []
        for _ in range(draws):
            key = rng.standard_normal(d_k)
            k = np.tile(key / np.linalg.norm(key), (n, 1))  # [n, d_k]
            v = rng.standard_normal((n, d_v))  # [n, d_v]
            out = la.gated_linear_attention(k, k, v, np.full(n, np.log(gamma)), scale=1.0)
            np.testing.assert_allclose(la.retention(k, k, v, gamma), out, atol=1e-9)
            errors.append(np.mean((out[-1] - v[-1]) ** 2))
        predicted = n - 1 if gamma == 1 else gamma ** 2 * (1 - gamma ** (2 * n - 2)) / (1 - gamma ** 2)
        assert abs(np.mean(errors) / predicted - 1) < tolerance, (gamma, np.mean(errors), predicted)
    # memory.write_memory's decay does not act on the additive rule, so it cannot show this
    k = np.tile(np.eye(d_k)[0], (n, 1))
    v = rng.standard_normal((n, 3))
    np.testing.assert_array_equal(memory.write_memory(k, v, "additive", decay=0.5),
                                  memory.write_memory(k, v, "additive", decay=1.0))


def test_the_delta_rule_at_step_two_composes_permutations_of_three_elements():
    # project 2: a transposition (i j) is the delta step with key (e_i - e_j)/√2, β = 2, v = 0
    rng = np.random.default_rng(5)
    steps = 2001
    pairs = [(0, 1), (0, 2), (1, 2)]
    chosen = rng.integers(0, 3, steps)  # [steps]
    active = rng.integers(0, 2, steps)  # [steps]: 0 gives an identity step
    keys = np.array([(np.eye(3)[pairs[c][0]] - np.eye(3)[pairs[c][1]]) / np.sqrt(2) for c in chosen])
    beta = 2.0 * active  # [steps]
    _, state = la.delta_rule(keys, keys, np.zeros((steps, 3)), beta, scale=1.0, form="recurrent",
                             initial_state=np.eye(3), return_state=True)
    product = np.eye(3)
    for (i, j), on in zip((pairs[c] for c in chosen), active):
        if on:
            product[[i, j]] = product[[j, i]]  # swap rows i and j
    np.testing.assert_allclose(state, product, atol=1e-10)
    # with β ≤ 1 a step's determinant 1 - β is never negative, and a transposition's is -1
    assert all(np.linalg.det(np.eye(3) - b * np.outer(k, k)) >= -1e-12
               for k, b in zip(keys, rng.uniform(0, 1, steps)))


def chunk_macs(c, d):
    """Chapter 10's count for the delta rule, split: (triangular solve, everything else)."""
    solve = sum(i * (i + 1) // 2 for i in range(c))
    return solve, 5 * c * c * d + 3 * c * d * d


def test_the_triangular_solve_is_a_small_share_of_a_chunk():
    # week 8's model answer: 0.75% at C = 64, 2.0% at C = 128, equal to the rest near C = 3,900
    for c, share in ((64, 0.0075), (128, 0.020)):
        solve, rest = chunk_macs(c, 128)
        assert round(solve / (solve + rest), 4 if c == 64 else 3) == share
    crossing = next(c for c in range(64, 10_000) if chunk_macs(c, 128)[0] >= chunk_macs(c, 128)[1])
    assert 3_850 <= crossing <= 3_950, crossing


def test_the_course_pages_quote_the_recorded_time_of_the_quick_study():
    record = json.loads((ROOT / "src" / "lattn_edu" / "data" / "recall_study_quick.json").read_text())
    seconds = record["config"]["wall_seconds"]
    for page in ("syllabus.md", "instructor-guide.md"):
        text = " ".join((ROOT / "book" / "course" / page).read_text(encoding="utf-8").split())
        assert f"{seconds:.0f} s" in text and f"{seconds / 60:.0f} minutes" in text, page
