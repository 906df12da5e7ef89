"""``lattn-edu bench``: causal linear attention against its peers, side by side in one run (chapter 9).

For d in (32, 64, 128) and N from 128 to 65,536 (batch·heads = 8, float32, elu+1
features, normalised, d_v = d) it times, on the same inputs and interleaved round by
round so that a busy machine slows every method alike:

- every form of ours on every backend, through :func:`lattn_edu.linear_attention`;
- the peer: a torch chunkwise implementation as production libraries write it
  (:mod:`lattn_edu.bench.peers`);
- causal softmax: our numba kernel (:func:`lattn_edu.backends.numba_softmax.softmax_attention`),
  torch's ``scaled_dot_product_attention`` and the materialised :func:`lattn_edu.softmax_attention`;
- a numpy sgemm, the machine's ceiling in GFLOP/s.

A method stops growing N when its next call would pass the memory budget or the time
limit, and the skip is recorded with its reason. It then times autoregressive decoding:
the per-token time of ``LinearAttentionState.step`` and of ``SoftmaxKVCache.step`` with
1k, 10k and 100k tokens already seen. Before any timing, every method's output is
checked against the float64 numpy reference.

The full run records ``bench.json`` (everything, with the machine) where chapters read it,
through :func:`lattn_edu.records.save_record`, and writes ``bench.csv`` (one row per method
and shape) and the PNG plots to ``benchmarks/results/`` under the current directory. With
``--quick`` (into ``benchmarks/results/quick/``) or ``--out DIR``, all the files go to that
folder and the recorded run is left alone. ``--gated`` runs :mod:`lattn_edu.bench.gated`
instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

import lattn_edu as la

from .. import records
from ..backends import BACKENDS
from ..machine import machine_info
from .harness import (advance, benchmark_decoding, benchmark_shapes, check_correctness, measure_sgemm,
                      measure_sgemm_avx512)
from .methods import (BATCH_HEADS, CHUNK, DECODE_SIZES, DIMS, EPS, FULL, QUICK, QUICK_SIZES, TOLERANCE,
                      Settings, timed_methods)
from .plots import write_plots
from .results import report, write_csv
from .summary import crossovers, decode_summary, per_shape_summary, targets

RESULTS = Path("benchmarks") / "results"  # under the current directory: the repository's root
NEEDS_TORCH = ("the peers it measures against run in torch, which is not installed: "
               "pip install 'lattn_edu[torch]' (or pip install torch)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``lattn-edu bench``."""
    parser.add_argument("--gated", action="store_true",
                        help="instead: the gated family's chunkwise kernels (scalar and vector decay, "
                             "the delta rule) against torch peers; writes bench_gated.json")
    parser.add_argument("--quick", action="store_true",
                        help=f"fewer sizes (N = {', '.join(map(str, QUICK_SIZES))}), fewer repeats, "
                             f"tighter limits: a few minutes; writes to {RESULTS / 'quick'}/")
    parser.add_argument("--dims", type=int, nargs="+", metavar="D", help=f"head widths (default {DIMS})")
    parser.add_argument("--sizes", type=int, nargs="+", metavar="N", help="sequence lengths, increasing")
    parser.add_argument("--batch-heads", type=int, metavar="B", help=f"sequences per call (default {BATCH_HEADS})")
    parser.add_argument("--decode-sizes", type=int, nargs="+", metavar="N",
                        help=f"tokens already seen when decoding (default {DECODE_SIZES})")
    parser.add_argument("--decode-steps", type=int, metavar="T", help="decoding steps timed per size")
    parser.add_argument("--max-call-seconds", type=float, metavar="S",
                        help="stop growing N for a method once a call would take longer")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS,
                        help="our backends to time (default: all available)")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help=f"write bench.json, bench.csv and the plots here (default: bench.json where "
                             f"the chapters read it, the rest to {RESULTS}/)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def settings_from(args: argparse.Namespace) -> Settings:
    """The full or quick settings, with the sizes and limits the options override."""
    settings = QUICK if args.quick else FULL
    changes: dict[str, Any] = {}
    for option, field in (("dims", "dims"), ("sizes", "sizes"), ("decode_sizes", "decode_sizes")):
        value = getattr(args, option)
        if value:
            if any(x < 1 for x in value):
                raise ValueError(f"--{option.replace('_', '-')} must be positive integers; got {value}")
            changes[field] = tuple(sorted(set(value)))
    for option, field in (("batch_heads", "batch_heads"), ("decode_steps", "decode_steps"),
                          ("max_call_seconds", "max_call_s")):
        value = getattr(args, option)
        if value is not None:
            if value <= 0:
                raise ValueError(f"--{option.replace('_', '-')} must be > 0; got {value}")
            changes[field] = value
    return replace(settings, **changes)


