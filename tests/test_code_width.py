"""No line of a code cell the reader sees is wider than the site's code column.

CODE_COLUMN is the number of monospace characters a code cell shows without scrolling on
the website at the browser size of tests/test_site.py (1280 × 900); the report of the
change that set it gives the measurement. Hidden cells (remove-cell, remove-input: glue
calls, table formatting, quizzes) are not shown, so they are not measured.
"""

from __future__ import annotations

from pathlib import Path

import jupytext
import pytest

CODE_COLUMN = 80
HIDDEN_TAGS = {"remove-cell", "remove-input"}

SOURCES = sorted((Path(__file__).resolve().parent.parent / "book" / "myst").glob("*.md"))


def too_wide(source: Path, limit: int = CODE_COLUMN) -> list[str]:
    """'cell 3, line 2 (91 characters): ...' for every visible code line over the limit."""
    notebook = jupytext.read(source, fmt="md:myst")
    found = []
    for number, cell in enumerate(notebook.cells):
        if cell.cell_type != "code" or HIDDEN_TAGS & set(cell.metadata.get("tags", [])):
            continue
        for line_number, line in enumerate(cell.source.splitlines(), start=1):
            if len(line) > limit:
                found.append(f"cell {number}, line {line_number} ({len(line)} characters): "
                             f"{line.strip()[:60]}")
    return found


@pytest.mark.parametrize("source", SOURCES, ids=[p.stem for p in SOURCES])
def test_visible_code_fits_the_column(source):
    assert not too_wide(source), "\n".join(too_wide(source))


def test_hidden_cells_are_not_measured(tmp_path):
    source = tmp_path / "01-x.md"
    wide = "x = " + "1 + " * 30 + "1"
    source.write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n"
        f"```{{code-cell}} python\n{wide}\n```\n\n"
        f"```{{code-cell}} python\n:tags: [remove-cell]\n{wide}\n```\n", encoding="utf-8")
    assert len(too_wide(source)) == 1
