"""``lattn-edu bench``: our kernels against their peers, side by side in one run (chapter 9).

The default family, ``linear``, times causal linear attention: for d in (32, 64, 128) and N
from 128 to 65,536 (batch·heads = 8, float32, elu+1 features, normalised, d_v = d), on the
same inputs and interleaved round by round so that a busy machine slows every method alike:

- every form of ours on every backend, through :func:`lattn_edu.linear_attention`;
- the peer: a torch chunkwise implementation as production libraries write it
  (:mod:`lattn_edu.bench.peers`), run eagerly and under ``torch.compile`` (its compile time
  recorded apart, not timed; ``--quick`` leaves the compiled peer out);
- causal softmax: our numba kernel (:func:`lattn_edu.backends.numba_softmax.softmax_attention`),
  torch's ``scaled_dot_product_attention`` and the materialised :func:`lattn_edu.softmax_attention`;
- a numpy sgemm, the machine's ceiling in GFLOP/s.

A method stops growing N when its next call would pass the memory budget or the time
limit, and the skip is recorded with its reason. It then times autoregressive decoding:
the per-token time of ``LinearAttentionState.step`` and of ``SoftmaxKVCache.step`` with
1k, 10k and 100k tokens already seen. Before any timing, every method's output is
checked against the float64 numpy reference. ``--families gated`` (or ``linear gated``)
runs the gated family (:mod:`lattn_edu.bench.gated`) through the same runner.

Each family's record (``bench.json``, ``bench_gated.json``) goes to the ``--out`` folder,
the current directory unless told otherwise, with ``bench.csv`` (one row per method and
shape) and the PNG plots where the family has them. Nothing is written into the installed
package: the record chapters 3 and 9 read is ``src/lattn_edu/data/bench.json`` in the
repository, refreshed by copying a full run's ``bench.json`` there.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

import lattn_edu as la

from .. import records
from ..backends import BACKENDS
from .families import FAMILIES
from .harness import progress_steps, run_family
from .methods import BATCH_HEADS, DECODE_SIZES, DIMS, QUICK, TOLERANCE, Family, Settings
from .plots import write_plots
from .results import write_csv

NEEDS_TORCH = ("the peers it measures against run in torch, which is not installed: "
               "pip install 'lattn_edu[torch]' (or pip install torch)")
# What --quick may take on 2 cores, per family: the budget a recorded timing is held to
# (benchmarks/results/bench_quick_timing.json, measured with benchmarks/quick_timing.py)
QUICK_BUDGET_MINUTES = {"linear": 5, "gated": 3}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``lattn-edu bench``."""
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=["linear"], metavar="FAMILY",
                        help=f"what to time, one record each: {', '.join(FAMILIES)} (default: linear, "
                             f"the run chapters 3 and 9 read)")
    parser.add_argument("--quick", action="store_true",
                        help=f"fewer sizes (linear N = {', '.join(map(str, QUICK.sizes))}), fewer repeats, "
                             f"tighter limits. Budget on 2 cores: at most "
                             + ", ".join(f"{m} minutes for {name}" for name, m in QUICK_BUDGET_MINUTES.items()))
    parser.add_argument("--dims", type=int, nargs="+", metavar="D",
                        help=f"head widths (default: the family's; linear {' '.join(map(str, DIMS))})")
    parser.add_argument("--sizes", type=int, nargs="+", metavar="N", help="sequence lengths, increasing")
    parser.add_argument("--batch-heads", type=int, metavar="B", help=f"sequences per call (default {BATCH_HEADS})")
    parser.add_argument("--decode-sizes", type=int, nargs="+", metavar="N",
                        help=f"tokens already seen when decoding (default {' '.join(map(str, DECODE_SIZES))})")
    parser.add_argument("--decode-steps", type=int, metavar="T", help="decoding steps timed per size")
    parser.add_argument("--max-call-seconds", type=float, metavar="S",
                        help="stop growing N for a method once a call would take longer")
    parser.add_argument("--compiled-peers", action=argparse.BooleanOptionalAction, default=None,
                        help="also time each peer under torch.compile (default: yes, but not with --quick, "
                             "whose budget the compiling alone would exceed)")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS,
                        help="our backends to time (default: all available)")
    parser.add_argument("--out", type=Path, default=Path("."), metavar="DIR",
                        help="write each family's record (bench.json, bench_gated.json), bench.csv and the "
                             "plots here (default: the current directory)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def settings_from(args: argparse.Namespace, family: Family) -> Settings:
    """The family's full or quick settings, with the sizes and limits the options override."""
    settings = family.quick if args.quick else family.full
    changes: dict[str, Any] = {}
    for option, field in (("dims", "dims"), ("sizes", "sizes"), ("decode_sizes", "decode_sizes")):
        value = getattr(args, option)
        if value:
            if any(x < 1 for x in value):
                raise ValueError(f"--{option.replace('_', '-')} must be positive integers; got {value}")
            changes[field] = tuple(sorted(set(value)))
    if args.compiled_peers is not None:
        changes["compiled_peers"] = args.compiled_peers
    for option, field in (("batch_heads", "batch_heads"), ("decode_steps", "decode_steps"),
                          ("max_call_seconds", "max_call_s")):
        value = getattr(args, option)
        if value is not None:
            if value <= 0:
                raise ValueError(f"--{option.replace('_', '-')} must be > 0; got {value}")
            changes[field] = value
    return replace(settings, **changes)


def run(args: argparse.Namespace) -> int:
    """Run each chosen family and write its files; prints its table. Returns the exit code.

    The threads' environment (idle BLAS and OpenMP threads sleep) is set once, by
    :func:`lattn_edu.cli.main`, before numpy loads."""
    try:
        import torch  # noqa: F401
    except ImportError:
        print(f"lattn-edu bench: {NEEDS_TORCH}", file=sys.stderr)
        return 2
    try:
        chosen = [(FAMILIES[name], settings_from(args, FAMILIES[name])) for name in dict.fromkeys(args.families)]
    except ValueError as err:
        print(f"lattn-edu bench: {err}", file=sys.stderr)
        return 2
    backends = tuple(args.backends) if args.backends else la.available_backends()
    args.out.mkdir(parents=True, exist_ok=True)
    for family, settings in chosen:
        code = _run_family(family, settings, backends, args)
        if code:
            return code
    return 0


def _run_family(family: Family, settings: Settings, backends: tuple[str, ...], args: argparse.Namespace) -> int:
    started = time.perf_counter()
    progress = tqdm(total=progress_steps(settings), desc=f"lattn-edu bench {family.name}",
                    disable=args.no_progress, file=sys.stderr)
    record, correctness = run_family(family, settings, backends, progress)
    progress.close()
    if record is None:
        for c in correctness:
            if not c["ok"]:
                print(f"lattn-edu bench: {c['method']} (d={c['d']}) disagrees with the float64 reference: "
                      f"relative error {c['relative_error']:.2e} > {TOLERANCE:g}", file=sys.stderr)
        return 1
    record = {"arguments": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                            if k != "command"},
              "quick": bool(args.quick), **record}
    written = []
    if family.csv_fields:
        write_csv(record["results"], args.out / "bench.csv", family.csv_fields)
        written.append("bench.csv")
    if family.plots and not args.no_plots:
        written += write_plots(record, args.out, family.plots)
    record["wall_seconds"] = time.perf_counter() - started
    path = records.save_record(record, args.out / family.record_name)
    print(family.report(record))
    print(f"written: {', '.join(str(args.out / name) for name in [path.name, *written])}")
    return 0
