"""BLAS thread control, in one place for the numba kernels and the explorers."""

from __future__ import annotations

import contextlib
from typing import Any

_BLAS_CONTROLLER: list[Any] = []


def one_blas_thread() -> Any:
    """A context in which BLAS runs single-threaded (threadpoolctl), or a no-op without it.

    The chunkwise kernels call BLAS from every numba thread; a multi-threaded BLAS would
    start threads of its own on the same cores (oversubscription), and OpenBLAS inside an
    OpenMP region warns that it may hang. Small products (an explorer's) gain nothing from
    threads, and OpenBLAS's idle threads spin for a while after each threaded call, taking
    a core from whatever runs next.
    """
    try:
        import scipy.linalg.cython_blas  # noqa: F401  (the BLAS numba calls: load it before looking)
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return contextlib.nullcontext()
    if not _BLAS_CONTROLLER:
        _BLAS_CONTROLLER.append(ThreadpoolController())
    return _BLAS_CONTROLLER[0].limit(limits=1, user_api="blas")
