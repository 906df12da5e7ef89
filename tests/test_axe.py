"""The built site, audited the way the web audits accessibility: axe-core in chromium.

axe-core (Deque's WCAG rule engine, AXE_CORE_VERSION in conftest.py) is installed by npm
from its registry into a cache folder at test time (conftest.py's ``axe_core``; npm is
Debian's, installed with chromium where missing) and injected into each page of the
session's build after it loaded, so the site itself loads nothing new. Every page of the
table of contents is audited with the WCAG 2.0/2.1 level A and AA rules (and the
experimental label-content-name-mismatch), in light and in dark mode; any violation axe
rates serious or critical fails the page, listed by rule, page and element, and all of them
are written to _build/axe/report.json.

The page is also opened 390 px wide (a phone): the page itself must not scroll sideways
(a wide table, code or an equation may scroll inside its own box); each page's width is
written to _build/axe/phone-widths.json. And at 1280 px every
displayed equation that fits the column shows whole, with no scroll bar over it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_site import PAGES, _open

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent

WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
FAILING_IMPACTS = ("serious", "critical")
PHONE = {"width": 390, "height": 844}

# label-content-name-mismatch (WCAG 2.5.3, level A) is one of axe's "experimental" rules,
# which run only when named: a control whose visible words are not in its accessible name
# cannot be called by those words with voice control.
EXPERIMENTAL_RULES = ["label-content-name-mismatch"]
REPORT = ROOT / "_build" / "axe" / "report.json"
PHONE_REPORT = ROOT / "_build" / "axe" / "phone-widths.json"

AXE_RUN_JS = """([tags, experimental]) => axe.run(document, {
    runOnly: {type: "tag", values: tags}, resultTypes: ["violations"],
    rules: Object.fromEntries(experimental.map(rule => [rule, {enabled: true}]))})
  .then(result => result.violations.map(v => ({
    rule: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(" "), summary: n.failureSummary,
                              html: n.html.slice(0, 160)}))})))"""

# Elements wider than the window that are not inside a box that scrolls or clips them.
WIDE_JS = r"""() => {
  const width = document.documentElement.clientWidth;
  const clipped = el => {
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const overflow = getComputedStyle(a).overflowX;
      if (overflow !== "visible") return true;
    }
    return false;
  };
  const wide = [];
  for (const el of document.body.querySelectorAll("*")) {
    const box = el.getBoundingClientRect();
    if (box.width === 0 || box.right <= width + 1 || clipped(el)) continue;
    const name = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
      (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "");
    wide.push(`${name} (right edge ${Math.round(box.right)} px)`);
  }
  return {scroll: document.documentElement.scrollWidth, window: width, wide: wide.slice(0, 8)};
}"""

# Displayed equations (MathJax's block containers) whose box scrolls while their content
# would fit the column: a scroll bar over an equation that needs none.
CUT_EQUATIONS_JS = r"""() => Array.from(document.querySelectorAll('mjx-container[display="true"]'))
  .filter(el => el.scrollHeight > el.clientHeight + 1 ||
                (el.scrollWidth > el.clientWidth + 1 && el.scrollWidth <= el.parentElement.clientWidth))
  .map(el => `${(el.closest("[id]") || {}).id || "?"}: box ${el.clientWidth}x${el.clientHeight}, ` +
             `content ${el.scrollWidth}x${el.scrollHeight}`)"""


# The page as a reader sees it once it settled: the theme's mode applied (the theme's script
# sets it) and no colour still fading in (a contrast read mid-transition is not the page's).
SETTLED_JS = """mode => new Promise(resolve => {
  const ready = () => document.documentElement.dataset.theme === mode;
  const wait = () => ready() ? Promise.all(document.getAnimations().map(a => a.finished.catch(() => null)))
                                 .then(() => resolve(true)) : setTimeout(wait, 50);
  wait();
})"""


def axe_violations(page, axe_core: str, mode: str) -> list[dict]:
    """axe-core's serious and critical WCAG A/AA violations on the open page."""
    page.evaluate(SETTLED_JS, mode)
    page.add_script_tag(content=axe_core)
    return [v for v in page.evaluate(AXE_RUN_JS, [WCAG_TAGS, EXPERIMENTAL_RULES])
            if v["impact"] in FAILING_IMPACTS]


def describe(violations: list[dict], where: str) -> list[str]:
    lines = []
    for v in violations:
        lines.append(f"{v['rule']} ({v['impact']}) on {where}: {v['help']}; {len(v['nodes'])} element(s)")
        for node in v["nodes"][:6]:
            summary = " ".join(node["summary"].split())[:220]
            lines.append(f"    {node['target']}: {summary}")
    return lines


def _recorded(path):
    """A dict the tests fill, written to ``path`` as JSON once the module's tests are done."""
    found: dict = {}
    yield found
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def axe_report():
    """Every violation found, by page and mode, written to _build/axe/report.json."""
    yield from _recorded(REPORT)


@pytest.mark.parametrize("page_path", PAGES)
def test_axe_finds_no_serious_violation(page_path, browser_context, site_url, axe_core, axe_report):
    problems = []
    for mode in ("light", "dark"):
        page, _ = _open(browser_context, site_url + page_path, mode)
        try:
            violations = axe_violations(page, axe_core, mode)
        finally:
            page.close()
        axe_report[f"{page_path} ({mode})"] = violations
        problems += describe(violations, f"{page_path} ({mode})")
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def phone_widths():
    """Each page's width in a 390 px window, written to _build/axe/phone-widths.json."""
    yield from _recorded(PHONE_REPORT)


@pytest.mark.parametrize("page_path", PAGES)
def test_page_never_scrolls_sideways_on_a_phone(page_path, browser_context, site_url, phone_widths):
    page = browser_context.new_page()
    try:
        page.set_viewport_size(PHONE)
        page.goto(site_url + page_path, wait_until="load")
        page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise.then(() => true) : true")
        page.evaluate("() => document.fonts.ready.then(() => true)")
        found = page.evaluate(WIDE_JS)
    finally:
        page.close()
    phone_widths[page_path] = found["scroll"]
    assert found["scroll"] <= found["window"], (
        f"{page_path} is {found['scroll']} px wide in a {found['window']} px window; "
        f"wider than the window: {found['wide']}")


@pytest.mark.parametrize("page_path", PAGES)
def test_displayed_equations_show_whole(page_path, browser_context, site_url):
    page, _ = _open(browser_context, site_url + page_path, "light")
    try:
        cut = page.evaluate(CUT_EQUATIONS_JS)
    finally:
        page.close()
    assert not cut, f"{page_path}: equations behind a scroll bar they do not need: {cut}"
