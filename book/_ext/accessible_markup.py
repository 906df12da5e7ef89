"""Repair markup that fails an accessibility audit (tests/test_axe.py, axe-core's WCAG rules)
where it comes from docutils or the theme rather than from the book's text.

- The bibliography (book/references.md): docutils writes the citations as
  ``<div role="list" class="citation-list">`` holding ``<div role="doc-biblioentry">``
  entries. ARIA 1.3 deprecates doc-biblioentry, and a list must hold list items, so axe
  reports aria-required-children (critical) and a screen reader may not announce the
  entries as a list. Each entry becomes a list item (``role="listitem"``).
- A folded code cell (myst-nb's hide-input): its ``<summary>`` shows "Show code cell source"
  but is named "Toggle hidden content" (aria-label), so voice control cannot click it by the
  words on screen (axe: label-content-name-mismatch). Without the aria-label its name is the
  words it shows.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

REPLACEMENTS = (('role="doc-biblioentry"', 'role="listitem"'),
                ('<summary aria-label="Toggle hidden content">', "<summary>"))


def _repair_body(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    body = context.get("body")
    if not isinstance(body, str):
        return
    for old, new in REPLACEMENTS:
        body = body.replace(old, new)
    context["body"] = body


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _repair_body)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
