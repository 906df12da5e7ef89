"""The built website, checked in a real browser: Debian's chromium, headless.

The session's strict build of this checkout (``book_build`` in conftest.py, shared with
tests/test_chapters.py) is served on 127.0.0.1, and every page of the table of contents (plus
search and the index) is opened in chromium driven by Playwright: Debian's, installed by the
test session where it is missing, or the one ``LATTN_CHROMIUM`` names. Each page must

- load nothing from any host but 127.0.0.1 (data: and blob: URLs are fine), with no failed
  request, no console error and no uncaught exception;
- have its math typeset by the site's own MathJax: no raw TeX (or raw Markdown table) left
  outside code;
- show every picture, and have every slider of every static explorer change its picture,
  its value label and the picture's description (alt text, read out by a live region) when
  moved with the keyboard; every concept check must answer a click;
- link its Colab button to the chapter's Colab edition (``book/colab/``), committed here;
- have internal links that resolve to files (and anchors) of the build.

Every page is also photographed in light and dark mode into ``_build/screenshots/``, with
``report.json`` (pages, sliders moved, quizzes answered, requests seen) and the build's log
beside the pictures.

Playwright rather than Selenium: it reports every request (subresources, fonts, fetches),
console message and page error as events, with no chromedriver logging setup, and it drives
the system chromium through ``executable_path``. It never downloads a browser here.
"""

from __future__ import annotations

import functools
import json
import posixpath
import re
import subprocess
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
import yaml

from conftest import PAGE_TIMEOUT_MS, SCREENSHOTS, write_report as _write_report

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
TOC_PAGES = [TOC["root"]] + [chapter["file"] for part in TOC["parts"] for chapter in part["chapters"]]
PAGES = [f"{page}.html" for page in TOC_PAGES] + ["search.html", "genindex.html"]
# Old address -> the page it now leads to (sphinx-reredirects, _config.yml's redirects)
MOVED = {f"{old}.html": urljoin(f"{old}.html", new)
         for old, new in CONFIG["sphinx"]["config"]["redirects"].items()}


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}:" if parts.scheme in ("data", "blob") else f"{parts.scheme}://{parts.netloc}"


def _is_local(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("data", "blob") or (parts.scheme in ("http", "https")
                                                 and parts.hostname == "127.0.0.1")


class PageWatch:
    """Every request, failed request, console error and page error of one page."""

    def __init__(self, page):
        self.requests: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        page.on("request", lambda request: self.requests.append(request.url))
        page.on("requestfailed", lambda request: self.failed.append(f"{request.url} ({request.failure})"))
        page.on("response", lambda response: response.status >= 400 and self.failed.append(
            f"{response.url} (HTTP {response.status})"))
        page.on("console", lambda message: message.type == "error" and self.errors.append(
            f"console: {message.text} at {message.location.get('url', '')}"))
        page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))

    def foreign(self) -> list[str]:
        return [url for url in self.requests if not _is_local(url)]


def _open(context, url: str, mode: str):
    """A new tab on ``url`` in light or dark mode, loaded, with MathJax finished typesetting."""
    page = context.new_page()
    page.emulate_media(color_scheme=mode)
    page.add_init_script(f"localStorage.setItem('mode', '{mode}'); localStorage.setItem('theme', '{mode}');")
    watch = PageWatch(page)
    page.goto(url, wait_until="load")
    if page.evaluate("() => !!document.querySelector('script[src*=\"mathjax\"]')"):
        try:
            page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                                   timeout=PAGE_TIMEOUT_MS)
            page.evaluate("() => MathJax.startup.promise.then(() => true)")
        except Exception as error:  # noqa: BLE001 - reported with the page's other problems
            watch.errors.append(f"MathJax did not start: {str(error).splitlines()[0]}")
    # the fonts MathJax asked for while typesetting; not "networkidle", which Playwright
    # discourages and which here, now and then, never came on chapter 10's page
    page.evaluate("() => document.fonts.ready.then(() => true)")
    return page, watch


