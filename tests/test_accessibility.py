"""Readers with other needs, checked on the freshly built site (the session build of
tests/test_site.py, which prints the PDFs at its end: book/_ext/pdf_export.py).

- Screen readers: every picture in a chapter's text says in words what it shows. An alt
  text that is a file path (Sphinx's default for a notebook's figure) or a word or two is
  a failure; pictures of the theme's own chrome (the Colab logo) only need a non-path alt.
- Print: every chapter has a PDF, and so has the whole book. Each opens, was printed
  after its page was written (no stale PDF), has the chapter's title on its first page,
  shows no TeX source (MathJax typeset before printing), and its first page renders to
  a picture that is not blank. Each chapter page links to its PDF and to the book's.

Page images of two PDFs, and the size and page count of every PDF (pdfs.json), are
written to ``_build/pdf-review/`` for a person to look at.
"""

from __future__ import annotations

import html as html_lib
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import make_pdfs  # noqa: E402

REVIEW = ROOT / "_build" / "pdf-review"
CHAPTERS = [page for page in make_pdfs.toc_pages() if make_pdfs.chapter_pdf_name(page)]
MIN_ALT_WORDS = 4
# An alt text that is a file name or path: what Sphinx writes when none is given.
PATH_LIKE = re.compile(r"(^|/)[^\s/]+\.(png|jpe?g|gif|svg|webp)$|^\.{0,2}/|_images/", re.I)
# TeX that only shows when MathJax did not typeset the page: its delimiters and environments.
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\begin\{|\\end\{")


class _Images(HTMLParser):
    """Every <img> of a page as (alt or None, src, inside the article?)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.images: list[tuple[str | None, str, bool]] = []
        self._article_depth = 0

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "article" and "bd-article" in (attributes.get("class") or ""):
            self._article_depth += 1
        elif tag == "img":
            self.images.append((attributes.get("alt"), (attributes.get("src") or "")[:80],
                                self._article_depth > 0))

    def handle_endtag(self, tag):
        if tag == "article" and self._article_depth:
            self._article_depth -= 1


def images_of(page_html: Path) -> list[tuple[str | None, str, bool]]:
    parser = _Images()
    parser.feed(page_html.read_text(encoding="utf-8"))
    return parser.images


def alt_problem(alt: str | None, in_article: bool) -> str | None:
    """Why an alt text fails a screen-reader user, or None when it does not."""
    if alt is None or not alt.strip():
        return "no alt text"
    if PATH_LIKE.search(alt.strip()):
        return f"alt text is a path: {alt[:60]!r}"
    if in_article and len(alt.split()) < MIN_ALT_WORDS:
        return f"alt text of {len(alt.split())} words says too little: {alt!r}"
    return None


def page_title(page_html: Path) -> str:
    match = re.search(r"<title>(.*?)</title>", page_html.read_text(encoding="utf-8"), flags=re.S)
    assert match, f"{page_html.name} has no <title>"
    title = html_lib.unescape(match.group(1)).strip()
    return re.sub(r"\s+[—–-]\s+[^—–-]*$", "", title)  # drop the " — book title" suffix


def pdf_text(document, page_index: int) -> str:
    return document[page_index].get_textpage().get_text_range()


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def test_alt_text_finds_the_failures_it_is_meant_to():
    assert alt_problem("../../_images/5c08a1.png", True)
    assert alt_problem("", False) and alt_problem(None, False)
    assert alt_problem("Singular values", True)
    assert alt_problem("Colab logo", False) is None
    assert alt_problem("singular values of three attention matrices on a log scale", True) is None


def test_raw_tex_check_finds_untypeset_math():
    assert RAW_TEX.search(r"the output \(o_i = S^\top q_i\) of one step")
    assert RAW_TEX.search(r"\begin{aligned} a &= b \end{aligned}")
    assert not RAW_TEX.search("o_i = Sᵀq_i, plotted with label=r'$\\sigma_i$'")


@pytest.mark.parametrize("page", CHAPTERS)
def test_every_picture_says_what_it_shows(page, built_site):
    images = images_of(built_site / f"{page}.html")
    problems = [f"{src}: {problem}" for alt, src, in_article in images
                if (problem := alt_problem(alt, in_article))]
    assert not problems, f"{page}:\n  " + "\n  ".join(problems)


@pytest.fixture(scope="module")
def pdfs(built_site, chromium):  # chromium printed them
    """Size and page count of every PDF of the build, also written to _build/pdf-review/pdfs.json."""
    folder = built_site / make_pdfs.PDF_FOLDER
    assert folder.is_dir(), f"the build made no {make_pdfs.PDF_FOLDER}/ folder (book/_ext/pdf_export.py)"
    found = {pdf.name: make_pdfs.describe(pdf) for pdf in sorted(folder.glob("*.pdf"))}
    REVIEW.mkdir(parents=True, exist_ok=True)
    (REVIEW / "pdfs.json").write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
    return found


def test_there_is_a_pdf_for_each_chapter_and_for_the_book(pdfs):
    expected = {make_pdfs.chapter_pdf_name(page) for page in CHAPTERS} | {make_pdfs.BOOK_PDF}
    assert set(pdfs) == expected


@pytest.mark.parametrize("page", CHAPTERS)
def test_chapter_pdf(page, built_site, pdfs):
    import pypdfium2 as pdfium

    page_html = built_site / f"{page}.html"
    pdf = built_site / make_pdfs.PDF_FOLDER / make_pdfs.chapter_pdf_name(page)
    assert pdf.stat().st_mtime >= page_html.stat().st_mtime, f"{pdf.name} is older than its page"
    document = pdfium.PdfDocument(pdf)
    assert len(document) >= 1
    title = page_title(page_html)
    first = pdf_text(document, 0)
    assert _words(title) in _words(first), f"{pdf.name}: title {title!r} not on page 1:\n{first[:300]}"
    raw = {number + 1: RAW_TEX.findall(pdf_text(document, number)) for number in range(len(document))}
    raw = {number: found for number, found in raw.items() if found}
    assert not raw, f"{pdf.name}: TeX source on pages {raw}"
    picture = document[0].render(scale=0.5).to_pil().convert("L")
    low, high = picture.getextrema()
    assert picture.width > 100 and high - low > 100, f"{pdf.name}: page 1 renders blank ({low}..{high})"
    links = re.findall(r'class="lattn-pdf-links[^"]*">(.*?)</p>', page_html.read_text(encoding="utf-8"))
    assert len(links) == 1, f"{page}: {len(links)} PDF link blocks"
    assert f'pdf/{pdf.name}"' in links[0] and f'pdf/{make_pdfs.BOOK_PDF}"' in links[0], links[0]


def test_book_pdf_is_every_page_in_order(built_site, pdfs):
    """The book opens with the chapters, in the order of _toc.yml, page for page as their own
    PDFs; the other pages of the table of contents (course, reference) follow."""
    import pypdfium2 as pdfium

    book = pdfium.PdfDocument(built_site / make_pdfs.PDF_FOLDER / make_pdfs.BOOK_PDF)
    offset = 0
    for page in make_pdfs.toc_pages():
        name = make_pdfs.chapter_pdf_name(page)
        if name is None:
            break
        chapter = pdfium.PdfDocument(built_site / make_pdfs.PDF_FOLDER / name)
        assert pdf_text(book, offset) == pdf_text(chapter, 0), f"book page {offset + 1} is not {name}'s first"
        offset += len(chapter)
    assert len(book) > offset, "the pages after the chapters are missing from the book"
    assert not any(RAW_TEX.search(pdf_text(book, number)) for number in range(len(book)))


def test_review_images_of_two_pdfs(built_site, pdfs):
    for old in REVIEW.glob("*.png"):
        old.unlink()
    for name in make_pdfs.REVIEW_PDFS:
        images = make_pdfs.render_pages(built_site / make_pdfs.PDF_FOLDER / name, REVIEW)
        assert len(images) == pdfs[name]["pages"]
