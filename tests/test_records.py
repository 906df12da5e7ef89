"""The one loader of recorded results: the package's data folder, never the network."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from lattn_edu import bench, records

ROOT = Path(__file__).resolve().parent.parent
PACKAGED = ROOT / "src" / "lattn_edu" / "data"
CHAPTERS = sorted((ROOT / "book" / "myst").glob("*.md"))


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the loader reached for the network")
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.fixture
def data(tmp_path, monkeypatch):
    """An empty data folder in place of the package's."""
    monkeypatch.setattr(records, "DATA", tmp_path)
    return tmp_path


def test_a_saved_record_is_loaded_back(data, no_network):
    path = records.save_record({"config": {"steps": 7}}, data / "recall.json")
    assert path == data / "recall.json" == records.find_record("recall.json")
    assert records.load_record("recall.json") == {"config": {"steps": 7}}
    assert path.read_text(encoding="utf-8").endswith("}\n")


def test_save_record_writes_where_it_is_told_and_nowhere_else(tmp_path):
    """An explicit path, relative ones from the working directory: never the package's folder."""
    before = {p.name: p.stat().st_mtime_ns for p in PACKAGED.iterdir()}
    path = records.save_record({"a": [1, 2]}, tmp_path / "bench.json")
    assert path == tmp_path / "bench.json" and records.read_record(path) == {"a": [1, 2]}
    assert {p.name: p.stat().st_mtime_ns for p in PACKAGED.iterdir()} == before
    with pytest.raises(TypeError, match="record must be a dict"):
        records.save_record("bench.json", {"a": 1})  # the old name-first call
    with pytest.raises(TypeError, match="path must be a str or path-like"):
        records.save_record({"a": 1}, None)


def test_a_benchmark_script_refreshes_the_repository_data_folder():
    script = ROOT / "benchmarks" / "scaling.py"
    assert records.repository_data(script, "scaling.json") == PACKAGED / "scaling.json"
    with pytest.raises(ValueError, match="bare file name"):
        records.repository_data(script, "../scaling.json")


def test_the_package_data_is_read_by_default(no_network):
    assert records.find_record("recall.json") == PACKAGED / "recall.json"
    assert records.load_record("recall.json") == json.loads((PACKAGED / "recall.json").read_text())


def test_a_missing_record_names_the_data_folder(data, no_network):
    assert records.find_record("nothing-9.json") is None
    with pytest.raises(FileNotFoundError, match=r"nothing-9\.json.*data folder"):
        records.load_record("nothing-9.json")


@pytest.mark.parametrize("name", ["", "../bench.json", "results/bench.json", None])
def test_a_name_that_is_not_a_bare_file_name_is_refused(name):
    with pytest.raises(ValueError, match="name must be a bare file name"):
        records.find_record(name)


def test_bench_load_results_goes_through_the_loader(data, no_network):
    records.save_record({"recorded": "2031-01-02"}, data / "bench.json")
    assert bench.load_results() == {"recorded": "2031-01-02"}
    assert bench.load_results(name="bench.json") == records.load_record("bench.json")


def test_every_recorded_file_is_kept_once():
    """A recorded file lives in the package's data folder only, so no second copy can go stale."""
    twice = sorted(p.name for p in PACKAGED.iterdir() if (ROOT / "benchmarks" / "results" / p.name).exists())
    assert not twice, f"{twice} are in both src/lattn_edu/data and benchmarks/results"


def test_the_data_folder_holds_only_what_a_chapter_or_the_package_reads():
    """Each packaged file is named by a chapter or by the package's own code (an explorer a
    chapter shows, the bench's default record); anything else belongs in benchmarks/results/."""
    readers = [*CHAPTERS, *(p for p in (ROOT / "src" / "lattn_edu").rglob("*.py"))]
    texts = [path.read_text(encoding="utf-8") for path in readers]
    unread = sorted(p.name for p in PACKAGED.iterdir() if p.is_file() and not any(p.name in t for t in texts))
    assert not unread, f"{unread} in src/lattn_edu/data are read by no chapter and no module"


def test_every_record_a_chapter_loads_ships_in_the_package():
    """Each name a chapter passes to load_record / bench.load_results, and bench.json, which
    load_results() reads by default."""
    pattern = r"(?:load_record|find_record|load_results)\((?:name=)?\"([\w.]+)\""
    names = {"bench.json"} | {name for chapter in CHAPTERS
                              for name in re.findall(pattern, chapter.read_text(encoding="utf-8"))}
    assert {"recall.json", "recall_quick.json", "recall_long.json"} <= names
    optional = {"gpu.json"}  # chapter 9 says so when no GPU run is recorded
    missing = sorted(name for name in names - optional if not (PACKAGED / name).is_file())
    assert not missing, f"chapters read {missing}, which the package does not ship"


def test_provenance_names_the_machine_and_the_date():
    record = {"machine": {"cpu": "Some CPU", "cores": 3}, "recorded": "2031-01-02T03:04:05"}
    assert records.provenance(record) == "recorded on Some CPU, 3 cores, 2031-01-02"
    recall_like = {"config": {"machine": "3 CPU cores, x86_64"}}
    assert records.provenance(recall_like) == "recorded on 3 CPU cores, x86_64, date not recorded"
    trained = {"config": {"machine": "3 CPU cores", "torch": "9.1.0", "recorded": "2031-01-02"}}
    assert records.provenance(trained) == "recorded on 3 CPU cores, torch 9.1.0, 2031-01-02"
