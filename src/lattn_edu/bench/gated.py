"""The gated family of ``lattn-edu bench --families gated``: chunkwise kernels against torch peers (chapters 9-11).

For d in (64, 128) and N from 1,024 to 16,384 (batch·heads = 8, float32, d_v = d; ours in
chunks of 32 tokens, the peers in chunks of 64, each the length it is fastest with here) it
times five chunkwise forms of ours, each through the public function on the numba
backend, against its peer in :mod:`lattn_edu.bench.peers` (written the way
flash-linear-attention's naive chunk references are), run eagerly and compiled
(``torch.compile``, inductor; not in ``--quick``), with numpy's sgemm as the ceiling,
interleaved round by round on the same inputs:

- gated linear attention with one log decay per step (Mamba-2, simple GLA);
- gated linear attention with one log decay per key channel (GLA);
- the gated delta rule (Gated DeltaNet), unit-norm keys;
- Kimi Delta Attention (the delta rule with one log decay per key channel), unit-norm keys;
- Gated DeltaProduct with n_h = 2 keys per token, unit-norm keys (ours counts its chunks in
  tokens, two steps each; the peer counts them in steps, as flash-linear-attention's chunk
  reference runs it).

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
from .plots import GATED_PLOTS
from .methods import (BATCH_HEADS, DECODE_SIZES, OUR_CHUNK, PEER_CHUNK, Family, Method, Settings, Shape,
                      compiled_peer_note, peer_chunk_size)

DIMS = (64, 128)
SIZES = (1024, 2048, 4096, 8192, 16384)
QUICK_SIZES = (1024, 4096)
VARIANTS = ("gated, scalar decay", "gated, vector decay", "delta rule", "kimi delta attention",
            "delta product")
ORIGINS = ("ours", "peer", "compiled peer")
# Work credited per token, in multiples of d·d_v FLOPs, whatever a form really computes (as
# the linear family credits 4·d·d_v): an additive rule writes and reads its state (4); the
# delta rule also reads Sᵀk before each write (6); DeltaProduct does that twice per token and
# reads once (10).
CREDITED_WORK = {"gated, scalar decay": 4, "gated, vector decay": 4, "delta rule": 6, "kimi delta attention": 6,
                 "delta product": 10}

# No size limit binds here (the forms are all linear in N and allocate per chunk), hence the
# generous limits; the full run times sgemm in the same rounds, the ceiling for the credited
# GFLOP/s.
FULL = Settings(SIZES, DIMS, BATCH_HEADS, min_rounds=5, max_rounds=15, shape_seconds=6.0, max_call_s=60.0,
                memory_budget=4 * 2**30, sgemm_size=2048, decode_sizes=DECODE_SIZES, decode_steps=300)
QUICK = Settings(QUICK_SIZES, DIMS, BATCH_HEADS, min_rounds=3, max_rounds=7, shape_seconds=1.0, max_call_s=60.0,
                 memory_budget=4 * 2**30, sgemm_size=None, decode_sizes=DECODE_SIZES, decode_steps=100,
                 compiled_peers=False)


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


def calls(variant: str, x: dict[str, Any], chunk: int = OUR_CHUNK, peer_chunk: int = PEER_CHUNK
          ) -> tuple[Callable[[], Any], Callable[[], Any], Callable[[], Any]]:
    """(ours, peer, compiled peer) for a variant on inputs x (numpy arrays; the peers get torch
    views of them): ours in chunks of ``chunk``, the peers of ``peer_chunk``."""
    import torch

    from . import peers

    t = {name: torch.from_numpy(a) for name, a in x.items()}
    if variant == "delta rule":
        ours = lambda: la.delta_rule(x["q"], x["unit_k"], x["v"], x["beta"], x["g_scalar"],  # noqa: E731
                                     backend="numba", chunk_size=chunk)
        peer, args = peers.torch_chunkwise_delta_rule, (t["q"], t["unit_k"], t["v"], t["beta"], t["g_scalar"])
    elif variant == "kimi delta attention":
        ours = lambda: la.delta_rule(x["q"], x["unit_k"], x["v"], x["beta"], x["g_vector"],  # noqa: E731
                                     backend="numba", chunk_size=chunk)
        peer, args = peers.torch_chunkwise_kda, (t["q"], t["unit_k"], t["v"], t["beta"], t["g_vector"])
    elif variant == "delta product":
        ours = lambda: la.delta_product(x["q"], x["unit_k2"], x["v2"], x["beta2"], x["g_scalar"],  # noqa: E731
                                        backend="numba", chunk_size=chunk)
        peer, args = peers.torch_chunkwise_delta_product, (t["q"], t["unit_k2"], t["v2"], t["beta2"], t["g_scalar"])
    else:
        gate = "g_scalar" if variant == "gated, scalar decay" else "g_vector"
        ours = lambda: la.gated_linear_attention(x["q"], x["k"], x["v"], x[gate], backend="numba",  # noqa: E731
                                                 chunk_size=chunk)
        peer = peers.torch_chunkwise_simple_gla if gate == "g_scalar" else peers.torch_chunkwise_gla
        args = (t["q"], t["k"], t["v"], t[gate])
    return (ours, lambda: peer(*args, chunk_size=peer_chunk),
            lambda: peer(*args, chunk_size=peer_chunk, compiled=True))


def credited_flops(variant: str, n: int, d: int, bh: int) -> float:
    """FLOPs credited to ``variant`` on N tokens of head width d = d_v (:data:`CREDITED_WORK`)."""
    return float(CREDITED_WORK[variant]) * d * d * n * bh


def gated_methods(backends: tuple[str, ...]) -> list[Method]:
    """Ours (numba, whatever ``backends`` says: the peers are the comparison) and the peers, per
    variant; the compiled peer only where torch.compile works here."""
    from . import peers

    compiles = peers.compiler_problem() is None
    found = []
    for variant in VARIANTS:
        for which, origin in enumerate(ORIGINS):
            compiled = origin == "compiled peer"
            if compiled and not compiles:
                continue
            found.append(Method(f"{variant} / {origin}", variant, origin, "numba" if origin == "ours" else "torch",
                                "chunkwise, compiled" if compiled else "chunkwise",
                                lambda x, v=variant, i=which: calls(
                                    v, x, peer_chunk=peer_chunk_size(v, x["q"].shape[-1]))[i],
                                lambda n, d, bh: 0.0, 1,
                                lambda n, d, bh, v=variant: credited_flops(v, n, d, bh), compiled=compiled))
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


def _peer_columns(ours: np.ndarray, peer: np.ndarray, prefix: str, ratio: str) -> dict:
    """A peer's median and p95 (``prefix``_…) and its time over ours (``ratio``), also round by round."""
    per_round = peer / ours
    return {f"{prefix}_median_s": float(np.median(peer)), f"{prefix}_p95_s": float(np.percentile(peer, 95)),
            ratio: float(np.median(peer) / np.median(ours)), f"{ratio}_per_round_median": float(np.median(per_round)),
            f"{ratio}_per_round_p5": float(np.percentile(per_round, 5))}


