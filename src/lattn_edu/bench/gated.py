"""``lattn-edu bench --gated``: the gated family's chunkwise kernels against torch peers (chapters 9-11).

For d in (64, 128) and N from 1,024 to 16,384 (batch·heads = 8, float32, d_v = d, chunks of
64) it times three chunkwise forms of ours, each through the public function on the numba
backend, against its peer in :mod:`lattn_edu.bench.peers` (written the way
flash-linear-attention's naive chunk references are), interleaved round by round on the
same inputs:

- gated linear attention with one log decay per step (Mamba-2, simple GLA);
- gated linear attention with one log decay per key channel (GLA);
- the gated delta rule (Gated DeltaNet), unit-norm keys.

Before any timing every method is checked against the float64 numpy reference. Then it times
decoding: one token through the recurrent form with the state carried, after 1k, 10k and 100k
tokens (the numba backend's recurrent form called directly, as a decoder would), which should
cost the same whatever came before. The record goes to ``bench_gated.json`` in
``benchmarks/results/`` under the current directory (``--quick``: ``benchmarks/results/quick/``;
or ``--out``), with the load average and the cores other processes kept busy, since the
machine may be shared: the ratios of interleaved timings are what to read, not the absolute
times. ``lattn_edu.bench.load_results(path)`` reads it back.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np
from tqdm import tqdm

import lattn_edu as la

from .. import records
from ..machine import machine_info
from .cli import output_folder
from ..compare import relative_error
from .harness import OtherLoad, advance, time_interleaved, time_once

DIMS = (64, 128)
SIZES = (1024, 2048, 4096, 8192, 16384)
QUICK_SIZES = (1024, 4096)
DECODE_SIZES = (1_000, 10_000, 100_000)
BATCH_HEADS = 8
CHUNK = 64
TOLERANCE = 1e-4  # float32 against the float64 reference (RMS relative)
FAMILIES = ("gated, scalar decay", "gated, vector decay", "delta rule")


@dataclass(frozen=True)
class GatedSettings:
    """How much to measure (the fields :func:`.harness.time_interleaved` reads, and sizes)."""

    sizes: tuple[int, ...]
    dims: tuple[int, ...]
    batch_heads: int
    min_rounds: int
    max_rounds: int
    shape_seconds: float
    decode_sizes: tuple[int, ...]
    decode_steps: int


FULL = GatedSettings(SIZES, DIMS, BATCH_HEADS, min_rounds=5, max_rounds=15, shape_seconds=6.0,
                     decode_sizes=DECODE_SIZES, decode_steps=300)
QUICK = GatedSettings(QUICK_SIZES, DIMS, BATCH_HEADS, min_rounds=3, max_rounds=7, shape_seconds=1.0,
                      decode_sizes=DECODE_SIZES, decode_steps=100)


def make_inputs(n: int, d: int, bh: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded float32 inputs [bh, N, ·]: q, k, unit-norm keys, v, decays as gates produce them
    (log-sigmoid-like, mostly close to 0) and β in (0, 1)."""
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((3, bh, n, d), dtype=np.float32)
    return {"q": q, "k": k, "v": v, "unit_k": k / np.linalg.norm(k, axis=-1, keepdims=True),
            "g_scalar": np.log(rng.uniform(0.9, 1.0, (bh, n))).astype(np.float32),
            "g_vector": np.log(rng.uniform(0.9, 1.0, (bh, n, d))).astype(np.float32),
            "beta": rng.uniform(0.0, 1.0, (bh, n)).astype(np.float32)}


