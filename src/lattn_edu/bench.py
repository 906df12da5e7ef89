"""``lattn-edu bench``: causal linear attention against its peers, side by side in one run (chapter 9).

For d in (32, 64, 128) and N from 128 to 65,536 (batch·heads = 8, float32, elu+1
features, normalised, d_v = d) it times, on the same inputs and interleaved round by
round so that a busy machine slows every method alike:

- every form of ours on every backend, through :func:`lattn_edu.linear_attention`;
- the peer: a torch chunkwise implementation as production libraries write it
  (``benchmarks/peers.py`` in the repository, not part of the package);
- causal softmax: our numba kernel (:func:`lattn_edu.backends.numba_backend.softmax_attention`),
  torch's ``scaled_dot_product_attention`` and the materialised :func:`lattn_edu.softmax_attention`;
- a numpy sgemm, the machine's ceiling in GFLOP/s.

Linear attention is credited with 4·d·d_v FLOPs per token (the state update and the
read of the causal scan), whatever a form really computes. A method stops growing N when
its next call would pass the memory budget or the time limit, and the skip is recorded
with its reason. It then times autoregressive decoding: the per-token time of
``LinearAttentionState.step`` and of ``SoftmaxKVCache.step`` with 1k, 10k and 100k
tokens already seen. Before any timing, every method's output is checked against the
float64 numpy reference.

Results go to ``benchmarks/results/`` in a checkout (``--quick``: ``benchmarks/results/quick/``):
``bench.json`` (everything, with the machine), ``bench.csv`` (one row per method and
shape) and PNG plots. :func:`load_results` reads the recorded file back for the book.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

import lattn_edu as la

from . import records
from .backends import BACKENDS
from .linear import FORMS
from .timing import crossover_size

DIMS = (32, 64, 128)
SIZES = tuple(2**p for p in range(7, 17))  # 128 ... 65,536
QUICK_SIZES = (128, 512, 2048, 8192)
DECODE_SIZES = (1_000, 10_000, 100_000)
BATCH_HEADS = 8
CHUNK = 64
EPS = 1e-6
FLOAT_BYTES = 4
TOLERANCE = 1e-4  # float32 against the float64 reference (RMS relative), the suite's tolerance
OURS = "numba chunkwise"  # the form the targets are about, through la.linear_attention
KERNEL = "numba chunkwise kernel"  # the same kernel called directly: no argument checks or dispatch
PEER = "torch chunkwise peer"
SOFTMAX_OURS, SOFTMAX_SDPA = "numba softmax", "torch SDPA"
SGEMM = "numpy sgemm"

REPO = Path(__file__).resolve().parents[2]  # src/lattn_edu/bench.py -> the checkout's root
PEERS_FILE = REPO / "benchmarks" / "peers.py"
RESULTS = REPO / "benchmarks" / "results"
PACKAGED = Path(__file__).resolve().parent / "data"  # copies of the recorded results, for the book


@dataclass(frozen=True)
class Settings:
    """How much to measure: the full recorded run, or ``--quick``."""

    sizes: tuple[int, ...]
    dims: tuple[int, ...]
    batch_heads: int
    min_rounds: int  # timed calls of each method per shape, at least
    max_rounds: int
    shape_seconds: float  # aim for about this much timed work per shape
    max_call_s: float  # a method stops growing N once its next call would take longer
    memory_budget: float  # bytes a method may allocate beyond its inputs
    sgemm_size: int
    decode_sizes: tuple[int, ...]
    decode_steps: int


FULL = Settings(sizes=SIZES, dims=DIMS, batch_heads=BATCH_HEADS, min_rounds=5, max_rounds=25,
                shape_seconds=6.0, max_call_s=4.0, memory_budget=4 * 2**30, sgemm_size=2048,
                decode_sizes=DECODE_SIZES, decode_steps=400)
QUICK = Settings(sizes=QUICK_SIZES, dims=DIMS, batch_heads=BATCH_HEADS, min_rounds=3, max_rounds=9,
                 shape_seconds=1.0, max_call_s=0.4, memory_budget=2 * 2**30, sgemm_size=1024,
                 decode_sizes=DECODE_SIZES, decode_steps=100)


@dataclass(frozen=True)
class Method:
    """One thing to time: how to build its call from the inputs, and what it costs."""

    name: str
    family: str  # 'linear' | 'softmax' | 'sgemm'
    origin: str  # 'ours' | 'peer'
    backend: str
    form: str
    build: Callable[["Inputs"], Callable[[], Any]]
    extra_bytes: Callable[[int, int, int], float]  # (N, d, batch·heads) -> bytes beyond the inputs
    time_exponent: int  # 2 when the time grows like N², for predicting the next size


@dataclass
class Inputs:
    """One shape's inputs: numpy arrays [B, N, d] and torch tensors sharing their memory."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    tq: Any = None
    tk: Any = None
    tv: Any = None


