"""How far one result is from another: the one relative error the package, its tests, its
benchmarks and the chapters use."""

from __future__ import annotations

from typing import Any

import numpy as np


def relative_error(actual: Any, expected: Any) -> float:
    """‖actual − expected‖ / ‖expected‖ over all entries (Frobenius norms), in float64.

    actual, expected: arrays or torch tensors (any device) of one shape; ``expected`` must
    not be all zeros, since a relative error to zero is undefined.
    """
    actual, expected = _as_float64(actual, "actual"), _as_float64(expected, "expected")
    if actual.shape != expected.shape:
        raise ValueError(f"actual and expected must have one shape; got {actual.shape} and "
                         f"{expected.shape}")
    scale = float(np.linalg.norm(expected))
    if scale == 0:
        raise ValueError("expected is all zeros: a relative error to it is undefined")
    return float(np.linalg.norm(actual - expected)) / scale


def _as_float64(x: Any, name: str) -> np.ndarray:
    """numpy float64 copy of an array or a (possibly CUDA, possibly requiring grad) tensor."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().double().numpy()
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of numbers; got {type(x).__name__}") from None
