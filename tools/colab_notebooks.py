"""Write the Colab edition of every chapter, book/colab/NN-....ipynb, from its MyST source.

The website is built from book/chapters/ (tools/sync_notebooks.py); Colab cannot render
what the website's build resolves (MyST roles, directives, glued numbers, tags), so the
chapters' launch buttons open these notebooks instead. Each is the chapter in plain Jupyter
Markdown (tools/plain_markdown.py) with:

- a first cell that installs lattn_edu where it is missing (the same cell as the website's
  notebooks), folded as a Colab form;
- every number glued into the text as it was when the website was built: the code cell
  that computes it still prints it live, so the reader sees both;
- quizzes, solutions and cells the website hides (``remove-input``, ``hide-input``,
  ``remove-cell``) folded as Colab forms (``#@title ...`` with ``"cellView": "form"``):
  Colab shows only the title until the reader opens it, and a quiz answers only once an
  option is chosen;
- no solutions at all when ``_config.yml`` sets ``hide_solutions: true`` (the student build),
  and ``"solutions": false`` in its metadata, which the student build's strict check
  requires of every edition its Colab buttons open.

The glued values live in each notebook's metadata (``lattn_edu.glue``) as well as in its
text, so ``--check`` can render every source again with the values the notebook recorded:
it is strict about every character except those values, which change from build to build
wherever they come from a live timing.

    jupyter-book build . -W -n --keep-going   # records the glued values in _build/
    python tools/colab_notebooks.py           # write book/colab/ from the sources and that build
    python tools/colab_notebooks.py --reuse-values  # no build: keep the values already recorded
    python tools/colab_notebooks.py --check   # exit 1 if any notebook differs from its source
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plain_markdown  # noqa: E402
import sync_notebooks  # noqa: E402

ROOT = plain_markdown.ROOT
COLAB = ROOT / "book" / "colab"
EXECUTED = ROOT / "_build" / "jupyter_execute" / "book" / "chapters"
BIBLIOGRAPHY = ROOT / "book" / "references.bib"
FOLDED_TAGS = {"remove-cell": "Bookkeeping for the text (hidden on the website)",
               "remove-input": "Show the code", "hide-input": "Show the code"}


def read_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def built_glue(stem: str) -> dict[str, str]:
    """The values the website build glued into chapter ``stem``, as the text shows them."""
    path = EXECUTED / f"{stem}.glue.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path.relative_to(ROOT)} is missing: build the site first "
                                f"(jupyter-book build . -W -n --keep-going)")
    values = {}
    for name, output in json.loads(path.read_text(encoding="utf-8")).items():
        text = output["data"]["text/plain"]
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text
        values[name] = value if isinstance(value, str) else text
    return values


def recorded_glue(notebook: Path) -> dict[str, str]:
    """The glued values a Colab notebook recorded when it was written."""
    if not notebook.is_file():
        return {}
    return json.loads(notebook.read_text(encoding="utf-8"))["metadata"].get("lattn_edu", {}).get("glue", {})


def form_cell(title: str, code: str) -> nbformat.NotebookNode:
    """A code cell Colab folds to its title until the reader opens it."""
    return nbformat.v4.new_code_cell(f"#@title {title}\n{code}", metadata={"cellView": "form"})


def solution_cell(solution: plain_markdown.Solution) -> nbformat.NotebookNode:
    """The solution's prose as comments and its code, folded; running it only defines names."""
    comments = "\n".join(f"# {line}".rstrip() for line in solution.prose.splitlines())
    body = "\n\n".join(part for part in (comments, solution.code) if part)
    return form_cell(f"Solution to exercise {solution.exercise} (open to read it)", body)


def with_edition_note(markdown: str, book: plain_markdown.Book, stem: str) -> str:
    """The chapter's first Markdown cell with a note under its title: what this notebook is."""
    note = (f"*This is the Colab edition of [this chapter on the website]({book.page(stem)}). "
            "Numbers in the text were computed when the website was built; the code cells "
            "compute them again here, so measured times will differ. Run the cells from the top "
            "(Runtime → Run all).*")
    lines = markdown.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("# "))
    return "\n".join(lines[:title + 1] + ["", note] + lines[title + 1:])


