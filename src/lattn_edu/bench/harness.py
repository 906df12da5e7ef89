"""The timing harness of ``lattn-edu bench``: correctness first, then interleaved rounds (chapter 9).

Every method is first checked against the float64 numpy reference (which also compiles
the numba kernels). Then, shape by shape, each method's call is timed once per round, all
methods in turn, so that whatever else the machine does meanwhile slows them alike and
their ratios hold even when the absolute times drift. A numpy sgemm runs in the same
rounds as the ceiling, and :class:`OtherLoad` records how busy other processes kept the
cores. Decoding is timed last: one token through a fixed-size state against a growing
KV cache.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from tqdm import tqdm

import lattn_edu as la

from ..compare import relative_error
from ..machine import cpu_simd
from .methods import EPS, SGEMM, TOLERANCE, Method, Settings, linear_flops, make_inputs, softmax_flops


class OtherLoad:
    """How many cores other processes kept busy since the last reading (Linux; None elsewhere):
    the machine's busy time from /proc/stat minus this process's own CPU time. Unlike the load
    average, it does not count the benchmark itself."""

    def __init__(self) -> None:
        self._last = self._read()

    @staticmethod
    def _read() -> tuple[float, float, float] | None:
        try:
            fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        except (OSError, ValueError):
            return None
        ticks = os.sysconf("SC_CLK_TCK")
        busy = (sum(fields[:8]) - fields[3] - fields[4]) / ticks  # all but idle and iowait
        own = sum(os.times()[:2])
        return time.perf_counter(), busy, own

    def cores(self) -> float | None:
        now = self._read()
        if now is None or self._last is None:
            return None
        (t0, busy0, own0), (t1, busy1, own1) = self._last, now
        self._last = now
        return max(0.0, ((busy1 - busy0) - (own1 - own0)) / max(t1 - t0, 1e-9))


def time_once(call: Callable[[], Any]) -> float:
    """Seconds one call of ``call()`` takes (wall clock)."""
    tick = time.perf_counter()
    call()
    return time.perf_counter() - tick


def advance(progress: tqdm, steps: float, label: str) -> None:
    """Move the progress bar ``steps`` on, showing what was just done."""
    progress.set_postfix_str(label, refresh=False)
    progress.update(steps)


def time_interleaved(calls: dict[str, Callable[[], Any]], estimates: dict[str, float],
                     settings: Settings) -> dict[str, list[float]]:
    """Round by round, one timed call of every method: the methods share whatever the machine
    does meanwhile, so their ratios hold even when the absolute times drift."""
    per_round = sum(estimates.values())
    rounds = int(np.clip(math.ceil(settings.shape_seconds / max(per_round, 1e-9)),
                         settings.min_rounds, settings.max_rounds))
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            samples[name].append(time_once(call))
    return samples


def sgemm_call(size: int, seed: int = 1) -> Callable[[], Any]:
    """A float32 matrix product of two [size, size] matrices with numpy's BLAS (all its threads)."""
    a, b = np.random.default_rng(seed).standard_normal((2, size, size), dtype=np.float32)
    return lambda: a @ b


def measure_sgemm(size: int, repeats: int = 7) -> float:
    """GFLOP/s of numpy's float32 matmul at [size, size]: the median of ``repeats`` calls."""
    call = sgemm_call(size)
    call()
    return 2.0 * size**3 / float(np.median([time_once(call) for _ in range(repeats)])) / 1e9


_SGEMM_SCRIPT = """
import json, time, numpy as np
from threadpoolctl import threadpool_info
a = np.random.default_rng(1).standard_normal((2, {size}, {size}), dtype=np.float32)
a[0] @ a[1]
times = []
for _ in range(7):
    tick = time.perf_counter(); a[0] @ a[1]; times.append(time.perf_counter() - tick)
print(json.dumps({{"gflops": 2 * {size}**3 / float(np.median(times)) / 1e9,
                  "architecture": [lib.get("architecture") for lib in threadpool_info()]}}))
"""


def measure_sgemm_avx512(size: int) -> dict | None:
    """numpy's sgemm in a fresh process with OpenBLAS told to use its AVX-512 kernels
    (OPENBLAS_CORETYPE=SkylakeX): what the ceiling would be with kernels for this CPU's widest
    vectors. None where the CPU has no AVX-512 or the BLAS is not OpenBLAS."""
    if "avx512f" not in cpu_simd():
        return None
    env = {**os.environ, "OPENBLAS_CORETYPE": "SkylakeX"}
    try:
        done = subprocess.run([sys.executable, "-c", _SGEMM_SCRIPT.format(size=size)], env=env,
                              capture_output=True, text=True, timeout=120)
        found = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    return {**found, "environment": "OPENBLAS_CORETYPE=SkylakeX"}


def check_correctness(found: list[Method], dims: tuple[int, ...], n: int = 200,
                      bh: int = 4) -> list[dict]:
    """Every method against the float64 numpy reference on a small case (N not a multiple
    of the chunk); also compiles the numba kernels before anything is timed."""
    import torch

    rows = []
    for d in dims:
        x = make_inputs(n, d, bh, seed=7)
        q, k, v = (a.astype(np.float64) for a in (x.q, x.k, x.v))
        reference = {"linear": la.linear_attention(q, k, v, causal=True, form="quadratic", eps=EPS),
                     "softmax": la.softmax_attention(q, k, v, causal=True)}
        for method in found:
            if method.family == "sgemm":
                continue
            with torch.inference_mode():
                expected = reference[method.family]
                error = relative_error(method.build(x)().reshape(expected.shape), expected)  # peers keep a head axis
            rows.append({"method": method.name, "d": d, "n": n, "batch_heads": bh,
                         "relative_error": error, "ok": error <= TOLERANCE})
    return rows


