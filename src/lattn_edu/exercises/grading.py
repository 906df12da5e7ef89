"""Read the verdicts of the exercise checkers out of an executed notebook (for instructors).

Each exercise cell of a chapter ends with ``CATALOG[id].feedback(answer)``, which prints one
line: ``✓ id: correct.``, ``✗ id: <why>`` or ``id: not attempted yet...``. ``--execute``
runs each notebook from the top first (with nbclient, in a local kernel), so the lines are
fresh rather than whatever the file was saved with::

    python -m lattn_edu.exercises.grading --execute alice.ipynb bob.ipynb

Executing a notebook runs the student's code on your machine. The verdicts are what the
student's own kernel printed: code that prints a fake ``✓`` line, or replaces the checker,
fools this. It serves as a quick tally, not as proof.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

VERDICT = re.compile(r"^(?:(?P<mark>[✓✗]) )?(?P<id>ch\d\d\.\w+): (?P<rest>.*)$", re.M)


def run_notebook(path: str | Path, timeout: int = 600) -> dict:
    """The notebook at ``path`` executed from the top in its folder; cells that raise are
    recorded, not fatal (an unfinished exercise must not hide the later ones)."""
    try:
        import nbclient
        import nbformat
    except ImportError:
        raise ImportError("executing notebooks needs nbclient and a kernel: "
                          "pip install nbclient ipykernel") from None
    notebook = nbformat.read(str(path), as_version=4)
    nbclient.NotebookClient(notebook, timeout=timeout, allow_errors=True, kernel_name="python3",
                            resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    return notebook


def notebook_verdicts(path: str | Path, execute: bool = False) -> dict[str, str]:
    """Each exercise id the notebook's outputs report on -> "correct", "wrong" or "not attempted".

    Parameters
    ----------
    path : a ``.ipynb`` file, already executed unless ``execute``.
    execute : run the notebook from the top first (:func:`run_notebook`).

    Returns
    -------
    dict mapping exercise id to its last verdict, in the order the ids first appear.
    """
    notebook = run_notebook(path) if execute else json.loads(Path(path).read_text(encoding="utf-8"))
    if "cells" not in notebook:
        raise ValueError(f"path: {path} is not a Jupyter notebook (it has no 'cells'); "
                         "pass an .ipynb file")
    verdicts: dict[str, str] = {}
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            text = output.get("text", "")
            for line in VERDICT.finditer("".join(text) if isinstance(text, list) else text):
                if line["mark"] == "✓":
                    verdicts[line["id"]] = "correct"
                elif line["mark"] == "✗":
                    verdicts[line["id"]] = "wrong"
                elif line["rest"].startswith("not attempted"):
                    verdicts[line["id"]] = "not attempted"
    return verdicts


def main(argv: list[str] | None = None) -> int:
    """Print one line per exercise and a tally for each notebook named on the command line."""
    arguments = sys.argv[1:] if argv is None else argv
    execute = "--execute" in arguments
    paths = [argument for argument in arguments if argument != "--execute"]
    if not paths:
        print("usage: python -m lattn_edu.exercises.grading [--execute] notebook.ipynb [more.ipynb ...]")
        return 2
    for path in paths:
        verdicts = notebook_verdicts(path, execute)
        for exercise_id, verdict in verdicts.items():
            print(f"{path}\t{exercise_id}\t{verdict}")
        correct = sum(verdict == "correct" for verdict in verdicts.values())
        print(f"{path}\t{correct} of {len(verdicts)} correct")
    return 0


if __name__ == "__main__":
    sys.exit(main())
