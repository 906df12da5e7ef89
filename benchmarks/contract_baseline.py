"""The numba causal linear attention before and after issue 29, side by side in one run.

    python benchmarks/contract_baseline.py --baseline /work/wt-base [--quick] [--out PATH]

Times ``la.linear_attention(q, k, v, causal=True, form='chunkwise', backend='numba')``
(elu+1, float32, B·H = 8, d = 32, 64, 128, N from 128 to 16384) in two trees: the baseline
(``--baseline``, a checkout of the tree before the change, whose ``src`` is put on the path)
and this one, plus the torch chunkwise peer of :mod:`lattn_edu.bench.peers` in this tree.
Each runs in its own worker process, so the two packages never share an interpreter; the
workers take turns, round by round and shape by shape, in an order that alternates, so that
load from other programs on a shared machine falls on all of them alike. Each sample is one
call; per method and shape the script reports the median and the 95th percentile over every
round, and the ratios new / baseline and peer / new, and writes them as JSON (default
``benchmarks/results/contract_baseline.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
BATCH_HEADS, CHUNK, EPS, SEED = 8, 64, 1e-6, 0
FULL_SIZES = (128, 512, 2048, 8192, 16384)
QUICK_SIZES = (128, 1024, 8192)
WIDTHS = (32, 64, 128)


def _worker(method: str) -> None:
    """Answer one JSON request per stdin line, {"n", "d", "min_seconds"}, with the seconds of
    each call (at least 3 calls, until min_seconds have passed)."""
    import lattn_edu as la

    inputs: dict = {}
    for line in sys.stdin:
        request = json.loads(line)
        key = (request["n"], request["d"])
        if key not in inputs:  # the same seeded inputs in every worker
            inputs.clear()
            rng = np.random.default_rng(SEED)
            q, k, v = (rng.standard_normal((BATCH_HEADS,) + key).astype(np.float32) for _ in range(3))
            inputs[key] = _call(method, q, k, v, la)
            inputs[key]()  # compile (or load from numba's cache) and warm the caches
        call, seconds, start = inputs[key], [], time.perf_counter()
        while len(seconds) < 3 or time.perf_counter() - start < request["min_seconds"]:
            tick = time.perf_counter()
            call()
            seconds.append(time.perf_counter() - tick)
        print(json.dumps(seconds), flush=True)


def _call(method: str, q: np.ndarray, k: np.ndarray, v: np.ndarray, la) -> object:
    """The timed call: ours through the public function, or the torch peer on tensors."""
    if method == "peer":
        import torch

        from lattn_edu.bench import peers

        tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
        return lambda: peers.torch_chunkwise_linear_attention(tq, tk, tv, chunk_size=CHUNK, eps=EPS)
    return lambda: la.linear_attention(q, k, v, causal=True, form="chunkwise", backend="numba",
                                       chunk_size=CHUNK, eps=EPS)


def _start(tree: Path, method: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"), OMP_WAIT_POLICY="PASSIVE")
    return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", method],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=tree)


def _ask(worker: subprocess.Popen, n: int, d: int, min_seconds: float) -> list[float]:
    worker.stdin.write(json.dumps({"n": n, "d": d, "min_seconds": min_seconds}) + "\n")
    worker.stdin.flush()
    line = worker.stdout.readline()
    if not line:
        raise RuntimeError(f"a worker stopped (exit code {worker.wait()}); see its error above")
    return json.loads(line)


def _summary(seconds: list[float]) -> dict:
    ms = 1e3 * np.asarray(seconds)
    return {"median_ms": float(np.median(ms)), "p95_ms": float(np.percentile(ms, 95)), "calls": len(ms)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, help="root of the tree before the change")
    parser.add_argument("--quick", action="store_true", help=f"N in {QUICK_SIZES}, 3 rounds (about 2 min)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per shape (default 7, quick 3)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "contract_baseline.json")
    parser.add_argument("--worker", choices=("ours", "peer"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return _worker(args.worker)
    if args.baseline is None or not (args.baseline / "src" / "lattn_edu").is_dir():
        parser.error(f"--baseline must be the root of a lattn-edu tree (with src/lattn_edu); got {args.baseline}")
    rounds = args.rounds or (3 if args.quick else 7)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    workers = {"baseline": _start(args.baseline.resolve(), "ours"), "new": _start(TREE, "ours"),
               "peer": _start(TREE, "peer")}
    rows = []
    try:
        for d in WIDTHS:
            for n in sizes:
                samples: dict[str, list[float]] = {name: [] for name in workers}
                for r in range(rounds):
                    order = list(workers) if r % 2 == 0 else list(workers)[::-1]
                    for name in order:
                        samples[name] += _ask(workers[name], n, d, min_seconds=0.1)
                row = {"n": n, "d": d, **{name: _summary(s) for name, s in samples.items()}}
                row["new_over_baseline"] = row["new"]["median_ms"] / row["baseline"]["median_ms"]
                row["peer_over_new"] = row["peer"]["median_ms"] / row["new"]["median_ms"]
                rows.append(row)
                print(f"d={d:4d} N={n:6d}  baseline {row['baseline']['median_ms']:9.2f} ms "
                      f"(p95 {row['baseline']['p95_ms']:9.2f})  new {row['new']['median_ms']:9.2f} ms "
                      f"(p95 {row['new']['p95_ms']:9.2f})  new/baseline {row['new_over_baseline']:.3f}  "
                      f"peer/new {row['peer_over_new']:.2f}", flush=True)
    finally:
        for worker in workers.values():
            worker.stdin.close()
            worker.wait()
    record = {"command": " ".join(sys.argv), "baseline": str(args.baseline.resolve()), "rounds": rounds,
              "batch_heads": BATCH_HEADS, "chunk_size": CHUNK, "dtype": "float32", "feature_map": "elu+1",
              "cpus": os.cpu_count(), "load_average": os.getloadavg(), "shapes": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    worst = max(row["new_over_baseline"] for row in rows)
    slowest_peer = min(row["peer_over_new"] for row in rows)
    print(f"worst new/baseline {worst:.3f}; smallest peer/new {slowest_peer:.2f}; wrote {args.out}")


if __name__ == "__main__":
    main()
