"""Write every inline script once per page.

Sphinx 7.4 (the newest Jupyter Book 1.x allows) copies the scripts that extensions register
after the builder starts into each page a second time: once as registered (file name
``None``) and once from its registry (file name ``""``), which do not compare equal. A
repeated ``var`` is harmless, but sphinx-thebe's ``const THEBE_JS_URL`` declared twice throws
"Identifier 'THEBE_JS_URL' has already been declared" on every page. This extension drops the
repeats from each page's script list, in place and after every other handler has added its
scripts. Checked by tests/test_site.py (no page error in the browser).
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx


def _script_key(script: Any) -> tuple:
    attributes = getattr(script, "attributes", {}) or {}
    return (getattr(script, "filename", script) or "", getattr(script, "priority", 500),
            tuple(sorted(attributes.items())))


def _drop_repeated_scripts(app: Sphinx, pagename: str, templatename: str, context: dict,
                           doctree: Any) -> None:
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen: set[tuple] = set()
    unique = []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique  # in place: the builder keeps appending page scripts to this list


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _drop_repeated_scripts, priority=999)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
