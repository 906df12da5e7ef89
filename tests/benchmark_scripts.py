"""The benchmark scripts (benchmarks/*.py) as modules: they are scripts, not part of the package,
so a test imports one by path, once per test module."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load(name: str) -> ModuleType:
    """benchmarks/<name>.py, imported under the module name lattn_edu_<name>."""
    spec = importlib.util.spec_from_file_location(f"lattn_edu_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
