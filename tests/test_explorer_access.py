"""A static explorer (the website's form of an explorer) used with the keyboard alone and
heard through a screen reader, in Debian's chromium (conftest.py's ``chromium``).

Tab reaches every slider in order, the arrow keys move it, and each move changes the
picture, its alt text and a polite live region (``aria-live``), which a screen reader reads
out: the new picture's description, ``Explorer.describe`` of the new settings. axe-core
(conftest.py's ``axe_core``) finds no WCAG A/AA violation of any impact in the explorer.
tests/test_site.py checks the same on every explorer of the built site.
"""

from __future__ import annotations

import pytest

from lattn_edu import explorers

pytestmark = pytest.mark.slow

# the smallest grid, and one with settings that cannot be drawn (a message frame)
NAMES = ["scaling", "worked_example"]

STATE_JS = """root => ({alt: root.querySelector("img").alt,
                       said: root.querySelector("[aria-live]").textContent,
                       focused: document.activeElement.getAttribute("data-control")})"""


@pytest.fixture(scope="module")
def browser(chromium, playwright_api):
    launched = playwright_api.chromium.launch(executable_path=chromium, headless=True,
                                              args=["--no-sandbox", "--disable-gpu"])
    yield launched
    launched.close()


def open_explorer(browser, explorer, tmp_path):
    page_file = tmp_path / "explorer.html"
    page_file.write_text(f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
                         f'<title>{explorer.title}</title></head><body><main>{explorer.static_html()}'
                         f'</main></body></html>', encoding="utf-8")
    page = browser.new_page()
    page.goto(page_file.as_uri())
    return page


@pytest.mark.parametrize("name", NAMES)
def test_keyboard_moves_every_slider_and_the_new_picture_is_announced(name, browser, tmp_path):
    explorer = explorers.CATALOG[name]()
    names = list(explorer.controls)
    page = open_explorer(browser, explorer, tmp_path)
    root = page.locator(".lattn-explorer")
    try:
        state = root.evaluate(STATE_JS)
        assert state["alt"] == explorer.describe(**explorer.defaults)
        assert state["said"] == ""  # nothing is read out before a control moves
        indices = [explorer.controls[n].index(explorer.defaults[n]) for n in names]
        for position, control in enumerate(names):
            page.keyboard.press("Tab")
            assert root.evaluate(STATE_JS)["focused"] == str(position), f"Tab did not reach {control}"
            at_end = indices[position] == len(explorer.controls[control]) - 1
            page.keyboard.press("ArrowLeft" if at_end else "ArrowRight")
            indices[position] += -1 if at_end else 1
            values = {n: explorer.controls[n][i] for n, i in zip(names, indices)}
            state = root.evaluate(STATE_JS)
            assert state["alt"].startswith(explorer.describe(**values).removesuffix(".")), (control, state)
            assert state["said"] == state["alt"], f"{control}: the live region did not read the new picture"
    finally:
        page.close()


def test_the_explorer_passes_axe(browser, axe_core, tmp_path):
    explorer = explorers.CATALOG["scaling"]()
    page = open_explorer(browser, explorer, tmp_path)
    try:
        page.add_script_tag(content=axe_core)
        violations = page.evaluate("""() => axe.run(document.querySelector(".lattn-explorer"),
            {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}})
            .then(r => r.violations.map(v => v.id + ": " + v.nodes.map(n => n.target.join(" ")).join(", ")))""")
    finally:
        page.close()
    assert not violations, violations
