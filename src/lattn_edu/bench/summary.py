"""The summaries of a ``lattn-edu bench`` run, computed from its rows (chapters 3 and 9).

Per shape: our numba chunkwise kernel, through the public function, against the torch peer,
run eagerly and compiled, and against the sgemm ceiling. Per head width: the sequence length
from which linear attention beats each softmax kernel. Per decoder: how the time per token
grows with the tokens already seen. And whether the run meets the targets the kernels are
held to.
"""

from __future__ import annotations

import numpy as np

from ..timing import crossover_size
from .methods import CONTROL, KERNEL, OURS, PEER, PEER_COMPILED, SOFTMAX_OURS, SOFTMAX_SDPA


def timed_rows(rows: list[dict], method: str, d: int) -> dict[int, dict]:
    """{N: row} for the sizes at which ``method`` was timed (not skipped) at head width d."""
    return {r["n"]: r for r in rows if r["method"] == method and r["d"] == d and r["status"] == "ok"}


def our_row(rows: list[dict], d: int, n: int) -> dict | None:
    """Our chunkwise kernel's row at (d, N), through la.linear_attention with its input checks.
    One timing of one kernel: the causal 'parallel' form runs the same kernel, and choosing the
    faster of two timings of it would credit ours with the luckier one."""
    return next((r for r in rows if r["method"] == OURS and r["d"] == d and r["n"] == n
                 and r["status"] == "ok"), None)


def per_shape_summary(rows: list[dict], dims: tuple[int, ...], sizes: tuple[int, ...]) -> list[dict]:
    """Per (d, N): our chunkwise form and the peers (eager and compiled) in GFLOP/s, the
    ratios (a peer's time over ours), and the fraction of sgemm. The compiled peer's fields are
    None where it was not timed (no compiler, or a record from before it existed)."""
    summary = []
    for d in dims:
        peer, kernel = timed_rows(rows, PEER, d), timed_rows(rows, KERNEL, d)
        compiled = timed_rows(rows, PEER_COMPILED, d)
        for n in sizes:
            ours = our_row(rows, d, n)
            if ours is None or n not in peer:
                continue
            sgemm = ours["sgemm_gflops_same_rounds"]
            entry = {
                "d": d, "n": n, "ours": ours["method"], "ours_gflops": ours["gflops"],
                "ours_median_s": ours["median_s"], "peer_gflops": peer[n]["gflops"],
                "peer_median_s": peer[n]["median_s"], "ratio": peer[n]["median_s"] / ours["median_s"],
                "sgemm_gflops": sgemm, "sgemm_fraction": ours["gflops"] / sgemm,
                "kernel_gflops": None, "kernel_ratio": None, "kernel_sgemm_fraction": None,
                "compiled_peer_gflops": None, "compiled_peer_median_s": None, "compiled_ratio": None,
                "compiled_kernel_ratio": None,
            }
            if n in compiled:
                entry.update(compiled_peer_gflops=compiled[n]["gflops"], compiled_peer_median_s=compiled[n]["median_s"],
                             compiled_ratio=compiled[n]["median_s"] / ours["median_s"])
                if n in kernel:
                    entry["compiled_kernel_ratio"] = compiled[n]["median_s"] / kernel[n]["median_s"]
            if n in kernel:
                entry.update(kernel_gflops=kernel[n]["gflops"],
                             kernel_ratio=peer[n]["median_s"] / kernel[n]["median_s"],
                             kernel_sgemm_fraction=kernel[n]["gflops"] / sgemm)
            summary.append(entry)
    return summary


def crossovers(rows: list[dict], dims: tuple[int, ...]) -> list[dict]:
    """For each d and softmax kernel, the N from which our chunkwise linear form is faster for good."""
    found = []
    for d in dims:
        for softmax in (SOFTMAX_OURS, SOFTMAX_SDPA):
            timed = timed_rows(rows, softmax, d)
            sizes = sorted(n for n in timed if our_row(rows, d, n) is not None)
            entry = {"d": d, "softmax": softmax, "linear": OURS, "sizes": sizes,
                     "crossover_n": None, "at_or_below_smallest": False, "beyond_largest": False}
            if len(sizes) >= 2:
                soft = [timed[n]["median_s"] for n in sizes]
                lin = [our_row(rows, d, n)["median_s"] for n in sizes]
                n_cross = crossover_size(sizes, soft, lin)
                entry["crossover_n"] = n_cross
                entry["at_or_below_smallest"] = n_cross is not None and n_cross <= sizes[0]
                entry["beyond_largest"] = n_cross is None
                entry["speedup_at_largest"] = soft[-1] / lin[-1]
            found.append(entry)
    return found


def control_spread(rows: list[dict]) -> dict:
    """The run's noise, from its controls: our kernel timed three times in every round, as the
    chunkwise form (``OURS``), as the causal parallel form (``CONTROL``), which runs the same
    kernel, and called directly (``KERNEL``, without the argument checks). At each (d, N) where
    ours and a control were timed, the slowest of these medians over the fastest; the largest of
    these spreads is the noise a difference between two methods must exceed to count.

    Returns {"max": the largest spread, "at": (d, N) where it was, "median": the median spread,
    "by_shape": {(d, N): spread}, "slowest": {(d, N): the method with the slowest median}}.
    """
    timed: dict[tuple[int, int], dict[str, float]] = {}  # (d, N) -> {method: median seconds}
    for r in rows:
        if r["method"] in (OURS, CONTROL, KERNEL) and r["status"] == "ok":
            timed.setdefault((r["d"], r["n"]), {})[r["method"]] = r["median_s"]
    shapes = {dn: times for dn, times in timed.items() if OURS in times and len(times) > 1}
    if not shapes:
        raise ValueError("rows must hold the chunkwise form and a control (the parallel form or the "
                         "kernel called directly) timed at some common (d, N); got none")
    by_shape = {dn: max(times.values()) / min(times.values()) for dn, times in shapes.items()}
    at = max(by_shape, key=by_shape.get)
    return {"max": by_shape[at], "at": at, "median": float(np.median(list(by_shape.values()))),
            "by_shape": by_shape, "slowest": {dn: max(times, key=times.get) for dn, times in shapes.items()}}