def render(source: Path, book: plain_markdown.Book, glue: dict[str, str], requirement: str,
           hide_solutions: bool) -> str:
    """The Colab notebook JSON for one MyST source."""
    chapter = next(c for c in book.chapters if c.stem == source.stem)
    translator = plain_markdown.ChapterTranslator(book, chapter, glue, source.parent)
    cells = [form_cell("Install lattn_edu (only where it is missing)",
                       sync_notebooks.INSTALL_CELL.format(requirement=requirement))]
    quizzes = 0
    for cell in plain_markdown.read_cells(source):
        if cell.cell_type == "markdown":
            for piece in translator.markdown(cell.source):
                if isinstance(piece, plain_markdown.Solution):
                    if not hide_solutions:
                        cells.append(solution_cell(piece))
                else:
                    if len(cells) == 1:  # the chapter's title
                        piece = with_edition_note(piece, book, source.stem)
                    cells.append(nbformat.v4.new_markdown_cell(piece))
            continue
        tags = set(cell.metadata.get("tags", []))
        if "raises-exception" in tags:
            raise plain_markdown.UnsupportedMyST(
                f"{source.stem}: a cell tagged raises-exception would stop Run all on Colab; "
                f"catch the error and print it instead")
        code = cell.source
        if "Quiz(" in code:
            quizzes += 1
            cells.append(form_cell(f"Concept check {chapter.number}.{quizzes}", code))
        elif (folded := [FOLDED_TAGS[t] for t in FOLDED_TAGS if t in tags]):
            cells.append(form_cell(folded[0], code))
        else:
            cells.append(nbformat.v4.new_code_cell(code))
    recorded = {"source": source.relative_to(ROOT).as_posix(),
                "glue": {name: glue[name] for name in sorted(translator.glue_used)}}
    if hide_solutions:  # the student build's check (book/_ext/student_build.py) reads this
        recorded["solutions"] = False
    notebook = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "colab": {"provenance": []},
        "lattn_edu": recorded,
    })
    for index, cell in enumerate(notebook.cells):
        cell.id = f"{source.stem}-{index}"[:64]
    return nbformat.writes(notebook) + "\n"


def read_book(config: dict) -> plain_markdown.Book:
    return plain_markdown.Book.read([src for src, _ in sync_notebooks.pairs()], BIBLIOGRAPHY,
                                    plain_markdown.website_url(config))


def colab_path(source: Path) -> Path:
    return COLAB / f"{source.stem}.ipynb"


def stale_notebooks() -> dict[Path, str]:
    """Colab notebooks that are missing or differ from their source, values apart: path -> why."""
    config = read_config()
    book, requirement = read_book(config), sync_notebooks.install_requirement()
    hide = bool(config["sphinx"]["config"].get("hide_solutions", False))
    stale = {}
    for source, _ in sync_notebooks.pairs():
        notebook = colab_path(source)
        try:
            expected = render(source, book, recorded_glue(notebook), requirement, hide)
        except plain_markdown.UnsupportedMyST as problem:
            stale[notebook] = str(problem)
            continue
        if not notebook.is_file() or notebook.read_text(encoding="utf-8") != expected:
            stale[notebook] = f"differs from {source.relative_to(ROOT)}"
    return stale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="only report notebooks out of date")
    mode.add_argument("--reuse-values", action="store_true",
                      help="take the glued values from the notebooks already in book/colab/ instead of _build/")
    args = parser.parse_args()
    if args.check:
        stale = stale_notebooks()
        for path, why in stale.items():
            print(f"out of date: {path.relative_to(ROOT)}: {why} (run python tools/colab_notebooks.py)")
        return 1 if stale else 0
    config = read_config()
    book, requirement = read_book(config), sync_notebooks.install_requirement()
    hide = bool(config["sphinx"]["config"].get("hide_solutions", False))
    COLAB.mkdir(parents=True, exist_ok=True)
    for source, _ in sync_notebooks.pairs():
        notebook = colab_path(source)
        glue = recorded_glue(notebook) if args.reuse_values else built_glue(source.stem)
        notebook.write_text(render(source, book, glue, requirement, hide), encoding="utf-8")
        print(f"wrote {notebook.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
