"""Recorded results that the chapters read: benchmark runs and recall training runs.

Each file a chapter reads is kept once, in the package's data folder (``lattn_edu/data/``),
so the same cell works on the website build, in a clone and on Colab, where there is no
repository: an installed package carries everything a chapter reads, and nothing is
fetched from the network. Chapters and explorers read it with :func:`load_record`.

Recording writes to an explicit path with :func:`save_record`, never by name into the
installed package (whose folder is the repository's only for an editable install): a
``lattn-edu`` command writes to the current directory or its ``--out``, and a script
under ``benchmarks/`` that refreshes a chapter's record defaults to the repository's
``src/lattn_edu/data/<name>``, found from the script's own location
(:func:`repository_data`).

:func:`provenance` turns a record into the words a chapter prints next to it,
"recorded on <machine>, <date>", so a reader on another machine is never told that a
recorded number was measured on theirs.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

DATA = Path(str(resources.files("lattn_edu") / "data"))


def _checked(name: Any) -> str:
    if not isinstance(name, str) or not name or Path(name).name != name:
        raise ValueError(f"name must be a bare file name such as 'bench.json'; got {name!r}")
    return name


def find_record(name: str) -> Path | None:
    """Where the recorded file ``name`` (e.g. ``"recall.json"``) lies, or None if nothing
    has been recorded under that name."""
    path = DATA / _checked(name)
    return path if path.is_file() else None


def load_record(name: str) -> dict[str, Any]:
    """The recorded JSON file ``name`` from the package's data folder.

    Raises
    ------
    FileNotFoundError
        When it has not been recorded; the message names the folder.
    """
    path = find_record(name)
    if path is None:
        raise FileNotFoundError(f"no recorded {name} in the package's data folder ({DATA})")
    return read_record(path)


def read_record(path: str | os.PathLike) -> dict[str, Any]:
    """A recorded file read from ``path`` (the packaged one, or a run kept aside)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def save_record(record: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write ``record`` to ``path`` as every recorded file is written: indented JSON, one
    trailing newline. Returns the path."""
    if not isinstance(record, dict):
        raise TypeError(f"record must be a dict (the JSON object to write); got {type(record).__name__}")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or path-like (where to write); got {type(path).__name__}")
    path = Path(path)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def repository_data(script: str | os.PathLike, name: str) -> Path:
    """``src/lattn_edu/data/<name>`` in the repository that holds ``script`` (a file directly
    under ``benchmarks/``): where a script that refreshes a chapter's record writes it."""
    return Path(script).resolve().parent.parent / "src" / "lattn_edu" / "data" / _checked(name)


def provenance(record: dict[str, Any]) -> str:
    """'recorded on <machine>, <date>' for a benchmark or recall record.

    Benchmark records keep the machine and date at the top level (``machine``,
    ``recorded``); recall and language-model records keep a one-line machine in ``config``,
    and torch's version beside it when torch trained them. A part the record does not hold
    is said to be unrecorded rather than guessed.
    """
    config = record.get("config", {})
    machine = record.get("machine", config.get("machine"))
    if isinstance(machine, dict):
        machine = f"{machine.get('cpu', 'a CPU')}, {machine.get('cores', '?')} cores"
    elif machine and "torch" in config:
        machine = f"{machine}, torch {config['torch']}"
    date = record.get("recorded", config.get("recorded"))
    return (f"recorded on {machine or 'an unrecorded machine'}, "
            f"{date[:10] if date else 'date not recorded'}")
