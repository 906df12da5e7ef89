"""Write the Colab edition of every chapter, book/colab/NN-....ipynb, from its MyST source.

The website is built from book/myst/ itself; Colab cannot render what that build resolves
(MyST roles, directives, glued numbers, tags), so the chapters' launch buttons open these
notebooks instead. Each is the chapter in plain Jupyter Markdown (tools/plain_markdown.py) with:

- a first cell that installs lattn_edu where it is missing, folded as a Colab form;
- equation and exercise numbers, section titles and citations as the website's build
  resolved them (book/_ext/colab_labels.py records them in ``_build/colab_labels.json``);
- every number glued into the text as it was when the website was built (myst-nb's
  ``_build/jupyter_execute/book/myst/NN-....glue.json``): the code cell that computes it
  still prints it live, so the reader sees both;
- quizzes, solutions and cells the website hides (``remove-input``, ``hide-input``,
  ``hide-cell``, ``remove-cell``) folded as Colab forms (``#@title ...`` with ``"cellView": "form"``):
  Colab shows only the title until the reader opens it, and a quiz answers only once an
  option is chosen;
- no solutions at all when ``_config.yml`` sets ``hide_solutions: true`` (the student build),
  and ``"solutions": false`` in its metadata, which the student build's strict check
  requires of every edition its Colab buttons open.

What a notebook took from the build, the glued values and the resolved labels it used,
lives in its metadata (``lattn_edu.glue``, ``lattn_edu.resolved``) as well as in its text.
``--check`` renders every source again with the build's labels and fails on any difference:
a changed source, or a number, title or citation the build now resolves differently. It is
strict about every character except the glued values, which it takes from the notebook
(they change from build to build wherever they come from a live timing) after checking that
the build glued every one of them.

    jupyter-book build . -W -n --keep-going   # records labels and glued values in _build/
    python tools/colab_notebooks.py           # write book/colab/ from the sources and that build
    python tools/colab_notebooks.py --check   # exit 1 if a notebook is stale against that build
    python tools/colab_notebooks.py --reuse-values  # no build: keep what the notebooks recorded
    python tools/colab_notebooks.py --check --reuse-values  # the same, as a check
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

ROOT = plain_markdown.ROOT
SOURCES = ROOT / "book" / "myst"
COLAB = ROOT / "book" / "colab"
BUILD = ROOT / "_build"  # jupyter-book's output folder (--path-output puts it elsewhere)
LABELS = "colab_labels.json"  # written there by book/_ext/colab_labels.py
FOLDED_TAGS = {"remove-cell": "Bookkeeping for the text (hidden on the website)",
               "remove-input": "Show the code", "hide-input": "Show the code",
               "hide-cell": "Show the code"}


INSTALL_CELL = '''\
# On Colab (or anywhere lattn_edu is missing) install the book's package. pip keeps
# the numpy, torch and ipywidgets that are already there: nothing gets upgraded.
import importlib.util, subprocess, sys
if importlib.util.find_spec("lattn_edu") is None:
    requirement = "{requirement}"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", requirement],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        class InstallFailed(Exception):
            def _render_traceback_(self):  # IPython shows this message alone, no traceback
                return [str(self)]
        said = [line.strip() for line in pip.stderr.splitlines() if line.strip()] or ["(pip said nothing)"]
        reason = next((line for line in said if line.startswith(("ERROR", "fatal"))), said[-1])
        raise InstallFailed(f"Could not install lattn_edu, which this notebook needs: {{reason}}\\n"
                            f"Connect to the internet, run  pip install '{{requirement}}'  "
                            f"and then run this cell again.")'''


class BuildMissing(FileNotFoundError):
    """The build this command reads has not been made (or not with book/_ext/colab_labels.py)."""


def read_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def install_requirement(config: dict) -> str:
    """The pip requirement for lattn_edu, built from the repository setting in _config.yml."""
    repository = config["repository"]
    return f"lattn_edu @ git+{repository['url']}@{repository.get('branch', 'main')}"


def sources() -> list[Path]:
    """Every chapter's MyST source, in reading order."""
    return sorted(SOURCES.glob("*.md"))


