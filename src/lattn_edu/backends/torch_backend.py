"""The torch backend: the package's own forms of the gated family, run on torch tensors (chapter 9).

:mod:`lattn_edu.gated` and :mod:`lattn_edu.delta` are written once against the array API, so
the very functions the numpy reference uses run on tensors: wherever the tensors live (CPU or
CUDA), in their dtype, and differentiable (nothing is written in place, so ``loss.backward()``
flows into q, k, v, the log decays, β and the initial state). All this module adds is the
conversion of numpy inputs to tensors and back.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._checks import is_torch_tensor
from .reference import DELTA_FORMS, FAMILIES, GATED_FORMS  # noqa: F401  (the backend's forms)


def to_backend(*arrays: Any) -> tuple[Any, ...]:
    """The arrays as tensors, then ``restore`` for the outputs. Tensors pass through (tensors
    out, same device); numpy arrays become CPU tensors sharing their memory and the outputs go
    back to numpy; None passes through."""
    if any(is_torch_tensor(x) for x in arrays):
        return (*arrays, _unchanged)
    # torch.from_numpy shares memory but refuses negative strides and warns on read-only
    # arrays (broadcast views among them); np.require copies exactly those (and other
    # non-contiguous) inputs.
    return (*(None if x is None else torch.from_numpy(np.require(x, requirements="CW")) for x in arrays),
            _to_numpy)


def _unchanged(out: torch.Tensor) -> torch.Tensor:
    """Tensors in, tensors out: the output stays on its device with its autograd graph."""
    return out


def _to_numpy(out: torch.Tensor) -> np.ndarray:
    """numpy in, numpy out (detached: a numpy array has no gradient)."""
    return out.numpy(force=True)