def pair_rows(shape: Shape) -> list[dict]:
    """One row per variant: ours and each peer, their medians and p95, the ratios (a peer's time
    over ours), also round by round (the same round: both saw the same machine); our credited
    GFLOP/s and its fraction of the sgemm timed in the same rounds; and each method's untimed
    first call (for the compiled peer, its compile time at this shape and one call). The
    compiled peer's columns are None where it was not timed."""
    rows = []
    timed = {m.name for m in shape.timed}
    for variant in VARIANTS:
        names = {origin: f"{variant} / {origin}" for origin in ORIGINS}
        if not {names["ours"], names["peer"]} <= timed:
            continue
        ours = np.array(shape.samples[names["ours"]])
        gflops = credited_flops(variant, shape.n, shape.d, shape.batch_heads) / float(np.median(ours)) / 1e9
        row = {"family": variant, "d": shape.d, "n": shape.n, "batch_heads": shape.batch_heads, "runs": len(ours),
               "ours_median_s": float(np.median(ours)), "ours_p95_s": float(np.percentile(ours, 95)),
               "ours_gflops": gflops, "sgemm_gflops_same_rounds": shape.sgemm_gflops,
               "sgemm_fraction": None if shape.sgemm_gflops is None else gflops / shape.sgemm_gflops,
               **_peer_columns(ours, np.array(shape.samples[names["peer"]]), "peer", "ratio")}
        if names["compiled peer"] in timed:
            row.update(_peer_columns(ours, np.array(shape.samples[names["compiled peer"]]), "compiled",
                                     "compiled_ratio"))
        else:
            row.update(compiled_median_s=None, compiled_p95_s=None, compiled_ratio=None)
        row.update({f"{origin.replace(' ', '_')}_first_call_s": shape.first_call_s.get(name)
                    for origin, name in names.items()},
                   load_average=shape.load_average, other_processes_cores=shape.other_processes_cores)
        rows.append(row)
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
                                               part["g_scalar"], scale, state, OUR_CHUNK)
    return numba_backend.GATED_FORMS[form](part["q"], part["k"], part["v"], part["g_scalar"], scale, state,
                                           OUR_CHUNK)