def output_folder(args: argparse.Namespace) -> Path:
    """Where the run's files go: ``--out``, else benchmarks/results/ (``quick/`` with ``--quick``)."""
    if args.out is not None:
        return args.out
    return RESULTS / "quick" if args.quick else RESULTS


def run(args: argparse.Namespace) -> int:
    """Run the benchmark and write its files; prints the summary table. Returns the exit code."""
    started = time.perf_counter()
    # Idle OpenMP threads (numba's and torch's) sleep instead of spinning: on a machine shared
    # with other work, spinning threads steal the cores the busy ones need. Read when the OpenMP
    # runtime loads, so it applies only if torch and numba's threads have not started yet.
    if "OMP_WAIT_POLICY" in os.environ:
        return _run(args, started)
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        return _run(args, started)
    finally:  # the process's environment as it was, for whatever runs after
        del os.environ["OMP_WAIT_POLICY"]


def _run(args: argparse.Namespace, started: float) -> int:
    try:
        import torch  # noqa: F401
    except ImportError:
        print(f"lattn-edu bench: {NEEDS_TORCH}", file=sys.stderr)
        return 2
    if args.gated:
        from .gated import run as run_gated

        return run_gated(args, started)
    try:
        settings = settings_from(args)
    except ValueError as err:
        print(f"lattn-edu bench: {err}", file=sys.stderr)
        return 2
    out = output_folder(args)
    out.mkdir(parents=True, exist_ok=True)
    backends = tuple(args.backends) if args.backends else la.available_backends()
    found = timed_methods(backends)
    load_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    progress = tqdm(total=len(settings.dims) * (len(found) * (len(settings.sizes) + 1))
                    + len(settings.dims) * len(settings.decode_sizes) + 2,
                    desc="lattn-edu bench", disable=args.no_progress, file=sys.stderr)

    progress.set_postfix_str("checking every method against the reference")
    correctness = check_correctness(found, settings.dims)
    advance(progress, len(settings.dims) * len(found), "checked")
    wrong = [c for c in correctness if not c["ok"]]
    if wrong:
        progress.close()
        for c in wrong:
            print(f"lattn-edu bench: {c['method']} (d={c['d']}) disagrees with the float64 reference: "
                  f"relative error {c['relative_error']:.2e} > {TOLERANCE:g}", file=sys.stderr)
        return 1
    sgemm_start = measure_sgemm(settings.sgemm_size)
    advance(progress, 1, "sgemm")
    rows = benchmark_shapes(found, settings, progress)
    decode = benchmark_decoding(settings.dims, settings.decode_sizes, settings.decode_steps, progress)
    sgemm_end = measure_sgemm(settings.sgemm_size)
    sgemm_avx512 = measure_sgemm_avx512(settings.sgemm_size)
    advance(progress, 1, "sgemm")
    progress.close()

    shapes = per_shape_summary(rows, settings.dims, settings.sizes)
    decoding = decode_summary(decode)
    record = {
        "schema": 1,
        "description": __doc__.split("\n\n")[1].replace("\n", " "),
        "arguments": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                      if k != "command"},
        "quick": bool(args.quick),
        "recorded": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": machine_info(engines=True),
        "settings": {**{k: (list(v) if isinstance(v, tuple) else v) for k, v in settings.__dict__.items()},
                     "chunk_size": CHUNK, "eps": EPS, "dtype": "float32", "feature_map": "elu+1",
                     "flops_per_token": "4*d*d_v (linear); (N+1)*(d+d_v) (causal softmax)",
                     "backends": list(backends)},
        "load_average_start": list(load_start) if load_start else None,
        "other_processes_cores": _busy_elsewhere(rows),
        "load_average_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "sgemm": {"size": settings.sgemm_size, "gflops_start": sgemm_start, "gflops_end": sgemm_end,
                  "avx512_kernels": sgemm_avx512},
        "correctness": correctness,
        "results": rows,
        "decode": decode,
        "summary": {"per_shape": shapes, "crossover": crossovers(rows, settings.dims), "decode": decoding,
                    "targets": targets(shapes, decoding)},
    }
    write_csv(rows, out / "bench.csv")
    plots = [] if args.no_plots else write_plots(record, out)
    record["wall_seconds"] = time.perf_counter() - started
    recorded = args.out is None and not args.quick  # the run the chapters read
    path = (records.save_record("bench.json", record) if recorded
            else records.write_record(record, out / "bench.json"))
    print(report(record))
    print(f"written: {path}; to {out}: {', '.join(['bench.csv', *plots])}")
    return 0


def _busy_elsewhere(rows: list[dict]) -> dict | None:
    """Mean and largest number of cores other processes kept busy while the shapes were timed."""
    per_shape = {(r["d"], r["n"]): r.get("other_processes_cores") for r in rows}
    values = [v for v in per_shape.values() if v is not None]
    return {"mean": float(np.mean(values)), "max": float(np.max(values))} if values else None
