"""The GPU path: the torch backend's chunkwise linear attention against SDPA on a CUDA machine (chapter 9).

Run once on a machine with a CUDA GPU, from the repository root:

    python benchmarks/gpu.py                 # a few minutes; records src/lattn_edu/data/gpu.json

Steps:

1. correctness first: on a small case (N = 200, not a multiple of the chunk) the torch
   backend's chunkwise form, the torch chunkwise peer (lattn_edu.bench.peers) and SDPA, in
   float32 and bfloat16 on the GPU, against the float64 numpy reference on the CPU
   (float32 within 1e-4, bfloat16 within 2e-2, RMS relative); it stops if one is off;
2. timing: causal attention, batch·heads = 8 (one batch of 8 heads), d in (64, 128), N from
   1,024 to 65,536, in float32 and bfloat16: the torch backend's chunkwise form
   (its gated form without decay on [V | 1], elu+1 features, then one division; chunks
   of 64), the peer, and ``scaled_dot_product_attention(is_causal=True)`` (FlashAttention in
   bfloat16). Each point is the median of repeated calls timed with CUDA events after warm-up;
3. gpu.json, where chapter 9 reads it: the times, GFLOP/s (4·d·d_v per token for linear
   attention), the crossover N from which linear beats SDPA per (dtype, d), the machine,
   the GPU and the CUDA and cuDNN versions (``--out`` writes it elsewhere).

Without a GPU, ``--device cpu`` runs the same code on the CPU (``--check-only`` just the
correctness step, ``--quick`` small sizes): that is how the test suite covers this script.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

import lattn_edu as la
from lattn_edu.compare import relative_error
from lattn_edu import records
from lattn_edu.backends import torch_backend
from lattn_edu.bench import peers
from lattn_edu.bench.methods import BATCH_HEADS, EPS
from lattn_edu.machine import gpu_info, machine_info
from lattn_edu.timing import crossover_size

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2}
DIMS = (64, 128)
CHUNK = 64  # both chunkwise forms, as flash-linear-attention's GPU kernels default to
SIZES = tuple(2**p for p in range(10, 17))  # 1,024 ... 65,536
QUICK_SIZES = (128, 256)
RECORD = records.repository_data(__file__, "gpu.json")  # where chapter 9 reads it


def torch_chunkwise(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal linear attention as the torch backend computes it, on elu+1 features and in the
    inputs' dtype (bfloat16 too, which lattn_edu.linear_attention's dtype check would refuse):
    the chunkwise gated form without decay on [V | 1], then one division."""
    values = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)  # [V | 1]
    chunkwise = torch_backend.GATED_FORMS["chunkwise"]
    both, _ = chunkwise(F.elu(q) + 1, F.elu(k) + 1, values, None, 1.0, None, CHUNK)  # [..., N, d_v + 1]
    return both[..., :-1] / (both[..., -1:] + EPS)


