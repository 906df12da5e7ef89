"""The one loader of recorded results: the checkout first, then the package's copies, never the network."""

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
def checkout(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "CHECKOUT_RESULTS", tmp_path)
    return tmp_path


def test_the_checkout_wins_over_the_package(checkout, no_network):
    (checkout / "recall.json").write_text(json.dumps({"config": {"steps": 7}}), encoding="utf-8")
    assert records.load_record("recall.json") == {"config": {"steps": 7}}
    assert records.find_record("recall.json") == checkout / "recall.json"


def test_without_a_checkout_the_package_copy_is_read(checkout, no_network):
    assert records.find_record("recall.json") == PACKAGED / "recall.json"
    assert records.load_record("recall.json") == json.loads((PACKAGED / "recall.json").read_text())


def test_a_missing_record_names_both_places(checkout, no_network):
    assert records.find_record("nothing-9.json") is None
    with pytest.raises(FileNotFoundError, match=r"nothing-9\.json.*looked in .*data"):
        records.load_record("nothing-9.json")


@pytest.mark.parametrize("name", ["", "../bench.json", "results/bench.json", None])
def test_a_name_that_is_not_a_bare_file_name_is_refused(name):
    with pytest.raises(ValueError, match="name must be a bare file name"):
        records.find_record(name)


def test_bench_load_results_goes_through_the_loader(checkout, no_network):
    (checkout / "bench.json").write_text(json.dumps({"recorded": "2031-01-02"}), encoding="utf-8")
    assert bench.load_results() == {"recorded": "2031-01-02"}


def test_every_packaged_copy_matches_the_checkout():
    """The package ships what the checkout recorded: a re-recorded file is copied too."""
    stale = [p.name for p in sorted(PACKAGED.glob("*.json"))
             if (ROOT / "benchmarks" / "results" / p.name).is_file()
             and (ROOT / "benchmarks" / "results" / p.name).read_bytes() != p.read_bytes()]
    assert not stale, f"src/lattn_edu/data differs from benchmarks/results for {stale}"


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
