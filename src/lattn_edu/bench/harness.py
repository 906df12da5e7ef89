"""The one runner of ``lattn-edu bench``: correctness first, then interleaved rounds (chapter 9).

:func:`run_family` runs any :class:`.methods.Family` the same way. Every method is first
checked against the family's float64 numpy reference (which also compiles the numba
kernels). Then, shape by shape, after two untimed calls of each method (the first compiles
what is compiled, and is recorded; the second says what a round will cost), each method's
call is timed once per round, all methods in turn, so that whatever else the machine does
meanwhile slows them alike and their ratios hold even when the absolute times drift. Where
the family asks for it, a numpy sgemm runs in the same rounds as the ceiling, and
:class:`OtherLoad` records how busy other processes kept the cores. Decoding is timed last,
the family's own way, and the family summarises the run.
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

from ..compare import relative_error
from ..machine import cpu_simd, machine_info
from .methods import SGEMM, TOLERANCE, Family, Method, Settings, Shape


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


ROUND_ORDER = "rotated by one method each round"  # recorded: earlier records timed in a fixed order


def time_interleaved(calls: dict[str, Callable[[], Any]], estimates: dict[str, float],
                     settings: Settings) -> dict[str, list[float]]:
    """Round by round, one timed call of every method: the methods share whatever the machine
    does meanwhile, so their ratios hold even when the absolute times drift. The order rotates
    by one method each round, so no method always goes first; each still follows the same
    neighbour (cyclically), whose threads may still be busy when it starts."""
    per_round = sum(estimates.values())
    rounds = int(np.clip(math.ceil(settings.shape_seconds / max(per_round, 1e-9)),
                         settings.min_rounds, settings.max_rounds))
    names = list(calls)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_index in range(rounds):
        first = round_index % len(names)
        for name in names[first:] + names[:first]:
            samples[name].append(time_once(calls[name]))
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


def check_correctness(family: Family, found: list[Method], dims: tuple[int, ...], n: int = 200,
                      bh: int = 4, progress: tqdm | None = None) -> list[dict]:
    """Every method against the family's float64 numpy reference on a small case (N not a
    multiple of the chunk); also compiles the numba kernels before anything is timed."""
    import torch

    rows = []
    for d in dims:
        x = family.make_inputs(n, d, bh, seed=7)
        expected: dict[str, np.ndarray] = {}
        for method in found:
            if method.family not in expected:
                expected[method.family] = family.reference(method.family, x)
            want = expected[method.family]
            with torch.inference_mode():
                error = relative_error(method.build(x)().reshape(want.shape), want)  # peers keep a head axis
            rows.append({"method": method.name, "family": method.family, "origin": method.origin, "d": d,
                         "n": n, "batch_heads": bh, "relative_error": error, "ok": error <= TOLERANCE})
        if progress is not None:
            advance(progress, 1, f"d={d} checked against the reference")
    return rows


def _within_limits(found: list[Method], n: int, d: int, settings: Settings, last: dict[str, tuple[int, float]],
                   stopped: dict[str, str]) -> tuple[list[Method], list[tuple[Method, str]]]:
    """(methods to time at (d, N), [(method, why not)]): a method stops for good once a call
    would pass the memory budget or, predicted from its last size, the time limit."""
    active, skipped = [], []
    for method in found:
        reason = stopped.get(method.name)
        extra = method.extra_bytes(n, d, settings.batch_heads)
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
            stopped[method.name] = reason
            skipped.append((method, reason))
    return active, skipped


def benchmark_shapes(family: Family, found: list[Method], settings: Settings, progress: tqdm) -> list[dict]:
    """All methods on every (d, N), interleaved round by round; the family turns each shape's
    timings into rows. A method that hits a limit is skipped from there on."""
    import torch

    rows: list[dict] = []
    others = OtherLoad()
    for d in settings.dims:
        last: dict[str, tuple[int, float]] = {}  # method -> (N, median seconds) at its last size
        stopped: dict[str, str] = {}
        for n in settings.sizes:
            active, skipped = _within_limits(found, n, d, settings, last, stopped)
            x = family.make_inputs(n, d, settings.batch_heads)
            if any(m.compiled for m in active):
                torch.compiler.reset()  # past a few shapes a compiled stage would silently run eagerly
            calls = {m.name: m.build(x) for m in active}
            if settings.sgemm_size is not None:
                calls[SGEMM] = sgemm_call(settings.sgemm_size)
            with torch.inference_mode():
                first_calls = {name: time_once(call) for name, call in calls.items()}  # untimed; may compile
                estimates = {name: time_once(call) for name, call in calls.items()}  # what a round will cost
                others.cores()
                samples = time_interleaved(calls, estimates, settings)
            busy_elsewhere = others.cores()
            sgemm_gflops = (None if settings.sgemm_size is None
                            else 2.0 * settings.sgemm_size**3 / float(np.median(samples[SGEMM])) / 1e9)
            for method in active:
                last[method.name] = (n, float(np.median(samples[method.name])))
            rows.extend(family.shape_rows(Shape(d, n, settings.batch_heads, active, skipped, samples, sgemm_gflops,
                                                _load_average(), busy_elsewhere, first_calls)))
            del x, calls
            advance(progress, 1, f"d={d} N={n:,}: {len(active)} methods timed")
    return rows


def _load_average() -> float | None:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def progress_steps(settings: Settings) -> int:
    """Steps of :func:`run_family`'s progress bar: per head width, the check, each size and
    decoding (a family's ``decode`` advances once per head width), and the sgemm at each end."""
    return len(settings.dims) * (len(settings.sizes) + 2) + (2 if settings.sgemm_size is not None else 0)


def run_family(family: Family, settings: Settings, backends: tuple[str, ...],
               progress: tqdm) -> tuple[dict | None, list[dict]]:
    """Check, time and summarise one family: (the record, without its wall time, or None when
    a method disagrees with the reference; the correctness rows)."""
    found = [m for m in family.methods(backends) if settings.compiled_peers or not m.compiled]
    load_start = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    correctness = check_correctness(family, found, settings.dims, progress=progress)
    if not all(c["ok"] for c in correctness):
        return None, correctness
    sgemm: dict[str, Any] = {}
    if settings.sgemm_size is not None:
        sgemm = {"size": settings.sgemm_size, "gflops_start": measure_sgemm(settings.sgemm_size)}
        advance(progress, 1, "sgemm")
    rows = benchmark_shapes(family, found, settings, progress)
    decode = family.decode(settings, progress)
    if sgemm:
        sgemm.update(gflops_end=measure_sgemm(settings.sgemm_size),
                     avx512_kernels=measure_sgemm_avx512(settings.sgemm_size))
        advance(progress, 1, "sgemm")
    record = {
        "schema": 1, "description": family.description,
        "recorded": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine_info(engines=True),
        "settings": {**{k: (list(v) if isinstance(v, tuple) else v) for k, v in settings.__dict__.items()},
                     "round_order": ROUND_ORDER, **family.notes(backends)},
        "load_average_start": load_start, "other_processes_cores": _busy_elsewhere(rows),
        "load_average_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        **({"sgemm": sgemm} if sgemm else {}),
        "correctness": correctness, "results": rows, "decode": decode,
        "summary": family.summarise(rows, decode, settings),
    }
    return record, correctness


def _busy_elsewhere(rows: list[dict]) -> dict | None:
    """Mean and largest number of cores other processes kept busy while the shapes were timed."""
    per_shape = {(r["d"], r["n"]): r.get("other_processes_cores") for r in rows}
    values = [v for v in per_shape.values() if v is not None]
    return {"mean": float(np.mean(values)), "max": float(np.max(values))} if values else None