def docname(source: Path) -> str:
    """The page a source is on the website: book/myst/10-delta-rule."""
    return source.relative_to(ROOT).with_suffix("").as_posix()


def built_labels(build: Path, config: dict) -> plain_markdown.Resolved:
    """What the build in ``build`` resolved, for every page."""
    path = build / LABELS
    if not path.is_file():
        raise BuildMissing(f"{path} is missing: build the site first "
                           f"(jupyter-book build . -W -n --keep-going), or pass its folder as --build")
    return plain_markdown.Resolved(json.loads(path.read_text(encoding="utf-8")),
                                   plain_markdown.website_url(config))


def built_glue(build: Path, source: Path) -> dict[str, str]:
    """The values the build in ``build`` glued into ``source``'s page, as the text shows them
    (myst-nb writes no file for a page that glues nothing)."""
    path = build / "jupyter_execute" / f"{docname(source)}.glue.json"
    if not path.is_file():
        return {}
    values = {}
    for name, output in json.loads(path.read_text(encoding="utf-8")).items():
        text = output["data"]["text/plain"]
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text
        values[name] = value if isinstance(value, str) else text
    return values


def recorded(notebook: Path) -> dict:
    """What a Colab notebook recorded when it was written (its ``lattn_edu`` metadata)."""
    if not notebook.is_file():
        return {}
    return json.loads(notebook.read_text(encoding="utf-8"))["metadata"].get("lattn_edu", {})


def recorded_glue(notebook: Path) -> dict[str, str]:
    """The glued values a Colab notebook recorded when it was written."""
    return recorded(notebook).get("glue", {})


def recorded_labels(notebook: Path, config: dict) -> plain_markdown.Resolved:
    """The resolved labels a Colab notebook recorded when it was written (those it used)."""
    return plain_markdown.Resolved(recorded(notebook).get("resolved", {}),
                                   plain_markdown.website_url(config))


def form_cell(title: str, code: str) -> nbformat.NotebookNode:
    """A code cell Colab folds to its title until the reader opens it."""
    return nbformat.v4.new_code_cell(f"#@title {title}\n{code}", metadata={"cellView": "form"})


def solution_cell(solution: plain_markdown.Solution) -> nbformat.NotebookNode:
    """The solution's prose as comments and its code, folded; running it only defines names."""
    comments = "\n".join(f"# {line}".rstrip() for line in solution.prose.splitlines())
    body = "\n\n".join(part for part in (comments, solution.code) if part)
    return form_cell(f"Solution to exercise {solution.exercise} (open to read it)", body)


def with_edition_note(markdown: str, page_url: str) -> str:
    """The chapter's first Markdown cell with a note under its title: what this notebook is."""
    note = (f"*This is the Colab edition of [this chapter on the website]({page_url}). "
            "Numbers in the text were computed when the website was built; the code cells "
            "compute them again here, so measured times will differ. Run the cells from the top "
            "(Runtime → Run all).*")
    lines = markdown.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("# "))
    return "\n".join(lines[:title + 1] + ["", note] + lines[title + 1:])


def render(source: Path, labels: plain_markdown.Resolved, glue: dict[str, str], requirement: str,
           hide_solutions: bool) -> str:
    """The Colab notebook JSON for one MyST source, given what the build resolved and glued."""
    page = docname(source)
    labels = plain_markdown.Resolved(labels.pages, labels.site)  # records what this one uses
    translator = plain_markdown.ChapterTranslator(labels, page, glue, source.parent)
    cells = [form_cell("Install lattn_edu (only where it is missing)",
                       INSTALL_CELL.format(requirement=requirement))]
    quizzes = 0
    for cell in plain_markdown.read_cells(source):
        if cell.cell_type == "markdown":
            for piece in translator.markdown(cell.source):
                if isinstance(piece, plain_markdown.Solution):
                    if not hide_solutions:
                        cells.append(solution_cell(piece))
                else:
                    if len(cells) == 1:  # the chapter's title
                        piece = with_edition_note(piece, labels.url(page))
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
            cells.append(form_cell(f"Concept check {plain_markdown.chapter_number(page)}.{quizzes}", code))
        elif (folded := [FOLDED_TAGS[t] for t in FOLDED_TAGS if t in tags]):
            cells.append(form_cell(folded[0], code))
        else:
            cells.append(nbformat.v4.new_code_cell(code))
    record = {"source": source.relative_to(ROOT).as_posix(),
              "glue": {name: glue[name] for name in sorted(translator.glue_used)},
              "resolved": labels.used}
    if hide_solutions:  # the student build's check (book/_ext/student_build.py) reads this
        record["solutions"] = False
    notebook = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        "colab": {"provenance": []},
        "lattn_edu": record,
    })
    for index, cell in enumerate(notebook.cells):
        cell.id = f"{source.stem}-{index}"[:64]
    return nbformat.writes(notebook) + "\n"


