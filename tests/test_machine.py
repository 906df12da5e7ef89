"""lattn_edu.machine: the one description of the machine, and the summary line derived from it."""

from __future__ import annotations

import json
import sys

import numpy as np

from lattn_edu import machine


def test_the_description_is_json_ready_and_names_the_libraries():
    info = machine.machine_info()
    assert json.loads(json.dumps(info)) == info
    assert info["cores"] == machine.usable_cores() >= 1
    assert info["versions"]["numpy"] == np.__version__
    assert set(info["versions"]) == {*machine.LIBRARIES, "lattn_edu"}
    assert set(info["cpu_simd"]) <= set(machine.SIMD_FLAGS)
    assert info["caches"] == {str(level): cache for level, cache in machine.cpu_caches().items()}
    assert "numba_threads" not in info  # engines only when asked for


def test_the_plain_description_imports_no_engine(monkeypatch):
    for name in ("torch", "numba"):
        monkeypatch.setitem(sys.modules, name, None)  # importing either would now fail
    assert machine.machine_info()["versions"]["lattn_edu"]


def test_engines_add_threads_and_blas():
    info = machine.machine_info(engines=True)
    assert info["numba_threads"] >= 1
    assert {"torch_threads", "numba_threading_layer", "blas"} <= set(info)


def test_the_summary_is_derived_from_the_description():
    info = {**machine.machine_info(), "cores": 7, "machine": "riscv64", "python": "3.99.1"}
    info["versions"] = {**info["versions"], "numpy": "9.8.7"}
    assert machine.machine_summary(info) == "7 CPU cores, riscv64, Python 3.99.1, numpy 9.8.7"
    assert machine.machine_summary().startswith(f"{machine.usable_cores()} CPU cores, ")


def test_the_thread_settings_in_the_environment_are_recorded(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    environment = machine.machine_info()["environment"]
    assert environment["OMP_NUM_THREADS"] == "3" and "MKL_NUM_THREADS" not in environment


def test_cache_sizes_are_read_per_level_from_sysfs(tmp_path):
    """Data and unified caches by level, instruction caches left out; a missing folder gives {}."""
    for i, (level, kind, size, shared) in enumerate([(1, "Data", "48K", "0"), (1, "Instruction", "32K", "0"),
                                                     (2, "Unified", "1280K", "0"),
                                                     (3, "Unified", "30720K", "0-3")]):
        folder = tmp_path / f"index{i}"
        folder.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
            (folder / name).write_text(f"{value}\n")
    assert machine.cpu_caches(tmp_path) == {1: {"bytes": 48 * 1024, "shared_with": "0"},
                                            2: {"bytes": 1280 * 1024, "shared_with": "0"},
                                            3: {"bytes": 30720 * 1024, "shared_with": "0-3"}}
    assert machine.cpu_caches(tmp_path / "absent") == {}
