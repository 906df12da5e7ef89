"""Seeded q, k, v for the linear-attention tests of every backend, and the definition of linear
attention written as loops, sharing no code with the package's forms.

(The gated family's inputs are in gated_inputs.py.)
"""

from __future__ import annotations

import numpy as np

import lattn_edu as la


def make_qkv(rng, lead=(2, 3), n=63, d=5, d_v=3, dtype=np.float64, n_q=None):
    """Seeded q [*lead, n_q, d], k [*lead, n, d], v [*lead, n, d_v] in ``dtype`` (n_q defaults to n)."""
    q = rng.standard_normal(lead + (n if n_q is None else n_q, d)).astype(dtype)
    k = rng.standard_normal(lead + (n, d)).astype(dtype)
    v = rng.standard_normal(lead + (n, d_v)).astype(dtype)
    return q, k, v


def naive_linear_attention(q, k, v, causal, eps=1e-6):
    """Three nested loops straight from the definition, with elu+1 features, on one sequence
    (no leading axes): o_i = Σ_j φ(q_i)·φ(k_j) v_j / (Σ_j φ(q_i)·φ(k_j) + eps)."""
    phi_q, phi_k = la.elu_plus_one(q), la.elu_plus_one(k)
    out = np.zeros((len(q), v.shape[-1]))
    for i in range(len(q)):
        seen = range(i + 1) if causal else range(len(k))
        weights = [phi_q[i] @ phi_k[j] for j in seen]
        out[i] = sum(w * v[j] for w, j in zip(weights, seen)) / (sum(weights) + eps)
    return out