def peer_chunkwise(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return peers.torch_chunkwise_linear_attention(q, k, v, chunk_size=CHUNK, eps=EPS)


METHODS = {
    "torch backend chunkwise": ("linear", torch_chunkwise),
    "torch chunkwise peer": ("linear", peer_chunkwise),
    "SDPA (causal softmax)": ("softmax", peers.sdpa_causal_softmax_attention),
}


def inputs(n: int, d: int, dtype: torch.dtype, device: str, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Seeded q, k, v [1, BATCH_HEADS, N, d] on the device."""
    rng = np.random.default_rng(seed)
    return tuple(torch.from_numpy(rng.standard_normal((1, BATCH_HEADS, n, d), dtype=np.float32))
                 .to(device=device, dtype=dtype) for _ in range(3))


def check_correctness(device: str, n: int = 200, d: int = 32) -> list[dict]:
    """Every method in every dtype on the device against the float64 numpy reference on the CPU."""
    rows = []
    for dtype_name, dtype in DTYPES.items():
        q, k, v = inputs(n, d, dtype, device, seed=5)
        q64, k64, v64 = (x.float().cpu().numpy().astype(np.float64) for x in (q, k, v))
        reference = {"linear": la.linear_attention(q64, k64, v64, causal=True, form="quadratic", eps=EPS),
                     "softmax": la.softmax_attention(q64, k64, v64, causal=True)}
        for name, (family, fn) in METHODS.items():
            with torch.inference_mode():
                got = fn(q, k, v).float().cpu().numpy().astype(np.float64)
            want = reference[family]
            error = relative_error(got.reshape(want.shape), want)
            rows.append({"method": name, "dtype": dtype_name, "n": n, "d": d, "relative_error": error,
                         "ok": bool(error <= TOLERANCE[dtype_name])})
    return rows


def time_call(fn, args, device: str, repeats: int, warmup: int = 2) -> float:
    """Median seconds per call: CUDA events on a GPU, perf_counter on the CPU."""
    with torch.inference_mode():
        for _ in range(warmup):
            fn(*args)
        samples = []
        for _ in range(repeats):
            if device.startswith("cuda"):
                start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn(*args)
                stop.record()
                torch.cuda.synchronize()
                samples.append(start.elapsed_time(stop) / 1e3)
            else:
                tick = time.perf_counter()
                fn(*args)
                samples.append(time.perf_counter() - tick)
    return float(np.median(samples))


def benchmark(device: str, sizes: tuple[int, ...], dims: tuple[int, ...], repeats: int) -> list[dict]:
    rows = []
    for dtype_name, dtype in DTYPES.items():
        for d in dims:
            for n in sizes:
                args = inputs(n, d, dtype, device)
                for name, (family, fn) in METHODS.items():
                    try:
                        seconds = time_call(fn, args, device, repeats)
                    except torch.OutOfMemoryError as err:  # recorded, not fatal
                        rows.append({"method": name, "dtype": dtype_name, "d": d, "n": n,
                                     "status": "skipped", "reason": f"out of memory: {err}"[:200]})
                        torch.cuda.empty_cache()
                        continue
                    flops = (4.0 * d * d * n if family == "linear" else n * (n + 1.0) * 2 * d) * BATCH_HEADS
                    rows.append({"method": name, "family": family, "dtype": dtype_name, "d": d, "n": n,
                                 "status": "ok", "median_s": seconds, "gflops": flops / seconds / 1e9})
                    print(f"{dtype_name:8} d={d:3} N={n:6} {name:26} {1e3 * seconds:9.3f} ms", flush=True)
                del args
    return rows


def crossovers(rows: list[dict]) -> list[dict]:
    """Per (dtype, d): the N from which each linear method beats SDPA for good (None: never)."""
    found = []
    for dtype_name in DTYPES:
        for d in sorted({r["d"] for r in rows}):
            def times(method):
                return {r["n"]: r["median_s"] for r in rows if r["method"] == method and r["d"] == d
                        and r["dtype"] == dtype_name and r["status"] == "ok"}
            softmax = times("SDPA (causal softmax)")
            for linear in ("torch backend chunkwise", "torch chunkwise peer"):
                mine = times(linear)
                sizes = sorted(set(softmax) & set(mine))
                n_cross = (crossover_size(sizes, [softmax[n] for n in sizes], [mine[n] for n in sizes])
                           if len(sizes) >= 2 else None)
                found.append({"dtype": dtype_name, "d": d, "linear": linear, "crossover_n": n_cross,
                              "sizes": sizes})
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu, to test this script")
    parser.add_argument("--check-only", action="store_true", help="only the correctness step")
    parser.add_argument("--quick", action="store_true", help=f"N in {QUICK_SIZES}, d = 64: seconds")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path, default=RECORD,
                        help="where to write the record (default: the repository's src/lattn_edu/data/gpu.json, "
                             "which chapter 9 reads)")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("benchmarks/gpu.py: no CUDA device here; use --device cpu to exercise the script",
              file=sys.stderr)
        return 2
    started = time.perf_counter()
    correctness = check_correctness(args.device)
    for row in correctness:
        print(f"check {row['dtype']:8} {row['method']:26} relative error {row['relative_error']:.2e}"
              f" {'ok' if row['ok'] else 'WRONG'}")
    if not all(row["ok"] for row in correctness):
        print("benchmarks/gpu.py: a method disagrees with the CPU reference; not timing", file=sys.stderr)
        return 1
    if args.check_only:
        return 0
    sizes, dims = (QUICK_SIZES, (64,)) if args.quick else (SIZES, DIMS)
    rows = benchmark(args.device, sizes, dims, 3 if args.quick else args.repeats)
    record = {"description": __doc__.splitlines()[0], "machine": {**machine_info(), **gpu_info(args.device)},
              "recorded": time.strftime("%Y-%m-%d %H:%M:%S"), "batch_heads": BATCH_HEADS,
              "chunk_size": CHUNK, "correctness": correctness, "results": rows,
              "crossover": crossovers(rows), "wall_seconds": time.perf_counter() - started}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    path = records.save_record(record, args.out)
    print(f"written: {path} ({record['wall_seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
