"""Every chapter notebook runs top to bottom, as a reader on Colab or Jupyter would run it."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "book" / "chapters").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_chapter_executes_without_error(path):
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError, naming the cell, on any error
    # a cell tagged raises-exception shows a deliberate error (e.g. the softmax memory guard)
    errors = [out for cell in notebook.cells if cell.cell_type == "code"
              and "raises-exception" not in cell.metadata.get("tags", [])
              for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors


def test_there_are_chapters_to_run():
    assert len(NOTEBOOKS) >= 8
