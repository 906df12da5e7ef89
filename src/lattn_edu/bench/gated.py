"""The gated family of ``lattn-edu bench --families gated``: chunkwise kernels against torch peers (chapters 9-11).

For d in (64, 128) and N from 1,024 to 16,384 (batch·heads = 8, float32, d_v = d, chunks of
64) it times five chunkwise forms of ours, each through the public function on the numba
backend, against its peer in :mod:`lattn_edu.bench.peers` (written the way
flash-linear-attention's naive chunk references are), interleaved round by round on the
same inputs:

- gated linear attention with one log decay per step (Mamba-2, simple GLA);
- gated linear attention with one log decay per key channel (GLA);
- the gated delta rule (Gated DeltaNet), unit-norm keys;
- Kimi Delta Attention (the delta rule with one log decay per key channel), unit-norm keys;
- Gated DeltaProduct with n_h = 2 keys per token, unit-norm keys (ours: chunks of 64 tokens,
  128 steps; the peer: chunks of 64 steps, as flash-linear-attention's chunk reference runs it).

Before any timing every method is checked against the float64 numpy reference. Then it times
decoding: one token through the recurrent form with the state carried, after 1k, 10k and 100k
tokens (the numba backend's recurrent form called directly, as a decoder would), which should
cost the same whatever came before. This module describes the family (:data:`GATED`); the
runner (:func:`.harness.run_family`) times it like every other family and the command
records ``bench_gated.json`` in its ``--out`` folder, with the load average and the cores
other processes kept busy, since the machine may be shared: the ratios of interleaved
timings are what to read, not the absolute times. ``lattn_edu.bench.load_results(path)``
reads it back.
"""
from __future__ import annotations

import json
import time
from typing import Any, Callable

import numpy as np
from tqdm import tqdm

import lattn_edu as la

from .harness import advance
from .methods import BATCH_HEADS, CHUNK, DECODE_SIZES, Family, Method, Settings, Shape

DIMS = (64, 128)
SIZES = (1024, 2048, 4096, 8192, 16384)
QUICK_SIZES = (1024, 4096)
VARIANTS = ("gated, scalar decay", "gated, vector decay", "delta rule", "kimi delta attention",
            "delta product")
ORIGINS = ("ours", "peer")

# No size limit binds here (the forms are all linear in N and allocate per chunk), hence the
# generous limits; there is no sgemm ceiling, since the rows compare each form with its peer.
FULL = Settings(SIZES, DIMS, BATCH_HEADS, min_rounds=5, max_rounds=15, shape_seconds=6.0, max_call_s=60.0,
                memory_budget=4 * 2**30, sgemm_size=None, decode_sizes=DECODE_SIZES, decode_steps=300)
QUICK = Settings(QUICK_SIZES, DIMS, BATCH_HEADS, min_rounds=3, max_rounds=7, shape_seconds=1.0, max_call_s=60.0,
                 memory_budget=4 * 2**30, sgemm_size=None, decode_sizes=DECODE_SIZES, decode_steps=100)