# ---------------------------------------------------------------------------------------------
# what to time


def load_peers(path: str | os.PathLike | None = None) -> ModuleType:
    """The peer implementations, ``benchmarks/peers.py`` of the repository (or ``path``)."""
    path = Path(path) if path is not None else PEERS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"lattn-edu bench measures against peers kept in the repository, not in the package, "
            f"and could not find them at {path}. Run it from a checkout (git clone the lattn-edu "
            f"repository, then pip install -e . inside it), or point --peers at benchmarks/peers.py.")
    spec = importlib.util.spec_from_file_location("lattn_edu_bench_peers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _linear_extra_bytes(backend: str, form: str) -> Callable[[int, int, int], float]:
    """Bytes a form allocates beyond q, k, v and the output, roughly (for the memory budget)."""
    def extra(n: int, d: int, bh: int) -> float:
        features = 2 * bh * n * d * FLOAT_BYTES
        if form == "quadratic":  # the N×N weights (numba: one per thread at a time)
            stacks = 2 if backend == "numba" else 3 * bh
            return features + stacks * n * n * FLOAT_BYTES
        if form == "parallel" and backend != "numba":  # every prefix state S_i, and a temporary
            return features + 2 * bh * n * d * d * FLOAT_BYTES
        if form == "chunkwise" and backend == "torch":  # per-chunk states and their prefix sums
            return features + 3 * bh * (n / CHUNK + 1) * d * d * FLOAT_BYTES
        return features
    return extra


def methods(peers: ModuleType, backends: tuple[str, ...]) -> list[Method]:
    """Every method the benchmark times, ours first."""
    from .backends import numba_backend

    found: list[Method] = []
    for backend in backends:
        for form in FORMS:
            def build(x: Inputs, backend: str = backend, form: str = form) -> Callable[[], Any]:
                q, k, v = (x.tq, x.tk, x.tv) if backend == "torch" else (x.q, x.k, x.v)
                return lambda: la.linear_attention(q, k, v, causal=True, form=form, backend=backend,
                                                   chunk_size=CHUNK, eps=EPS)
            found.append(Method(f"{backend} {form}", "linear", "ours", backend, form, build,
                                _linear_extra_bytes(backend, form), 2 if form == "quadratic" else 1))
    if "numba" in backends:
        found.append(Method(
            KERNEL, "linear", "ours", "numba", "chunkwise",
            lambda x: lambda: numba_backend.chunkwise_elu_linear_attention(x.q, x.k, x.v, True, EPS, CHUNK),
            _linear_extra_bytes("numba", "chunkwise"), 1))
    found.append(Method(
        PEER, "linear", "peer", "torch", "chunkwise",
        lambda x: lambda: peers.torch_chunkwise_linear_attention(x.tq, x.tk, x.tv, chunk_size=CHUNK, eps=EPS),
        _linear_extra_bytes("torch", "chunkwise"), 1))
    found.append(Method(
        SOFTMAX_OURS, "softmax", "ours", "numba", "flash",
        lambda x: lambda: numba_backend.softmax_attention(x.q, x.k, x.v, causal=True),
        lambda n, d, bh: 0.0, 2))
    found.append(Method(
        SOFTMAX_SDPA, "softmax", "peer", "torch", "sdpa",
        lambda x: lambda: peers.sdpa_causal_softmax_attention(x.tq[None], x.tk[None], x.tv[None]),
        lambda n, d, bh: 0.0, 2))
    found.append(Method(
        "numpy softmax", "softmax", "ours", "numpy", "materialised",
        lambda x: lambda: la.softmax_attention(x.q, x.k, x.v, causal=True, max_matrix_bytes=2**40),
        lambda n, d, bh: 4 * bh * n * n * FLOAT_BYTES, 2))
    return found


def linear_flops(n: int, d: int, d_v: int, bh: int) -> float:
    """FLOPs credited to causal linear attention: 4·d·d_v per token (update + read of the scan)."""
    return 4.0 * d * d_v * n * bh


def softmax_flops(n: int, d: int, d_v: int, bh: int) -> float:
    """FLOPs of causal softmax attention: q·k and the weighted sum over the N(N+1)/2 visible pairs."""
    return float(n) * (n + 1) * (d + d_v) * bh


def make_inputs(n: int, d: int, bh: int, seed: int = 0) -> Inputs:
    """Seeded float32 q, k, v [bh, N, d] and torch views of the same memory."""
    import torch

    q, k, v = np.random.default_rng(seed).standard_normal((3, bh, n, d), dtype=np.float32)
    return Inputs(q, k, v, torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v))