def colab_path(source: Path) -> Path:
    return COLAB / f"{source.stem}.ipynb"


def stale_notebooks(build: Path | None = BUILD) -> dict[Path, str]:
    """Colab notebooks that are missing or differ from what their source renders to with the
    labels of the build in ``build`` (None: the labels each notebook recorded) and the glued
    values each notebook recorded: path -> why. Raises BuildMissing where ``build`` is not built."""
    config = read_config()
    labels = built_labels(build, config) if build is not None else None
    requirement, hide = install_requirement(config), hide_solutions(config)
    stale = {}
    for source in sources():
        notebook = colab_path(source)
        glue = recorded_glue(notebook)
        if build is not None and (lost := sorted(set(glue) - set(built_glue(build, source)))):
            stale[notebook] = f"the build glued no value named {', '.join(lost)}"
            continue
        try:
            expected = render(source, labels or recorded_labels(notebook, config), glue,
                              requirement, hide)
        except plain_markdown.UnsupportedMyST as problem:
            stale[notebook] = str(problem)
            continue
        if not notebook.is_file() or notebook.read_text(encoding="utf-8") != expected:
            stale[notebook] = f"differs from {source.relative_to(ROOT)}" + (
                " and the labels the build resolved" if build is not None else "")
    for notebook in orphan_notebooks():
        stale[notebook] = "no source in book/myst renders to it (a chapter was renamed or removed)"
    return stale


def orphan_notebooks() -> list[Path]:
    """Notebooks in book/colab/ that no source renders to any more."""
    rendered = {colab_path(source) for source in sources()}
    return sorted(p for p in COLAB.glob("*.ipynb") if p not in rendered)


def hide_solutions(config: dict) -> bool:
    return bool(config["sphinx"]["config"].get("hide_solutions", False))


def write_notebooks(build: Path | None) -> None:
    """Write every Colab notebook from its source and the build in ``build`` (None: from what
    the notebooks already recorded)."""
    config = read_config()
    requirement, hide = install_requirement(config), hide_solutions(config)
    labels = built_labels(build, config) if build is not None else None
    COLAB.mkdir(parents=True, exist_ok=True)
    for source in sources():
        notebook = colab_path(source)
        if build is None:
            text = render(source, recorded_labels(notebook, config), recorded_glue(notebook),
                          requirement, hide)
        else:
            text = render(source, labels, built_glue(build, source), requirement, hide)
        notebook.write_text(text, encoding="utf-8")
        print(f"wrote {notebook.relative_to(ROOT)}")
    for orphan in orphan_notebooks():
        orphan.unlink()
        print(f"removed {orphan.relative_to(ROOT)} (no source renders to it)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only report notebooks out of date")
    parser.add_argument("--reuse-values", action="store_true",
                        help="no build: the labels and glued values the notebooks in book/colab/ recorded")
    parser.add_argument("--build", type=Path, default=BUILD,
                        help="the build's output folder (default: _build; under --path-output DIR: DIR/_build)")
    args = parser.parse_args()
    build = None if args.reuse_values else args.build.resolve()
    try:
        if not args.check:
            write_notebooks(build)
            return 0
        stale = stale_notebooks(build)
    except BuildMissing as missing:
        print(missing, file=sys.stderr)
        return 2
    for path, why in stale.items():
        print(f"out of date: {path.relative_to(ROOT)}: {why} (run python tools/colab_notebooks.py)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
