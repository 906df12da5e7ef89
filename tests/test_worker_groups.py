"""conftest.py spreads the suite over test workers (pytest-xdist) and keeps together the tests
that share something expensive: the book build (and the browser that reads it), and the
Colab-like virtual environment."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

import conftest


def fake_item(nodeid, *fixturenames):
    marks = []
    return SimpleNamespace(nodeid=nodeid, fixturenames=list(fixturenames), add_marker=marks.append, marks=marks)


def modify_items(items, loadgroup):
    """Run conftest's hook (a wrapper around the other plugins') as pytest would, with nothing inside."""
    config = SimpleNamespace(option=SimpleNamespace(loadgroup=loadgroup))
    for _ in conftest.pytest_collection_modifyitems(config, items):
        pass


def groups_of(item) -> list[str]:
    return [mark.args[0] for mark in item.marks if mark.name == "xdist_group"]


def lanes_of(item) -> list[str]:
    return [mark.name for mark in item.marks if mark.name != "xdist_group"]


def some_items():
    # fixturenames is a test's whole closure: built_site -> book_build shows up as both
    return (fake_item("tests/test_a.py::test_plain", "rng", "tmp_path"),
            fake_item("tests/test_b.py::test_site", "built_site", "book_build"),
            fake_item("tests/test_c.py::test_page[index.html]", "page", "chromium", "site_url", "built_site", "book_build"),
            fake_item("tests/test_d.py::test_run[01-x]", "colab", "tmp_path_factory", "path"))


def test_tests_that_share_the_book_or_the_colab_runtime_get_one_group_each():
    plain, site, browser, colab = items = some_items()
    modify_items(items, loadgroup=False)
    assert groups_of(plain) == []
    assert groups_of(site) == groups_of(browser) == ["book"]
    assert groups_of(colab) == ["colab"]


def test_tests_of_the_site_the_browser_or_colab_join_the_slow_lane():
    plain, site, browser, colab = items = some_items()
    modify_items(items, loadgroup=False)
    assert lanes_of(plain) == []
    assert lanes_of(site) == lanes_of(browser) == lanes_of(colab) == ["slow"]


def test_in_a_loadgroup_worker_each_grouped_test_id_names_its_group():
    """xdist's scheduler reads the group from the "@group" ending of the id."""
    plain, site, browser, colab = items = some_items()
    modify_items(items, loadgroup=True)
    assert not hasattr(plain, "_id")
    assert [str(item._id) for item in (site, browser, colab)] == [
        "tests/test_b.py::test_site@book", "tests/test_c.py::test_page[index.html]@book",
        "tests/test_d.py::test_run[01-x]@colab"]


@pytest.mark.parametrize("cores, workers", [(1, 1), (3, 3), (conftest.MAX_WORKERS + 5, conftest.MAX_WORKERS)])
def test_auto_gives_a_worker_per_usable_core_up_to_the_cap(monkeypatch, cores, workers):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    assert conftest.pytest_xdist_auto_num_workers(None) == workers
