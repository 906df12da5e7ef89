"""Print the built website to PDF: one file per chapter and one for the whole book.

    python tools/make_pdfs.py                      # _build/html -> _build/html/pdf/
    python tools/make_pdfs.py --review _build/pdf-review   # also PNG page images of two PDFs

The PDFs are the pages a reader sees, printed by Debian's chromium (the browser that
tests/test_site.py drives) through Playwright's ``page.pdf``: the site is served on
127.0.0.1, every request elsewhere is refused, and a page is printed only after MathJax has
typeset it and the network has gone quiet, so formulas are typeset, each explorer shows
the picture its sliders start on, and code wraps (the print rules in book/site_css).

The Sphinx extension book/_ext/pdf_export.py runs this at the end of every HTML build on a
machine with chromium, so the PDFs in a build are always printed from that build's pages.
Without chromium the build makes no PDFs and links to none.

- ``pdf/<chapter>.pdf`` for every page under ``book/myst/`` in the table of contents;
- ``pdf/lattn-edu-book.pdf``: every page of the table of contents, in order.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import re
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
# Debian's chromium, or the browser $LATTN_CHROMIUM names (as for the browser tests)
CHROMIUM = Path(os.environ.get("LATTN_CHROMIUM", "/usr/bin/chromium"))
# The flags that let Debian's chromium run headless on a closed network.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PDF_FOLDER = "pdf"
BOOK_PDF = "lattn-edu-book.pdf"
CHAPTER_FOLDER = "book/myst/"
# A4 with margins wide enough for a printer; the site's print CSS fits the column to it.
PAGE_FORMAT = {"format": "A4", "print_background": True,
               "margin": {"top": "14mm", "bottom": "14mm", "left": "12mm", "right": "12mm"}}
REVIEW_PDFS = ("05-worked-example.pdf", "07-quality-gap.pdf")


def toc_pages(root: Path = ROOT) -> list[str]:
    """Every page of _toc.yml, in reading order, as paths without a suffix."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    parts = toc.get("parts", [toc])  # a book with no parts lists its chapters at the top
    return [toc["root"]] + [chapter["file"] for part in parts for chapter in part.get("chapters", [])]


def chapter_pdf_name(page: str) -> str | None:
    """'book/myst/01-softmax-attention' -> '01-softmax-attention.pdf'; None for other pages."""
    return f"{Path(page).name}.pdf" if page.startswith(CHAPTER_FOLDER) else None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


@contextmanager
def serve(html: Path):
    """http://127.0.0.1:<free port>/ serving ``html`` from a background thread."""
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _print_page(context, url: str, target: Path) -> None:
    """Open ``url``, wait for MathJax and the network, and print it to ``target``."""
    page = context.new_page()
    try:
        page.emulate_media(media="print", color_scheme="light")
        page.goto(url, wait_until="load")
        if page.evaluate("() => !!document.querySelector('script[src*=\"mathjax\"]')"):
            page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                                   timeout=60_000)
            page.evaluate("() => MathJax.startup.promise.then(() => true)")
        # the fonts MathJax asked for while typesetting, and every picture decoded
        page.evaluate("() => document.fonts.ready.then(() => Promise.all(Array.from(document.images, "
                      "img => img.decode().catch(() => null))))")
        page.pdf(path=str(target), **PAGE_FORMAT)
    finally:
        page.close()


def _merge(parts: list[Path], target: Path) -> None:
    import pypdfium2 as pdfium

    book = pdfium.PdfDocument.new()
    for part in parts:
        book.import_pages(pdfium.PdfDocument(part))
    book.save(target)


def make_pdfs(html: Path, root: Path = ROOT) -> list[Path]:
    """Print every page of the table of contents from the built site ``html``.

    Writes ``html/pdf/<chapter>.pdf`` for each chapter and ``html/pdf/lattn-edu-book.pdf``,
    replacing whatever PDFs were there, and returns the paths written.
    """
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise FileNotFoundError(f"{CHROMIUM} not found: install Debian's chromium "
                                "(apt-get install -y chromium) to print the PDFs")
    pages = toc_pages(root)
    missing = [page for page in pages if not (html / f"{page}.html").is_file()]
    if missing:
        raise FileNotFoundError(f"pages of _toc.yml missing from {html}: {missing}")
    out = html / PDF_FOLDER
    for old in out.glob("*.pdf"):  # nothing from an earlier build survives
        old.unlink()
    out.mkdir(exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as scratch, serve(html) as site, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                             args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
        context.route(re.compile(r"^(?!https?://127\.0\.0\.1[:/]|data:|blob:)"),
                      lambda route: route.abort("blockedbyclient"))
        parts = []
        for page in pages:
            name = chapter_pdf_name(page)
            target = out / name if name else Path(scratch) / f"{Path(page).name}.pdf"
            _print_page(context, site + f"{page}.html", target)
            parts.append(target)
            if name:
                written.append(target)
        browser.close()
        _merge(parts, out / BOOK_PDF)
    written.append(out / BOOK_PDF)
    return written


def describe(pdf: Path) -> dict:
    """{'file', 'pages', 'bytes'} of one PDF."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(pdf)
    return {"file": pdf.name, "pages": len(document), "bytes": pdf.stat().st_size}


def render_pages(pdf: Path, folder: Path, scale: float = 1.2) -> list[Path]:
    """PNG images of every page of ``pdf`` in ``folder`` (scale 1 = 72 dpi)."""
    import pypdfium2 as pdfium

    folder.mkdir(parents=True, exist_ok=True)
    images = []
    for number, page in enumerate(pdfium.PdfDocument(pdf), start=1):
        image = folder / f"{pdf.stem}-page{number:02d}.png"
        page.render(scale=scale).to_pil().save(image)
        images.append(image)
    return images


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html",
                        help="the built site (default: _build/html)")
    parser.add_argument("--book", type=Path, default=ROOT,
                        help="the book's root, whose _toc.yml orders the pages (default: this repository)")
    parser.add_argument("--review", type=Path, default=None,
                        help=f"also write PNG images of the pages of {' and '.join(REVIEW_PDFS)} here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    written = make_pdfs(args.html.resolve(), args.book.resolve())
    for pdf in written:
        info = describe(pdf)
        print(f"{pdf.relative_to(args.html.resolve()).as_posix()}: {info['pages']} pages, "
              f"{info['bytes'] / 1e6:.1f} MB")
    print(f"printed {len(written)} PDFs in {time.perf_counter() - started:.0f} s")
    if args.review:
        for name in REVIEW_PDFS:
            images = render_pages(args.html / PDF_FOLDER / name, args.review)
            print(f"{len(images)} page images of {name} in {args.review}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
