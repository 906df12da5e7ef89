"""The numpy backend: the reference forms of :mod:`lattn_edu.gated` and :mod:`lattn_edu.delta`,
unchanged (linear attention runs as the gated recurrence on [V | 1]; see :mod:`lattn_edu.linear`)."""

from __future__ import annotations

from typing import Any

from .._checks import is_torch_tensor
from .reference import DELTA_FORMS, FAMILIES, GATED_FORMS  # noqa: F401  (the backend's forms)


def to_backend(*arrays: Any) -> tuple[Any, ...]:
    """numpy arrays (and None) pass through, then the identity as ``restore``; torch tensors
    are refused with a pointer to backend='torch'."""
    if any(is_torch_tensor(x) for x in arrays):
        raise TypeError("backend='numpy' takes numpy arrays; got torch.Tensor. "
                        "Use backend='torch' for tensors.")
    return (*arrays, _unchanged)


def _unchanged(out: Any) -> Any:
    return out
