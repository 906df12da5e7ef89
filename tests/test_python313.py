"""Nothing in the package, the tools or the chapters uses what Python 3.12 and 3.13 removed.

Colab runs Python 3.13 while these machines have only 3.11 (tests/test_colab.py), so the
Colab-like test cannot catch a module or function that 3.13 no longer has. This test reads
every Python file of the repository and every code cell of the chapters' notebooks and fails
on an import of a removed module (PEP 594's "dead batteries", distutils, imp, ...) or a use
of a removed function, naming the file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parent.parent

# Removed in 3.12 (imp, distutils, asynchat, asyncore, smtpd) and 3.13 (PEP 594, lib2to3).
REMOVED_MODULES = {
    "imp", "distutils", "asynchat", "asyncore", "smtpd",
    "aifc", "audioop", "cgi", "cgitb", "chunk", "crypt", "imghdr", "mailcap", "msilib", "nis",
    "nntplib", "ossaudiodev", "pipes", "sndhdr", "spwd", "sunau", "telnetlib", "uu", "xdrlib",
    "lib2to3",
}
# Functions and names removed in 3.12 and 3.13, as module.attribute.
REMOVED_ATTRIBUTES = {
    "locale.resetlocale", "ssl.wrap_socket", "ssl.match_hostname", "typing.io", "typing.re",
    "unittest.makeSuite", "unittest.findTestCases", "unittest.getTestCaseNames",
    "configparser.SafeConfigParser", "configparser.LegacyInterpolation", "pkgutil.ImpImporter",
    "pkgutil.ImpLoader", "importlib.resources.contents", "gzip.GzipFile.filename",
    "sqlite3.enable_shared_cache", "sqlite3.OptimizedUnicode", "ast.Num", "ast.Str", "ast.Bytes",
    "ast.NameConstant", "ast.Ellipsis",
}

# this file names the removed modules on purpose, so it is left out
PYTHON_FILES = sorted(p for folder in ("src", "tools", "tests", "benchmarks", "book/_ext")
                      for p in (ROOT / folder).rglob("*.py") if p.name != Path(__file__).name)
NOTEBOOKS = sorted((ROOT / "book" / "myst").glob("*.md"))  # the chapters: MyST notebooks


def removed_uses(source: str) -> list[tuple[int, str]]:
    """(line, what) for every import of a removed module and use of a removed attribute."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names
                      if alias.name.split(".")[0] in REMOVED_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in REMOVED_MODULES:
                found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names
                      if f"{node.module}.{alias.name}" in REMOVED_ATTRIBUTES]
        elif isinstance(node, ast.Attribute):
            dotted = ast.unparse(node)
            if dotted in REMOVED_ATTRIBUTES:
                found.append((node.lineno, dotted))
    return found


def notebook_code(path: Path) -> str:
    """The code cells of a notebook as one program; IPython's % and ! lines left out."""
    cells = jupytext.read(path, fmt="md:myst").cells
    lines = [line for cell in cells if cell.cell_type == "code"
             for line in cell.source.splitlines()
             if not line.lstrip().startswith(("%", "!"))]
    return "\n".join(lines)


def test_the_check_finds_removed_modules_and_functions():
    source = "import imp\nfrom distutils.util import strtobool\nimport cgi, os\nlocale.resetlocale()\n"
    assert [what for _, what in removed_uses(source)] == ["imp", "distutils.util", "cgi", "locale.resetlocale"]
    assert removed_uses("import importlib\nimport shutil\nfrom os import pipe\n") == []


@pytest.mark.parametrize("path", PYTHON_FILES + NOTEBOOKS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_nothing_removed_in_python_313_is_used(path):
    source = notebook_code(path) if path.suffix == ".md" else path.read_text(encoding="utf-8")
    found = removed_uses(source)
    assert not found, f"{path.relative_to(ROOT)}: " + ", ".join(f"line {n}: {what}" for n, what in found)
