"""The families ``lattn-edu bench`` runs, as data for the one runner (:func:`.harness.run_family`).

- ``linear`` (the default): causal linear attention, every form of ours on every backend,
  against the torch chunkwise peer and against causal softmax attention, with numpy's sgemm
  as the ceiling; it records ``bench.json``, the run chapters 3 and 9 read. Its methods are
  in :mod:`.methods`; how a shape becomes rows and how decoding is timed are below.
- ``gated``: the gated family's chunkwise kernels against their torch peers
  (:mod:`.gated`); it records ``bench_gated.json``.

A new family is one more :class:`.methods.Family` in :data:`FAMILIES`.
"""

from __future__ import annotations

import numpy as np
from tqdm import tqdm

import lattn_edu as la

from .gated import GATED
from .harness import advance, time_once
from .methods import (EPS, FULL, OUR_CHUNK, QUICK, Family, Method, Settings, Shape, compiled_peer_note,
                      make_inputs, peer_chunk_size, reference, timed_methods)
from .plots import PLOTS
from .results import CSV_FIELDS, report
from .summary import crossovers, decode_summary, per_shape_summary, targets


def linear_rows(shape: Shape) -> list[dict]:
    """One row per method at this shape: its times and GFLOP/s, or why it was skipped."""
    common = {"d": shape.d, "n": shape.n, "batch_heads": shape.batch_heads}
    machine = {"sgemm_gflops_same_rounds": shape.sgemm_gflops, "load_average": shape.load_average,
               "other_processes_cores": shape.other_processes_cores}
    rows = []
    for method in shape.timed:
        times = np.array(shape.samples[method.name])
        median = float(np.median(times))
        rows.append({**_describe(method), **common, "status": "ok", "reason": "", "median_s": median,
                     "min_s": float(times.min()), "max_s": float(times.max()), "runs": len(times),
                     "first_call_s": shape.first_call_s.get(method.name),
                     "gflops": method.flops(shape.n, shape.d, shape.batch_heads) / median / 1e9, **machine})
    for method, reason in shape.skipped:
        rows.append({**_describe(method), **common, "status": "skipped", "reason": reason, "median_s": None,
                     "min_s": None, "max_s": None, "runs": 0, "first_call_s": None, "gflops": None, **machine})
    return rows


def _describe(method: Method) -> dict:
    return {"method": method.name, "family": method.family, "origin": method.origin,
            "backend": method.backend, "form": method.form}


def linear_decoding(settings: Settings, progress: tqdm, seed: int = 3) -> list[dict]:
    """Per-token time of one decoding step with N tokens already seen: the fixed-size
    LinearAttentionState against the growing SoftmaxKVCache (float32, one head).

    The states after each N take turns step by step, as the gated family's do, so that they
    share whatever the machine does meanwhile: a state's step does not depend on N, and this
    is what shows it. Each cache is stepped in its own loop, as a decoder would run it (a
    KV-cache step streams the whole cache through memory and would evict everything else from
    the caches if it alternated). The cache gains one token per step, so its steps are kept
    to at most 5% of N."""
    rows = []
    rng = np.random.default_rng(seed)
    steps = settings.decode_steps
    for d in settings.dims:
        seen = {n: rng.standard_normal((2, n, d), dtype=np.float32) for n in settings.decode_sizes}
        tokens = rng.standard_normal((steps, 3, d), dtype=np.float32)
        features = la.elu_plus_one(tokens[:, :2])
        states = {}
        for n, (keys, values) in seen.items():
            states[n] = la.LinearAttentionState(d, d, dtype=np.float32)
            states[n].update(la.elu_plus_one(keys), values)
        state_times: dict[int, list[float]] = {n: [] for n in seen}
        for t in range(steps):
            for n, state in states.items():
                state_times[n].append(time_once(lambda: state.step(features[t, 0], features[t, 1], tokens[t, 2])))
        for n, (keys, values) in seen.items():
            cache = la.SoftmaxKVCache(d, d, dtype=np.float32, capacity=n + steps + 1)
            for key, value in zip(keys, values):
                cache.append(key, value)
            cache_steps = max(10, min(steps, n // 20))
            cache_times = [time_once(lambda: cache.step(tokens[t % steps, 0], tokens[t % steps, 1],
                                                        tokens[t % steps, 2]))
                           for t in range(cache_steps)]
            for name, times, held in (("LinearAttentionState.step", state_times[n], states[n].nbytes),
                                      ("SoftmaxKVCache.step", cache_times, cache.nbytes)):
                rows.append({"method": name, "d": d, "n": n, "steps": len(times),
                             "median_s": float(np.median(times)), "p95_s": float(np.percentile(times, 95)),
                             "bytes_held": int(held)})
            del cache
        advance(progress, 1, f"decoding d={d}")
    return rows


def linear_summary(rows: list[dict], decode: list[dict], settings: Settings) -> dict:
    """Per shape, the crossovers with softmax, decoding growth and the targets (:mod:`.summary`)."""
    shapes = per_shape_summary(rows, settings.dims, settings.sizes)
    decoding = decode_summary(decode)
    return {"per_shape": shapes, "crossover": crossovers(rows, settings.dims), "decode": decoding,
            "targets": targets(shapes, decoding)}


LINEAR = Family(
    name="linear", record_name="bench.json",
    description=("For d in (32, 64, 128) and N from 128 to 65,536 (batch·heads = 8, float32, elu+1 features, "
                 "normalised, d_v = d) it times, on the same inputs and interleaved round by round so that "
                 "a busy machine slows every method alike:"),
    full=FULL, quick=QUICK, methods=timed_methods, make_inputs=make_inputs, reference=reference,
    shape_rows=linear_rows, decode=linear_decoding, summarise=linear_summary, report=report,
    notes=lambda backends: {"chunk_size": OUR_CHUNK,
                            "peer_chunk_size": {str(d): peer_chunk_size("linear", d) for d in FULL.dims},
                            "eps": EPS, "dtype": "float32",
                            "feature_map": "elu+1",
                            "flops_per_token": "4*d*d_v (linear); (N+1)*(d+d_v) (causal softmax)",
                            "backends": list(backends), "compiled_peer": compiled_peer_note()},
    csv_fields=CSV_FIELDS, plots=PLOTS)

FAMILIES = {family.name: family for family in (LINEAR, GATED)}