def calls(family: str, x: dict[str, Any]) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(ours, peer) for a family on inputs x (numpy arrays; the peer gets torch views of them)."""
    import torch

    from . import peers

    t = {name: torch.from_numpy(a) for name, a in x.items()}
    if family == "delta rule":
        return (lambda: la.delta_rule(x["q"], x["unit_k"], x["v"], x["beta"], x["g_scalar"], backend="numba",
                                      chunk_size=CHUNK),
                lambda: peers.torch_chunkwise_delta_rule(t["q"], t["unit_k"], t["v"], t["beta"],
                                                         t["g_scalar"], chunk_size=CHUNK))
    gate = "g_scalar" if family == "gated, scalar decay" else "g_vector"
    peer = peers.torch_chunkwise_simple_gla if gate == "g_scalar" else peers.torch_chunkwise_gla
    return (lambda: la.gated_linear_attention(x["q"], x["k"], x["v"], x[gate], backend="numba",
                                              chunk_size=CHUNK),
            lambda: peer(t["q"], t["k"], t["v"], t[gate], chunk_size=CHUNK))


def reference(family: str, x: dict[str, np.ndarray]) -> np.ndarray:
    """The float64 numpy chunkwise form of ``family`` on x."""
    y = {name: a.astype(np.float64) for name, a in x.items()}
    if family == "delta rule":
        return la.delta_rule(y["q"], y["unit_k"], y["v"], y["beta"], y["g_scalar"])
    return la.gated_linear_attention(y["q"], y["k"], y["v"],
                                     y["g_scalar" if family == "gated, scalar decay" else "g_vector"])


def check_correctness(dims: tuple[int, ...], n: int = 200, bh: int = 4) -> list[dict]:
    """Ours and the peer against the float64 reference, N not a multiple of the chunk; this also
    compiles the numba kernels before anything is timed."""
    import torch

    rows = []
    for d in dims:
        x = make_inputs(n, d, bh, seed=7)
        for family in FAMILIES:
            expected = reference(family, x)
            for origin, call in zip(("ours", "peer"), calls(family, x)):
                with torch.inference_mode():
                    error = relative_error(call(), expected)
                rows.append({"family": family, "origin": origin, "d": d, "n": n, "relative_error": error,
                             "ok": error <= TOLERANCE})
    return rows


def benchmark_shapes(settings: GatedSettings, progress: tqdm) -> list[dict]:
    """Every family's (ours, peer) pair on every (d, N), all six calls interleaved per round."""
    import torch

    rows, others = [], OtherLoad()
    for d in settings.dims:
        for n in settings.sizes:
            x = make_inputs(n, d, settings.batch_heads)
            timed = {}
            for family in FAMILIES:
                timed[(family, "ours")], timed[(family, "peer")] = calls(family, x)
            named = {f"{family} / {origin}": call for (family, origin), call in timed.items()}
            with torch.inference_mode():
                estimates = {name: time_once(call) for name, call in named.items()}  # untimed first call
                others.cores()
                samples = time_interleaved(named, estimates, settings)
            busy = others.cores()
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
            for family in FAMILIES:
                ours = np.array(samples[f"{family} / ours"])
                peer = np.array(samples[f"{family} / peer"])
                per_round = peer / ours  # the same round: both saw the same machine
                rows.append({
                    "family": family, "d": d, "n": n, "batch_heads": settings.batch_heads, "runs": len(ours),
                    "ours_median_s": float(np.median(ours)), "ours_p95_s": float(np.percentile(ours, 95)),
                    "peer_median_s": float(np.median(peer)), "peer_p95_s": float(np.percentile(peer, 95)),
                    "ratio": float(np.median(peer) / np.median(ours)),
                    "ratio_per_round_median": float(np.median(per_round)),
                    "ratio_per_round_p5": float(np.percentile(per_round, 5)),
                    "load_average": load, "other_processes_cores": busy})
            advance(progress, 1, f"d={d} N={n:,}")
    return rows


def _family_step(family: str, x: dict[str, np.ndarray], n: int, form: str, state: Any) -> Any:
    """(o, final state) of ``family`` on the first n tokens of x from ``state``: the numba
    backend's form called directly, as a decoder would call it once per token (the public
    function's argument checks cost more than the step itself)."""
    from ..backends import numba_backend

    part = {name: a[:, :n] for name, a in x.items()}
    scale = x["q"].shape[-1] ** -0.5
    if family == "delta rule":
        return numba_backend.DELTA_FORMS[form](part["q"], part["unit_k"], part["v"], part["beta"],
                                               part["g_scalar"], scale, state, CHUNK)
    return numba_backend.GATED_FORMS[form](part["q"], part["k"], part["v"], part["g_scalar"], scale, state,
                                           CHUNK)


def benchmark_decoding(dims: tuple[int, ...], sizes: tuple[int, ...], steps: int, progress: tqdm,
                       seed: int = 3) -> list[dict]:
    """Per-token time of one recurrent step (numba) with the state after N tokens carried in:
    gated (scalar decay) and the delta rule, one head, float32. The sizes take turns step by
    step, so that they share whatever the machine does meanwhile."""
    rows = []
    for d in dims:
        x = make_inputs(max(sizes) + steps, d, 1, seed=seed)
        tokens = [{name: a[:, t:t + 1] for name, a in x.items()} for t in range(max(sizes) + steps)]
        for family in ("gated, scalar decay", "delta rule"):
            states = {n: _family_step(family, x, n, "chunkwise", None)[1] for n in sizes}  # after n tokens
            times: dict[int, list[float]] = {n: [] for n in sizes}
            for t in range(steps):
                for n in sizes:
                    tick = time.perf_counter()
                    _, states[n] = _family_step(family, tokens[n + t], 1, "recurrent", states[n])
                    times[n].append(time.perf_counter() - tick)
            for n in sizes:
                rows.append({"family": family, "d": d, "n": n, "steps": steps,
                             "median_s": float(np.median(times[n][1:])),  # the first call compiles
                             "p95_s": float(np.percentile(times[n][1:], 95)),
                             "state_bytes": int(states[n].nbytes)})
            advance(progress, len(sizes), f"decoding d={d} {family}")
    return rows


