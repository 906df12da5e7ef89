"""The instructor guide and the syllabus stay true to the package and the chapters.

- the guide's table of exercises is the one tools/exercise_table.py writes from the chapters
  and lattn_edu.exercises.CATALOG (every exercise, its number, its checker), so it cannot
  drift when an exercise is added;
- every package function the course pages name exists;
- the claims the guide's model answers rest on hold (the delta rule with β_t = 1/t
  computes the running mean; recursive least squares fits P ≤ m pairs in one pass).
"""

from __future__ import annotations

import importlib
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
# functions and classes; "lattn_edu.exercises.chNN" is a pattern, not a name
PACKAGE_NAME = re.compile(r"`((?:la|lattn_edu|memory|recall|gradients|scan)"
                          r"(?:\.(?:[a-z_][a-z0-9_]*|[A-Z][A-Za-z0-9]*))+)(?!\w)")


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


def test_least_squares_in_one_pass_fits_every_pair_the_delta_rule_does_not():
    # recursive least squares: one read of the sequence, an extra m×m state, exact for P ≤ m
    m, p, d_v = 16, 11, 4
    keys = memory.make_keys(p, m, seed=3)  # [P, m], unit, random
    values = np.random.default_rng(3).standard_normal((p, d_v))  # [P, d_v]
    state = np.zeros((m, d_v))  # [m, d_v]
    inverse = 1e8 * np.eye(m)  # [m, m]: (K^T K + 1e-8 I)^-1 before any key
    for key, value in zip(keys, values):
        gain = inverse @ key / (1.0 + key @ inverse @ key)  # Sherman–Morrison
        state += np.outer(gain, value - state.T @ key)
        inverse -= np.outer(gain, key @ inverse)
    assert memory.retrieval_error(state, keys, values).max() < 1e-6
    delta = memory.write_memory(keys, values, rule="delta", beta=1.0)
    assert memory.retrieval_error(delta, keys, values).max() > 1e-2
