"""Worst disagreement of every Part III model, form and backend with its float64 recurrent form.

Run: python benchmarks/transitions_agreement.py   (writes benchmarks/results/transitions_agreement.json)

For Kimi Delta Attention (delta_rule with a per-channel decay), delta_product (n_h = 2),
generalized_delta_rule, log_linear_attention, least_squares_attention, ttt_linear and
titans_linear: over N in {45, 63, 100} (ragged chunks of 16), leading axes (2, 3), d_k = 6,
d_v = 5 (d = 6 for TTT and Titans, whose inner model is square), every form on every backend
that has the model, in float64 and float32, against the float64 numpy recurrent form on the
same (float32-rounded) inputs: the figure the tests bound by 1e-10 (float64) and 1e-4 (float32).
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path
from typing import Callable

import numpy as np

import lattn_edu as la
from lattn_edu import records
from lattn_edu.backends import get_backend
from lattn_edu.compare import relative_error

LEAD, D_K, D_V, CHUNK = (2, 3), 6, 5, 16
FAMILY = {"kda": "delta", "delta_product": "delta_product", "generalized_delta_rule": "generalized_delta",
          "log_linear_attention": "log_linear", "least_squares_attention": "least_squares",
          "ttt_linear": "ttt_linear", "titans_linear": "titans_linear"}


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def inputs(model: str, n: int, rng: np.random.Generator) -> tuple[list[np.ndarray], Callable]:
    """Seeded float64 arrays for ``model`` at length n, and the call that runs it: call(arrays, form, backend)."""
    d_v = D_K if model in ("ttt_linear", "titans_linear") else D_V
    q, k = rng.standard_normal((2, *LEAD, n, D_K))
    v = rng.standard_normal((*LEAD, n, d_v))
    g_scalar, g_vector = np.log(rng.uniform(0.5, 1, (*LEAD, n))), np.log(rng.uniform(0.5, 1, (*LEAD, n, D_K)))
    chunk = {"chunk_size": CHUNK}
    if model == "kda":
        return [q, unit(k), v, rng.uniform(0, 2, (*LEAD, n)), g_vector], \
            lambda x, form, backend: la.delta_rule(*x, form=form, backend=backend, **chunk)
    if model == "delta_product":
        k2, v2 = unit(rng.standard_normal((*LEAD, n, 2, D_K))), rng.standard_normal((*LEAD, n, 2, D_V))
        return [q, k2, v2, rng.uniform(0, 2, (*LEAD, n, 2)), g_scalar], \
            lambda x, form, backend: la.delta_product(*x, form=form, backend=backend, **chunk)
    if model == "generalized_delta_rule":  # RWKV-7's a = κ̂ ⊙ a_rwkv, b = −κ̂ (our names)
        kappa = unit(rng.standard_normal((*LEAD, n, D_K)))
        return [q, k, v, kappa * rng.uniform(0, 1, (*LEAD, n, D_K)), -kappa, g_vector], \
            lambda x, form, backend: la.generalized_delta_rule(*x, form=form, backend=backend, **chunk)
    if model == "log_linear_attention":
        levels = (n - 1).bit_length() + 1
        return [q, k, v, g_scalar, rng.uniform(0, 1, (*LEAD, n, levels))], \
            lambda x, form, backend: la.log_linear_attention(*x, form=form, backend=backend, **chunk)
    if model == "least_squares_attention":
        return [q, unit(k), v, rng.uniform(0, 1, (*LEAD, n)), g_scalar], \
            lambda x, form, backend: la.least_squares_attention(*x, ridge=0.5, form=form, backend=backend, **chunk)
    ln = [1 + 0.1 * rng.standard_normal((LEAD[1], D_K)), 0.1 * rng.standard_normal((LEAD[1], D_K))]
    if model == "ttt_linear":
        return [q, k, v, rng.uniform(0, 0.5, (*LEAD, n)), *ln], \
            lambda x, form, backend: la.ttt_linear(*x, form=form, backend=backend, mini_batch_size=CHUNK)
    gates = [rng.uniform(0, 0.5, (*LEAD, n)), rng.uniform(0, 0.3, (*LEAD, n)), rng.uniform(0, 1, (*LEAD, n))]
    return [q, k, v, *gates, *ln], \
        lambda x, form, backend: la.titans_linear(*x, form=form, backend=backend, mini_batch_size=CHUNK)


def on_backend(arrays: list[np.ndarray], backend: str) -> list:
    if backend != "torch":
        return arrays
    import torch
    return [torch.from_numpy(x) for x in arrays]


def worst_errors(seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    worst: dict[tuple, float] = {}
    for model, family in FAMILY.items():
        for n in (45, 63, 100):
            arrays, call = inputs(model, n, rng)
            for dtype in (np.float64, np.float32):
                rounded = [x.astype(dtype).astype(np.float64) for x in arrays]
                exact = call(rounded, "recurrent", "numpy")
                for backend in la.available_backends():
                    for form in get_backend(backend).FAMILIES.get(family, {}):
                        out = call(on_backend([x.astype(dtype) for x in arrays], backend), form, backend)
                        if backend == "torch":
                            out = out.numpy(force=True)
                        key = (model, backend, form, np.dtype(dtype).name)
                        worst[key] = max(worst.get(key, 0.0), relative_error(out, exact))
    return [dict(model=m, backend=b, form=f, dtype=d, worst_relative_error=e) for (m, b, f, d), e in worst.items()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).parent / "results" / "transitions_agreement.json",
                        help="where to write the record (default: benchmarks/results/transitions_agreement.json)")
    out = parser.parse_args(argv).out
    rows = worst_errors()
    print(f"{'model':24} {'backend':8} {'form':10} {'dtype':8} worst rel. error")
    for r in rows:
        print(f"{r['model']:24} {r['backend']:8} {r['form']:10} {r['dtype']:8} {r['worst_relative_error']:.1e}")
    records.save_record({"machine": platform.processor() or platform.machine(), "python": platform.python_version(),
                         "numpy": np.__version__, "rows": rows}, out)
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