# Text nodes outside code, scripts and typeset math that still hold TeX or Markdown source:
# \( \[ $$ \begin{, $x$ or $..\cmd.._{}^..$, and a Markdown table's |---| rule.
RAW_SOURCE_JS = r"""() => {
  const skip = "script, style, pre, code, textarea, mjx-container, .highlight, .cell_input, .output.text_plain, .output.stream";
  const source = /\\\(|\\\[|\$\$|\\begin\{|\$(?:[A-Za-z]|[^$\n]*[\\^_{}][^$\n]*)\$|\|\s*:?-{3,}:?\s*\|/;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const raw = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent;
    if (!source.test(text)) continue;
    if (node.parentElement && node.parentElement.closest(skip)) continue;
    raw.push(text.trim().slice(0, 120));
  }
  return raw;
}"""

MATH_JS = r"""() => {
  const math = Array.from(document.querySelectorAll("span.math, div.math"));
  return {math: math.length,
          untypeset: math.filter(el => !el.querySelector("mjx-container")).map(el => el.textContent.slice(0, 80)),
          containers: document.querySelectorAll("mjx-container").length,
          errors: Array.from(document.querySelectorAll("mjx-merror")).map(el => el.textContent.slice(0, 80))};
}"""

BROKEN_IMAGES_JS = r"""() => Array.from(document.images)
  .filter(img => !(img.complete && img.naturalWidth > 0))
  .map(img => (img.getAttribute("src") || "").slice(0, 80))"""

LINKS_JS = r"""() => Array.from(document.querySelectorAll("a[href]")).map(a => a.getAttribute("href"))"""


def _check_math(page) -> tuple[list[str], int]:
    problems = []
    raw = page.evaluate(RAW_SOURCE_JS)
    if raw:
        problems.append(f"raw TeX or Markdown left on the page: {raw[:5]}")
    math = page.evaluate(MATH_JS)
    if math["untypeset"]:
        problems.append(f"{len(math['untypeset'])} of {math['math']} math elements not typeset: "
                        f"{math['untypeset'][:3]}")
    if math["errors"]:
        problems.append(f"MathJax errors: {math['errors'][:5]}")
    return problems, math["containers"]


def _move_sliders(page) -> tuple[list[str], list[dict]]:
    """Move every slider of every static explorer with the keyboard; its picture and label must change."""
    problems, moved = [], []
    explorers = page.locator(".lattn-explorer")
    for e in range(explorers.count()):
        explorer = explorers.nth(e)
        name = explorer.get_attribute("data-explorer")
        image = explorer.locator("img").first
        sliders = explorer.locator("input[type=range][data-control]")
        if sliders.count() == 0:
            problems.append(f"explorer {name} has no slider")
        for s in range(sliders.count()):
            slider = sliders.nth(s)
            position = slider.get_attribute("data-control")
            label = explorer.locator(f'output[data-output="{position}"]')
            start_value = slider.input_value()
            start_src, start_label = image.get_attribute("src"), label.text_content()
            start_alt = image.get_attribute("alt")
            low, high = int(slider.get_attribute("min")), int(slider.get_attribute("max"))
            key = "ArrowLeft" if int(start_value) == high else "ArrowRight"
            slider.scroll_into_view_if_needed()
            steps, src_changed = 0, False
            for steps in range(1, high - low + 1):  # equal pictures at neighbours: keep going
                slider.press(key)
                if image.get_attribute("src") != start_src:
                    src_changed = True
                    break
            value, new_label = slider.input_value(), label.text_content()
            said = explorer.locator("[aria-live]").text_content()
            picture_ok = image.evaluate("img => img.decode().then(() => img.naturalWidth > 0, () => false)")
            record = {"explorer": name, "slider": slider.get_attribute("aria-label"), "from": start_label,
                      "to": new_label, "key_presses": steps, "picture_changed": src_changed}
            moved.append(record)
            if value == start_value:
                problems.append(f"{name}/{record['slider']}: {key} did not move the slider")
            if not src_changed:
                problems.append(f"{name}/{record['slider']}: picture unchanged after {steps} moves")
            if new_label == start_label:
                problems.append(f"{name}/{record['slider']}: value label stayed {start_label!r}")
            if said != image.get_attribute("alt") or said == start_alt:
                problems.append(f"{name}/{record['slider']}: the live region read {said!r}, "
                                f"not the new picture's description")
            if not picture_ok:
                problems.append(f"{name}/{record['slider']}: new picture does not decode")
            back = "ArrowRight" if key == "ArrowLeft" else "ArrowLeft"
            for _ in range(steps):  # back to the default, so each slider starts from the defaults
                slider.press(back)
            if image.get_attribute("src") != start_src or label.text_content() != start_label:
                problems.append(f"{name}/{record['slider']}: moving back did not restore the picture")
    return problems, moved


