"""Backends: the family's forms on different engines (chapter 9).

Every backend module exposes

- ``GATED_FORMS`` ('recurrent', 'parallel', 'chunkwise') and ``DELTA_FORMS`` ('recurrent',
  'chunkwise'): the forms of :func:`lattn_edu.gated_linear_attention` and
  :func:`lattn_edu.delta_rule`, taking checked ``(q, k, v[, beta], log_decay, scale,
  initial_state, chunk_size)`` and returning ``(o, final_state)`` (see :mod:`lattn_edu.gated`);
- ``FAMILIES``: every family it runs, by name ('gated', 'delta', and Part III's models),
  each a table of its forms, which :func:`lattn_edu.recurrence.run_recurrence` looks up. The
  reference backends (numpy, torch: :mod:`.reference`) have every form of every family; a
  fast backend lists the ones it has kernels for, and asking it for another is refused;
- ``to_backend(*arrays) -> (*arrays, restore)``: the inputs in the backend's array type
  (None passes through), and the function that turns an output back into the caller's type.

That is all: :func:`lattn_edu.linear_attention` runs on the gated forms (causal: the
recurrence without decay on [V | 1], then one division; not causal: two products). A backend
may also name, in ``KERNEL_FEATURE_MAPS``, elementwise feature maps its chunkwise gated form
computes itself from raw q and k, chunk by chunk, together with the division (keywords
``feature_map`` and ``normaliser_eps``; the numba kernel does, so the input is read once); that
form then checks q, k, v and its output for NaN and inf itself, as ``CHECKS_FINITE`` says.

Optional engines are imported only when asked for, so ``import lattn_edu`` never
needs numba or torch, and a missing one names the command that installs it.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from .._checks import check_choice

BACKENDS = ("numpy", "numba", "torch")
_MODULES = {"numpy": "numpy_backend", "numba": "numba_backend", "torch": "torch_backend"}
_INSTALL = {"numba": "pip install numba", "torch": "pip install 'lattn_edu[torch]' (or torch==2.13.0)"}


def available_backends() -> tuple[str, ...]:
    """The backends whose engine is importable here, e.g. ('numpy', 'numba', 'torch')."""
    return tuple(name for name in BACKENDS
                 if name == "numpy" or importlib.util.find_spec(name) is not None)


def get_backend(name: str) -> ModuleType:
    """The backend module for ``name``; ``ImportError`` naming the install command if missing."""
    check_choice(name, "backend", BACKENDS)
    # Only the engine asked for: looking for a missing one searches the whole path, every call.
    if name != "numpy" and importlib.util.find_spec(name) is None:
        raise ImportError(f"backend={name!r} needs the {name} package, which is not installed; "
                          f"install it with: {_INSTALL[name]}")
    return importlib.import_module(f"{__name__}.{_MODULES[name]}")
