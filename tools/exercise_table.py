"""Write the instructor guide's table of every exercise, from the chapters and the checkers.

One row per exercise, in reading order: its number as the website and the Colab editions
show it ("10.3": chapter 10's third, book/_ext/exercise_numbers.py), its id in
``lattn_edu.exercises.CATALOG``, what the answer is (a number, a function, or a derivation
whose end the checker confirms) and what the checker compares the answer with. The table
sits in book/course/instructor-guide.md between two marker comments; nothing else there
is touched.

    python tools/exercise_table.py           # print the table
    python tools/exercise_table.py --write   # rewrite it in the guide
    python tools/exercise_table.py --check   # exit 1 if the guide's table differs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jupytext

sys.path.insert(0, str(Path(__file__).resolve().parent))
import chapter_times  # noqa: E402

ROOT = chapter_times.ROOT
GUIDE = ROOT / "book" / "course" / "instructor-guide.md"
BEGIN = "<!-- exercise table: written by tools/exercise_table.py -->"
END = "<!-- end of exercise table -->"

# Checkers that compare with their solution function; the guide says why for each, and
# tests/test_exercises.py checks that exactly these call it.
CHECKED_AGAINST_THEIR_SOLUTION = {"ch06.favor_attention", "ch06.favor_variance",
                                  "ch07.elu_limit"}
# Checked against a computation of their own that no package function performs: numpy's solver,
# the same recurrence written as one stacked linear map, a count by enumeration.
CHECKED_AGAINST_AN_INDEPENDENT_COMPUTATION = {"ch13.kda_extra_exponentials", "ch14.sherman_morrison",
                                              "ch14.momentum_state", "ch14.longhorn_step"}
ANSWER = {"value": "a number or array", "code": "a function",
          "construction": "an example with a stated property",
          "derivation": "a derivation, then its result"}


def chapter_exercises(source: Path) -> list[tuple[str, str, str]]:
    """(number "10.3", id, kind) for every exercise of one chapter, in page order."""
    notebook = jupytext.read(source, fmt="md:myst")
    ids = [i for cell in notebook.cells if cell.cell_type == "code"
           for i in chapter_times.CATALOG_ID.findall(cell.source)]
    unmatched = list(ids)  # exercise_kinds consumes it, one id per exercise met
    kinds = [k for cell in notebook.cells if cell.cell_type == "markdown"
             for k in chapter_times.exercise_kinds(cell.source, unmatched)]
    if len(ids) != len(kinds):
        raise ValueError(f"{source.name}: {len(kinds)} exercises but {len(ids)} answer cells "
                         f"naming CATALOG ids; each exercise needs exactly one")
    number = chapter_times.chapter_number(source)
    return [(f"{number}.{i}", exercise_id, kind)
            for i, (exercise_id, kind) in enumerate(zip(ids, kinds), start=1)]


def compared_with(exercise_id: str, kind: str) -> str:
    from lattn_edu import exercises

    if exercises.CATALOG[exercise_id].kind == "value":
        return "the expected value"
    if exercises.CATALOG[exercise_id].kind == "construction":
        return "the property it must have (any example that has it passes)"
    if exercise_id in CHECKED_AGAINST_THEIR_SOLUTION:
        return "its solution function, on purpose (see below)"
    if exercise_id in CHECKED_AGAINST_AN_INDEPENDENT_COMPUTATION:
        return "an independent computation (numpy's solver, a stacked recurrence, a count)"
    return "the package's own implementation"


def table() -> str:
    rows = ["| exercise | id | the answer | the checker compares it with |", "|---|---|---|---|"]
    for source in chapter_times.CHAPTERS:
        for number, exercise_id, kind in chapter_exercises(source):
            rows.append(f"| {number} | `{exercise_id}` | {ANSWER[kind]} | "
                        f"{compared_with(exercise_id, kind)} |")
    return "\n".join(rows)


def guide_with_table(text: str) -> str:
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise ValueError(f"{GUIDE.name} needs the markers {BEGIN!r} and {END!r} once each")
    before, rest = text.split(BEGIN)
    _, after = rest.split(END)
    return f"{before}{BEGIN}\n{table()}\n{END}{after}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if not (args.write or args.check):
        print(table())
        return 0
    text = GUIDE.read_text(encoding="utf-8")
    expected = guide_with_table(text)
    if args.check:
        if text != expected:
            print(f"out of date: {GUIDE.relative_to(ROOT)} (run python tools/exercise_table.py --write)")
        return int(text != expected)
    GUIDE.write_text(expected, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