def softmax_over_ours(rows: list[dict], softmax: str, d: int) -> dict[int, float]:
    """{N: softmax's median time over ours} at each length both were timed at, head width d."""
    soft = timed_rows(rows, softmax, d)
    ours = {n: our_row(rows, d, n) for n in soft}
    return {n: soft[n]["median_s"] / ours[n]["median_s"] for n in sorted(soft) if ours[n] is not None}


def firmly_faster_from(rows: list[dict], softmax: str, d: int, noise: float) -> tuple[int | None, float | None]:
    """The shortest timed length from which ours was faster than ``softmax`` by more than
    ``noise`` (a ratio, e.g. :func:`control_spread`'s max) at that and every longer timed
    length, and ours' least factor from there; (None, None) if no length qualifies."""
    if not noise >= 1.0:
        raise ValueError(f"noise must be a time ratio >= 1; got {noise!r}")
    ratio = softmax_over_ours(rows, softmax, d)
    lengths = list(ratio)
    for i, n in enumerate(lengths):
        if all(ratio[m] > noise for m in lengths[i:]):
            return n, min(ratio[m] for m in lengths[i:])
    return None, None


def decode_summary(rows: list[dict]) -> list[dict]:
    """Growth of the per-token time from the smallest to the largest N, per method and d."""
    out = []
    for method in sorted({r["method"] for r in rows}):
        for d in sorted({r["d"] for r in rows}):
            mine = sorted((r for r in rows if r["method"] == method and r["d"] == d), key=lambda r: r["n"])
            if len(mine) >= 2:
                out.append({"method": method, "d": d, "n_small": mine[0]["n"], "n_large": mine[-1]["n"],
                            "per_token_small_s": mine[0]["median_s"], "per_token_large_s": mine[-1]["median_s"],
                            "growth": mine[-1]["median_s"] / mine[0]["median_s"]})
    return out


def decode_heads(rows: list[dict], itemsize: int = 4) -> int:
    """How many heads the decoding rows ran, read from what the state held: a state of one head
    holds S and z, (d·d + d) numbers of ``itemsize`` bytes (float32: 4), whatever N. Raises
    ValueError when the rows disagree or hold no whole number of heads."""
    counts = {r["bytes_held"] / (itemsize * (r["d"] * r["d"] + r["d"])) for r in rows
              if r["method"] == "LinearAttentionState.step"}
    if len(counts) != 1 or not float(next(iter(counts))).is_integer():
        raise ValueError(f"rows must be decoding rows whose states all held one whole number of heads' "
                         f"bytes; got {sorted(counts)} heads' worth")
    return int(next(iter(counts)))


def targets(shapes: list[dict], decode: list[dict]) -> dict:
    """The targets the kernels are held to, checked on this run's ratios (each of one run, so a
    busy machine does not decide them): at d = 64 and 128 and N >= 1024, at least the eager
    peer's speed and 1.5 times the compiled peer's; at d = 128, at least half the sgemm
    rate; and the state's time per decoded token growing at most 1.1 times from the fewest
    tokens seen to the most, since a fixed-size state should cost the same whatever came
    before."""
    judged = [s for s in shapes if s["d"] in (64, 128) and s["n"] >= 1024]
    wide = [s for s in shapes if s["d"] == 128 and s["n"] >= 1024]
    state = [g for g in decode if g["method"] == "LinearAttentionState.step"]
    kernel = [s["kernel_sgemm_fraction"] for s in wide if s.get("kernel_sgemm_fraction") is not None]
    against_compiled = [s for s in judged if s.get("compiled_ratio") is not None]
    worst = min(against_compiled, key=lambda s: s["compiled_ratio"], default=None)
    return {
        "ratio_vs_peer_at_least_1": {"shapes": len(judged), "met": sum(s["ratio"] >= 1.0 for s in judged),
                                     "min_ratio": min((s["ratio"] for s in judged), default=None)},
        "ratio_vs_compiled_peer_at_least_1_5": {
            "shapes": len(against_compiled), "met": sum(s["compiled_ratio"] >= 1.5 for s in against_compiled),
            "min_ratio": None if worst is None else worst["compiled_ratio"],
            "worst_shape": None if worst is None else {"d": worst["d"], "n": worst["n"]}},
        "sgemm_fraction_at_least_half_d128": {"shapes": len(wide), "met": sum(s["sgemm_fraction"] >= 0.5 for s in wide),
                                              "min_fraction": min((s["sgemm_fraction"] for s in wide), default=None),
                                              "max_fraction": max((s["sgemm_fraction"] for s in wide), default=None),
                                              "kernel_max_fraction": max(kernel, default=None),
                                              "at_n_4096": next((s["sgemm_fraction"] for s in wide
                                                                 if s["n"] == 4096), None)},
        "state_decode_growth_at_most_1_1": {"cases": len(state), "met": sum(g["growth"] <= 1.1 for g in state),
                                            "max_growth": max((g["growth"] for g in state), default=None)},
    }
