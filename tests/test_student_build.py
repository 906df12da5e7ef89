"""The student build (``hide_solutions: true``) hands out no solution by any route.

The end-to-end test builds a one-chapter book with the repository's own ``_config.yml``
(every extension, this one included; only ``hide_solutions`` switched on and execution
off) through the same ``jupyter-book build -W -n --keep-going`` command, then searches
every file under ``_build/html`` (pages, ``_sources`` downloads of the MyST source and of
the notebook, ``searchindex.js``) for the solutions' text, ``solution_`` names and the
``{solution}`` directive. The switch and its code path are the whole book's; only the
chapter is small, so the build takes seconds instead of the full book's minutes of
executing chapters. The real chapters are checked by stripping their sources with the same
function the build uses.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import jupytext
import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))  # as the build has it, for colab_launch
_spec = importlib.util.spec_from_file_location("student_build", ROOT / "book" / "_ext" / "student_build.py")
student_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(student_build)
sys.path.insert(0, str(ROOT / "tools"))
import colab_notebooks  # noqa: E402

CHAPTERS = colab_notebooks.sources()
LEAKS = re.compile(r"solution_|\{solution")


def solution_bodies(text: str) -> list[str]:
    """The text of every colon-fenced {solution} block of a MyST document."""
    return re.findall(r"^:::\{solution\}.*?\n(.*?)^:::$", text, re.M | re.S)


def distinctive_lines(body: str) -> list[str]:
    """Lines of a solution long enough that they cannot appear in the text by chance."""
    lines = [line.strip() for line in body.splitlines()]
    return [line for line in lines if len(line) > 40 and not line.startswith((":", "```"))]


def test_a_colon_solution_goes_with_its_nested_include_and_the_text_around_it_stays():
    text = ("Before.\n\n:::{exercise}\n:label: ex-1\nDouble it.\n:::\n\n"
            ":::{solution} ex-1\n:class: dropdown\n\nBecause ::: is fine in code:\n\n"
            "```{literalinclude} helpers.py\n:pyobject: solution_twice\n```\n\n"
            ":::{note}\nA nested note.\n:::\nStill the solution.\n:::\n\nAfter.\n")
    stripped = student_build.strip_solutions_from_text(text)
    assert stripped == "Before.\n\n:::{exercise}\n:label: ex-1\nDouble it.\n:::\n\n\nAfter.\n"


def test_a_backtick_solution_ends_at_its_own_fence_not_at_a_shorter_one():
    text = "A.\n````{solution} ex-1\n```python\nx = 1\n```\nStill hidden.\n````\nB.\n"
    assert student_build.strip_solutions_from_text(text) == "A.\nB.\n"


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_chapter_download_keeps_its_exercises_and_loses_its_solutions(path):
    text = path.read_text(encoding="utf-8")
    stripped = student_build.strip_solutions_from_text(text)
    assert not LEAKS.search(stripped), path.name
    for body in solution_bodies(text):
        for line in distinctive_lines(body):
            assert line not in stripped, f"{path.name}: solution text kept: {line!r}"
    assert stripped.count("{exercise}") == text.count("{exercise}")


def _colab_edition(tmp_path: Path, hide_solutions: bool) -> Path:
    source = next(s for s in colab_notebooks.sources() if s.stem.startswith("02-"))
    config = colab_notebooks.read_config()
    committed = colab_notebooks.colab_path(source)
    labels = colab_notebooks.recorded_labels(committed, config)
    glue = colab_notebooks.recorded_glue(committed)
    edition = tmp_path / "book" / "colab" / f"{source.stem}.ipynb"
    edition.parent.mkdir(parents=True, exist_ok=True)
    edition.write_text(colab_notebooks.render(source, labels, glue, "lattn_edu", hide_solutions),
                       encoding="utf-8")
    return edition


@pytest.mark.slow  # a whole build, or every frame: the slow lane
@pytest.mark.parametrize("hide_solutions", [True, False], ids=["student", "instructor"])
def test_the_build_accepts_only_student_colab_editions_in_a_student_build(tmp_path, hide_solutions,
                                                                          monkeypatch):
    edition = _colab_edition(tmp_path, hide_solutions)
    assert student_build.colab_edition_has_solutions(edition) is not hide_solutions
    assert ("def solution_" in edition.read_text(encoding="utf-8")) is not hide_solutions
    warnings = []
    monkeypatch.setattr(student_build.logger, "warning", warnings.append)
    student_build._check_colab_editions(SimpleNamespace(srcdir=str(tmp_path),
                                                        config=SimpleNamespace(hide_solutions=True)))
    assert len(warnings) == (0 if hide_solutions else 1)
    assert all("holds the solutions" in w and edition.name in w for w in warnings)


SOLUTION_TEXT = "Doubling is adding the input to itself, which the checker cannot see"

CHAPTER = [
    "# A chapter\n\nSome teaching text about doubling numbers.",
    "import helpers",
    ":::{exercise}\n:label: ex-double\n\nWrite a function that doubles its input.\n:::",
    f":::{{solution}} ex-double\n:class: dropdown\n\n{SOLUTION_TEXT}.\n\n"
    "```{literalinclude} helpers.py\n:pyobject: solution_double\n```\n:::",
    ":::{exercise}\n:label: ex-triple\n\nWrite a function that triples its input.\n:::\n\n"
    "````{solution} ex-triple\nReasoning about tripling, fenced with backticks.\n\n"
    "```python\ndef solution_triple(x):\n    return 3 * x\n```\n````\n\nThe text after both exercises.",
    "print('a code cell after the exercises')",
]


def _student_project(root: Path) -> None:
    """A one-chapter book built with the repository's configuration and extensions."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config["execute"]["execute_notebooks"] = "off"
    config["sphinx"]["config"]["hide_solutions"] = True
    (root / "_config.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (root / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n"
                                   "  - file: book/myst/01-double\n", encoding="utf-8")
    (root / "index.md").write_text("# The book\n\nAn introduction.\n", encoding="utf-8")
    # tools/make_pdfs.py: where chromium exists the build prints its pages to PDF, as the book's does
    for shared in ("book/_ext", "book/_templates", "book/site_css", "book/references.bib", "tools"):
        (root / shared).parent.mkdir(parents=True, exist_ok=True)
        (root / shared).symlink_to(ROOT / shared)
    chapters = root / "book" / "myst"
    chapters.mkdir()
    (chapters / "helpers.py").write_text("def solution_double(x):\n    return 2 * x\n", encoding="utf-8")
    cells = [nbformat.v4.new_code_cell(text) if i in (1, 5) else nbformat.v4.new_markdown_cell(text)
             for i, text in enumerate(CHAPTER)]
    notebook = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    # a MyST notebook, as the book's chapters are
    jupytext.write(notebook, chapters / "01-double.md", fmt="md:myst")
    colab = root / "book" / "colab"
    colab.mkdir()
    edition = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(CHAPTER[0])],
                                       metadata={"lattn_edu": {"solutions": False}})
    nbformat.write(edition, colab / "01-double.ipynb")


