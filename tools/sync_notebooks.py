"""Turn the MyST chapter sources in book/myst/ into the .ipynb notebooks in book/chapters/.

The website is built from the notebooks, so the Colab launch button opens a real
.ipynb. Each notebook starts with a cell that installs lattn_edu where it is missing,
from the repository URL set once in _config.yml. Notebooks carry no outputs.

    python tools/sync_notebooks.py          # write the notebooks
    python tools/sync_notebooks.py --check  # exit 1 if any notebook differs from its source
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jupytext
import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "book" / "myst"
NOTEBOOKS = ROOT / "book" / "chapters"

INSTALL_CELL = '''\
# On Colab (or anywhere lattn_edu is missing) install the book's package. pip keeps
# the numpy, torch and ipywidgets that are already there: nothing gets upgraded.
import importlib.util, subprocess, sys
if importlib.util.find_spec("lattn_edu") is None:
    requirement = "{requirement}"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", requirement],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        class InstallFailed(Exception):
            def _render_traceback_(self):  # IPython shows this message alone, no traceback
                return [str(self)]
        said = [line.strip() for line in pip.stderr.splitlines() if line.strip()] or ["(pip said nothing)"]
        reason = next((line for line in said if line.startswith(("ERROR", "fatal"))), said[-1])
        raise InstallFailed(f"Could not install lattn_edu, which this notebook needs: {{reason}}\\n"
                            f"Connect to the internet, run  pip install '{{requirement}}'  "
                            f"and then run this cell again.")'''


def install_requirement(config_path: Path = ROOT / "_config.yml") -> str:
    """The pip requirement for lattn_edu, built from the repository setting in _config.yml."""
    repository = yaml.safe_load(config_path.read_text(encoding="utf-8"))["repository"]
    return f"lattn_edu @ git+{repository['url']}@{repository.get('branch', 'main')}"


def render_notebook(source: Path, requirement: str) -> str:
    """The notebook JSON for one MyST source: install cell first, deterministic ids, no outputs."""
    notebook = jupytext.read(source, fmt="md:myst")
    install = nbformat.v4.new_code_cell(INSTALL_CELL.format(requirement=requirement),
                                        metadata={"tags": ["remove-cell"]})
    notebook.cells.insert(0, install)
    for index, cell in enumerate(notebook.cells):
        cell.id = f"{source.stem}-{index}"[:64]
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    notebook.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    }
    return nbformat.writes(notebook) + "\n"


def pairs() -> list[tuple[Path, Path]]:
    """(source, notebook) for every chapter source."""
    return [(src, NOTEBOOKS / f"{src.stem}.ipynb") for src in sorted(SOURCES.glob("*.md"))]


def stale_notebooks() -> list[Path]:
    """Notebooks that are missing or differ from what their source renders to."""
    requirement = install_requirement()
    return [nb for src, nb in pairs()
            if not nb.exists() or nb.read_text(encoding="utf-8") != render_notebook(src, requirement)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only report notebooks out of date")
    args = parser.parse_args()
    stale = stale_notebooks()
    if args.check:
        for path in stale:
            print(f"out of date: {path.relative_to(ROOT)} (run python tools/sync_notebooks.py)")
        return 1 if stale else 0
    requirement = install_requirement()
    NOTEBOOKS.mkdir(parents=True, exist_ok=True)
    for src, nb in pairs():
        nb.write_text(render_notebook(src, requirement), encoding="utf-8")
        print(f"wrote {nb.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
