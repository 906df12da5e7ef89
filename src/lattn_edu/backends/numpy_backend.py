"""The numpy backend: the reference forms of :mod:`lattn_edu.linear`, unchanged."""

from __future__ import annotations

from typing import Any, Callable

from .._checks import is_torch_tensor
from ..linear import (chunkwise_linear_attention, parallel_linear_attention,
                      quadratic_linear_attention, recurrent_linear_attention)

FORMS = {
    "quadratic": quadratic_linear_attention,
    "parallel": parallel_linear_attention,
    "recurrent": recurrent_linear_attention,
    "chunkwise": chunkwise_linear_attention,
}


def to_backend(q: Any, k: Any, v: Any) -> tuple[Any, Any, Any, Callable[[Any], Any]]:
    """numpy arrays pass through; torch tensors are refused with a pointer to backend='torch'."""
    if is_torch_tensor(q):
        raise TypeError("backend='numpy' takes numpy arrays; got torch.Tensor. "
                        "Use backend='torch' for tensors.")
    return q, k, v, lambda out: out
