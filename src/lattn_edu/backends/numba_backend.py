"""The numba backend: the family's forms as JIT kernels (chapter 9, "Fast kernels").

The gated forms live in :mod:`.numba_gated`, the delta rule's in :mod:`.numba_delta`, the BLAS
wrappers, the float32 exp and the elementwise feature maps every kernel shares in
:mod:`.numba_blas`. Linear attention has no kernel of its own: :func:`lattn_edu.linear_attention`
runs it as the gated recurrence without decay on [V | 1]. The chunkwise gated kernel is the fast
one, and for linear attention it also computes elu+1 (or relu) features and the division itself,
a chunk at a time, so the input is read once (see :func:`.numba_gated.chunkwise_gated_linear_attention`).

The softmax kernel the benchmarks compare against is not a form of the family and lives in
:mod:`.numba_softmax`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._checks import is_torch_tensor
from ..delta_product import on_substeps
from .numba_blas import FEATURE_CODES, one_blas_thread  # noqa: F401  (one_blas_thread: for benchmarks)
from .numba_delta import DELTA_FORMS, chunkwise_delta_product  # noqa: F401  (DELTA_FORMS: re-exported)
from .numba_gated import GATED_FORMS, chunkwise_gated_linear_attention  # noqa: F401  (GATED_FORMS: re-exported)


def _on_substeps(delta_form: Any) -> Any:
    """``delta_form`` as a DeltaProduct form; o copied out of the N·n_h-step output it views."""
    def form(*arguments: Any) -> tuple[np.ndarray, np.ndarray]:
        out, state = on_substeps(delta_form, *arguments)
        return np.ascontiguousarray(out), state
    return form


# The families with kernels here, as :func:`lattn_edu.recurrence.run_recurrence` looks them up;
# the other models run on the reference backends ('numpy', 'torch'). DeltaProduct runs the
# delta-rule kernels on its N·n_h interleaved steps (see :func:`lattn_edu.delta_product.interleave`):
# the scan reads after every step and keeps every n_h-th output (:func:`lattn_edu.delta_product.on_substeps`),
# the chunkwise kernel reads only after each token's last step.
FAMILIES = {
    "gated": GATED_FORMS,
    "delta": DELTA_FORMS,
    "delta_product": {"recurrent": _on_substeps(DELTA_FORMS["recurrent"]), "chunkwise": chunkwise_delta_product},
}

# The forms that find NaN and inf in q, k, v and in their output themselves, in passes over
# each chunk (see :func:`lattn_edu.recurrence.checks_finite`).
CHECKS_FINITE = {"gated": ("chunkwise",)}

# The feature maps the chunkwise gated form applies itself, chunk by chunk, from raw q and k.
KERNEL_FEATURE_MAPS = tuple(FEATURE_CODES)


def chunkwise_elu_linear_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = True,
                                   eps: float = 1e-6, chunk_size: int = 64) -> np.ndarray:
    """What ``la.linear_attention(q, k, v, 'elu+1', causal=True, form='chunkwise', backend='numba')``
    runs, without its argument checks (the benchmarks time the kernel alone): raw q, k [..., N, d],
    v [..., N, d_v] -> [..., N, d_v]. Causal only."""
    if causal is not True:
        raise ValueError(f"causal must be True (the kernel is the causal recurrence); got {causal!r}")
    out, _ = chunkwise_gated_linear_attention(q, k, v, None, 1.0, None, chunk_size, feature_map="elu+1",
                                              normaliser_eps=eps)
    return out


def to_backend(*arrays: Any) -> tuple[Any, ...]:
    """numpy arrays (and None) pass through, then the identity as ``restore``; torch tensors
    are refused with a pointer to backend='torch'."""
    if any(is_torch_tensor(x) for x in arrays):
        raise TypeError("backend='numba' takes numpy arrays; got torch.Tensor. "
                        "Use backend='torch' for tensors.")
    return (*arrays, lambda out: out)
