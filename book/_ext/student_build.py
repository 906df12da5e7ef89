"""The student build: with ``hide_solutions: true`` no solution leaves the site by any route.

sphinx-exercise already drops the ``{solution}`` blocks from the pages (and so from the
search index, which is built from the same doctrees). Two other routes remain, and this
extension closes them when ``hide_solutions`` is on:

- the page sources in ``_sources/`` are what each page's download button offers: the MyST
  source Sphinx copies (``_sources/book/myst/NN-....md``) and the notebook the theme copies
  beside it (``_sources/book/myst/NN-....ipynb``, the chapter as the build executed it).
  They are rewritten without their solution blocks, so a download is the chapter with its
  exercises and without their answers;
- the Colab button opens ``book/colab/NN-....ipynb`` on the configured branch. A strict
  build fails if the Colab edition here still holds solutions (tools/colab_notebooks.py
  writes it without them in the student build); the branch must then hold that edition.

Solutions are the MyST blocks ``{solution}``, in colon or backtick fences. sphinx-exercise's
gated form (``{solution-start}`` ... ``{solution-end}``) is not handled: sphinx-exercise 1.2.1
itself fails to build it with ``hide_solutions`` on, so the book does not use it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from colab_launch import COLAB_FOLDER  # a sibling extension in book/_ext

logger = logging.getLogger(__name__)

# ":::{solution} ex-1", "````{solution} ex-1": the fence, then the directive's name
OPENING = re.compile(r"^\s*(?P<fence>:{3,}|`{3,})\{solution\}")


def _block_end(lines: list[str], start: int, fence: str) -> int:
    """The index after the fenced block opened at ``lines[start]``.

    A backtick block ends at the first line of at least as many backticks; a colon block
    at the first bare colon line that closes it, counting colon blocks opened inside and
    skipping backtick fences (whose content may hold colons).
    """
    mark = fence[0]
    depth, code_fence = 1, None
    for index in range(start + 1, len(lines)):
        line = lines[index].strip()
        if mark == "`":
            if re.fullmatch(rf"`{{{len(fence)},}}", line):
                return index + 1
            continue
        if code_fence:
            if re.fullmatch(rf"`{{{len(code_fence)},}}", line):
                code_fence = None
            continue
        if (backticks := re.match(r"`{3,}", line)):
            code_fence = backticks.group()
        elif re.match(r":{3,}\{", line):
            depth += 1
        elif re.fullmatch(r":{3,}", line):
            depth -= 1
            if depth == 0:
                return index + 1
    return len(lines)


def strip_solutions_from_text(text: str) -> str:
    """A MyST Markdown document without its ``{solution}`` blocks."""
    kept: list[str] = []
    lines = text.splitlines(keepends=True)
    index = 0
    while index < len(lines):
        if (opening := OPENING.match(lines[index])):
            index = _block_end(lines, index, opening["fence"])
            continue
        kept.append(lines[index])
        index += 1
    return "".join(kept)


def strip_solutions_from_notebook(text: str) -> str:
    """A notebook's JSON without the ``{solution}`` blocks of its Markdown cells."""
    notebook = json.loads(text)
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = strip_solutions_from_text(source)
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def strip_solutions_from_file(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    is_notebook = path.suffix == ".ipynb" or path.name.endswith(".ipynb.txt")
    stripped = strip_solutions_from_notebook(text) if is_notebook else strip_solutions_from_text(text)
    if stripped != text:
        path.write_text(stripped, encoding="utf-8")


def _strip_copied_sources(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html" or not app.config.hide_solutions:
        return
    for path in sorted((Path(app.outdir) / "_sources").rglob("*")):
        if path.is_file():
            strip_solutions_from_file(path)


def colab_edition_has_solutions(path: Path) -> bool:
    """Whether a Colab edition (tools/colab_notebooks.py) was written with its solutions."""
    metadata = json.loads(path.read_text(encoding="utf-8"))["metadata"].get("lattn_edu", {})
    return metadata.get("solutions", True)


def _check_colab_editions(app: Sphinx) -> None:
    if not app.config.hide_solutions:
        return
    for edition in sorted((Path(app.srcdir) / COLAB_FOLDER).glob("*.ipynb")):
        if colab_edition_has_solutions(edition):
            logger.warning(f"hide_solutions is on, but the Colab edition "
                           f"{edition.relative_to(app.srcdir)} holds the solutions: run "
                           f"python tools/colab_notebooks.py and commit {COLAB_FOLDER}/ on the "
                           f"branch the Colab buttons open")


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx_exercise")  # which defines hide_solutions
    app.connect("builder-inited", _check_colab_editions)
    app.connect("build-finished", _strip_copied_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