def summarise(rows: list[dict], decode: list[dict]) -> dict:
    """The targets: ratio >= 1 (and >= 1.5) at d in {64, 128} and N >= 1k; decoding flat in N."""
    eligible = [r for r in rows if r["d"] in (64, 128) and r["n"] >= 1000]
    ratios = [r["ratio"] for r in eligible]
    growth = []
    for (family, d), group in _group(decode, ("family", "d")).items():
        group.sort(key=lambda r: r["n"])
        growth.append({"family": family, "d": d, "n_small": group[0]["n"], "n_large": group[-1]["n"],
                       "growth": group[-1]["median_s"] / group[0]["median_s"]})
    return {"ratio_at_least_1": {"shapes": len(ratios), "met": sum(r >= 1.0 for r in ratios),
                                 "min_ratio": min(ratios) if ratios else None},
            "ratio_at_least_1_5": {"shapes": len(ratios), "met": sum(r >= 1.5 for r in ratios)},
            "decode_growth": growth,
            "decode_flat_within_1_2": all(g["growth"] <= 1.2 for g in growth)}


def _group(rows: list[dict], keys: tuple[str, ...]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    return groups


def report(record: dict) -> str:
    """The table: per family, d and N, the medians and p95 of both and their ratio."""
    lines = [f"load average {record['load_average_start']} -> {record['load_average_end']}; wall time "
             f"{record['wall_seconds']:.0f} s",
             f"{'family':<20} {'d':>4} {'N':>6} {'ours ms':>9} {'p95':>8} {'peer ms':>9} {'p95':>8} "
             f"{'ratio':>6} {'per-round p5':>13}"]
    for r in record["results"]:
        lines.append(f"{r['family']:<20} {r['d']:>4} {r['n']:>6} {1e3 * r['ours_median_s']:>9.1f} "
                     f"{1e3 * r['ours_p95_s']:>8.1f} {1e3 * r['peer_median_s']:>9.1f} "
                     f"{1e3 * r['peer_p95_s']:>8.1f} "
                     f"{r['ratio']:>6.2f} {r['ratio_per_round_p5']:>13.2f}")
    for r in record["decode"]:
        lines.append(f"decode {r['family']:<20} d={r['d']:>3} after N={r['n']:>7,}: "
                     f"{1e6 * r['median_s']:.1f} µs per token (p95 {1e6 * r['p95_s']:.1f})")
    lines.append("targets: " + json.dumps(record["summary"]))
    return "\n".join(lines)


def run(args: argparse.Namespace, started: float) -> int:
    """``lattn-edu bench --gated``: check, time, write bench_gated.json, print the table."""
    settings = QUICK if args.quick else FULL
    for option in ("dims", "sizes"):
        if getattr(args, option):
            settings = replace(settings, **{option: tuple(sorted(set(getattr(args, option))))})
    out = output_folder(args)
    out.mkdir(parents=True, exist_ok=True)
    load_start = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    steps = len(settings.dims) * (len(settings.sizes) + 2 * len(settings.decode_sizes)) + 1
    progress = tqdm(total=steps, desc="lattn-edu bench --gated", disable=args.no_progress, file=sys.stderr)
    correctness = check_correctness(settings.dims)
    advance(progress, 1, "checked against the reference")
    wrong = [c for c in correctness if not c["ok"]]
    if wrong:
        progress.close()
        for c in wrong:
            print(f"lattn-edu bench: {c['family']} ({c['origin']}, d={c['d']}) disagrees with the float64 "
                  f"reference: relative error {c['relative_error']:.2e} > {TOLERANCE:g}",
                  file=sys.stderr)
        return 1
    rows = benchmark_shapes(settings, progress)
    decode = benchmark_decoding(settings.dims, settings.decode_sizes, settings.decode_steps, progress)
    progress.close()
    record = {
        "schema": 1, "description": __doc__.split("\n\n")[1].replace("\n", " "), "quick": bool(args.quick),
        "recorded": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine_info(engines=True),
        "settings": {**{k: (list(v) if isinstance(v, tuple) else v) for k, v in settings.__dict__.items()},
                     "chunk_size": CHUNK, "dtype": "float32",
                     "ours": "numba chunkwise, through the public function"},
        "load_average_start": load_start,
        "load_average_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "correctness": correctness, "results": rows, "decode": decode, "summary": summarise(rows, decode),
    }
    record["wall_seconds"] = time.perf_counter() - started
    path = records.write_record(record, out / "bench_gated.json")
    print(report(record))
    print(f"written: {path}")
    return 0