def gated_decoding(settings: Settings, progress: tqdm, seed: int = 3) -> list[dict]:
    """Per-token time of one recurrent step (numba) with the state after N tokens carried in:
    gated (scalar decay) and the delta rule, one head, float32. The sizes take turns step by
    step, so that they share whatever the machine does meanwhile, and which goes first rotates,
    so that none always follows the loop's bookkeeping."""
    rows = []
    sizes, steps = settings.decode_sizes, settings.decode_steps
    for d in settings.dims:
        x = make_inputs(max(sizes) + steps, d, 1, seed=seed)
        tokens = [{name: a[:, t:t + 1] for name, a in x.items()} for t in range(max(sizes) + steps)]
        for variant in ("gated, scalar decay", "delta rule"):
            states = {n: _variant_step(variant, x, n, "chunkwise", None)[1] for n in sizes}  # after n tokens
            times: dict[int, list[float]] = {n: [] for n in sizes}
            for t in range(steps):
                for n in sizes[t % len(sizes):] + sizes[:t % len(sizes)]:
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
    """The targets, judged at d in {64, 128} and N >= 1k: ours at least as fast as the eager
    peer and 1.5 times the compiled peer (with each variant's worst shape against the
    compiled one); our fraction of sgemm at d = 128, N = 4,096; decoding flat within 10% in N."""
    eligible = [r for r in rows if r["d"] in (64, 128) and r["n"] >= 1000]
    ratios = [r["ratio"] for r in eligible]
    against_compiled = [r for r in eligible if r.get("compiled_ratio") is not None]
    worst = {}
    for (variant,), group in _group(against_compiled, ("family",)).items():
        r = min(group, key=lambda r: r["compiled_ratio"])
        worst[variant] = {"d": r["d"], "n": r["n"], "compiled_ratio": r["compiled_ratio"]}
    growth = []
    for (variant, d), group in _group(decode, ("family", "d")).items():
        group.sort(key=lambda r: r["n"])
        times = [r["median_s"] for r in group]
        growth.append({"family": variant, "d": d, "n_small": group[0]["n"], "n_large": group[-1]["n"],
                       "growth": group[-1]["median_s"] / group[0]["median_s"], "spread": max(times) / min(times)})
    return {"ratio_at_least_1": {"shapes": len(ratios), "met": sum(r >= 1.0 for r in ratios),
                                 "min_ratio": min(ratios) if ratios else None},
            "compiled_ratio_at_least_1_5": {"shapes": len(against_compiled),
                                            "met": sum(r["compiled_ratio"] >= 1.5 for r in against_compiled),
                                            "worst_per_family": worst},
            "sgemm_fraction_d128_n4096": {r["family"]: r.get("sgemm_fraction") for r in rows
                                          if r["d"] == 128 and r["n"] == 4096},
            "decode_growth": growth,
            "decode_flat_within_1_1": all(g["spread"] <= 1.1 for g in growth)}


def _group(rows: list[dict], keys: tuple[str, ...]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    return groups


def report(record: dict) -> str:
    """The table: per variant, d and N, the medians and p95 of ours and the peers, the ratios
    and our fraction of sgemm."""
    lines = [f"load average {record['load_average_start']} -> {record['load_average_end']}; wall time "
             f"{record['wall_seconds']:.0f} s",
             f"{'family':<20} {'d':>4} {'N':>6} {'ours ms':>9} {'p95':>8} {'peer ms':>9} {'p95':>8} "
             f"{'ratio':>6} {'p5/round':>9} {'compiled ms':>12} {'ratio':>6} {'p5/round':>9} {'of sgemm':>9}"]
    for r in record["results"]:
        compiled = (f"{1e3 * r['compiled_median_s']:>12.1f} {r['compiled_ratio']:>6.2f} "
                    f"{r['compiled_ratio_per_round_p5']:>9.2f}" if r.get("compiled_ratio") is not None
                    else f"{'-':>12} {'-':>6} {'-':>9}")
        sgemm = f"{100 * r['sgemm_fraction']:>8.0f}%" if r.get("sgemm_fraction") is not None else f"{'-':>9}"
        lines.append(f"{r['family']:<20} {r['d']:>4} {r['n']:>6} {1e3 * r['ours_median_s']:>9.1f} "
                     f"{1e3 * r['ours_p95_s']:>8.1f} {1e3 * r['peer_median_s']:>9.1f} {1e3 * r['peer_p95_s']:>8.1f} "
                     f"{r['ratio']:>6.2f} {r['ratio_per_round_p5']:>9.2f} {compiled} {sgemm}")
    for r in record["decode"]:
        lines.append(f"decode {r['family']:<20} d={r['d']:>3} after N={r['n']:>7,}: "
                     f"{1e6 * r['median_s']:.1f} µs per token (p95 {1e6 * r['p95_s']:.1f})")
    lines.append("targets: " + json.dumps(record["summary"]))
    return "\n".join(lines)


GATED = Family(
    name="gated", record_name="bench_gated.json", description=__doc__.split("\n\n")[1].replace("\n", " "),
    full=FULL, quick=QUICK, methods=gated_methods, make_inputs=make_inputs, reference=reference,
    shape_rows=pair_rows, decode=gated_decoding, summarise=summarise, report=report, plots=GATED_PLOTS,
    notes=lambda backends: {"chunk_size": OUR_CHUNK,
                            "peer_chunk_size": {v: {str(d): peer_chunk_size(v, d) for d in DIMS} for v in VARIANTS},
                            "dtype": "float32",
                            "ours": "numba chunkwise, through the public function",
                            "flops_credited_per_token_in_d_dv": CREDITED_WORK, "compiled_peer": compiled_peer_note()})