def _answer_quizzes(page) -> tuple[list[str], int]:
    """Click every concept-check's right answer; it must say so."""
    problems = []
    quizzes = page.locator(".lattn-quiz")
    for q in range(quizzes.count()):
        quiz = quizzes.nth(q)
        quiz.locator('button[data-correct="1"]').click()
        verdict = quiz.locator(".lattn-quiz-verdict").text_content() or ""
        if not verdict.startswith("Right"):
            problems.append(f"quiz {quiz.get_attribute('id')}: the right answer got {verdict!r}")
    return problems, quizzes.count()


def _check_colab(page, page_path: str) -> tuple[list[str], str | None]:
    hrefs = page.eval_on_selector_all('a[href*="colab.research.google.com"]',
                                      "links => links.map(a => a.getAttribute('href'))")
    is_chapter = page_path.startswith("book/myst/")
    if not hrefs:
        return ([f"no Colab launch button on {page_path}"] if is_chapter else []), None
    repository = urlsplit(CONFIG["repository"]["url"]).path.strip("/")
    branch = CONFIG["repository"].get("branch", "main")
    prefix = f"https://colab.research.google.com/github/{repository}/blob/{branch}/"
    problems = []
    for href in set(hrefs):
        if not href.startswith(prefix):
            problems.append(f"Colab link {href} does not start with {prefix}")
            continue
        target = href[len(prefix):]
        expected = f"book/colab/{Path(page_path).stem}.ipynb"  # the chapter's Colab edition
        if target != expected:
            problems.append(f"Colab link opens {target}, expected this page's Colab edition {expected}")
        if not target.endswith(".ipynb"):
            problems.append(f"Colab link opens {target}, which is not a notebook")
        elif not (ROOT / target).is_file():
            problems.append(f"Colab link opens {target}, which is not in the repository")
        elif _git_tracked(target) is False:
            problems.append(f"Colab link opens {target}, which exists here but is not committed")
    return problems, hrefs[0]


