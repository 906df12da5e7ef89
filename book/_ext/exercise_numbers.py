"""Number exercises per chapter ("Exercise 10.3"), so an instructor can assign one unambiguously.

sphinx-exercise numbers exercises as Sphinx numbers figures: with the book's parts
unnumbered, that is one count through the whole book ("Exercise 47"), which moves whenever
an earlier chapter gains an exercise. This extension rewrites those numbers, after Sphinx
has assigned them, to (chapter, position in the chapter). The chapter is the number its
file name starts with (``book/myst/10-delta-rule`` is chapter 10), the number the book's
titles and the instructor guide use; the Colab editions take these numbers from the build
(book/_ext/colab_labels.py).

Every place the website shows an exercise's number reads it from
``env.toc_fignumbers``: the exercise's title, its solution's title ("Solution to
Exercise 10.3") and ``{numref}`` links. So rewriting it there is enough, and no chapter
source changes.
"""

from __future__ import annotations

import re

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

FIGTYPE = "exercise"  # the figure type sphinx-exercise registers its numbered node under
CHAPTER_FILE = re.compile(r"(?:^|/)(\d+)-[^/]*$")  # ".../10-delta-rule" -> "10"


def chapter_number(docname: str) -> int | None:
    """The chapter a page is, from its file name, or None for a page that is not a chapter."""
    match = CHAPTER_FILE.search(docname)
    return int(match.group(1)) if match else None


def per_chapter(numbers: dict[str, tuple[int, ...]], chapter: int) -> dict[str, tuple[int, int]]:
    """Renumber one page's exercises 1, 2, ... in the order Sphinx numbered them, under ``chapter``."""
    in_order = sorted(numbers, key=lambda node_id: numbers[node_id])
    return {node_id: (chapter, position) for position, node_id in enumerate(in_order, start=1)}


def renumber_exercises(app: Sphinx, env: BuildEnvironment) -> list[str]:
    """Runs after Sphinx assigned figure numbers; returns the pages whose numbers changed."""
    changed = []
    for docname, by_type in env.toc_fignumbers.items():
        chapter = chapter_number(docname)
        if chapter is None or FIGTYPE not in by_type:
            continue
        renumbered = per_chapter(by_type[FIGTYPE], chapter)
        if renumbered != by_type[FIGTYPE]:
            by_type[FIGTYPE] = renumbered
            changed.append(docname)
    return changed


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx_exercise")
    # Sphinx assigns figure numbers in its own env-get-updated handler (priority 500).
    app.connect("env-get-updated", renumber_exercises, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
