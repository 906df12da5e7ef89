"""Worst disagreement of every backend and form with the numpy reference.

Run: python benchmarks/agreement.py   (writes benchmarks/results/agreement.json)

For each backend, form, causal flag and dtype, over N in {1, 2, 63, 100, 257},
leading axes (2, 3), d=5, d_v=7, chunk sizes 7 and 64, it reports the largest RMS
relative error against the float64 quadratic form on the same (float32-rounded)
inputs: the figure the test suite bounds by 1e-10 (float64) and 1e-4 (float32).
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

import numpy as np

import lattn_edu as la
from lattn_edu import records
from lattn_edu.compare import relative_error
from lattn_edu.linear import FORMS


def worst_errors(seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for backend in la.available_backends():
        for dtype in (np.float32, np.float64):
            for form in FORMS:
                for causal in (False, True):
                    worst = 0.0
                    for n in (1, 2, 63, 100, 257):
                        q, k = rng.standard_normal((2, 2, 3, n, 5)).astype(dtype)
                        v = rng.standard_normal((2, 3, n, 7)).astype(dtype)
                        exact = la.linear_attention(*(x.astype(np.float64) for x in (q, k, v)),
                                                    causal=causal, form="quadratic")
                        for chunk in (7, 64):
                            out = la.linear_attention(q, k, v, causal=causal, form=form,
                                                      backend=backend, chunk_size=chunk)
                            worst = max(worst, relative_error(out, exact))
                    rows.append(dict(backend=backend, dtype=np.dtype(dtype).name, form=form,
                                     causal=causal, worst_relative_error=worst))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "agreement.json",
                        help="where to write the record (default: benchmarks/results/agreement.json)")
    out = parser.parse_args(argv).out
    rows = worst_errors()
    print(f"{'backend':8} {'dtype':8} {'form':10} {'causal':7} worst rel. error")
    for r in rows:
        print(f"{r['backend']:8} {r['dtype']:8} {r['form']:10} {str(r['causal']):7} "
              f"{r['worst_relative_error']:.2e}")
    print("\nworst per backend and dtype:")
    for backend in la.available_backends():
        for dtype in ("float32", "float64"):
            worst = max(r["worst_relative_error"] for r in rows
                        if r["backend"] == backend and r["dtype"] == dtype)
            print(f"  {backend:6} {dtype}: {worst:.2e}")
    records.save_record({"machine": platform.processor() or platform.machine(),
                         "python": platform.python_version(), "numpy": np.__version__, "rows": rows}, out)
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
