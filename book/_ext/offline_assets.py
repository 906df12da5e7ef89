"""Serve MathJax from the site itself, so the book works offline and loads nothing from a CDN.

MathJax 3 comes from the PyPI package django-static-mathjax (pinned in requirements.txt),
whose ``mathjax/static/mathjax/es5`` folder is the standard MathJax distribution. At build
time this extension copies it to ``_static/mathjax`` and points Sphinx's ``mathjax_path``
there. Nothing is vendored in the repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config

MATHJAX_ENTRY = "mathjax/tex-mml-chtml.js"  # relative to _static


def _mathjax_source() -> Path:
    import mathjax  # provided by django-static-mathjax

    source = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (source / "tex-mml-chtml.js").exists():
        raise FileNotFoundError(f"MathJax 3 not found at {source}: pip install -r requirements.txt")
    return source


def _use_local_mathjax(app: Sphinx, config: Config) -> None:
    config.mathjax_path = MATHJAX_ENTRY


def _copy_mathjax(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "mathjax"
    shutil.copytree(_mathjax_source(), target, dirs_exist_ok=True)


def setup(app: Sphinx) -> dict:
    _mathjax_source()  # fail early, with the install hint, if MathJax is missing
    app.connect("config-inited", _use_local_mathjax)
    app.connect("build-finished", _copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
