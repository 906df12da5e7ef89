"""Recorded results that the chapters read: benchmark runs and recall training runs.

Every chapter reads a recorded file through :func:`load_record`, so the same cell works on
the website build, in a clone and on Colab. It looks in the checkout's
``benchmarks/results/`` first (where a fresh recording lands), then in the copies shipped
inside the package (``lattn_edu/data/``). It never reaches for the network: an installed
package carries everything a chapter reads.

:func:`provenance` turns a record into the words a chapter prints next to it,
"recorded on <machine>, <date>", so a reader on another machine is never told that a
recorded number was measured on theirs.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

# src/lattn_edu/records.py -> the checkout's root; in an installed package this folder
# holds no benchmarks/results, and only the packaged copies are found.
CHECKOUT_RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def _packaged(name: str) -> Path:
    return Path(str(resources.files("lattn_edu") / "data" / name))


def find_record(name: str) -> Path | None:
    """Where the recorded file ``name`` (e.g. ``"recall.json"``) is read from, or None.

    The checkout's ``benchmarks/results/<name>`` wins over the copy in the package.
    """
    if not isinstance(name, str) or not name or Path(name).name != name:
        raise ValueError(f"name must be a bare file name such as 'bench.json'; got {name!r}")
    for candidate in (CHECKOUT_RESULTS / name, _packaged(name)):
        if candidate.is_file():
            return candidate
    return None


def load_record(name: str) -> dict[str, Any]:
    """The recorded JSON file ``name``, from the checkout or else from the package.

    Raises
    ------
    FileNotFoundError
        When neither holds it; the message names both places.
    """
    path = find_record(name)
    if path is None:
        raise FileNotFoundError(f"no recorded {name}: looked in {CHECKOUT_RESULTS} and in the "
                                f"package's data folder ({_packaged(name).parent})")
    return json.loads(path.read_text(encoding="utf-8"))


def provenance(record: dict[str, Any]) -> str:
    """'recorded on <machine>, <date>' for a benchmark or recall record.

    Benchmark records keep the machine and date at the top level (``machine``,
    ``recorded``); recall records keep a one-line machine in ``config``. A part the
    record does not hold is said to be unrecorded rather than guessed.
    """
    config = record.get("config", {})
    machine = record.get("machine", config.get("machine"))
    if isinstance(machine, dict):
        machine = f"{machine.get('cpu', 'a CPU')}, {machine.get('cores', '?')} cores"
    date = record.get("recorded", config.get("recorded"))
    return (f"recorded on {machine or 'an unrecorded machine'}, "
            f"{date[:10] if date else 'date not recorded'}")
