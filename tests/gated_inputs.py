"""Seeded inputs for the gated-family tests of every backend (numpy references, numba, torch)."""

from __future__ import annotations

import numpy as np

DECAYS = ("none", "scalar", "vector")


def gated_inputs(rng, lead=(2, 3), n=37, d_k=5, d_v=3, decay="scalar", dtype=np.float64,
                 strength=1.0, initial_state=True):
    """q, k [*lead, n, d_k], v [*lead, n, d_v]; log decay None, [*lead, n] or [*lead, n, d_k]
    drawn from [-strength, 0]; S_0 [*lead, d_k, d_v] (or None); all in ``dtype``."""
    q, k = rng.standard_normal((2,) + lead + (n, d_k))
    v = rng.standard_normal(lead + (n, d_v))
    shapes = {"none": None, "scalar": lead + (n,), "vector": lead + (n, d_k)}
    g = None if shapes[decay] is None else -strength * rng.uniform(0, 1, shapes[decay])
    s0 = rng.standard_normal(lead + (d_k, d_v)) if initial_state else None
    return tuple(None if x is None else x.astype(dtype) for x in (q, k, v, g, s0))


def delta_inputs(rng, lead=(2, 3), n=37, d_k=5, d_v=3, gated=True, dtype=np.float64, initial_state=True):
    """q, unit-norm k, v, β in [0, 2] [*lead, n], log decay [*lead, n] in [-1, 0] (or None), S_0."""
    q, k, v, g, s0 = gated_inputs(rng, lead, n, d_k, d_v, "scalar" if gated else "none", np.float64,
                                  initial_state=initial_state)
    k = k / np.linalg.norm(k, axis=-1, keepdims=True)
    beta = rng.uniform(0, 2, lead + (n,))
    return tuple(None if x is None else x.astype(dtype) for x in (q, k, v, beta, g, s0))
