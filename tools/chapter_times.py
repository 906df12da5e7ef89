"""The book's reading-time rule, in one place, and the tool that writes what it gives.

The rule, stated for readers in "How to read this book" (book/myst/00-intro.md):

- **reading time**: the page's prose at WORDS_PER_MINUTE (inline math counts by its written
  tokens), plus MINUTES_PER_EQUATION for every displayed equation (a ``$$ ... $$`` block,
  whose symbols are not counted as words), plus MINUTES_PER_CODE_CELL for every code cell
  the reader sees. An exercise's statement,
  its solution and its answer cell (the cell that calls ``CATALOG[...]``) belong to the
  exercise, not to the reading;
- **time with the exercises**: the reading time, plus MINUTES_PER_EXERCISE[kind] for every
  exercise and MINUTES_PER_CONCEPT_CHECK for every concept check (a ``Quiz`` cell);
- both rounded to the nearest ROUND_TO minutes, and never below ROUND_TO.

A syllabus week is its chapters' time with the exercises plus MINUTES_PER_DISCUSSION, rounded
to WEEK_ROUND_TO. A week may take half a chapter, named in its row as
'10 {ref}`ch-delta` up to "The chunkwise form"' and '... from "The chunkwise form"'
(``chapter_parts`` says how the halves are counted).

An exercise's kind: ``derivation`` when its statement opens with "Derive", "Derivation"
or "A derivation", or with an emphasised phrase that says derivation (the chapters' own
way of telling the reader that the answer is an argument on paper, which the checker
confirms only at its end: "**Derivation.**", "A derivation, then a measurement.",
"Derive the gradient ...", "*Derive, then check.*", "*Paper derivation.*");
otherwise the kind of its checker in ``lattn_edu.exercises.CATALOG``: ``code`` (write a
function), ``value`` (compute a number or an array) or ``construction`` (find an example with a
stated property, timed as a value).

How the constants were set: newcomers who read chapters 7 and 9 closely reported 80-90 and
60-75 minutes (the rule of 120 words a minute and a minute a cell said 55 and 45), and
20-40 minutes for a Part II exercise; ``python tools/chapter_times.py`` prints every chapter's
counts and times, so a change of constant can be checked against those figures.

    python tools/chapter_times.py           # each chapter's counts and times
    python tools/chapter_times.py --write   # rewrite the Time lines, the intro's table, the syllabus's times
    python tools/chapter_times.py --check   # exit 1 where a stated time differs from the rule
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parent.parent

WORDS_PER_MINUTE = 110
MINUTES_PER_EQUATION = 4
MINUTES_PER_CODE_CELL = 1.5
MINUTES_PER_EXERCISE = {"value": 15, "construction": 15, "code": 20, "derivation": 35}
MINUTES_PER_CONCEPT_CHECK = 2
ROUND_TO = 5
# The syllabus: a week is its chapters' time with the exercises plus the discussion question,
# rounded to the nearest half hour.
MINUTES_PER_DISCUSSION = 60
WEEK_ROUND_TO = 30

MYST = ROOT / "book" / "myst"
SOURCES = sorted(MYST.glob("*.md"))
INTRO = MYST / "00-intro.md"
CHAPTERS = [p for p in SOURCES if p != INTRO]
SYLLABUS = ROOT / "book" / "course" / "syllabus.md"

HIDDEN_TAGS = {"remove-cell", "remove-input"}
# Markup a reader never sees as words: directive fences and options, and target labels.
MARKUP_LINE = re.compile(r"^\s*(`{3,}|:{3,}|:\w[\w-]*:|\(\S+\)=\s*$)")
EXERCISE_BLOCK = re.compile(r"^(`{3,}|:{3,})\{exercise\}.*?^\1\s*$", re.M | re.S)
EXERCISE_OR_SOLUTION = re.compile(r"^(`{3,}|:{3,})\{(?:exercise|solution)\}.*?^\1\s*$",
                                  re.M | re.S)
# the statement's first line, after the directive's options
DERIVATION = re.compile(r"\A[^\n]*\n(?::[\w-]+:[^\n]*\n|\s*\n)*"
                        r"(?:\*{1,2}[^*\n]*?\b[Dd]erivation\b|\*{0,2}(?:A )?[Dd]eriv(?:e|ation)\b)")
DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$(?:[ \t]*\([\w-]+\))?", re.S)  # with its label
CATALOG_ID = re.compile(r"exercises\.CATALOG\[\s*[\"'](ch\d+\.\w+)[\"']\s*\]")  # an answer cell
TIME_LINE = re.compile(r"\*\*Time\*\* about (\d+) minutes to read"
                       r"(?:, about (\d+) minutes with the exercises)?\.")


@dataclass(frozen=True)
class ChapterTime:
    words: int
    equations: int
    code_cells: int
    exercises: tuple[str, ...]  # each exercise's kind, in page order
    concept_checks: int

    @property
    def reading_exact(self) -> float:
        return (self.words / WORDS_PER_MINUTE + MINUTES_PER_EQUATION * self.equations
                + MINUTES_PER_CODE_CELL * self.code_cells)

    @property
    def reading_minutes(self) -> int:
        return rounded(self.reading_exact)

    @property
    def with_exercises_exact(self) -> float:
        return (self.reading_exact + sum(MINUTES_PER_EXERCISE[k] for k in self.exercises)
                + MINUTES_PER_CONCEPT_CHECK * self.concept_checks)

    @property
    def with_exercises_minutes(self) -> int:
        return rounded(self.with_exercises_exact)

    @property
    def has_exercises(self) -> bool:
        return bool(self.exercises or self.concept_checks)


def rounded(minutes: float, step: int = ROUND_TO) -> int:
    return max(step, step * round(minutes / step))


def exercise_kinds(markdown: str, exercise_ids: list[str]) -> list[str]:
    """The kind of every exercise in one Markdown cell; ``exercise_ids`` are the ids the
    chapter's answer cells name, in page order, consumed as the exercises are met."""
    kinds = []
    for block in EXERCISE_BLOCK.finditer(markdown):
        exercise_id = exercise_ids.pop(0) if exercise_ids else None
        if DERIVATION.search(block.group(0)):
            kinds.append("derivation")
        else:
            kinds.append(checker_kind(exercise_id))
    return kinds


