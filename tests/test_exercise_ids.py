"""Every exercise id a page or a docstring names exists, so no reader is sent to a missing one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lattn_edu import exercises

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "book").rglob("*.md")) + sorted((ROOT / "src").rglob("*.py"))
# "ch03.parallel_form"; "ch03.py" is a file name, not an id
EXERCISE_ID = re.compile(r"\b(ch\d\d)\.(?!py\b)([A-Za-z_]\w*)")


def named_ids(path: Path) -> set[str]:
    return {f"{chapter}.{name}" for chapter, name in EXERCISE_ID.findall(path.read_text("utf-8"))}


def exists(exercise_id: str) -> bool:
    """In CATALOG, or a name the chapter's exercise module defines (ch09.solution_chunk_step)."""
    chapter, name = exercise_id.split(".")
    module = getattr(exercises, chapter, None)
    return exercise_id in exercises.CATALOG or hasattr(module, name)


@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_named_exercise_exists(path):
    missing = sorted(i for i in named_ids(path) if not exists(i))
    assert not missing, f"{path.relative_to(ROOT)} names exercises that do not exist: {missing}"


def test_the_scan_finds_ids_and_skips_file_names(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Run `ch03.parallel_form`, then `ch03.no_such_thing`; see ch03.py.", "utf-8")
    assert named_ids(page) == {"ch03.parallel_form", "ch03.no_such_thing"}
    assert exists("ch03.parallel_form") and not exists("ch03.no_such_thing")