@pytest.mark.slow  # a whole build, or every frame: the slow lane
def test_the_student_site_holds_no_solution_anywhere(tmp_path):
    _student_project(tmp_path)
    build = subprocess.run([shutil.which("jupyter-book") or "jupyter-book", "build", str(tmp_path),
                            "-W", "-n", "--keep-going"], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    html = tmp_path / "_build" / "html"
    files = {path: path.read_text(encoding="utf-8", errors="replace")
             for path in html.rglob("*") if path.is_file()}
    for path, text in files.items():
        where = path.relative_to(html)
        for leak in (SOLUTION_TEXT, "Reasoning about tripling", "return 2 * x", "return 3 * x"):
            assert leak not in text, f"{where} holds solution text {leak!r}"
        assert not LEAKS.search(text), f"{where}: {LEAKS.search(text).group()!r}"
    page = files[html / "book" / "myst" / "01-double.html"]
    assert "Write a function that doubles its input" in page and "The text after both" in page
    # the page's two downloads: the notebook (the theme's copy of the one the build read)
    download = json.loads(files[html / "_sources" / "book" / "myst" / "01-double.ipynb"])
    sources = ["".join(cell["source"]) for cell in download["cells"]]
    assert sources[:3] == CHAPTER[:3] and sources[3] == "" and sources[-1] == CHAPTER[-1]
    assert "triples its input" in sources[4] and "The text after both exercises." in sources[4]
    # and the MyST source
    markdown = files[html / "_sources" / "book" / "myst" / "01-double.md"]
    assert CHAPTER[2] in markdown and "triples its input" in markdown and "The text after both" in markdown
    terms = json.loads(re.search(r'"terms": (\{.*?\})', files[html / "searchindex.js"]).group(1))
    assert {"doubl", "tripl"} <= set(terms)  # stems of the exercises' words, but of no solution's
    assert not {"reason", "fenc", "backtick", "checker", "itself"} & set(terms)
    assert "colab/01-double.ipynb" in page
