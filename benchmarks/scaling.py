"""Time and memory of softmax vs linear attention as N grows: the recorded data of chapter 3.

Run: python benchmarks/scaling.py   (writes src/lattn_edu/data/scaling.json, about 2-3 minutes)

For d in (32, 64, 128), causal and not, N = 64, 128, ..., 16384, it times
``la.softmax_attention`` and ``la.linear_attention`` (numpy backend, elu+1 features,
float32, batch·heads = 4, d_v = d; the parallel form when non-causal, the chunkwise form
with chunks of 64 when causal, as production kernels do) with :func:`lattn_edu.timing.measure`
(the median of repeated calls, after one untimed call), with one BLAS thread unless
OPENBLAS_NUM_THREADS says otherwise. A method stops growing N

- before its largest intermediate passes MAX_BYTES: softmax's attention matrices
  (4·N² floats);
- after its median call takes longer than SLOW_CALL_S, to keep the whole run short.

It also records the entry counts of ``la.attention_cost`` (the N×N matrix against the m×d_v
state, per head) and where the numbers were measured. The ``scaling`` explorer
(:mod:`lattn_edu.explorers.scaling`) draws this file; it never times anything itself.
"""

from __future__ import annotations

import os

# One BLAS thread, set before numpy loads: on a small shared machine a second busy process
# stalls multi-threaded BLAS far more than it slows one thread, so the curves stay readable.
BLAS_THREADS = os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", BLAS_THREADS)
os.environ.setdefault("MKL_NUM_THREADS", BLAS_THREADS)

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import lattn_edu as la  # noqa: E402
from lattn_edu import records  # noqa: E402
from lattn_edu.machine import machine_summary  # noqa: E402
from lattn_edu.timing import measure  # noqa: E402

DIMS = (32, 64, 128)
SIZES = tuple(64 * 2**i for i in range(9))  # 64 ... 16384
BATCH_HEADS = 4
FLOAT_BYTES = 4  # float32
MAX_BYTES = 2 * 10**9  # largest intermediate a method may build (~2 GB)
CHUNK = 64  # chunk length of the causal (chunkwise) linear attention
SLOW_CALL_S = 1.0  # a method stops growing N once its median call takes longer than this
OUT = records.repository_data(__file__, "scaling.json")  # where the scaling explorer reads it


def largest_intermediate_bytes(method: str, n: int, d: int) -> int:
    """Bytes of the biggest array a call builds: N×N weights, or features and values."""
    if method == "softmax":
        return BATCH_HEADS * la.attention_cost(n, d).softmax_matrix_entries * FLOAT_BYTES
    return BATCH_HEADS * n * d * FLOAT_BYTES  # chunkwise keeps only C×C blocks and one state


def attention_call(method: str, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool):
    if method == "softmax":
        return lambda: la.softmax_attention(q, k, v, causal=causal, max_matrix_bytes=MAX_BYTES)
    form = "chunkwise" if causal else "parallel"  # the causal parallel form keeps all N states
    return lambda: la.linear_attention(q, k, v, causal=causal, form=form, chunk_size=CHUNK,
                                       backend="numpy")


def time_method(method: str, d: int, causal: bool, seed: int = 0) -> list[dict]:
    """Median seconds per call for each N until the memory or time limit; one row per N."""
    rows = []
    for n in SIZES:
        if largest_intermediate_bytes(method, n, d) > MAX_BYTES:
            break
        q, k, v = np.random.default_rng(seed).standard_normal((3, BATCH_HEADS, n, d), dtype=np.float32)
        call = attention_call(method, q, k, v, causal)
        tick = time.perf_counter()
        call()  # untimed first call: allocations, caches
        first = time.perf_counter() - tick
        repeats = 9 if first < 0.02 else 5 if first < 0.3 else 3
        timing = measure(call, repeats=repeats, warmup=0, min_seconds=0.1 if first < 0.01 else 0.0)
        rows.append({"n": n, "median_s": timing.median, "p95_s": timing.p95, "runs": timing.runs})
        print(f"  {method:7} d={d:3} causal={causal!s:5} N={n:5}: {timing.median * 1e3:9.2f} ms "
              f"({timing.runs} runs)", flush=True)
        if timing.median > SLOW_CALL_S:
            break
    return rows


def memory_rows(d: int) -> list[dict]:
    """Entries per head (la.attention_cost): the N×N matrix, the m×d_v state, the KV cache."""
    rows = []
    for n in SIZES:
        cost = la.attention_cost(n, d)
        rows.append({"n": n, "matrix_entries": cost.softmax_matrix_entries,
                     "state_entries": cost.linear_state_entries, "kv_cache_entries": cost.kv_cache_entries})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT,
                        help="where to write the record (default: this repository's src/lattn_edu/data/)")
    out = parser.parse_args(argv).out
    started = time.perf_counter()
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    runs = []
    for d in DIMS:
        for causal in (False, True):
            runs.append({"d": d, "causal": causal,
                         "softmax": time_method("softmax", d, causal),
                         "linear": time_method("linear", d, causal)})
    record = {
        "description": ("seconds per call (median) of la.softmax_attention and la.linear_attention "
                        "(numpy backend, elu+1; parallel form non-causal, chunkwise form with chunks of "
                        f"{CHUNK} causal), float32, batch*heads = "
                        f"{BATCH_HEADS}, d_v = d; memory in entries per head from la.attention_cost"),
        "machine": f"{machine_summary()}, {BLAS_THREADS} BLAS thread(s)",
        "blas_threads": int(BLAS_THREADS),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "recorded": time.strftime("%Y-%m-%d"),
        "batch_heads": BATCH_HEADS,
        "dtype": "float32",
        "max_intermediate_bytes": MAX_BYTES,
        "slow_call_s": SLOW_CALL_S,
        "runs": runs,
        "memory": {str(d): memory_rows(d) for d in DIMS},
        "benchmark_seconds": round(time.perf_counter() - started, 1),
    }
    path = records.save_record(record, out)
    print(f"\n{record['machine']}; took {record['benchmark_seconds']} s\nwritten: {path}")


if __name__ == "__main__":
    main()
