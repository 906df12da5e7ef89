"""flash-linear-attention's naive references, loaded by path: the one loader every test uses.

``fla-core`` ships pure-torch reference files (``fla/ops/*/naive.py``) next to its Triton kernels;
importing the ``fla`` package itself wants Triton, so each file is loaded by its path as a module
of its own. A test that calls :func:`load` is skipped where fla-core, torch or einops is missing
(``pip install --no-deps fla-core einops``). They compute in float32 whatever they are given.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import types
from pathlib import Path

import pytest

FLA_SPEC = importlib.util.find_spec("fla")  # finds the package without running its __init__


def load(relative_path: str, replace: tuple[str, str] | None = None) -> types.ModuleType:
    """``fla/ops/<relative_path>`` as a module. A sibling it imports by fla's package path (Titans'
    ``log_impl``) is loaded by path too and lent to it in ``sys.modules`` while it runs. ``replace``
    edits the source first (every occurrence; it must occur), to show that an expression is the
    difference between fla and us."""
    pytest.importorskip("torch")
    pytest.importorskip("einops")
    if FLA_SPEC is None:
        pytest.skip("fla-core is not installed")
    path = Path(FLA_SPEC.submodule_search_locations[0]) / "ops" / relative_path
    source = path.read_text()
    if replace is not None:
        assert replace[0] in source, f"{relative_path} no longer contains {replace[0]!r}"
        source = source.replace(*replace)
    lent = {}
    for name in re.findall(r"^from (fla\.ops\.[\w.]+) import", source, flags=re.M):
        sibling = path.parent / f"{name.rsplit('.', 1)[1]}.py"
        spec = importlib.util.spec_from_file_location(name, sibling)
        lent[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(lent[name])
    module = types.ModuleType(f"fla_naive_{path.parent.name}")
    sys.modules.update(lent)
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)
    finally:
        for name in lent:
            sys.modules.pop(name, None)
    return module
