"""Code cells the reader sees show only the computation: no line wider than the site's
code column, and no bookkeeping (glue calls go in hidden cells).

CODE_COLUMN is the number of monospace characters a code cell shows without scrolling on
the website at the browser size of tests/test_site.py (1280 × 900), measured in Debian's
chromium on the built site: the first code cell's <pre> is 652 px wide inside its padding
and one character of its 14 px monospace font is 8.43 px, so 77 characters fit. Hidden cells (remove-cell, remove-input: glue
calls, table formatting, quizzes) are not shown, so they are not measured.
"""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest

CODE_COLUMN = 77
HIDDEN_TAGS = {"remove-cell", "remove-input"}

SOURCES = sorted((Path(__file__).resolve().parent.parent / "book" / "myst").glob("*.md"))


GLUE_CALL = re.compile(r"\bglue\(")


def visible_code(source: Path) -> list[tuple[int, str]]:
    """(cell number, source) of every code cell the website shows."""
    notebook = jupytext.read(source, fmt="md:myst")
    return [(number, cell.source) for number, cell in enumerate(notebook.cells)
            if cell.cell_type == "code"
            and not HIDDEN_TAGS & set(cell.metadata.get("tags", []))]


def too_wide(source: Path, limit: int = CODE_COLUMN) -> list[str]:
    """'cell 3, line 2 (91 characters): ...' for every visible code line over the limit."""
    found = []
    for number, code in visible_code(source):
        for line_number, line in enumerate(code.splitlines(), start=1):
            if len(line) > limit:
                found.append(f"cell {number}, line {line_number} ({len(line)} characters): "
                             f"{line.strip()[:60]}")
    return found


@pytest.mark.parametrize("source", SOURCES, ids=[p.stem for p in SOURCES])
def test_visible_code_fits_the_column(source):
    assert not too_wide(source), "\n".join(too_wide(source))


@pytest.mark.parametrize("source", SOURCES, ids=[p.stem for p in SOURCES])
def test_visible_code_glues_nothing(source):
    cells = [number for number, code in visible_code(source) if GLUE_CALL.search(code)]
    assert not cells, f"{source.name}: glue(...) in visible cells {cells}; move it to a hidden cell"


def test_hidden_cells_are_not_measured(tmp_path):
    source = tmp_path / "01-x.md"
    wide = "x = " + "1 + " * 30 + "1"
    source.write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n"
        f"```{{code-cell}} python\n{wide}\n```\n\n"
        f"```{{code-cell}} python\n:tags: [remove-cell]\n{wide}\n```\n", encoding="utf-8")
    assert len(too_wide(source)) == 1
