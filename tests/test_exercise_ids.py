"""Every exercise id a page or a docstring names exists, so no reader is sent to a missing one."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from lattn_edu import exercises

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "book").rglob("*.md")) + sorted((ROOT / "src").rglob("*.py"))
# "ch03.parallel_form"; "ch03.py" is a file name, not an id
EXERCISE_ID = re.compile(r"\b(ch\d\d)\.(?!py\b)([A-Za-z_]\w*)")


def named_ids(path: Path) -> set[str]:
    return {f"{chapter}.{name}" for chapter, name in EXERCISE_ID.findall(path.read_text("utf-8"))}


def exists(exercise_id: str) -> bool:
    """In CATALOG, or a name the chapter's exercise module defines (ch09.solution_chunk_step)."""
    chapter, name = exercise_id.split(".")
    module = getattr(exercises, chapter, None)
    return exercise_id in exercises.CATALOG or hasattr(module, name)


@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_named_exercise_exists(path):
    missing = sorted(i for i in named_ids(path) if not exists(i))
    assert not missing, f"{path.relative_to(ROOT)} names exercises that do not exist: {missing}"


def test_the_scan_finds_ids_and_skips_file_names(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Run `ch03.parallel_form`, then `ch03.no_such_thing`; see ch03.py.", "utf-8")
    assert named_ids(page) == {"ch03.parallel_form", "ch03.no_such_thing"}
    assert exists("ch03.parallel_form") and not exists("ch03.no_such_thing")


# --- "Exercise 10.3": one number per exercise, the same on the website, on Colab and in the guide

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import colab_labels  # noqa: E402
import exercise_numbers  # noqa: E402


def test_website_numbers_exercises_per_chapter():
    # the numbers Sphinx gives (one count through the book) become (chapter, position)
    numbers = {"ex-b": (12,), "ex-a": (11,), "ex-c": (14,)}
    assert exercise_numbers.per_chapter(numbers, 10) == {"ex-a": (10, 1), "ex-b": (10, 2),
                                                         "ex-c": (10, 3)}
    assert exercise_numbers.chapter_number("book/myst/10-delta-rule") == 10
    assert exercise_numbers.chapter_number("book/course/syllabus") is None


def test_colab_editions_take_the_numbers_the_website_shows():
    """The build records (book/_ext/colab_labels.py) the renumbered exercises for the Colab
    editions: the numbers every page shows, not a second count."""
    class Env:
        toc_fignumbers = {"book/myst/10-delta-rule": {"exercise": {"ex-b": (41,), "ex-a": (40,)},
                                                      "displaymath": {"equation-x": (3,)}},
                          "book/notation": {"displaymath": {"equation-y": (1,)}}}
    exercise_numbers.renumber_exercises(None, Env)
    assert colab_labels.exercise_numbers(Env) == {"book/myst/10-delta-rule": {"ex-a": "10.1", "ex-b": "10.2"}}


def test_renumbering_leaves_pages_without_a_chapter_number_alone():
    class Env:
        toc_fignumbers = {"book/course/syllabus": {"exercise": {"x": (3,)}},
                          "book/myst/07-quality-gap": {"exercise": {"a": (9,), "b": (8,)},
                                                           "figure": {"f": (2,)}}}
    changed = exercise_numbers.renumber_exercises(None, Env)
    assert changed == ["book/myst/07-quality-gap"]
    assert Env.toc_fignumbers["book/course/syllabus"] == {"exercise": {"x": (3,)}}
    assert Env.toc_fignumbers["book/myst/07-quality-gap"] == {
        "exercise": {"b": (7, 1), "a": (7, 2)}, "figure": {"f": (2,)}}
