"""Every stated time is what the book's reading-time rule gives (the rule: tools/chapter_times.py).

The time lines are written by ``python tools/chapter_times.py --write``, not by hand: each
chapter's **Time** line, the intro's table of chapter times and the syllabus's week times.
This file checks that they are in step with the rule, that the intro states the rule's
constants, and that the rule counts what a reader sees.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import chapter_times as rule  # noqa: E402


@pytest.mark.parametrize("path", list(rule.expected_texts()),
                         ids=lambda p: p.relative_to(rule.ROOT).as_posix())
def test_stated_times_follow_the_rule(path):
    # a failure here: run python tools/chapter_times.py --write
    assert path.read_text(encoding="utf-8") == rule.expected_texts()[path], (
        f"{path.relative_to(rule.ROOT)} states times the rule does not give: "
        f"run python tools/chapter_times.py --write")


@pytest.mark.parametrize("source", rule.SOURCES, ids=[p.stem for p in rule.SOURCES])
def test_every_page_has_one_time_line(source):
    assert len(rule.TIME_LINE.findall(source.read_text(encoding="utf-8"))) == 1, source.name


def test_intro_and_syllabus_have_a_row_for_every_chapter():
    intro = {int(m[2]) for m in rule.INTRO_ROW.finditer(rule.INTRO.read_text(encoding="utf-8"))}
    assert intro == {rule.chapter_number(p) for p in rule.CHAPTERS}
    weeks = [(int(n), side) for m in rule.WEEK_ROW.finditer(rule.SYLLABUS.read_text(encoding="utf-8"))
             for n, side, _ in rule.WEEK_CHAPTER.findall(m[2])]
    whole = sorted(n for n, side in weeks if not side)
    halves = sorted((n, side) for n, side in weeks if side)
    # every chapter once: whole, or as its part "up to" a section and its part "from" it
    assert sorted(whole + [n for n, side in halves if side == "from"]) == sorted(
        rule.chapter_number(p) for p in rule.CHAPTERS), weeks
    assert [n for n, side in halves if side == "up to"] == [n for n, side in halves if side == "from"]


def test_intro_states_the_rule_the_tool_applies():
    text = " ".join(rule.INTRO.read_text(encoding="utf-8").split())
    kinds = rule.MINUTES_PER_EXERCISE
    for phrase in (f"{rule.WORDS_PER_MINUTE} words a minute",
                   f"{rule.MINUTES_PER_EQUATION} minutes for every displayed equation",
                   f"{rule.MINUTES_PER_CODE_CELL:g} minutes for every code cell",
                   f"{kinds['value']} minutes for an exercise that asks for a number",
                   f"{kinds['code']} for one that asks for a function",
                   f"{kinds['derivation']} for a derivation",
                   f"{rule.MINUTES_PER_CONCEPT_CHECK} minutes per concept check",
                   f"nearest {rule.ROUND_TO} minutes"):
        assert phrase in text, phrase


def test_rule_counts_what_a_reader_sees(tmp_path):
    # hidden cells, markup and exercise blocks are not reading; a displayed equation is not words
    source = tmp_path / "01-x.md"
    source.write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n"
        "(ch-x)=\n# One two three\n\n:::{exercise}\n:label: ex-x\n\nnot counted\n:::\n\n"
        ":::{solution} ex-x\n:class: dropdown\n\n```python\nx\n```\nnor this\n:::\n\nfour five\n\n"
        "$$\na = b + c\n$$ (eq-x)\n\n"
        ":::{exercise}\n:label: ex-y\n\n**Derivation, then code.** Derive it.\n:::\n\n"
        "```{code-cell} python\nx = 1\n```\n\n"
        "```{code-cell} python\nexercises.CATALOG['ch01.softmax_attention'].feedback(...)\n```\n\n"
        "```{code-cell} python\nexercises.CATALOG[\"ch05.output\"].feedback(...)\n```\n\n"
        "```{code-cell} python\n:tags: [remove-cell]\nglue('a', 1)\n```\n\n"
        "```{code-cell} python\n:tags: [remove-input]\nQuiz('q', ('a', 'b'), 0, ('x', 'y'))\n```\n",
        encoding="utf-8")
    counted = rule.chapter_time(source)
    assert counted == rule.ChapterTime(words=6, equations=1, code_cells=1,
                                       exercises=("code", "derivation"), concept_checks=1)
    reading = 6 / rule.WORDS_PER_MINUTE + rule.MINUTES_PER_EQUATION + rule.MINUTES_PER_CODE_CELL
    assert counted.reading_exact == pytest.approx(reading)
    assert counted.with_exercises_exact == pytest.approx(
        reading + rule.MINUTES_PER_EXERCISE["code"] + rule.MINUTES_PER_EXERCISE["derivation"]
        + rule.MINUTES_PER_CONCEPT_CHECK)


def test_a_value_checker_makes_a_value_exercise():
    assert rule.checker_kind("ch05.output") == "value"
    assert rule.checker_kind("ch10.delta_update") == "code"


def test_write_rewrites_only_the_times():
    times = {0: rule.ChapterTime(100, 0, 1, (), 0), 7: rule.ChapterTime(9000, 3, 2, ("code",), 1),
             8: rule.ChapterTime(2000, 1, 1, ("value",), 0)}
    intro = ("**Time** about 1 minutes to read.\n\n| | chapter | claim | reading | with exercises |\n"
             "|---|---|---|---|---|\n| 7 | {ref}`ch-x` | a claim, 3 min | 5 min | 9 min |\n"
             "\nThe next paragraph.\n")
    written = rule.rewritten_intro(intro, times)
    seven = times[7]
    assert f"| 7 | {{ref}}`ch-x` | a claim, 3 min | {seven.reading_minutes} min | " \
           f"{seven.with_exercises_minutes} min |" in written
    assert written.startswith(f"**Time** about {times[0].reading_minutes} minutes to read.\n")
    assert written.endswith(" min |\n\nThe next paragraph.\n")  # the blank line that ends the table
    syllabus = "| 4 | 7 {ref}`ch-x`, 8 {ref}`ch-y` | objectives | 1 h | a question, 2 h? |\n"
    week = rule.week_minutes([times[7], times[8]])
    assert week % rule.WEEK_ROUND_TO == 0
    assert rule.rewritten_syllabus(syllabus, times) == (
        f"| 4 | 7 {{ref}}`ch-x`, 8 {{ref}}`ch-y` | objectives | {rule.hours(week)} | "
        f"a question, 2 h? |\n")
    assert rule.hours(150) == "2.5 h" and rule.hours(180) == "3 h"


@pytest.mark.parametrize("opening, kind", [
    ("**Derivation.** Show that", "derivation"), ("A derivation, then a measurement.", "derivation"),
    ("Derive the gradient", "derivation"), ("*Derive, then check.* One key", "derivation"),
    ("*Paper derivation.* DeltaNet's", "derivation"), ("*A derivation from the papers.*", "derivation"),
    ("Write the derivative of elu", "code"), ("Derived quantities: write", "code")])
def test_an_exercise_is_a_derivation_when_its_first_words_say_so(opening, kind):
    markdown = f":::{{exercise}}\n:label: ex-x\n\n{opening} ...\n:::\n"
    assert rule.exercise_kinds(markdown, ["ch10.delta_update"]) == [kind]


def test_a_chapter_split_at_a_section_counts_each_exercise_where_its_equation_is(tmp_path):
    source = tmp_path / "10-x.md"
    source.write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n"
        "# Ten\n\none two\n\n$$\na = b\n$$ (eq-first)\n\n"
        "```{code-cell} python\nx = 1\n```\n\n"
        "## The second half\n\nthree four five\n\n$$\nc = d\n$$ (eq-second)\n\n"
        "## Exercises\n\n:::{exercise}\n:label: ex-a\n\nWrite {eq}`eq-second` as code.\n:::\n\n"
        ":::{exercise}\n:label: ex-b\n\nDerive {eq}`eq-first`.\n:::\n\n"
        ":::{exercise}\n:label: ex-c\n\nWrite anything.\n:::\n\n"
        "```{code-cell} python\n:tags: [remove-input]\nQuiz('q', ('a', 'b'), 0, ('x', 'y'))\n```\n",
        encoding="utf-8")
    first, second = rule.chapter_parts(source, "The second half")
    assert first == rule.ChapterTime(words=4, equations=1, code_cells=1,
                                     exercises=("derivation",), concept_checks=0)
    assert second == rule.ChapterTime(words=9, equations=1, code_cells=0,
                                      exercises=("code", "code"), concept_checks=1)
    whole = rule.chapter_time(source)
    assert whole.words == first.words + second.words
    assert sorted(whole.exercises) == sorted(first.exercises + second.exercises)
    with pytest.raises(ValueError, match="no section titled"):
        rule.chapter_parts(source, "A section it lacks")
    cell = '10 {ref}`ch-x` up to "The second half", 10 {ref}`ch-x` from "The second half"'
    assert rule.WEEK_CHAPTER.findall(cell) == [("10", "up to", "The second half"),
                                              ("10", "from", "The second half")]
