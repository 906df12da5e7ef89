"""How much of the sgemm ceiling can a chunkwise kernel reach on this machine at all?

Run: python benchmarks/chunk_products.py   (records src/lattn_edu/data/chunk_products.json,
which chapter 9 reads)

``lattn-edu bench`` divides our kernel's rate by numpy's sgemm on 2048×2048 matrices. The
chunkwise form never multiplies matrices that large: per chunk of C tokens (the bench's
``OUR_CHUNK``, 32) it does four products with sides C and d. This script times, on the bench's shapes (causal,
float32, 8 sequences, d = d_v), interleaved round by round:

- "products only": a Numba loop over the same sequences and chunks that makes exactly
  the kernel's four BLAS calls, through the same wrappers and on one BLAS thread per
  Numba thread, and nothing else (no features, no denominators, no normalisation);
- "kernel": the numba chunkwise gated kernel on raw q, k, v, computing elu+1 and the division
  itself, called directly (it checks its
  inputs and output for NaN and inf inside its own passes);
- "la.linear_attention": the same through the public function, which adds the argument
  checks (types, shapes) and the dispatch;
- "numpy sgemm": the 2048×2048 ceiling of the bench, timed right after each shape's rounds.

Rates are credited as the bench credits them, 4·d·d_v per token, so "products only" is
the best any kernel built on these BLAS calls could be credited with.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

# As lattn-edu bench does: idle OpenBLAS and OpenMP threads sleep rather than spin (read
# when the libraries load, so before the imports below).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402

import lattn_edu as la  # noqa: E402
from lattn_edu import bench, records  # noqa: E402
from lattn_edu.backends import numba_backend  # noqa: E402
from lattn_edu.backends.numba_blas import _blas_arguments, _gemm, _lower_triangle_matmul  # noqa: E402
from lattn_edu.machine import machine_info  # noqa: E402

SHAPES = [(128, 1024), (128, 4096), (128, 16384), (64, 4096), (64, 16384)]  # (d, N)
ROUNDS = 15
ROUNDS_ONLY = replace(bench.QUICK, min_rounds=ROUNDS, max_rounds=ROUNDS)  # exactly ROUNDS rounds
OUT = records.repository_data(__file__, "chunk_products.json")  # chapter 9 reads it


@njit(cache=True, parallel=True)
def products_only(q, k, v, chunk_size, out):
    """The chunkwise kernel's four BLAS products per chunk and nothing else: q, k, v [B, N, d]."""
    n, m, d_v = k.shape[1], k.shape[2], v.shape[2]
    for b in prange(q.shape[0]):
        blas = _blas_arguments(v.dtype)
        state = np.zeros((m, d_v), v.dtype)
        weights_scratch = np.empty(chunk_size * chunk_size, v.dtype)
        for start in range(0, n, chunk_size):
            stop = min(start + chunk_size, n)
            q_c, k_c, v_c, out_c = q[b, start:stop], k[b, start:stop], v[b, start:stop], out[b, start:stop]
            weights = weights_scratch[:(stop - start) ** 2].reshape((stop - start, stop - start))
            _gemm(q_c, k_c, weights, False, True, 0, blas)
            out_c[:] = v_c
            _lower_triangle_matmul(weights, out_c, blas)
            _gemm(q_c, state, out_c, False, False, 1, blas)
            _gemm(k_c, v_c, state, True, False, 1, blas)


def calls(d: int, n: int) -> dict:
    rng = np.random.default_rng(d + n)
    q, k, v = (rng.standard_normal((bench.BATCH_HEADS, n, d), dtype=np.float32) for _ in range(3))
    k *= np.float32(0.1)  # keeps the never-normalised state of "products only" small

    def only() -> None:
        out = np.empty_like(v)  # a new output every call, as the kernel's
        with numba_backend.one_blas_thread():
            products_only(q, k, v, bench.OUR_CHUNK, out)

    return {"products only": only,
            "kernel": lambda: numba_backend.chunkwise_elu_linear_attention(q, k, v, True, bench.EPS, bench.OUR_CHUNK),
            "la.linear_attention": lambda: la.linear_attention(q, k, v, "elu+1", True, "chunkwise", "numba",
                                                               bench.EPS, bench.OUR_CHUNK)}


def measure(d: int, n: int) -> dict:
    timed = calls(d, n)
    estimates = {name: bench.time_once(call) for name, call in timed.items()}  # compiles and warms
    samples = bench.time_interleaved(timed, estimates, ROUNDS_ONLY)
    medians = {name: float(np.median(s)) for name, s in samples.items()}
    sgemm = bench.measure_sgemm(2048)
    rates = {name: bench.linear_flops(n, d, d, bench.BATCH_HEADS) / s / 1e9 for name, s in medians.items()}
    return {"d": d, "n": n, "median_s": medians, "gflops": rates, "sgemm_gflops": sgemm,
            "of_sgemm": {name: rate / sgemm for name, rate in rates.items()},
            "kernel_of_products_only": rates["kernel"] / rates["products only"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT,
                        help="where to write the record (default: this repository's src/lattn_edu/data/)")
    out = parser.parse_args(argv).out
    machine = machine_info(engines=True)
    load_start = list(np.round(os.getloadavg(), 2))
    rows = []
    for d, n in SHAPES:
        row = measure(d, n)
        rows.append(row)
        print(f"d={d:3} N={n:6}: products only {row['gflops']['products only']:6.1f} GFLOP/s "
              f"({100 * row['of_sgemm']['products only']:.0f}% of sgemm {row['sgemm_gflops']:.0f}), "
              f"kernel {row['gflops']['kernel']:6.1f} ({100 * row['of_sgemm']['kernel']:.0f}%), "
              f"la.linear_attention {row['gflops']['la.linear_attention']:6.1f} "
              f"({100 * row['of_sgemm']['la.linear_attention']:.0f}%); kernel / products only "
              f"{row['kernel_of_products_only']:.2f}", flush=True)
    record = {"description": __doc__, "machine": machine, "rounds": ROUNDS, "chunk_size": bench.OUR_CHUNK,
              "batch_heads": bench.BATCH_HEADS, "load_average_start": load_start,
              "load_average_end": list(np.round(os.getloadavg(), 2)), "results": rows}
    print(f"written: {records.save_record(record, out)}")


if __name__ == "__main__":
    main()
