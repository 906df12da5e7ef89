"""MesaNet's chunkwise read: the exact solve against a few conjugate-gradient steps, for time and error.

Run: python benchmarks/mesanet_solve.py   (writes src/lattn_edu/data/mesanet_solve.json, which chapter 14 reads; about 2 minutes)

For each case (N, d_k, chunk size C, forget gate, key correlation) ``la.least_squares_attention``
runs in its chunkwise form with ``solver="exact"`` (a batched LU solve of every H_t + λI of a
chunk) and with ``solver="cg"`` at each of CG_ITERATIONS steps from x = 0, as MesaNet solves.
The calls are timed side by side: one call of each per round, ROUNDS rounds, so that whatever
else the machine does slows them alike; the record keeps the median and the 95th percentile.
The error of each is ‖o − o_ref‖ / ‖o_ref‖ against the recurrent form with the exact solve
(one token, one solve at a time). Everything is float64, so the error is the solver's own, not
rounding's (in float32 the exact solve is itself about 1e-7 off, see ``least_squares.py``).

Inputs as MesaNet's: unit q and k (k_t ∝ √ρ c + √(1 − ρ) b_t, a shared direction c giving keys
a cosine of about ρ), v ~ N(0, 1), input gates β = sigmoid(N(0, 1)), forget gates
exp(g) = sigmoid(N(μ, 1)) (μ = 3: exp(g) ≈ 0.93 on average, a memory 1/E[−g] of about 13 tokens;
μ = 6: exp(g) ≈ 0.996, about 250 tokens), the ridge λ = 0.25, two heads. CG's rate is set by κ,
the condition number of H_t + λI, kept in the record as the median over the heads of
κ(H_N + λI) at the last token: correlated keys and a long memory make one large eigenvalue.

The machine is shared: the record keeps the load average at the start and the end and, per
case, how many cores other processes kept busy while it was timed (``lattn_edu.bench.OtherLoad``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import lattn_edu as la
from lattn_edu import bench, records
from lattn_edu.compare import relative_error
from lattn_edu.machine import machine_info

# (N, d_k, chunk size, forget-gate mean μ, key correlation ρ)
CASES = ((512, 16, 16, 3.0, 0.0), (1024, 32, 32, 3.0, 0.0), (1024, 64, 64, 3.0, 0.0),
         (1024, 64, 64, 6.0, 0.5))
SMOKE_CASES = ((37, 6, 16, 3.0, 0.0), (29, 5, 8, 6.0, 0.5))  # tiny: for the script's test
CG_ITERATIONS = (2, 5, 10, 30)
ROUNDS = 20
HEADS = 2
RIDGE = 0.25
OUT = records.repository_data(__file__, "mesanet_solve.json")  # chapter 14 reads it


def unit(x: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (the last axis)."""
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def make_inputs(n: int, d_k: int, gate_mean: float, correlation: float, seed: int = 0) -> dict:
    """q, k [H, N, d_k], v [H, N, d_k], beta and log_decay [H, N], seeded."""
    rng = np.random.default_rng(seed)
    shape = (HEADS, n, d_k)
    shared = unit(rng.standard_normal((HEADS, 1, d_k)))  # c, one per head
    k = unit(np.sqrt(correlation) * shared + np.sqrt(1 - correlation) * unit(rng.standard_normal(shape)))
    return {"q": unit(rng.standard_normal(shape)), "k": k, "v": rng.standard_normal(shape),
            "beta": 1 / (1 + np.exp(-rng.standard_normal((HEADS, n)))),
            "log_decay": -np.logaddexp(0, -rng.normal(gate_mean, 1, (HEADS, n)))}  # log sigmoid


def least_squares(x: dict, **options):
    """la.least_squares_attention on the inputs x, MesaNet's way (ridge λ, no query scale)."""
    return la.least_squares_attention(x["q"], x["k"], x["v"], x["beta"], x["log_decay"], ridge=RIDGE,
                                      scale=1.0, **options)


