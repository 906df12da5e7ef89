"""Mean |o| of FAVOR+ linear attention at growing input norms, with and without the eps guard.

q, k ~ N(0, σ²), d = m = 64, N = 256. With eps added to the unscaled denominator the output
collapsed towards 0 (1e-101 at σ = 3); the guard now lives in the rescaled units. At large σ
the scale-free denominators are themselves tiny, so eps still shrinks the output somewhat:
that is the estimator, not the guard. Run: python benchmarks/favor_guard.py
"""

import numpy as np

import lattn_edu as la

d, n = 64, 256
favor = la.FavorPlus(d, d, seed=0)
for sigma in (1, 3, 4):
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, n, d)) * sigma
    v = rng.standard_normal((n, d))
    cells = []
    for causal in (False, True):
        for eps in (1e-6, 0.0):
            out = la.linear_attention(q, k, v, feature_map=favor, causal=causal, eps=eps)
            cells.append(f"{'causal' if causal else 'full'} eps={eps:g}: {np.abs(out).mean():.3g}")
    print(f"sigma={sigma}: " + " | ".join(cells))
