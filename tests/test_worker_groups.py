"""conftest.py spreads the suite over test workers (pytest-xdist) and keeps together the tests
that share something expensive: the book build (and the browser that reads it), and the
Colab-like virtual environment."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

import conftest


def fake_item(*fixturenames):
    marks = []
    return SimpleNamespace(fixturenames=list(fixturenames), add_marker=marks.append, marks=marks)


def groups_of(item) -> list[str]:
    return [mark.args[0] for mark in item.marks]


def test_tests_that_share_the_book_or_the_colab_runtime_get_one_group_each():
    # fixturenames is a test's whole closure: built_site -> book_build shows up as both
    plain, site, browser, colab = (fake_item("rng", "tmp_path"), fake_item("built_site", "book_build"),
                                   fake_item("page", "chromium", "site_url", "built_site", "book_build"),
                                   fake_item("colab", "tmp_path_factory", "path"))
    conftest.pytest_collection_modifyitems(None, [plain, site, browser, colab])
    assert groups_of(plain) == []
    assert groups_of(site) == groups_of(browser) == ["book"]
    assert groups_of(colab) == ["colab"]


@pytest.mark.parametrize("cores, workers", [(1, 1), (3, 3), (conftest.MAX_WORKERS + 5, conftest.MAX_WORKERS)])
def test_auto_gives_a_worker_per_usable_core_up_to_the_cap(monkeypatch, cores, workers):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    assert conftest.pytest_xdist_auto_num_workers(None) == workers