def solve_call(x: dict, chunk_size: int, solver: str, iterations: int = 30):
    """One call of the chunkwise form with this solver, ready to time."""
    return lambda: least_squares(x, form="chunkwise", chunk_size=chunk_size, solver=solver,
                                 cg_iterations=iterations)


def condition_number(x: dict) -> float:
    """Median over heads of κ(H_N + λI), H_N the last token's gated sum of β k kᵀ."""
    _, (h, _) = least_squares(x, form="chunkwise", return_state=True)
    eigenvalues = np.linalg.eigvalsh(h) + RIDGE  # [H, d_k], ascending
    return float(np.median(eigenvalues[:, -1] / eigenvalues[:, 0]))


def measure(case: tuple, rounds: int) -> dict:
    """Error against the recurrent exact form, then ``rounds`` interleaved rounds of timed calls."""
    n, d_k, chunk_size, gate_mean, correlation = case
    x = make_inputs(n, d_k, gate_mean, correlation)
    reference = least_squares(x, form="recurrent")  # one token, one exact solve at a time  [H, N, d_k]
    calls = {"exact": solve_call(x, chunk_size, "exact")}
    calls.update({f"cg {j}": solve_call(x, chunk_size, "cg", j) for j in CG_ITERATIONS})
    errors = {name: relative_error(call(), reference) for name, call in calls.items()}  # also warms up
    load = bench.OtherLoad()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            samples[name].append(bench.time_once(call))
    busy = load.cores()  # cores other processes kept busy during the rounds
    methods = [{"solver": name.split()[0], "cg_iterations": int(name.split()[1]) if " " in name else None,
                "median_s": float(np.median(s)), "p95_s": float(np.percentile(s, 95)),
                "relative_error": errors[name]} for name, s in samples.items()]
    return {"n": n, "d_k": d_k, "chunk_size": chunk_size, "forget_gate_mean": gate_mean,
            "key_correlation": correlation, "condition_number": condition_number(x),
            "other_processes_cores": busy, "methods": methods}


def report(row: dict) -> str:
    """One case as printed lines: each solver's median and p95 time, its time over exact's, its error."""
    head = (f"N={row['n']} d_k={row['d_k']} C={row['chunk_size']} μ={row['forget_gate_mean']:g} "
            f"ρ={row['key_correlation']:g} κ={row['condition_number']:.0f}:")
    exact = row["methods"][0]["median_s"]
    cells = [f"{m['solver'] if m['cg_iterations'] is None else 'cg' + str(m['cg_iterations'])} "
             f"{1e3 * m['median_s']:.1f} ms (p95 {1e3 * m['p95_s']:.1f}, ×{m['median_s'] / exact:.2f}) "
             f"err {m['relative_error']:.1e}" for m in row["methods"]]
    return "\n  ".join([head, *cells])


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="where to write the record")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="timed calls of each solver per case")
    parser.add_argument("--smoke", action="store_true", help="tiny cases only (a test of the script)")
    args = parser.parse_args(argv)
    start, load_start = time.perf_counter(), list(os.getloadavg())
    rows = []
    for case in SMOKE_CASES if args.smoke else CASES:
        rows.append(measure(case, args.rounds))
        print(report(rows[-1]), flush=True)
    record = {"description": __doc__.splitlines()[0], "recorded": time.strftime("%Y-%m-%d %H:%M:%S"),
              "machine": machine_info(engines=True),
              "settings": {"rounds": args.rounds, "dtype": "float64", "heads": HEADS, "ridge": RIDGE,
                           "cg_iterations": list(CG_ITERATIONS), "smoke": args.smoke,
                           "reference": "form='recurrent', solver='exact'"},
              "load_average_start": load_start, "load_average_end": list(os.getloadavg()),
              "wall_seconds": time.perf_counter() - start, "cases": rows}
    print(f"written: {records.save_record(record, args.out)}")
    return record


if __name__ == "__main__":
    main()
