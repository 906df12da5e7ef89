"""A PDF of each chapter and of the whole book, printed from the pages this build wrote.

Where Debian's chromium is installed, every HTML build ends by running tools/make_pdfs.py
on its own output, so the PDFs always match the pages beside them and a stale PDF cannot
ship; a failure to print fails the build. Each chapter page then links to its PDF under
its title, and the first page also to the whole book; the theme's ".pdf" download entry
opens the printed file instead of the browser's print dialog.

Where chromium is missing the build says so and makes no PDFs, and no page links to one,
so the README's build command still works on a machine without a browser.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

TOOL = "tools/make_pdfs.py"
# Debian's chromium, or the browser $LATTN_CHROMIUM names (as for the browser tests)
CHROMIUM = Path(os.environ.get("LATTN_CHROMIUM", "/usr/bin/chromium"))
PDF_FOLDER = "pdf"
BOOK_PDF = "lattn-edu-book.pdf"
CHAPTER_FOLDER = "book/myst/"
logger = logging.getLogger(__name__)


def _enabled(app: Sphinx) -> bool:
    return app.builder.format == "html" and CHROMIUM.exists()


def _announce(app: Sphinx) -> None:
    if app.builder.format == "html" and not CHROMIUM.exists():
        logger.info(f"[pdf_export] {CHROMIUM} not found: no PDFs in this build "
                    "(apt-get install -y chromium to print them)")


def _links(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    if not _enabled(app) or doctree is None or not pagename.startswith(CHAPTER_FOLDER):
        return
    pathto = context["pathto"]
    chapter = pathto(f"{PDF_FOLDER}/{Path(pagename).name}.pdf", 1)
    book = pathto(f"{PDF_FOLDER}/{BOOK_PDF}", 1)
    this = "this page" if pagename == app.config.root_doc else "this chapter"
    links = [f'<a class="reference download" href="{chapter}" download>{this} as a PDF</a>',
             f'<a class="reference download" href="{book}" download>the whole book</a>']
    block = ('<p class="lattn-pdf-links d-print-none">'
             '<i class="fas fa-file-pdf" aria-hidden="true"></i> Download ' + " · ".join(links) + "</p>")
    body = context.get("body", "")
    title_end = body.find("</h1>")
    if title_end < 0:
        logger.warning(f"{pagename}: no <h1> to put the PDF link under")
        return
    title_end += len("</h1>")
    context["body"] = body[:title_end] + block + body[title_end:]
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []) if isinstance(group, dict) else []:
            if button.get("label") == "download-pdf-button":  # was window.print()
                button.pop("javascript", None)
                button.update(type="link", url=chapter, tooltip="Download the printed PDF")


def _print_pdfs(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or not _enabled(app):
        return
    root = Path(app.srcdir)
    result = subprocess.run([sys.executable, str(root / TOOL), "--html", str(app.outdir),
                             "--book", str(root)],
                            cwd=root, capture_output=True, text=True)
    if result.returncode != 0:
        raise ExtensionError(f"{TOOL} failed, so this build has no PDFs:\n{result.stderr[-3000:]}")
    for line in result.stdout.splitlines():
        logger.info(f"[pdf_export] {line}")


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", _announce)
    # after sphinx-book-theme has made its header buttons (priority 501)
    app.connect("html-page-context", _links, priority=503)
    app.connect("build-finished", _print_pdfs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
