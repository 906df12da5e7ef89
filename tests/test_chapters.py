"""Every chapter runs top to bottom, as a reader on Colab or Jupyter would run it.

The session's strict build (``book_build`` in conftest.py) executes every chapter of the
table of contents (book/myst/NN-....md, a MyST notebook) in one fresh kernel, from its own
folder as a reader would, and keeps each executed copy; these tests read those copies rather
than run the chapters a second time.
"""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "book" / "myst").glob("*.md"))


def code_cells(notebook: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The cells a kernel runs (it skips empty ones)."""
    return [cell for cell in notebook.cells if cell.cell_type == "code" and cell.source.strip()]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_chapter_executes_without_error(path, book_build):
    executed_path = book_build.executed(path)
    assert executed_path.is_file(), (
        f"the book build did not execute {path.name}; its log says:\n{book_build.log_lines_about(path.stem)}")
    executed = nbformat.read(executed_path, as_version=4)
    cells = code_cells(executed)
    assert [c.source for c in cells] == [c.source for c in code_cells(jupytext.read(path, fmt="md:myst"))], (
        f"the build executed another version of {path.name}")
    # every cell ran once, in order, in one kernel: top to bottom
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1))
    # a cell tagged raises-exception shows a deliberate error (e.g. the softmax memory guard)
    errors = [f"cell {c.execution_count}: {out.get('ename')}: {out.get('evalue')}" for c in cells
              if "raises-exception" not in c.metadata.get("tags", [])
              for out in c.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors, f"{path.name}: {errors}"


def test_there_are_chapters_to_run():
    assert len(NOTEBOOKS) >= 8