def checker_kind(exercise_id: str | None) -> str:
    """"code" or "value", from the exercise's checker; "code" for an exercise without one."""
    from lattn_edu import exercises

    exercise = exercises.CATALOG.get(exercise_id) if exercise_id else None
    return exercise.kind if exercise is not None else "code"


def chapter_time(source: Path) -> ChapterTime:
    """Count what the rule needs in one MyST chapter source."""
    return chapter_parts(source, None)[0]


def chapter_parts(source: Path, heading: str | None) -> tuple[ChapterTime, ...]:
    """Count one chapter in two parts, split at the section titled ``heading`` (a week of
    the syllabus may take half a chapter); with ``heading`` None, one part, the whole.

    The prose, equations, code cells and concept checks count in the part where they sit.
    An exercise counts in the part that defines the first equation or section its statement
    cites ({eq}`...` or {ref}`...`), since the exercises sit together at a chapter's end;
    one that cites none of the chapter's labels counts where it sits."""
    notebook = jupytext.read(source, fmt="md:myst")
    answer_ids = [m for cell in notebook.cells if cell.cell_type == "code"
                  for m in CATALOG_ID.findall(cell.source)]
    cells = split_cells(notebook.cells, heading, source.name)  # [(part, type, source, tags)]
    defined = [set(), set()]
    for part, cell_type, text, _ in cells:
        if cell_type == "markdown":
            defined[part] |= {name for groups in LABEL.findall(text) for name in groups if name}
    counts = [dict(words=0, equations=0, code_cells=0, checks=0, kinds=[]) for _ in range(2)]
    for part, cell_type, text, tags in cells:
        count = counts[part]
        if cell_type == "markdown":
            for block in EXERCISE_BLOCK.finditer(text):
                kind = exercise_kinds(block.group(0), answer_ids)[0]
                counts[cited_part(block.group(0), defined, part)]["kinds"].append(kind)
            prose = EXERCISE_OR_SOLUTION.sub("", text)
            count["equations"] += len(DISPLAY_MATH.findall(prose))
            prose = DISPLAY_MATH.sub("", prose)
            count["words"] += sum(len(line.split()) for line in prose.splitlines()
                                  if not MARKUP_LINE.match(line))
        elif "Quiz(" in text:
            count["checks"] += 1
        elif not tags & HIDDEN_TAGS and "CATALOG[" not in text:
            count["code_cells"] += 1
    parts = tuple(ChapterTime(c["words"], c["equations"], c["code_cells"], tuple(c["kinds"]),
                              c["checks"]) for c in counts)
    return parts if heading is not None else (parts[0],)


# a label the chapter defines: a target "(name)=", an equation "$$ (name)", an exercise's
LABEL = re.compile(r"^\(([\w-]+)\)=\s*$|\$\$[ \t]*\(([\w-]+)\)|^:label:\s*(\S+)", re.M)
CITED = re.compile(r"\{(?:eq|ref)\}`(?:[^`<]*<)?([\w-]+)>?`")


def split_cells(cells, heading: str | None, name: str) -> list[tuple[int, str, str, set]]:
    """(part 0 or 1, cell type, source, tags) for every cell, the cell holding the
    heading's line cut in two there; every cell in part 0 when ``heading`` is None."""
    pattern = re.compile(rf"^#+ {re.escape(heading)}\s*$", re.M) if heading else None
    out, part = [], 0
    for cell in cells:
        tags = set(cell.metadata.get("tags", []))
        match = pattern.search(cell.source) if pattern and cell.cell_type == "markdown" else None
        if match and part == 0:
            out.append((0, "markdown", cell.source[:match.start()], tags))
            out.append((1, "markdown", cell.source[match.start():], tags))
            part = 1
        else:
            out.append((part, cell.cell_type, cell.source, tags))
    if pattern and part == 0:
        raise ValueError(f"{name} has no section titled {heading!r} to split at")
    return out


