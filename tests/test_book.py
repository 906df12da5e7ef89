"""The book: every section of the syllabus it was written from has a chapter, in order; each
chapter has one source, book/myst/NN-....md, a MyST notebook that the build reads and
executes itself, and the table of contents lists every one."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent

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
CHAPTER_FOLDER = "book/myst/"
SOURCES = sorted((ROOT / CHAPTER_FOLDER).glob("*.md"))


def toc_files() -> list[str]:
    """The root page and then every chapter, in reading order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"]] + [chapter["file"] for part in toc["parts"] for chapter in part["chapters"]]


def test_toc_has_a_chapter_for_every_seed_section_in_order():
    chapters = [Path(f).name for f in toc_files()[1:] if f.startswith(CHAPTER_FOLDER)]
    expected = list(dict.fromkeys(SEED_SECTIONS.values()))
    assert chapters[: len(expected)] == expected


def test_every_chapter_source_is_in_the_toc():
    assert [f"{CHAPTER_FOLDER}{source.stem}" for source in SOURCES] == [
        page for page in toc_files() if page.startswith(CHAPTER_FOLDER)]


def front_matter(source: Path) -> dict:
    text = source.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{source.name} has no front matter"
    return yaml.safe_load(text.split("---\n", 2)[1])


@pytest.mark.parametrize("source", SOURCES, ids=[source.stem for source in SOURCES])
def test_chapter_source_is_a_notebook_the_build_executes(source):
    """myst-nb reads a Markdown file as a notebook (executes its code cells, glues its values)
    only with this front matter; without it the page would show code that never ran."""
    matter = front_matter(source)
    assert matter["jupytext"]["text_representation"]["format_name"] == "myst", source.name
    assert matter["kernelspec"]["name"] == "python3", source.name


def test_each_chapter_has_one_source():
    """No generated copy of a chapter beside its source: the only notebooks under book/ are
    the Colab editions (tools/colab_notebooks.py)."""
    notebooks = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "book").rglob("*.ipynb")
                       if ".ipynb_checkpoints" not in p.parts)
    assert [n for n in notebooks if not n.startswith("book/colab/")] == []
    assert not (ROOT / "book" / "chapters").exists()
