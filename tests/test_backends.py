"""Backend selection: optional engines are imported only on request, and a missing one says how to install it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu import backends


@pytest.mark.parametrize("name, command", [("numba", "pip install numba"), ("torch", "lattn_edu\\[torch\\]")])
def test_missing_engine_names_the_install_command(monkeypatch, name, command):
    real_find_spec = backends.importlib.util.find_spec
    monkeypatch.setattr(backends.importlib.util, "find_spec",
                        lambda module: None if module == name else real_find_spec(module))
    assert name not in la.available_backends()
    x = np.zeros((3, 2))
    with pytest.raises(ImportError, match=command):
        la.linear_attention(x, x, x, backend=name)


def test_importing_the_package_loads_neither_numba_nor_torch():
    code = "import sys, lattn_edu; print('numba' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_every_backend_module_has_the_family_forms():
    for name in la.available_backends():
        module = backends.get_backend(name)
        assert set(module.GATED_FORMS) == {"recurrent", "parallel", "chunkwise"}
        assert set(module.DELTA_FORMS) == {"recurrent", "chunkwise"}
        assert callable(module.to_backend)
