"""Shared test helpers: one closeness check for every comparison in the suite."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

settings.register_profile("suite", deadline=None, max_examples=40, derandomize=True)
settings.load_profile("suite")

# float64 forms agree to 1e-10 relative, float32 to 1e-4 relative (RMS).
RTOL = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 1e-4}


def to_numpy(x):
    """numpy view of an array or a (possibly CUDA) torch tensor."""
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def relative_error(actual, expected) -> tuple[float, float]:
    """(max abs error, RMS relative error ||a - e|| / ||e||), computed in float64."""
    a = to_numpy(actual).astype(np.float64)
    e = to_numpy(expected).astype(np.float64)
    abs_err = float(np.max(np.abs(a - e))) if a.size else 0.0
    scale = float(np.linalg.norm(e))
    rel_err = float(np.linalg.norm(a - e)) / scale if scale > 0 else abs_err
    return abs_err, rel_err


def assert_close(actual, expected, rtol: float | None = None, what: str = "") -> None:
    """Assert equal shapes and RMS relative error <= rtol (default by dtype of ``actual``).

    The failure message reports both the absolute and the relative error.
    """
    a, e = to_numpy(actual), to_numpy(expected)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != expected {e.shape}"
    assert np.isfinite(a).all(), f"{what}: result has NaN or inf"
    if rtol is None:
        rtol = RTOL[np.dtype(a.dtype)] if np.dtype(a.dtype) in RTOL else 1e-10
    abs_err, rel_err = relative_error(a, e)
    assert rel_err <= rtol, f"{what}: relative error {rel_err:.3e} > {rtol:.0e} (max abs error {abs_err:.3e})"


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)