# ---------------------------------------------------------------------------------------------
# measuring


class Progress:
    """A progress bar drawn by hand on stderr: done/total, elapsed time and an estimate of the rest."""

    def __init__(self, total: float, enabled: bool = True, stream: Any = None, width: int = 28) -> None:
        self.total, self.done, self.width = max(total, 1e-9), 0.0, width
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.started = time.perf_counter()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_percent = -10

    def advance(self, amount: float, label: str) -> None:
        self.done = min(self.total, self.done + amount)
        if not self.enabled:
            return
        fraction = self.done / self.total
        percent = int(100 * fraction)
        if not self.tty and percent < self._last_percent + 10 and fraction < 1:
            return  # a log file gets a line per 10%, not a redraw per step
        self._last_percent = percent
        elapsed = time.perf_counter() - self.started
        left = elapsed * (1 - fraction) / fraction if fraction > 0 else float("nan")
        filled = int(self.width * fraction)
        bar = "#" * filled + "." * (self.width - filled)
        line = f"[{bar}] {percent:3d}%  {elapsed:6.0f} s elapsed, ~{left:5.0f} s left  {label[:40]:40}"
        self.stream.write(("\r" + line) if self.tty else line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()


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


def _timed(call: Callable[[], Any]) -> float:
    tick = time.perf_counter()
    call()
    return time.perf_counter() - tick


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
            samples[name].append(_timed(call))
    return samples


def sgemm_call(size: int, seed: int = 1) -> Callable[[], Any]:
    """A float32 matrix product of two [size, size] matrices with numpy's BLAS (all its threads)."""
    a, b = np.random.default_rng(seed).standard_normal((2, size, size), dtype=np.float32)
    return lambda: a @ b


def measure_sgemm(size: int, repeats: int = 7) -> float:
    """GFLOP/s of numpy's float32 matmul at [size, size]: the median of ``repeats`` calls."""
    call = sgemm_call(size)
    call()
    return 2.0 * size**3 / float(np.median([_timed(call) for _ in range(repeats)])) / 1e9


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
    if "avx512f" not in _cpu_simd():
        return None
    env = {**os.environ, "OPENBLAS_CORETYPE": "SkylakeX"}
    try:
        done = subprocess.run([sys.executable, "-c", _SGEMM_SCRIPT.format(size=size)], env=env,
                              capture_output=True, text=True, timeout=120)
        found = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    return {**found, "environment": "OPENBLAS_CORETYPE=SkylakeX"}


def relative_error(actual: Any, expected: np.ndarray) -> float:
    """RMS relative error ||a - e|| / ||e|| in float64 (tensors are moved to numpy)."""
    if hasattr(actual, "detach"):
        actual = actual.detach().cpu().float().numpy()
    actual = np.asarray(actual, dtype=np.float64).reshape(expected.shape)
    return float(np.linalg.norm(actual - expected) / np.linalg.norm(expected))


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
                error = relative_error(method.build(x)(), reference[method.family])
            rows.append({"method": method.name, "d": d, "n": n, "batch_heads": bh,
                         "relative_error": error, "ok": error <= TOLERANCE})
    return rows


def benchmark_shapes(found: list[Method], settings: Settings, progress: Progress) -> list[dict]:
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
                    estimates[name] = _timed(call)  # the untimed first call: caches, allocations
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
            progress.advance(len(found), f"d={d} N={n:,}: {len(active)} methods timed")
    return rows


def _describe(method: Method) -> dict:
    return {"method": method.name, "family": method.family, "origin": method.origin,
            "backend": method.backend, "form": method.form}


def benchmark_decoding(dims: tuple[int, ...], sizes: tuple[int, ...], steps: int,
                       progress: Progress, seed: int = 3) -> list[dict]:
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
            state_times = [_timed(lambda: state.step(features[t, 0], features[t, 1], tokens[t, 2]))
                           for t in range(steps)]
            cache_times = [_timed(lambda: cache.step(tokens[t, 0], tokens[t, 1], tokens[t, 2]))
                           for t in range(cache_steps)]
            for name, times, held in (("LinearAttentionState.step", state_times, state.nbytes),
                                      ("SoftmaxKVCache.step", cache_times, cache.nbytes)):
                rows.append({"method": name, "d": d, "n": n, "steps": len(times),
                             "median_s": float(np.median(times)), "p95_s": float(np.percentile(times, 95)),
                             "bytes_held": int(held)})
            progress.advance(1, f"decoding d={d} N={n:,}")
    return rows


# ---------------------------------------------------------------------------------------------
# summaries


def _ok(rows: list[dict], method: str, d: int) -> dict[int, dict]:
    return {r["n"]: r for r in rows if r["method"] == method and r["d"] == d and r["status"] == "ok"}


def best_numba(rows: list[dict], d: int, n: int) -> dict | None:
    """Our fastest numba linear-attention form at (d, N), through la.linear_attention (with its
    input checks; the kernel called directly is reported beside it, not chosen here)."""
    candidates = [r for r in rows if r["backend"] == "numba" and r["family"] == "linear"
                  and r["method"] != KERNEL and r["d"] == d and r["n"] == n and r["status"] == "ok"]
    return min(candidates, key=lambda r: r["median_s"]) if candidates else None


def per_shape_summary(rows: list[dict], dims: tuple[int, ...], sizes: tuple[int, ...]) -> list[dict]:
    """Per (d, N): our best numba form and the peer in GFLOP/s, their ratio, and the fraction of sgemm."""
    summary = []
    for d in dims:
        peer, kernel = _ok(rows, PEER, d), _ok(rows, KERNEL, d)
        for n in sizes:
            ours = best_numba(rows, d, n)
            if ours is None or n not in peer:
                continue
            sgemm = ours["sgemm_gflops_same_rounds"]
            entry = {
                "d": d, "n": n, "ours": ours["method"], "ours_gflops": ours["gflops"],
                "ours_median_s": ours["median_s"], "peer_gflops": peer[n]["gflops"],
                "peer_median_s": peer[n]["median_s"], "ratio": peer[n]["median_s"] / ours["median_s"],
                "sgemm_gflops": sgemm, "sgemm_fraction": ours["gflops"] / sgemm,
                "kernel_gflops": None, "kernel_ratio": None, "kernel_sgemm_fraction": None,
            }
            if n in kernel:
                entry.update(kernel_gflops=kernel[n]["gflops"],
                             kernel_ratio=peer[n]["median_s"] / kernel[n]["median_s"],
                             kernel_sgemm_fraction=kernel[n]["gflops"] / sgemm)
            summary.append(entry)
    return summary


def crossovers(rows: list[dict], dims: tuple[int, ...]) -> list[dict]:
    """For each d and softmax kernel, the N from which our best numba linear form is faster for good."""
    found = []
    for d in dims:
        for softmax in (SOFTMAX_OURS, SOFTMAX_SDPA):
            timed = _ok(rows, softmax, d)
            sizes = sorted(n for n in timed if best_numba(rows, d, n) is not None)
            entry = {"d": d, "softmax": softmax, "linear": "best numba form", "sizes": sizes,
                     "crossover_n": None, "at_or_below_smallest": False, "beyond_largest": False}
            if len(sizes) >= 2:
                soft = [timed[n]["median_s"] for n in sizes]
                lin = [best_numba(rows, d, n)["median_s"] for n in sizes]
                n_cross = crossover_size(sizes, soft, lin)
                entry["crossover_n"] = n_cross
                entry["at_or_below_smallest"] = n_cross is not None and n_cross <= sizes[0]
                entry["beyond_largest"] = n_cross is None
                entry["speedup_at_largest"] = soft[-1] / lin[-1]
            found.append(entry)
    return found


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


def targets(shapes: list[dict], decode: list[dict]) -> dict:
    """The issue's targets, checked on this run's numbers (ratios of the same run)."""
    gated = [s for s in shapes if s["d"] in (64, 128) and s["n"] >= 1024]
    wide = [s for s in shapes if s["d"] == 128 and s["n"] >= 1024]
    state = [g for g in decode if g["method"] == "LinearAttentionState.step"]
    kernel = [s["kernel_sgemm_fraction"] for s in wide if s.get("kernel_sgemm_fraction") is not None]
    return {
        "ratio_vs_peer_at_least_1": {"shapes": len(gated), "met": sum(s["ratio"] >= 1.0 for s in gated),
                                     "min_ratio": min((s["ratio"] for s in gated), default=None)},
        "sgemm_fraction_at_least_half_d128": {"shapes": len(wide), "met": sum(s["sgemm_fraction"] >= 0.5 for s in wide),
                                              "min_fraction": min((s["sgemm_fraction"] for s in wide), default=None),
                                              "max_fraction": max((s["sgemm_fraction"] for s in wide), default=None),
                                              "kernel_max_fraction": max(kernel, default=None)},
        "state_decode_growth_at_most_1_2": {"cases": len(state), "met": sum(g["growth"] <= 1.2 for g in state),
                                            "max_growth": max((g["growth"] for g in state), default=None)},
    }


# ---------------------------------------------------------------------------------------------
# the machine


def machine_info() -> dict:
    """CPU, cores, memory, threads and library versions: where the numbers come from."""
    import numba
    import scipy
    import torch

    from .backends import numba_backend

    info: dict[str, Any] = {
        "cpu": _cpu_model(), "cpu_simd": _cpu_simd(), "machine": platform.machine(),
        "system": platform.platform(),
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memory_gib": _memory_gib(), "python": platform.python_version(),
        "versions": {"numpy": np.__version__, "scipy": scipy.__version__, "numba": numba.__version__,
                     "torch": torch.__version__, "lattn_edu": la.__version__},
        "numba_threads": numba.get_num_threads(), "torch_threads": torch.get_num_threads(),
        "environment": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS",
                        "OPENBLAS_CORETYPE", "OPENBLAS_THREAD_TIMEOUT", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS") if k in os.environ},
    }
    try:
        info["numba_threading_layer"] = numba.threading_layer()
    except ValueError:  # no parallel kernel has run yet
        info["numba_threading_layer"] = None
    try:
        from threadpoolctl import threadpool_info

        with numba_backend.one_blas_thread():
            pass  # loads the BLAS numba calls, so that it is listed
        info["blas"] = [{k: lib.get(k) for k in ("internal_api", "version", "architecture", "num_threads",
                                                  "threading_layer", "filepath")} for lib in threadpool_info()]
    except ImportError:
        info["blas"] = None
    info["git_commit"] = _git_commit()
    return info


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _cpu_simd() -> list[str]:
    """The vector instruction sets the CPU reports (Linux), e.g. ['avx2', 'fma', 'avx512f']."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                return [f for f in ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile")
                        if f in flags]
    except OSError:
        pass
    return []


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _git_commit() -> str | None:
    if not (REPO / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10)
        return done.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


# ---------------------------------------------------------------------------------------------
# files and plots


CSV_FIELDS = ("method", "family", "origin", "backend", "form", "d", "n", "batch_heads", "status", "reason",
              "median_s", "min_s", "max_s", "runs", "gflops", "sgemm_gflops_same_rounds", "load_average",
              "other_processes_cores")


def write_csv(rows: list[dict], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in CSV_FIELDS})


def load_results(path: str | os.PathLike | None = None, name: str = "bench.json") -> dict:
    """A recorded benchmark: ``path``, else ``name`` through :func:`lattn_edu.records.load_record`
    (the checkout's ``benchmarks/results/``, then the copy shipped with the package)."""
    if path is None:
        return records.load_record(name)
    if not Path(path).is_file():
        raise FileNotFoundError(f"no recorded benchmark at {path}; run lattn-edu bench")
    return json.loads(Path(path).read_text(encoding="utf-8"))


_STYLE = {OURS: ("C0", "o", "-"), KERNEL: ("C0", ".", ":"), PEER: ("C3", "s", "-"), "torch chunkwise": ("C1", "^", "--"),
          "numpy chunkwise": ("C2", "v", "--"), "numba recurrent": ("C4", "D", ":"),
          "numba parallel": ("C5", "P", ":"), "numba quadratic": ("C6", "X", ":"),
          SOFTMAX_OURS: ("C7", "o", "-."), SOFTMAX_SDPA: ("C8", "s", "-."), "numpy softmax": ("C9", "^", "-.")}


def _label(record: dict) -> str:
    m = record["machine"]
    return (f"{m['cpu']}, {m['cores']} cores; numba {m['numba_threads']} threads, torch "
            f"{m['torch_threads']}; batch·heads = {record['settings']['batch_heads']}, float32")


def _method_panels(record: dict, names: tuple[str, ...], value: Callable[[dict], float],
                   ylabel: str) -> tuple[Any, dict[int, Any]]:
    """One panel per d, sharing the y axis, with a line per method of ``names``: ``value(row)``
    against N. Returns the figure and {d: axes} for each caller's scales and extras."""
    import matplotlib.pyplot as plt

    rows, dims = record["results"], record["settings"]["dims"]
    fig, axes = plt.subplots(1, len(dims), figsize=(4.2 * len(dims), 4.0), sharey=True, squeeze=False)
    for ax, d in zip(axes[0], dims):
        for name in names:
            ok = _ok(rows, name, d)
            if ok:
                colour, marker, line = _STYLE[name]
                sizes = sorted(ok)
                ax.plot(sizes, [value(ok[n]) for n in sizes], line, marker=marker, color=colour, label=name, ms=4)
        ax.set(xlabel="sequence length N", title=f"d = d_v = {d}")
    axes[0][0].set_ylabel(ylabel)
    return fig, dict(zip(dims, axes[0]))


def plot_throughput(record: dict) -> Any:
    """GFLOP/s (4·d·d_v per token) against N for the linear-attention methods, one panel per d,
    with the sgemm measured in the same rounds as the ceiling."""
    names = (OURS, KERNEL, PEER, "torch chunkwise", "numpy chunkwise", "numba recurrent", "numba parallel")
    fig, panels = _method_panels(record, names, lambda row: row["gflops"], "GFLOP/s (4·d·d_v per token)")
    for d, ax in panels.items():
        ceiling = [r["sgemm_gflops_same_rounds"] for r in record["results"] if r["d"] == d
                   and r["method"] == OURS and r["status"] == "ok"]
        if ceiling:
            ax.axhline(float(np.median(ceiling)), color="black", lw=1, ls=":", label="numpy sgemm (ceiling)")
        ax.set_xscale("log", base=2)
    ax.legend(fontsize=7, loc="best")
    fig.suptitle("Causal linear attention throughput. " + _label(record), fontsize=8)
    return fig


def plot_ratio(record: dict) -> Any:
    """Our best numba form's speed over the peer's (time of peer / time of ours) against N."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    for d, shapes in _group(record["summary"]["per_shape"], "d").items():
        ax.plot([s["n"] for s in shapes], [s["ratio"] for s in shapes], marker="o", label=f"d = {d}")
    ax.axhline(1.0, color="black", lw=1, ls=":")
    ax.set_xscale("log", base=2)
    ax.set(xlabel="sequence length N", ylabel="speed-up over the torch chunkwise peer",
           title="Our best numba form against the peer (same run)")
    ax.legend(fontsize=8)
    fig.suptitle(_label(record), fontsize=7)
    return fig


def plot_times(record: dict) -> Any:
    """Time per call against N on log-log axes: linear (ours, peer) against softmax (ours, SDPA,
    materialised), one panel per d, with the crossovers marked."""
    names = (OURS, PEER, SOFTMAX_OURS, SOFTMAX_SDPA, "numpy softmax")
    fig, panels = _method_panels(record, names, lambda row: 1e3 * row["median_s"], "time per call (ms, median)")
    for d, ax in panels.items():
        for entry in record["summary"]["crossover"]:
            if entry["d"] == d and entry["crossover_n"] is not None:
                ax.axvline(entry["crossover_n"], color=_STYLE[entry["softmax"]][0], lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.legend(fontsize=7, loc="upper left")
    fig.suptitle("Causal attention, linear vs softmax (dotted: crossovers). " + _label(record), fontsize=8)
    return fig


def plot_decode(record: dict) -> Any:
    """Per-token decoding time against the number of tokens already seen (log-log)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    styles = {"LinearAttentionState.step": "-", "SoftmaxKVCache.step": "--"}
    for i, d in enumerate(sorted({r["d"] for r in record["decode"]})):
        for method, line in styles.items():
            mine = sorted((r for r in record["decode"] if r["d"] == d and r["method"] == method),
                          key=lambda r: r["n"])
            ax.loglog([r["n"] for r in mine], [1e6 * r["median_s"] for r in mine], line, marker="o",
                      color=f"C{i}", label=f"{method.split('.')[0]}, d = {d}", ms=4)
    ax.set(xlabel="tokens already seen N", ylabel="time per decoded token (µs, median)",
           title="Decoding: fixed state vs growing KV cache")
    ax.legend(fontsize=7)
    fig.suptitle(_label(record), fontsize=7)
    return fig


PLOTS = {"bench_throughput.png": plot_throughput, "bench_ratio.png": plot_ratio,
         "bench_times.png": plot_times, "bench_decode.png": plot_decode}


def _group(items: list[dict], key: str) -> dict[Any, list[dict]]:
    groups: dict[Any, list[dict]] = {}
    for item in items:
        groups.setdefault(item[key], []).append(item)
    return groups


def write_plots(record: dict, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .book import use_book_style

    use_book_style()
    written = []
    for name, plot in PLOTS.items():
        fig = plot(record)
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        written.append(name)
    return written


# ---------------------------------------------------------------------------------------------
# the command


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gated", action="store_true",
                        help="instead: the gated family's chunkwise kernels (scalar and vector decay, "
                             "the delta rule) against torch peers; writes bench_gated.json")
    parser.add_argument("--quick", action="store_true",
                        help=f"fewer sizes (N = {', '.join(map(str, QUICK_SIZES))}), fewer repeats, "
                             "tighter limits: a few minutes; writes to benchmarks/results/quick/")
    parser.add_argument("--dims", type=int, nargs="+", metavar="D", help=f"head widths (default {DIMS})")
    parser.add_argument("--sizes", type=int, nargs="+", metavar="N", help="sequence lengths, increasing")
    parser.add_argument("--batch-heads", type=int, metavar="B", help=f"sequences per call (default {BATCH_HEADS})")
    parser.add_argument("--decode-sizes", type=int, nargs="+", metavar="N",
                        help=f"tokens already seen when decoding (default {DECODE_SIZES})")
    parser.add_argument("--decode-steps", type=int, metavar="T", help="decoding steps timed per size")
    parser.add_argument("--max-call-seconds", type=float, metavar="S",
                        help="stop growing N for a method once a call would take longer")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS,
                        help="our backends to time (default: all available)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="where to write bench.json, bench.csv "
                        "and the plots (default benchmarks/results/ of the checkout)")
    parser.add_argument("--peers", type=Path, metavar="FILE", help="the peers module (default "
                        "benchmarks/peers.py of the checkout)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def settings_from(args: argparse.Namespace) -> Settings:
    settings = QUICK if args.quick else FULL
    changes: dict[str, Any] = {}
    for option, field in (("dims", "dims"), ("sizes", "sizes"), ("decode_sizes", "decode_sizes")):
        value = getattr(args, option)
        if value:
            if any(x < 1 for x in value):
                raise ValueError(f"--{option.replace('_', '-')} must be positive integers; got {value}")
            changes[field] = tuple(sorted(set(value)))
    for option, field in (("batch_heads", "batch_heads"), ("decode_steps", "decode_steps"),
                          ("max_call_seconds", "max_call_s")):
        value = getattr(args, option)
        if value is not None:
            if value <= 0:
                raise ValueError(f"--{option.replace('_', '-')} must be > 0; got {value}")
            changes[field] = value
    return replace(settings, **changes)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark and write its files; prints the summary table. Returns the exit code."""
    started = time.perf_counter()
    # Idle OpenMP threads (numba's and torch's) sleep instead of spinning: on a machine shared
    # with other work, spinning threads steal the cores the busy ones need. Read when the OpenMP
    # runtime loads, so it applies only if torch and numba's threads have not started yet.
    if "OMP_WAIT_POLICY" in os.environ:
        return _run(args, started)
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        return _run(args, started)
    finally:  # the process's environment as it was, for whatever runs after
        del os.environ["OMP_WAIT_POLICY"]


def _run(args: argparse.Namespace, started: float) -> int:
    if args.gated:
        from .bench_gated import run as run_gated

        return run_gated(args, started)
    try:
        settings = settings_from(args)
        peers = load_peers(args.peers)
        import torch  # noqa: F401
    except (ValueError, FileNotFoundError, ImportError) as err:
        print(f"lattn-edu bench: {err}", file=sys.stderr)
        return 2
    out = args.out if args.out is not None else (RESULTS / "quick" if args.quick else RESULTS)
    out.mkdir(parents=True, exist_ok=True)
    backends = tuple(args.backends) if args.backends else la.available_backends()
    found = methods(peers, backends)
    load_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    progress = Progress(total=len(settings.dims) * (len(found) * (len(settings.sizes) + 1))
                        + len(settings.dims) * len(settings.decode_sizes) + 2,
                        enabled=not args.no_progress)

    progress.advance(0, "checking every method against the reference")
    correctness = check_correctness(found, settings.dims)
    progress.advance(len(settings.dims) * len(found), "checked")
    wrong = [c for c in correctness if not c["ok"]]
    if wrong:
        progress.close()
        for c in wrong:
            print(f"lattn-edu bench: {c['method']} (d={c['d']}) disagrees with the float64 reference: "
                  f"relative error {c['relative_error']:.2e} > {TOLERANCE:g}", file=sys.stderr)
        return 1
    sgemm_start = measure_sgemm(settings.sgemm_size)
    progress.advance(1, "sgemm")
    rows = benchmark_shapes(found, settings, progress)
    decode = benchmark_decoding(settings.dims, settings.decode_sizes, settings.decode_steps, progress)
    sgemm_end = measure_sgemm(settings.sgemm_size)
    sgemm_avx512 = measure_sgemm_avx512(settings.sgemm_size)
    progress.advance(1, "sgemm")
    progress.close()

    shapes = per_shape_summary(rows, settings.dims, settings.sizes)
    decoding = decode_summary(decode)
    record = {
        "schema": 1,
        "description": __doc__.split("\n\n")[1].replace("\n", " "),
        "arguments": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                      if k != "command"},
        "quick": bool(args.quick),
        "recorded": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": machine_info(),
        "settings": {**{k: (list(v) if isinstance(v, tuple) else v) for k, v in settings.__dict__.items()},
                     "chunk_size": CHUNK, "eps": EPS, "dtype": "float32", "feature_map": "elu+1",
                     "flops_per_token": "4*d*d_v (linear); (N+1)*(d+d_v) (causal softmax)",
                     "backends": list(backends)},
        "load_average_start": list(load_start) if load_start else None,
        "other_processes_cores": _busy_elsewhere(rows),
        "load_average_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "sgemm": {"size": settings.sgemm_size, "gflops_start": sgemm_start, "gflops_end": sgemm_end,
                  "avx512_kernels": sgemm_avx512},
        "correctness": correctness,
        "results": rows,
        "decode": decode,
        "summary": {"per_shape": shapes, "crossover": crossovers(rows, settings.dims), "decode": decoding,
                    "targets": targets(shapes, decoding)},
    }
    write_csv(rows, out / "bench.csv")
    written = ["bench.json", "bench.csv"] + ([] if args.no_plots else write_plots(record, out))
    record["wall_seconds"] = time.perf_counter() - started
    text = json.dumps(record, indent=1) + "\n"
    (out / "bench.json").write_text(text, encoding="utf-8")
    if args.out is None and not args.quick and PACKAGED.is_dir():  # the book's copy, for Colab
        (PACKAGED / "bench.json").write_text(text, encoding="utf-8")
    print(report(record))
    print(f"written to {out}: {', '.join(written)}")
    return 0


def _busy_elsewhere(rows: list[dict]) -> dict | None:
    """Mean and largest number of cores other processes kept busy while the shapes were timed."""
    per_shape = {(r["d"], r["n"]): r.get("other_processes_cores") for r in rows}
    values = [v for v in per_shape.values() if v is not None]
    return {"mean": float(np.mean(values)), "max": float(np.max(values))} if values else None


def report(record: dict) -> str:
    """The summary as text: per shape, the crossovers, decoding, the targets."""
    m = record["machine"]
    lines = [f"machine: {m['cpu']}, {m['cores']} cores, numba {m['numba_threads']} threads, "
             f"torch {m['torch_threads']} threads; load average {record['load_average_start']} -> "
             f"{record['load_average_end']}; other processes kept "
             f"{(record.get('other_processes_cores') or {}).get('mean', float('nan')):.2f} cores busy on "
             f"average; wall time {record['wall_seconds']:.0f} s",
             f"sgemm {record['sgemm']['size']}: {record['sgemm']['gflops_start']:.0f} / "
             f"{record['sgemm']['gflops_end']:.0f} GFLOP/s (start / end)"
             + (f"; with OpenBLAS's AVX-512 kernels {record['sgemm']['avx512_kernels']['gflops']:.0f}"
                if record["sgemm"].get("avx512_kernels") else ""),
             "", f"{'d':>4} {'N':>7} {'ours GFLOP/s':>13} {'peer GFLOP/s':>13} {'ratio':>6} {'of sgemm':>9}"
                 f" {'kernel GFLOP/s':>15} {'ratio':>6} {'of sgemm':>9}  ours"]
    for s in record["summary"]["per_shape"]:
        kernel = (f"{s['kernel_gflops']:>15.1f} {s['kernel_ratio']:>6.2f} {100 * s['kernel_sgemm_fraction']:>8.0f}%"
                  if s.get("kernel_gflops") is not None else f"{'-':>15} {'-':>6} {'-':>9}")
        lines.append(f"{s['d']:>4} {s['n']:>7} {s['ours_gflops']:>13.1f} {s['peer_gflops']:>13.1f} "
                     f"{s['ratio']:>6.2f} {100 * s['sgemm_fraction']:>8.0f}% {kernel}  {s['ours']}")
    lines.append("")
    for c in record["summary"]["crossover"]:
        where = ("not within the sizes measured" if c["crossover_n"] is None
                 else f"<= {c['sizes'][0]}" if c["at_or_below_smallest"] else f"~{c['crossover_n']:,.0f}")
        lines.append(f"crossover d={c['d']:>3}: best numba linear beats {c['softmax']} from N {where}")
    lines.append("")
    for g in record["summary"]["decode"]:
        lines.append(f"decode d={g['d']:>3} {g['method']:<26} {1e6 * g['per_token_small_s']:8.1f} µs at N={g['n_small']:,}"
                     f" -> {1e6 * g['per_token_large_s']:8.1f} µs at N={g['n_large']:,}: x{g['growth']:.2f}")
    lines.append("")
    lines.append("targets: " + json.dumps(record["summary"]["targets"]))
    return "\n".join(lines)
