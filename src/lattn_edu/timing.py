"""Wall-clock measurements for the book's timing plots and the benchmarks (chapters 3, 4, 9).

Timings are measurements of the machine that runs them, never assertions: the book
labels them as measured on the build machine, and the tests check only that the
measurement itself is well formed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ._checks import check_positive_int


@dataclass(frozen=True)
class Timing:
    """Seconds per call over repeated runs."""

    median: float
    p95: float
    runs: int


def measure(fn: Callable[..., Any], *args: Any, repeats: int = 7, warmup: int = 1,
            min_seconds: float = 0.0) -> Timing:
    """Time ``fn(*args)``: ``warmup`` untimed calls, then at least ``repeats`` timed calls
    (more until ``min_seconds`` have passed). Returns the median and 95th percentile."""
    repeats = check_positive_int(repeats, "repeats")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an int >= 0; got {warmup!r}")
    if not callable(fn):
        raise TypeError(f"fn must be callable; got {type(fn).__name__}")
    for _ in range(warmup):
        fn(*args)
    samples: list[float] = []
    started = time.perf_counter()
    while len(samples) < repeats or time.perf_counter() - started < min_seconds:
        tick = time.perf_counter()
        fn(*args)
        samples.append(time.perf_counter() - tick)
    return Timing(median=float(np.median(samples)), p95=float(np.percentile(samples, 95)),
                  runs=len(samples))


def loglog_slope(sizes: Any, seconds: Any) -> float:
    """The least-squares slope of log(seconds) against log(size): 2 for quadratic, 1 for linear."""
    sizes, seconds = np.asarray(sizes, dtype=float), np.asarray(seconds, dtype=float)
    if sizes.shape != seconds.shape or sizes.ndim != 1 or len(sizes) < 2:
        raise ValueError(f"sizes and seconds must be 1-D of one length >= 2; got {sizes.shape} "
                         f"and {seconds.shape}")
    if (sizes <= 0).any() or (seconds <= 0).any():
        raise ValueError("sizes and seconds must be positive to take logarithms")
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def crossover_size(sizes: Any, seconds_a: Any, seconds_b: Any) -> float | None:
    """The size from which ``b`` is faster than ``a`` for good, interpolated on log-log axes.

    Returns None when b is never faster at the largest size; the smallest size when b is
    faster everywhere. Used for "linear attention beats softmax from N ≈ ...".
    """
    sizes = np.asarray(sizes, dtype=float)
    ratio = np.log(np.asarray(seconds_b, dtype=float)) - np.log(np.asarray(seconds_a, dtype=float))
    if sizes.shape != ratio.shape or sizes.ndim != 1 or len(sizes) < 2 or (np.diff(sizes) <= 0).any():
        raise ValueError("sizes must be 1-D and increasing, with one time of each kind per size")
    if ratio[-1] >= 0:
        return None
    slower = np.nonzero(ratio >= 0)[0]
    if len(slower) == 0:
        return float(sizes[0])
    i = slower[-1]  # last size where b is not faster; b stays faster after i + 1
    log_n = np.log(sizes[i]) + (np.log(sizes[i + 1]) - np.log(sizes[i])) * ratio[i] / (ratio[i] - ratio[i + 1])
    return float(np.exp(log_n))
