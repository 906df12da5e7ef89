"""The book: every section of the syllabus it was written from has a chapter, in order; every
chapter source has its notebook, which carries no outputs, matches the source, and installs
lattn_edu from the configured repository."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import sync_notebooks  # noqa: E402

# The section titles of the syllabus the book was written from (a text kept outside this
# repository) and the chapter that teaches each one; chapter 3 covers two sections.
SEED_SECTIONS = {
    "Softmax attention, and the one thing it forbids": "01-softmax-attention",
    "Replacing the exponential with a kernel feature map": "02-kernel-feature-maps",
    "The associativity trick, written out": "03-associativity",
    "Complexity: O(N^2) becomes O(N)": "03-associativity",
    "The recurrent form: a running KV state": "04-recurrent-form",
    "A small worked example": "05-worked-example",
    "Feature maps: elu+1 and positive random features": "06-feature-maps",
    "Why the quality gap: normalization and expressivity": "07-quality-gap",
    "The kernel cousins: SSMs and RetNet": "08-kernel-cousins",
}
SOURCES = sorted(sync_notebooks.SOURCES.glob("*.md"))


def toc_files() -> list[str]:
    """The root page and then every chapter, in reading order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"]] + [chapter["file"] for part in toc["parts"] for chapter in part["chapters"]]


def test_toc_has_a_chapter_for_every_seed_section_in_order():
    chapters = [Path(f).name for f in toc_files()[1:] if f.startswith("book/chapters/")]
    expected = list(dict.fromkeys(SEED_SECTIONS.values()))
    assert chapters[: len(expected)] == expected


def test_every_notebook_has_its_source():
    orphans = sorted({nb.stem for nb in sync_notebooks.NOTEBOOKS.glob("*.ipynb")} - {s.stem for s in SOURCES})
    assert not orphans, f"notebooks in {sync_notebooks.NOTEBOOKS} without a source in book/myst: {orphans}"


@pytest.mark.parametrize("source", SOURCES, ids=[source.stem for source in SOURCES])
def test_chapter_notebook_exists_without_outputs_and_matches_its_source(source):
    notebook = sync_notebooks.NOTEBOOKS / f"{source.stem}.ipynb"
    assert notebook.exists(), f"{notebook.name} missing: run python tools/sync_notebooks.py"
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in cells if c["cell_type"] == "code"), f"{notebook.name} carries outputs"
    rendered = sync_notebooks.render_notebook(source, sync_notebooks.install_requirement())
    assert notebook.read_text(encoding="utf-8") == rendered, (
        f"{notebook.name} differs from {source.name}: run python tools/sync_notebooks.py")


def test_first_cell_installs_lattn_edu_from_the_configured_repository():
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    url = config["repository"]["url"]
    for notebook in sorted(sync_notebooks.NOTEBOOKS.glob("*.ipynb")):
        first = json.loads(notebook.read_text(encoding="utf-8"))["cells"][0]
        source = "".join(first["source"])
        assert first["cell_type"] == "code" and f"git+{url}@" in source, notebook.name
        assert "find_spec(\"lattn_edu\") is None" in source  # installs only when missing
        assert "--upgrade" not in source and "-U " not in source  # never upgrades Colab's stack


def test_every_notebook_is_in_the_toc():
    listed = {Path(f).name for f in toc_files()}
    for notebook in sync_notebooks.NOTEBOOKS.glob("*.ipynb"):
        assert notebook.stem in listed, f"{notebook.name} is not in _toc.yml"
