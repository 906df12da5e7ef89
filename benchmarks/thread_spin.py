"""What a spinning BLAS thread costs the call timed after it, and why ``lattn-edu bench``
starts with OPENBLAS_THREAD_TIMEOUT=4.

Run: python benchmarks/thread_spin.py   (records src/lattn_edu/data/thread_spin.json, which
chapter 9 reads)

OpenBLAS reads the variable once, when numpy loads it, so each setting runs in a child
process: OpenBLAS's default, and OPENBLAS_THREAD_TIMEOUT=4 (idle threads sleep at once).
Both children set OMP_WAIT_POLICY=PASSIVE, so only OpenBLAS's behaviour differs. Each
times, ROUNDS times, the Numba chunkwise kernel (causal elu+1, float32, 8 sequences,
d = 128, N = 4096) right after a multi-threaded 2048×2048 numpy sgemm, and again after a
pause of PAUSE_S seconds; it reports the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROUNDS = 15
PAUSE_S = 0.3
D, N = 128, 4096
SETTINGS = {"OpenBLAS default": None, "OPENBLAS_THREAD_TIMEOUT=4": "4"}


def child() -> dict:
    """Runs in a process whose environment is already set; returns the medians in seconds."""
    import numpy as np

    from lattn_edu import bench
    from lattn_edu.backends import numba_backend

    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((bench.BATCH_HEADS, N, D), dtype=np.float32) for _ in range(3))
    def kernel() -> None:
        numba_backend.chunkwise_elu_linear_attention(q, k, v, True, bench.EPS, bench.OUR_CHUNK)

    sgemm = bench.sgemm_call(2048)
    kernel(), sgemm()  # compile and warm
    after_sgemm, after_pause = [], []
    for _ in range(ROUNDS):
        sgemm()
        after_sgemm.append(bench.time_once(kernel))
        time.sleep(PAUSE_S)
        after_pause.append(bench.time_once(kernel))
    return {"after_sgemm_s": float(np.median(after_sgemm)), "after_pause_s": float(np.median(after_pause))}


def run_setting(timeout: str | None) -> dict:
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    env.pop("OPENBLAS_THREAD_TIMEOUT", None)
    if timeout is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = timeout
    done = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    from lattn_edu import bench, records
    from lattn_edu.machine import machine_info

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=records.repository_data(__file__, "thread_spin.json"),
                        help="where to write the record (default: the repository's "
                             "src/lattn_edu/data/thread_spin.json, which chapter 9 reads)")
    out = parser.parse_args(argv).out
    rows = []
    for label, timeout in SETTINGS.items():
        row = {"setting": label, **run_setting(timeout)}
        row["slowdown"] = row["after_sgemm_s"] / row["after_pause_s"]
        rows.append(row)
        print(f"{label:26}: kernel right after sgemm {1e3 * row['after_sgemm_s']:6.1f} ms, after a "
              f"{PAUSE_S} s pause {1e3 * row['after_pause_s']:6.1f} ms: x{row['slowdown']:.2f}", flush=True)
    record = {"description": __doc__, "machine": machine_info(engines=True), "rounds": ROUNDS, "pause_s": PAUSE_S,
              "d": D, "n": N, "batch_heads": bench.BATCH_HEADS, "results": rows}
    print(f"written: {records.save_record(record, out)}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        print(json.dumps(child()))
    else:
        main()