@functools.lru_cache(maxsize=None)
def _git_tracked(path: str) -> bool | None:
    """True/False when git can tell, None where this is not a git checkout."""
    try:
        result = subprocess.run(["git", "ls-files", "--error-unmatch", path], cwd=ROOT,
                                capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0 and "not a git repository" in result.stderr:
        return None
    return result.returncode == 0


@functools.lru_cache(maxsize=None)
def _ids(html_file: Path) -> frozenset[str]:
    text = html_file.read_text(encoding="utf-8", errors="replace")
    return frozenset(re.findall(r'\b(?:id|name)="([^"]+)"', text))


def _check_links(page, site: Path, site_url: str) -> tuple[list[str], int]:
    problems, checked = [], 0
    page_url = page.url
    for href in page.evaluate(LINKS_JS):
        href = href.strip()
        if not href or href.startswith("#") or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", href):
            continue  # same-page anchors, http(s):, mailto:, javascript:
        checked += 1
        target = urljoin(page_url, href)
        parts = urlsplit(target)
        if not target.startswith(site_url):
            problems.append(f"link {href!r} leaves the site ({target})")
            continue
        path = unquote(parts.path)[len(urlsplit(site_url).path):]
        file = site / path
        if path == "" or path.endswith("/"):
            file = file / "index.html"
        if not file.is_file():
            problems.append(f"link {href!r} points to {path or '/'}, which is not in the build")
        elif parts.fragment and file.suffix == ".html" and unquote(parts.fragment) not in _ids(file):
            problems.append(f"link {href!r}: no id {parts.fragment!r} in {path}")
    return problems, checked


def test_the_build_holds_exactly_the_pages_this_test_opens(built_site):
    pages = {p.relative_to(built_site).as_posix() for p in built_site.rglob("*.html")
             if not p.relative_to(built_site).parts[0].startswith("_")}
    assert pages - {"index.html"} - set(MOVED) == set(PAGES), "pages built but not checked, or checked but not built"
    redirect = (built_site / "index.html").read_text(encoding="utf-8")
    assert f'{TOC["root"]}.html' in redirect, "index.html does not lead to the root page"


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_chapter_address_leads_to_its_page(old, built_site):
    """The chapters' addresses before the site built from book/myst still arrive, at a page
    the build made, with a link for browsers that do not follow the refresh."""
    new = MOVED[old]
    assert new in PAGES, f"{old} leads to {new}, which is not a page of the site"
    html = (built_site / old).read_text(encoding="utf-8")
    target = posixpath.relpath(new, posixpath.dirname(old))
    assert f'http-equiv="refresh" content="0; url={target}"' in html and f'href="{target}"' in html
    assert '<html lang="en">' in html and "<title>" in html


@pytest.mark.parametrize("page_path", PAGES)
def test_no_cell_shows_a_stray_value(page_path, built_site):
    """A cell whose last line returns a string (a glue call, an assignment's value) would show
    it as a lone quoted output, which means nothing to a reader."""
    html = (built_site / page_path).read_text(encoding="utf-8")
    outputs = re.findall(r'<div class="output text_plain[^"]*"><div class="highlight"><pre><span></span>(.*?)</pre>',
                         html, flags=re.S)
    stray = [text.strip() for text in outputs if re.fullmatch(r"(&#39;|')[^\n]*(&#39;|')", text.strip())]
    assert not stray, f"{page_path}: cells show bare values {stray}"


@pytest.mark.parametrize("page_path", PAGES)
def test_page_in_the_browser(page_path, browser_context, built_site, site_url, report):
    problems: list[str] = []
    entry: dict = {"screenshots": []}
    for mode in ("light", "dark"):
        page, watch = _open(browser_context, site_url + page_path, mode)
        try:
            theme = page.evaluate("() => document.documentElement.dataset.theme")
            if theme != mode:
                problems.append(f"{mode} mode asked for, page theme is {theme!r}")
            if mode == "light":  # the content checks; dark mode only has to load cleanly
                found, entry["mjx_containers"] = _check_math(page)
                problems += found
                broken = page.evaluate(BROKEN_IMAGES_JS)
                if broken:
                    problems.append(f"pictures that do not show: {broken}")
                found, entry["sliders"] = _move_sliders(page)
                problems += found
                found, entry["colab"] = _check_colab(page, page_path)
                problems += found
                found, entry["internal_links_checked"] = _check_links(page, built_site, site_url)
                problems += found
            page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
            shot = SCREENSHOTS / mode / (page_path.replace("/", "__").removesuffix(".html") + ".png")
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
            entry["screenshots"].append(shot.relative_to(ROOT).as_posix())
            if mode == "light":  # after the picture, which should show the quizzes unanswered
                found, entry["quizzes_answered"] = _answer_quizzes(page)
                problems += found
        finally:
            page.close()
        foreign = watch.foreign()
        problems += [f"{mode}: request left 127.0.0.1: {url}" for url in foreign]
        problems += [f"{mode}: failed request: {failure}" for failure in watch.failed
                     if failure.split(" ")[0] not in foreign]
        problems += [f"{mode}: {error}" for error in watch.errors if "ERR_BLOCKED_BY_CLIENT" not in error]
        entry[f"requests_{mode}"] = len(watch.requests)
        entry[f"request_origins_{mode}"] = sorted({_origin(url) for url in watch.requests})
        report["foreign_requests"] += foreign
        report["console_errors"] += watch.errors
    entry["problems"] = problems
    report["pages"][page_path] = entry
    report["sliders_moved"] = sum(len(p.get("sliders", [])) for p in report["pages"].values())
    report["quizzes_answered"] = sum(p.get("quizzes_answered", 0) for p in report["pages"].values())
    report["requests_seen"] = sum(p["requests_light"] + p["requests_dark"] for p in report["pages"].values())
    _write_report(report)
    assert not problems, f"{page_path}:\n  " + "\n  ".join(problems)


def test_search_finds_the_chapters_offline(browser_context, site_url):
    page, watch = _open(browser_context, site_url + "search.html?q=retention", "light")
    try:
        page.wait_for_function("() => document.querySelectorAll('#search-results li').length > 0",
                               timeout=PAGE_TIMEOUT_MS)
        hits = page.eval_on_selector_all("#search-results li a", "links => links.map(a => a.getAttribute('href'))")
    finally:
        page.close()
    assert any("08-kernel-cousins" in href for href in hits), f"searching 'retention' found {hits}"
    assert not watch.foreign() and not watch.errors and not watch.failed, (
        watch.foreign(), watch.errors, watch.failed)