def benchmark_shapes(found: list[Method], settings: Settings, progress: tqdm) -> list[dict]:
    """All methods on every (d, N); a method that hits a limit is recorded as skipped from there on."""
    import torch

    rows: list[dict] = []
    others = OtherLoad()
    for d in settings.dims:
        last: dict[str, tuple[int, float]] = {}  # method -> (N, median seconds) at its last size
        stopped: dict[str, str] = {}
        for n in settings.sizes:
            bh = settings.batch_heads
            active, skipped = [], []
            for method in found:
                reason = stopped.get(method.name)
                extra = method.extra_bytes(n, d, bh)
                if reason is None and extra > settings.memory_budget:
                    reason = (f"needs ~{extra / 2**30:.1f} GiB beyond its inputs, over the "
                              f"{settings.memory_budget / 2**30:.0f} GiB budget")
                if reason is None and method.name in last:
                    n_prev, t_prev = last[method.name]
                    predicted = t_prev * (n / n_prev) ** method.time_exponent
                    if predicted > settings.max_call_s:
                        reason = (f"predicted {predicted:.1f} s per call from {t_prev:.2f} s at "
                                  f"N = {n_prev:,}, over the {settings.max_call_s:g} s limit")
                if reason is None:
                    active.append(method)
                else:
                    stopped[method.name] = stopped.get(method.name, reason)
                    skipped.append((method, stopped[method.name]))
            x = make_inputs(n, d, bh)
            calls = {m.name: m.build(x) for m in active}
            calls[SGEMM] = sgemm_call(settings.sgemm_size)
            estimates = {}
            with torch.inference_mode():
                for name, call in calls.items():
                    estimates[name] = time_once(call)  # the untimed first call: caches, allocations
                others.cores()
                samples = time_interleaved(calls, estimates, settings)
            busy_elsewhere = others.cores()
            sgemm_seconds = float(np.median(samples[SGEMM]))
            sgemm_gflops = 2.0 * settings.sgemm_size**3 / sgemm_seconds / 1e9
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
            for method in active:
                times = np.array(samples[method.name])
                median = float(np.median(times))
                last[method.name] = (n, median)
                flops = (linear_flops if method.family == "linear" else softmax_flops)(n, d, d, bh)
                rows.append({**_describe(method), "d": d, "n": n, "batch_heads": bh, "status": "ok",
                             "reason": "", "median_s": median, "min_s": float(times.min()),
                             "max_s": float(times.max()), "runs": len(times),
                             "gflops": flops / median / 1e9, "sgemm_gflops_same_rounds": sgemm_gflops,
                             "load_average": load, "other_processes_cores": busy_elsewhere})
            for method, reason in skipped:
                rows.append({**_describe(method), "d": d, "n": n, "batch_heads": bh, "status": "skipped",
                             "reason": reason, "median_s": None, "min_s": None, "max_s": None, "runs": 0,
                             "gflops": None, "sgemm_gflops_same_rounds": sgemm_gflops, "load_average": load,
                             "other_processes_cores": busy_elsewhere})
            del x, calls
            advance(progress, len(found), f"d={d} N={n:,}: {len(active)} methods timed")
    return rows


def _describe(method: Method) -> dict:
    return {"method": method.name, "family": method.family, "origin": method.origin,
            "backend": method.backend, "form": method.form}


def benchmark_decoding(dims: tuple[int, ...], sizes: tuple[int, ...], steps: int,
                       progress: tqdm, seed: int = 3) -> list[dict]:
    """Per-token time of one decoding step with N tokens already seen: the fixed-size
    LinearAttentionState against the growing SoftmaxKVCache (float32, one head).

    Each is stepped in its own loop, as a decoder would run it (a KV-cache step streams the whole
    cache through memory and would evict the state from the caches if they alternated). The
    cache gains one token per step, so its steps are kept to at most 5% of N."""
    rows = []
    rng = np.random.default_rng(seed)
    for d in dims:
        for n in sizes:
            keys = rng.standard_normal((n, d), dtype=np.float32)
            values = rng.standard_normal((n, d), dtype=np.float32)
            state = la.LinearAttentionState(d, d, dtype=np.float32)
            state.update(la.elu_plus_one(keys), values)
            cache = la.SoftmaxKVCache(d, d, dtype=np.float32, capacity=n + steps + 1)
            for key, value in zip(keys, values):
                cache.append(key, value)
            cache_steps = max(10, min(steps, n // 20))
            tokens = rng.standard_normal((max(steps, cache_steps), 3, d), dtype=np.float32)
            features = la.elu_plus_one(tokens[:, :2])
            state_times = [time_once(lambda: state.step(features[t, 0], features[t, 1], tokens[t, 2]))
                           for t in range(steps)]
            cache_times = [time_once(lambda: cache.step(tokens[t, 0], tokens[t, 1], tokens[t, 2]))
                           for t in range(cache_steps)]
            for name, times, held in (("LinearAttentionState.step", state_times, state.nbytes),
                                      ("SoftmaxKVCache.step", cache_times, cache.nbytes)):
                rows.append({"method": name, "d": d, "n": n, "steps": len(times),
                             "median_s": float(np.median(times)), "p95_s": float(np.percentile(times, 95)),
                             "bytes_held": int(held)})
            advance(progress, 1, f"decoding d={d} N={n:,}")
    return rows
