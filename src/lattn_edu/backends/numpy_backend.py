"""The numpy backend: the reference forms of :mod:`lattn_edu.gated` and :mod:`lattn_edu.delta`,
unchanged (linear attention runs as the gated recurrence on [V | 1]; see :mod:`lattn_edu.linear`)."""

from __future__ import annotations

from typing import Any

from .._checks import is_torch_tensor
from ..delta import chunkwise_delta_rule, recurrent_delta_rule
from ..gated import (chunkwise_gated_linear_attention, parallel_gated_linear_attention,
                     recurrent_gated_linear_attention)

GATED_FORMS = {
    "recurrent": recurrent_gated_linear_attention,
    "parallel": parallel_gated_linear_attention,
    "chunkwise": chunkwise_gated_linear_attention,
}

DELTA_FORMS = {
    "recurrent": recurrent_delta_rule,
    "chunkwise": chunkwise_delta_rule,
}


def to_backend(*arrays: Any) -> tuple[Any, ...]:
    """numpy arrays (and None) pass through, then the identity as ``restore``; torch tensors
    are refused with a pointer to backend='torch'."""
    if any(is_torch_tensor(x) for x in arrays):
        raise TypeError("backend='numpy' takes numpy arrays; got torch.Tensor. "
                        "Use backend='torch' for tensors.")
    return (*arrays, _unchanged)


def _unchanged(out: Any) -> Any:
    return out