def cited_part(exercise: str, defined: list[set], where: int) -> int:
    """The part that defines the first label ``exercise`` cites; ``where`` if none."""
    for label in CITED.findall(exercise):
        for part, labels in enumerate(defined):
            if label in labels:
                return part
    return where


def time_line(t: ChapterTime) -> str:
    line = f"**Time** about {t.reading_minutes} minutes to read"
    if t.has_exercises:
        line += f", about {t.with_exercises_minutes} minutes with the exercises"
    return line + "."


def chapter_number(source: Path) -> int:
    return int(source.stem.split("-")[0])


# --- where the times are stated --------------------------------------------------------------

INTRO_ROW = re.compile(r"^(\| (\d+) \|.*\| )(\d+) min \| (\d+) min \|[ \t]*$", re.M)  # [ \t]: not the blank line after
WEEK_ROW = re.compile(r"^(\| [^|]+ \| ([^|]*\{ref\}[^|]*) \|[^|]*\| )(\d+(?:\.5)? h)( \|.*)$", re.M)
# a week's chapter: "10 {ref}`ch-delta`", or half of one: '... up to "The chunkwise form"'
# (the sections before that one) or '... from "The chunkwise form"' (that one and the rest)
WEEK_CHAPTER = re.compile(r'(\d+) \{ref\}`[^`]+`(?: (up to|from) "([^"]+)")?')


def hours(minutes: int) -> str:
    value = minutes / 60
    return f"{value:g} h"


def week_minutes(parts: list[ChapterTime]) -> int:
    work = sum(t.with_exercises_exact for t in parts) + MINUTES_PER_DISCUSSION
    return rounded(work, WEEK_ROUND_TO)


def week_parts(chapters_cell: str, times: dict[int, ChapterTime]) -> list[ChapterTime]:
    """The chapters, or halves of chapters, that a syllabus row's chapter cell names."""
    parts = []
    for number, side, heading in WEEK_CHAPTER.findall(chapters_cell):
        if not side:
            parts.append(times[int(number)])
            continue
        source = next(p for p in CHAPTERS if chapter_number(p) == int(number))
        parts.append(chapter_parts(source, heading)[0 if side == "up to" else 1])
    return parts


def rewritten_chapter(text: str, t: ChapterTime) -> str:
    return TIME_LINE.sub(time_line(t), text, count=1)


def rewritten_intro(text: str, times: dict[int, ChapterTime]) -> str:
    text = rewritten_chapter(text, times[0])

    def row(match: re.Match) -> str:
        t = times[int(match[2])]
        return f"{match[1]}{t.reading_minutes} min | {t.with_exercises_minutes} min |"
    return INTRO_ROW.sub(row, text)


def rewritten_syllabus(text: str, times: dict[int, ChapterTime]) -> str:
    def row(match: re.Match) -> str:
        return f"{match[1]}{hours(week_minutes(week_parts(match[2], times)))}{match[4]}"
    return WEEK_ROW.sub(row, text)


def all_times() -> dict[int, ChapterTime]:
    return {chapter_number(p): chapter_time(p) for p in SOURCES}


def expected_texts() -> dict[Path, str]:
    """Every file that states a time, as the rule would write it."""
    times = all_times()
    texts = {INTRO: rewritten_intro(INTRO.read_text(encoding="utf-8"), times),
             SYLLABUS: rewritten_syllabus(SYLLABUS.read_text(encoding="utf-8"), times)}
    for source in CHAPTERS:
        texts[source] = rewritten_chapter(source.read_text(encoding="utf-8"),
                                          times[chapter_number(source)])
    return texts


def stale_files() -> list[Path]:
    return [p for p, text in expected_texts().items() if p.read_text(encoding="utf-8") != text]


def report() -> str:
    lines = ["| chapter | words | equations | code cells | exercises | checks | reading | with exercises |",
             "|---|---|---|---|---|---|---|---|"]
    for number, t in all_times().items():
        kinds = ", ".join(f"{t.exercises.count(k)} {k}" for k in MINUTES_PER_EXERCISE
                          if k in t.exercises) or "-"
        lines.append(f"| {number} | {t.words} | {t.equations} | {t.code_cells} | {kinds} "
                     f"| {t.concept_checks} | {t.reading_minutes} | "
                     f"{t.with_exercises_minutes if t.has_exercises else '-'} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite every stated time from the rule")
    mode.add_argument("--check", action="store_true", help="exit 1 where a stated time differs")
    args = parser.parse_args()
    if args.check:
        stale = stale_files()
        for path in stale:
            print(f"out of date: {path.relative_to(ROOT)} (run python tools/chapter_times.py --write)")
        return 1 if stale else 0
    if args.write:
        for path, text in expected_texts().items():
            if path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
                print(f"rewrote {path.relative_to(ROOT)}")
        return 0
    print(report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
