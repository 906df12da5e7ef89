"""Each chapter's **Time** line states what the book's reading-time rule gives for it.

The rule, stated for readers in "How to read this book" (book/myst/00-intro.md):

- reading time: the words of the page's text at WORDS_PER_MINUTE (equations count by
  their written tokens; an exercise's statement and its solution belong to the exercise),
  plus MINUTES_PER_CODE_CELL for every code cell the reader sees
  (an exercise's answer cell, which calls ``CATALOG[...]``, belongs to the exercise);
- time with the exercises: the reading time plus MINUTES_PER_EXERCISE for every exercise
  and MINUTES_PER_CONCEPT_CHECK for every concept check (a ``Quiz`` cell);
- both are rounded to the nearest ROUND_TO minutes, and never below ROUND_TO.

Run this file as a script to print every chapter's counts and the Time line they give.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import jupytext
import pytest

WORDS_PER_MINUTE = 120
MINUTES_PER_CODE_CELL = 1
MINUTES_PER_EXERCISE = 10
MINUTES_PER_CONCEPT_CHECK = 2
ROUND_TO = 5

SOURCES = sorted((Path(__file__).resolve().parent.parent / "book" / "myst").glob("*.md"))
INTRO = next(p for p in SOURCES if p.stem.startswith("00"))
CHAPTERS = [p for p in SOURCES if p != INTRO]

HIDDEN_TAGS = {"remove-cell", "remove-input"}
# Markup a reader never sees as words: directive fences and options, and target labels.
MARKUP_LINE = re.compile(r"^\s*(`{3,}|:{3,}|:\w[\w-]*:|\(\S+\)=\s*$)")
EXERCISE = re.compile(r"^(`{3,}|:{3,})\{exercise\}", re.M)
EXERCISE_OR_SOLUTION = re.compile(r"^(`{3,}|:{3,})\{(?:exercise|solution)\}.*?^\1\s*$",
                                  re.M | re.S)
TIME_LINE = re.compile(r"\*\*Time\*\* about (\d+) minutes to read"
                       r"(?:, about (\d+) minutes with the exercises)?\.")


@dataclass(frozen=True)
class ChapterTime:
    words: int
    code_cells: int
    exercises: int
    concept_checks: int

    @property
    def reading_minutes(self) -> int:
        return _rounded(self.words / WORDS_PER_MINUTE + MINUTES_PER_CODE_CELL * self.code_cells)

    @property
    def with_exercises_minutes(self) -> int:
        return _rounded(self.words / WORDS_PER_MINUTE + MINUTES_PER_CODE_CELL * self.code_cells
                        + MINUTES_PER_EXERCISE * self.exercises
                        + MINUTES_PER_CONCEPT_CHECK * self.concept_checks)


def _rounded(minutes: float) -> int:
    return max(ROUND_TO, ROUND_TO * round(minutes / ROUND_TO))


def chapter_time(source: Path) -> ChapterTime:
    """Count what the rule needs in one MyST chapter source."""
    notebook = jupytext.read(source, fmt="md:myst")
    words = code_cells = exercises = checks = 0
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            text = cell.source
            exercises += len(EXERCISE.findall(text))
            text = EXERCISE_OR_SOLUTION.sub("", text)
            words += sum(len(line.split()) for line in text.splitlines()
                         if not MARKUP_LINE.match(line))
        elif cell.cell_type == "code":
            tags = set(cell.metadata.get("tags", []))
            if "Quiz(" in cell.source:
                checks += 1
            elif not tags & HIDDEN_TAGS and "CATALOG[" not in cell.source:
                code_cells += 1
    return ChapterTime(words, code_cells, exercises, checks)


def stated_times(source: Path) -> tuple[int, int | None]:
    """(reading, with exercises) as the chapter's Time line states them."""
    found = TIME_LINE.findall(source.read_text(encoding="utf-8"))
    assert len(found) == 1, f"{source.name}: needs exactly one Time line like {TIME_LINE.pattern!r}"
    reading, with_exercises = found[0]
    return int(reading), int(with_exercises) if with_exercises else None


@pytest.mark.parametrize("source", SOURCES, ids=[p.stem for p in SOURCES])
def test_time_line_states_the_rule(source):
    counted = chapter_time(source)
    reading, with_exercises = stated_times(source)
    assert reading == counted.reading_minutes, (source.name, counted)
    if counted.exercises or counted.concept_checks:
        assert with_exercises == counted.with_exercises_minutes, (source.name, counted)
    else:
        assert with_exercises is None, f"{source.name} has no exercises to time"


def test_intro_table_repeats_every_chapters_times():
    text = INTRO.read_text(encoding="utf-8")
    for source in CHAPTERS:
        counted = chapter_time(source)
        number = int(source.stem[:2])
        row = re.search(rf"^\| {number} \|.*\| (\d+) min \| (\d+) min \|\s*$", text, re.M)
        assert row, f"the intro's chapter table has no row for chapter {number}"
        assert (int(row[1]), int(row[2])) == (counted.reading_minutes,
                                              counted.with_exercises_minutes), source.name


def test_intro_states_the_rule_the_test_applies():
    text = " ".join(INTRO.read_text(encoding="utf-8").split())
    for phrase in (f"{WORDS_PER_MINUTE} words a minute",
                   f"{MINUTES_PER_EXERCISE} minutes per exercise",
                   f"{MINUTES_PER_CONCEPT_CHECK} minutes per concept check",
                   f"nearest {ROUND_TO} minutes"):
        assert phrase in text, phrase
    assert MINUTES_PER_CODE_CELL == 1 and "one minute for every code cell" in text


def test_rule_counts_what_a_reader_sees(tmp_path):
    # hidden cells and markup are not counted; visible cells, exercises and quizzes are
    source = tmp_path / "01-x.md"
    source.write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n"
        "(ch-x)=\n# One two three\n\n:::{exercise}\n:label: ex-x\n\nnot counted\n:::\n\n"
        ":::{solution} ex-x\n:class: dropdown\n\n```python\nx\n```\nnor this\n:::\n\nfour five\n\n"
        "```{code-cell} python\nx = 1\n```\n\n"
        "```{code-cell} python\nexercises.CATALOG['ch01.x'].feedback(...)\n```\n\n"
        "```{code-cell} python\n:tags: [remove-cell]\nglue('a', 1)\n```\n\n"
        "```{code-cell} python\n:tags: [remove-input]\nQuiz('q', ('a', 'b'), 0, ('x', 'y'))\n```\n",
        encoding="utf-8")
    assert chapter_time(source) == ChapterTime(words=6, code_cells=1, exercises=1,
                                               concept_checks=1)


if __name__ == "__main__":
    for path in SOURCES:
        t = chapter_time(path)
        print(f"{path.stem}: {t}")
        print(f"  **Time** about {t.reading_minutes} minutes to read"
              + (f", about {t.with_exercises_minutes} minutes with the exercises."
                 if t.exercises or t.concept_checks else "."))
        print(f"  intro table: | {t.reading_minutes} min | {t.with_exercises_minutes} min |")