def make_inputs(n: int, d: int, bh: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded float32 inputs [bh, N, ·]: q, k, unit-norm keys, v, decays as gates produce them
    (log-sigmoid-like, mostly close to 0) and β in (0, 1); and DeltaProduct's two unit-norm keys,
    values and β per token, [bh, N, 2, ·] (drawn last, so the other inputs do not change)."""
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((3, bh, n, d), dtype=np.float32)
    x = {"q": q, "k": k, "v": v, "unit_k": k / np.linalg.norm(k, axis=-1, keepdims=True),
         "g_scalar": np.log(rng.uniform(0.9, 1.0, (bh, n))).astype(np.float32),
         "g_vector": np.log(rng.uniform(0.9, 1.0, (bh, n, d))).astype(np.float32),
         "beta": rng.uniform(0.0, 1.0, (bh, n)).astype(np.float32)}
    k2, v2 = rng.standard_normal((2, bh, n, 2, d), dtype=np.float32)
    return {**x, "unit_k2": k2 / np.linalg.norm(k2, axis=-1, keepdims=True), "v2": v2,
            "beta2": rng.uniform(0.0, 1.0, (bh, n, 2)).astype(np.float32)}


def calls(variant: str, x: dict[str, Any]) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """(ours, peer) for a variant on inputs x (numpy arrays; the peer gets torch views of them)."""
    import torch

    from . import peers

    t = {name: torch.from_numpy(a) for name, a in x.items()}
    if variant == "delta rule":
        return (lambda: la.delta_rule(x["q"], x["unit_k"], x["v"], x["beta"], x["g_scalar"], backend="numba",
                                      chunk_size=CHUNK),
                lambda: peers.torch_chunkwise_delta_rule(t["q"], t["unit_k"], t["v"], t["beta"],
                                                         t["g_scalar"], chunk_size=CHUNK))
    if variant == "kimi delta attention":
        return (lambda: la.delta_rule(x["q"], x["unit_k"], x["v"], x["beta"], x["g_vector"], backend="numba",
                                      chunk_size=CHUNK),
                lambda: peers.torch_chunkwise_kda(t["q"], t["unit_k"], t["v"], t["beta"], t["g_vector"],
                                                  chunk_size=CHUNK))
    if variant == "delta product":
        return (lambda: la.delta_product(x["q"], x["unit_k2"], x["v2"], x["beta2"], x["g_scalar"], backend="numba",
                                         chunk_size=CHUNK),
                lambda: peers.torch_chunkwise_delta_product(t["q"], t["unit_k2"], t["v2"], t["beta2"],
                                                            t["g_scalar"], chunk_size=CHUNK))
    gate = "g_scalar" if variant == "gated, scalar decay" else "g_vector"
    peer = peers.torch_chunkwise_simple_gla if gate == "g_scalar" else peers.torch_chunkwise_gla
    return (lambda: la.gated_linear_attention(x["q"], x["k"], x["v"], x[gate], backend="numba",
                                              chunk_size=CHUNK),
            lambda: peer(t["q"], t["k"], t["v"], t[gate], chunk_size=CHUNK))


def gated_methods(backends: tuple[str, ...]) -> list[Method]:
    """Ours (numba, whatever ``backends`` says: the peers are the comparison) and the peer, per variant."""
    found = []
    for variant in VARIANTS:
        for which, origin in enumerate(ORIGINS):
            found.append(Method(f"{variant} / {origin}", variant, origin, "numba" if origin == "ours" else "torch",
                                "chunkwise", lambda x, v=variant, i=which: calls(v, x)[i],
                                lambda n, d, bh: 0.0, 1))
    return found


def reference(variant: str, x: dict[str, np.ndarray]) -> np.ndarray:
    """The float64 numpy chunkwise form of ``variant`` on x."""
    y = {name: a.astype(np.float64) for name, a in x.items()}
    if variant == "delta rule":
        return la.delta_rule(y["q"], y["unit_k"], y["v"], y["beta"], y["g_scalar"])
    if variant == "kimi delta attention":
        return la.delta_rule(y["q"], y["unit_k"], y["v"], y["beta"], y["g_vector"])
    if variant == "delta product":
        return la.delta_product(y["q"], y["unit_k2"], y["v2"], y["beta2"], y["g_scalar"])
    return la.gated_linear_attention(y["q"], y["k"], y["v"],
                                     y["g_scalar" if variant == "gated, scalar decay" else "g_vector"])


def pair_rows(shape: Shape) -> list[dict]:
    """One row per variant: ours and the peer, their medians and p95, and the ratio of the two,
    also round by round (the same round: both saw the same machine)."""
    rows = []
    timed = {m.name for m in shape.timed}
    for variant in VARIANTS:
        if not {f"{variant} / {origin}" for origin in ORIGINS} <= timed:
            continue
        ours = np.array(shape.samples[f"{variant} / ours"])
        peer = np.array(shape.samples[f"{variant} / peer"])
        per_round = peer / ours
        rows.append({
            "family": variant, "d": shape.d, "n": shape.n, "batch_heads": shape.batch_heads, "runs": len(ours),
            "ours_median_s": float(np.median(ours)), "ours_p95_s": float(np.percentile(ours, 95)),
            "peer_median_s": float(np.median(peer)), "peer_p95_s": float(np.percentile(peer, 95)),
            "ratio": float(np.median(peer) / np.median(ours)),
            "ratio_per_round_median": float(np.median(per_round)),
            "ratio_per_round_p5": float(np.percentile(per_round, 5)),
            "load_average": shape.load_average, "other_processes_cores": shape.other_processes_cores})
    return rows


def _variant_step(variant: str, x: dict[str, np.ndarray], n: int, form: str, state: Any) -> Any:
    """(o, final state) of ``variant`` on the first n tokens of x from ``state``: the numba
    backend's form called directly, as a decoder would call it once per token (the public
    function's argument checks cost more than the step itself)."""
    from ..backends import numba_backend

    part = {name: a[:, :n] for name, a in x.items()}
    scale = x["q"].shape[-1] ** -0.5
    if variant == "delta rule":
        return numba_backend.DELTA_FORMS[form](part["q"], part["unit_k"], part["v"], part["beta"],
                                               part["g_scalar"], scale, state, CHUNK)
    return numba_backend.GATED_FORMS[form](part["q"], part["k"], part["v"], part["g_scalar"], scale, state,
                                           CHUNK)


def gated_decoding(settings: Settings, progress: tqdm, seed: int = 3) -> list[dict]:
    """Per-token time of one recurrent step (numba) with the state after N tokens carried in:
    gated (scalar decay) and the delta rule, one head, float32. The sizes take turns step by
    step, so that they share whatever the machine does meanwhile."""
    rows = []
    sizes, steps = settings.decode_sizes, settings.decode_steps
    for d in settings.dims:
        x = make_inputs(max(sizes) + steps, d, 1, seed=seed)
        tokens = [{name: a[:, t:t + 1] for name, a in x.items()} for t in range(max(sizes) + steps)]
        for variant in ("gated, scalar decay", "delta rule"):
            states = {n: _variant_step(variant, x, n, "chunkwise", None)[1] for n in sizes}  # after n tokens
            times: dict[int, list[float]] = {n: [] for n in sizes}
            for t in range(steps):
                for n in sizes:
                    tick = time.perf_counter()
                    _, states[n] = _variant_step(variant, tokens[n + t], 1, "recurrent", states[n])
                    times[n].append(time.perf_counter() - tick)
            for n in sizes:
                rows.append({"family": variant, "d": d, "n": n, "steps": steps,
                             "median_s": float(np.median(times[n][1:])),  # the first call compiles
                             "p95_s": float(np.percentile(times[n][1:], 95)),
                             "state_bytes": int(states[n].nbytes)})
        advance(progress, 1, f"decoding d={d}")
    return rows


def summarise(rows: list[dict], decode: list[dict], settings: Settings | None = None) -> dict:
    """The targets: ratio >= 1 (and >= 1.5) at d in {64, 128} and N >= 1k; decoding flat in N."""
    eligible = [r for r in rows if r["d"] in (64, 128) and r["n"] >= 1000]
    ratios = [r["ratio"] for r in eligible]
    growth = []
    for (variant, d), group in _group(decode, ("family", "d")).items():
        group.sort(key=lambda r: r["n"])
        growth.append({"family": variant, "d": d, "n_small": group[0]["n"], "n_large": group[-1]["n"],
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
    """The table: per variant, d and N, the medians and p95 of both and their ratio."""
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


GATED = Family(
    name="gated", record_name="bench_gated.json", description=__doc__.split("\n\n")[1].replace("\n", " "),
    full=FULL, quick=QUICK, methods=gated_methods, make_inputs=make_inputs, reference=reference,
    shape_rows=pair_rows, decode=gated_decoding, summarise=summarise, report=report,
    notes=lambda backends: {"chunk_size": CHUNK, "dtype": "float32",
                            "ours": "numba chunkwise, through the public function"})
