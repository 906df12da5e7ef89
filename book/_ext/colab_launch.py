"""Point each chapter's Colab launch button at the chapter's Colab edition.

sphinx-book-theme links the button to the page's own source, ``book/myst/NN-....md``, a
MyST notebook that Colab cannot open. ``book/colab/NN-....ipynb`` (written by
tools/colab_notebooks.py) is the same chapter in plain Jupyter Markdown, so the button opens
that. A chapter page without a Colab edition is a warning, which fails the strict build.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

COLAB_FOLDER = "book/colab"
logger = logging.getLogger(__name__)


def _colab_buttons(context: dict) -> list[dict]:
    groups = [b for b in context.get("header_buttons", []) if b.get("label") == "launch-buttons"]
    return [button for group in groups for button in group.get("buttons", [])
            if button.get("text") == "Colab"]


def _open_colab_edition(app: Sphinx, pagename: str, templatename: str, context: dict,
                        doctree: Any) -> None:
    buttons = _colab_buttons(context)
    if not buttons:
        return
    edition = f"{COLAB_FOLDER}/{Path(pagename).name}.ipynb"
    if not (Path(app.srcdir) / edition).is_file():
        logger.warning(f"{pagename}: no Colab edition at {edition}; run python tools/colab_notebooks.py")
        return
    source = f"/{pagename}{Path(app.env.doc2path(pagename)).suffix}"  # as the theme wrote it
    for button in buttons:
        if not button["url"].endswith(source):
            logger.warning(f"{pagename}: the Colab button opens {button['url']}, not {source}")
            continue
        button["url"] = button["url"].removesuffix(source) + f"/{edition}"


def setup(app: Sphinx) -> dict:
    # after sphinx-book-theme's add_launch_buttons (priority 501) has made the buttons
    app.connect("html-page-context", _open_colab_edition, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
