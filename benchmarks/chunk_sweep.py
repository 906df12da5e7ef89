"""Which chunk size does each implementation want? Ours at chunks of 32 and 64, the compiled peer at 64, 128 and 256.

Run: python benchmarks/chunk_sweep.py   (records src/lattn_edu/data/chunk_sweep.json, which
chapter 9 reads;
``--quick`` runs a tiny smoke version with the eager peer)

A user who wants speed picks the chunk that is fastest for the implementation they run, so
before ``lattn-edu bench`` compares implementations it should know which chunk each one wants.
It runs ours in chunks of ``bench.OUR_CHUNK`` tokens, the length this script found fastest for
ours at most shapes, and the torch peers at the length ``bench.peer_chunk_size`` reads from this
record for each family and head width (``bench.PEER_CHUNK`` at a width not swept). This
script times, for every family ``lattn-edu bench`` times (causal elu+1 linear attention and the
five gated families), on the bench's inputs (float32, 8 sequences, d = d_v) and through the
same calls:

- ours: the public function on the numba backend, ``chunk_size`` 32 and 64 (an earlier sweep
  found 32 faster at 32 of 36 shapes, so longer chunks are not tried);
- the compiled peer: the same torch chunkwise peer ``lattn-edu bench`` compiles, chunks of
  64 (flash-linear-attention's default, ``bench.PEER_CHUNK``), 128 and 256 (DeltaProduct's peer
  counts chunks in steps, two per token, as flash-linear-attention's chunk reference runs it;
  ours counts tokens).

All five calls of a family run in the same rounds, in turn, so they share whatever the
machine does meanwhile; each figure is a median over the rounds. Every call is first checked
against the float64 numpy reference at N = 200, which also compiles it. The record keeps
each call's median and 95th percentile, each call's time over the best time of its
implementation (``over_best``: 1 for the best chunk), and, per family and shape, the compiled
peer's best time and its time at the default chunk of 64, each over our best.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

# As lattn-edu bench does: idle OpenBLAS and OpenMP threads sleep rather than spin (read
# when the libraries load, so before the imports below).
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import lattn_edu as la  # noqa: E402
from lattn_edu import bench, records  # noqa: E402
from lattn_edu.bench import gated, peers  # noqa: E402
from lattn_edu.bench.harness import OtherLoad, time_interleaved, time_once  # noqa: E402
from lattn_edu.bench.methods import TOLERANCE  # noqa: E402
from lattn_edu.compare import relative_error  # noqa: E402
from lattn_edu.machine import machine_info  # noqa: E402

FAMILIES = ("linear",) + gated.VARIANTS
CHUNKS = {"ours": (32, 64), "peer": (64, 128, 256)}
SHAPES = [(64, 1024), (64, 4096), (64, 16384), (128, 1024), (128, 4096), (128, 16384)]  # (d, N)
QUICK_SHAPES = [(16, 96)]
ROUNDS = 7
OUT = records.repository_data(__file__, "chunk_sweep.json")  # chapter 9 reads it


def family_calls(family: str, x: dict, chunk: int, compiled: bool) -> dict:
    """{"ours": call, "peer": call} for one family in chunks of ``chunk``; x holds the gated
    family's inputs (the linear family uses its q, k, v)."""
    if family != "linear":
        ours, eager, compiled_peer = gated.calls(family, x, chunk, chunk)
        return {"ours": ours, "peer": compiled_peer if compiled else eager}
    tq, tk, tv = (torch.from_numpy(x[name]) for name in ("q", "k", "v"))
    return {"ours": lambda: la.linear_attention(x["q"], x["k"], x["v"], causal=True, form="chunkwise",
                                                backend="numba", chunk_size=chunk, eps=bench.EPS),
            "peer": lambda: peers.torch_chunkwise_linear_attention(tq, tk, tv, chunk_size=chunk, eps=bench.EPS,
                                                                   compiled=compiled)}


def reference(family: str, x: dict) -> np.ndarray:
    """The family's float64 numpy output on x."""
    if family != "linear":
        return gated.reference(family, x)
    q, k, v = (x[name].astype(np.float64) for name in ("q", "k", "v"))
    return la.linear_attention(q, k, v, causal=True, form="quadratic", eps=bench.EPS)


def labelled(family: str, x: dict, compiled: bool) -> dict:
    """Every timed call of a family, named "<implementation> c<chunk>"."""
    return {f"{who} c{chunk}": family_calls(family, x, chunk, compiled)[who]
            for who, chunks in CHUNKS.items() for chunk in chunks}


def check(family: str, d: int, compiled: bool) -> dict[str, float]:
    """Each call's relative error against the float64 reference at N = 200 (not a multiple of
    any chunk); raises if one is off."""
    x = gated.make_inputs(200, d, 4, seed=7)
    want = reference(family, x)
    torch.compiler.reset()  # past a few recompiles a compiled stage would silently run eagerly
    with torch.inference_mode():
        errors = {name: relative_error(np.asarray(call()).reshape(want.shape), want)
                  for name, call in labelled(family, x, compiled).items()}
    wrong = {name: e for name, e in errors.items() if not e <= TOLERANCE}
    if wrong:
        raise RuntimeError(f"{family}, d={d}: off the float64 reference: {wrong}")
    return errors


def measure(family: str, d: int, n: int, rounds: int, compiled: bool) -> dict:
    """One family at one shape: every call in the same rounds."""
    x = gated.make_inputs(n, d, bench.BATCH_HEADS)
    torch.compiler.reset()  # a fresh compile per shape, as lattn-edu bench does
    calls = labelled(family, x, compiled)
    others = OtherLoad()
    with torch.inference_mode():
        for call in calls.values():
            call()  # compiles what is compiled
        estimates = {name: time_once(call) for name, call in calls.items()}
        others.cores()
        samples = time_interleaved(calls, estimates, replace(bench.QUICK, min_rounds=rounds, max_rounds=rounds))
    median = {name: float(np.median(s)) for name, s in samples.items()}
    best = {who: min(chunks, key=lambda c, w=who: median[f"{w} c{c}"]) for who, chunks in CHUNKS.items()}
    ours_best = median[f"ours c{best['ours']}"]
    return {"family": family, "d": d, "n": n, "median_s": median,
            "p95_s": {name: float(np.percentile(s, 95)) for name, s in samples.items()},
            "over_best": {f"{who} c{c}": median[f"{who} c{c}"] / median[f"{who} c{best[who]}"]
                          for who, chunks in CHUNKS.items() for c in chunks},
            "best_chunk": best,
            "peer_best_over_ours_best": median[f"peer c{best['peer']}"] / ours_best,
            "peer_default_chunk_over_ours_best": median[f"peer c{bench.PEER_CHUNK}"] / ours_best,
            "load_average": float(os.getloadavg()[0]), "other_processes_cores": others.cores()}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="where to write the record")
    parser.add_argument("--quick", action="store_true",
                        help="a tiny smoke run: d = 16, N = 96, two rounds, the eager peer")
    args = parser.parse_args(argv)
    compiled = not args.quick and peers.compiler_problem() is None
    shapes, rounds = (QUICK_SHAPES, 2) if args.quick else (SHAPES, ROUNDS)
    errors = {f"{family}, d={d}": check(family, d, compiled) for family in FAMILIES
              for d in sorted({d for d, _ in shapes})}
    rows = []
    for d, n in shapes:
        for family in FAMILIES:
            row = measure(family, d, n, rounds, compiled)
            rows.append(row)
            print(f"{family:>20} d={d:3} N={n:6}: over best {row['over_best']}; best chunks "
                  f"{row['best_chunk']}, peer best / ours best {row['peer_best_over_ours_best']:.2f}, "
                  f"peer c{bench.PEER_CHUNK} / ours best {row['peer_default_chunk_over_ours_best']:.2f}",
                  flush=True)
    record = {"description": __doc__, "machine": machine_info(), "recorded": time.strftime("%Y-%m-%d %H:%M:%S"),
              "quick": args.quick, "peer": "compiled (inductor)" if compiled else "eager",
              "rounds": rounds, "chunks": {who: list(c) for who, c in CHUNKS.items()}, "batch_heads": bench.BATCH_HEADS, "dtype": "float32",
              "checked_relative_errors": errors, "rows": rows}
    print(f"written: {records.save_record(record, args.out)}")
    return record


if __name__ == "__main__":
    main()
