"""Explorer ``scaling``: recorded time and memory of softmax vs linear attention as N grows (chapter 3).

The numbers come from ``benchmarks/scaling.py``, recorded once into the package data file
``lattn_edu/data/scaling.json``; this explorer only draws them and never times anything, so
the picture is the same on every machine (the title says where it was measured).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from .. import records
from ..book import PALETTE
from ..timing import crossover_size, loglog_slope
from ._ticks import fixed_ticks, power_of_ten
from .base import Explorer, figure_axes

FIT_FROM = 512  # slopes are fitted for N >= this: below it fixed per-call costs dominate
SOFTMAX, LINEAR, STATE = PALETTE["vermillion"], PALETTE["green"], PALETTE["blue"]


def recorded_path() -> Path:
    """Where the package keeps the recorded measurements."""
    return records.DATA / "scaling.json"


def load_scaling(path: str | Path | None = None) -> dict[str, Any]:
    """The recorded measurements, checked; a missing or unreadable file raises a clear error."""
    path = recorded_path() if path is None else Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"recorded scaling measurements not found at {path}: run "
                                f"`python benchmarks/scaling.py` to record them")
    try:
        record = records.read_record(path)
        missing = {"machine", "memory", "runs"} - set(record)
        if missing:
            raise KeyError(f"missing {sorted(missing)}")
        for run in record["runs"]:
            for method in ("softmax", "linear"):
                for row in run[method]:
                    if not (float(row["n"]) > 0 and float(row["median_s"]) > 0):
                        raise ValueError(f"{method} row {row} is not positive")
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"recorded scaling measurements at {path} are corrupt ({error!r}): "
                         f"re-run `python benchmarks/scaling.py`") from None
    return record


def _fit(sizes: np.ndarray, seconds: np.ndarray) -> float:
    large = sizes >= FIT_FROM
    return loglog_slope(sizes[large], seconds[large]) if large.sum() >= 2 else loglog_slope(sizes, seconds)


def compute_scaling(d: int, causal: bool, path: str | Path | None = None) -> dict[str, Any]:
    """Recorded seconds per call of both methods at width d, their log-log slopes (N >= FIT_FROM),
    the N from which linear attention is faster, and the memory counts per head."""
    record = load_scaling(path)
    runs = [r for r in record["runs"] if r["d"] == d and r["causal"] == causal]
    if not runs or str(d) not in record["memory"]:
        raise ValueError(f"no recorded measurements for d={d}, causal={causal} in the recorded file")
    run = runs[0]
    sizes = {m: np.array([row["n"] for row in run[m]], dtype=float) for m in ("softmax", "linear")}
    seconds = {m: np.array([row["median_s"] for row in run[m]]) for m in ("softmax", "linear")}
    shared = np.intersect1d(sizes["softmax"], sizes["linear"])
    pick = {m: np.isin(sizes[m], shared) for m in ("softmax", "linear")}
    memory = record["memory"][str(d)]
    return {
        "d": d, "causal": causal, "machine": record["machine"], "recorded": record.get("recorded", "?"),
        "batch_heads": record.get("batch_heads"), "sizes": sizes, "seconds": seconds,
        "slopes": {m: _fit(sizes[m], seconds[m]) for m in ("softmax", "linear")},
        "crossover": crossover_size(shared, seconds["softmax"][pick["softmax"]],
                                    seconds["linear"][pick["linear"]]),
        "largest_shared": float(shared.max()),
        "memory_sizes": np.array([row["n"] for row in memory], dtype=float),
        "matrix_entries": np.array([row["matrix_entries"] for row in memory], dtype=float),
        "state_entries": np.array([row["state_entries"] for row in memory], dtype=float),
        "kv_cache_entries": np.array([row["kv_cache_entries"] for row in memory], dtype=float),
        "extent": recorded_extent(record),
    }


def recorded_extent(record: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """The smallest and largest N, milliseconds and memory entries over every run in the record:
    axes that fit all of them stay put as d and causal change."""
    sizes = [row["n"] for run in record["runs"] for m in ("softmax", "linear") for row in run[m]]
    milliseconds = [row["median_s"] * 1e3 for run in record["runs"] for m in ("softmax", "linear")
                    for row in run[m]]
    memory = [row for rows in record["memory"].values() for row in rows]
    entries = [row[key] for row in memory for key in ("matrix_entries", "state_entries")]
    return {"n": (min(sizes), max(sizes)), "ms": (min(milliseconds), max(milliseconds)),
            "memory_n": (min(row["n"] for row in memory), max(row["n"] for row in memory)),
            "entries": (min(entries), max(entries))}


def _log_ticks(axis: Any, low: float, high: float, powers_of_two: bool = False, step: int = 1) -> None:
    """Plain-text ticks, no minor ticks: log axes with mathtext labels are slow to lay out."""
    if powers_of_two:  # 64, 256, 1k, 4k, 16k
        ticks = [4**k for k in range(int(np.floor(np.log(low) / np.log(4))),
                                     int(np.ceil(np.log(high) / np.log(4))) + 1)]
        labels = [f"{t // 1024}k" if t >= 1024 else str(t) for t in ticks]
    else:  # 10⁻¹, 10⁰, 10¹, ...
        ticks = [10.0**k for k in range(int(np.floor(np.log10(low))), int(np.ceil(np.log10(high))) + 1, step)]
        labels = [power_of_ten(t) for t in ticks]
    fixed_ticks(axis, ticks, labels)


def plot_scaling(result: dict[str, Any], fig: Figure | None = None) -> Figure:
    """Left: seconds per call against N on log-log axes, slopes and crossover marked.
    Right: entries per head of the N×N matrix, the KV cache and the m×d_v state.
    Given ``fig``, a figure this function drew before, draws on its axes again in place.
    """
    fig, (time_ax, memory_ax) = figure_axes(fig, (10, 4.2), 2)
    for method, color in (("softmax", SOFTMAX), ("linear", LINEAR)):
        sizes, milliseconds = result["sizes"][method], result["seconds"][method] * 1e3
        time_ax.loglog(sizes, milliseconds, marker="o", color=color,
                       label=f"{method}: slope {result['slopes'][method]:.2f}")
        time_ax.text(sizes[-1], milliseconds[-1] * 1.5, f"{method}\nslope {result['slopes'][method]:.2f}",
                     color=color, fontsize=9, ha="center", va="bottom", in_layout=False)
    crossover = result["crossover"]
    if crossover is not None:
        time_ax.axvline(crossover, color="0.27", linestyle="--", linewidth=1)
        time_ax.text(crossover, 0.03, f" linear faster\n from N ≈ {crossover:,.0f}",
                     transform=time_ax.get_xaxis_transform(), fontsize=9, va="bottom")
    else:
        time_ax.text(0.98, 0.03, f"linear not faster up to N = {result['largest_shared']:,.0f}",
                     transform=time_ax.transAxes, ha="right", fontsize=9)
    form = "causal" if result["causal"] else "non-causal"
    time_ax.set(xlabel="sequence length N", ylabel=f"ms per call, batch·heads {result['batch_heads']}",
                title=f"time per call (slopes for N ≥ {FIT_FROM})")
    extent = result["extent"]
    (n_low, n_high), (ms_low, ms_high) = extent["n"], extent["ms"]
    _log_ticks(time_ax.xaxis, n_low, n_high, powers_of_two=True)
    _log_ticks(time_ax.yaxis, ms_low, ms_high, step=2)
    time_ax.set(xlim=(n_low / 1.5, n_high * 2), ylim=(ms_low / 2, ms_high * 20))
    time_ax.grid(alpha=0.3)

    n = result["memory_sizes"]
    matrix, cache, state = result["matrix_entries"], result["kv_cache_entries"], result["state_entries"]
    memory_ax.loglog(n, matrix, color=SOFTMAX, marker="o", markersize=4)
    memory_ax.loglog(n, cache, color="0.6", linestyle="--")
    memory_ax.loglog(n, state, color=STATE, marker="o", markersize=4)
    labels = ((n[-3], matrix[-3] * 1.5, "bottom", SOFTMAX, "N×N matrix: N²"),  # above-left of the line
              (n[-1], cache[-1] / 5, "top", "0.47", "KV cache:\nN·(d + d_v)"),
              (n[-1], state[-1] * 1.6, "bottom", STATE, f"state: m·d_v = {state[0]:,.0f}"))
    for x, y, va, color, text in labels:
        memory_ax.text(x, y, text, color=color, fontsize=9, ha="right", va=va, in_layout=False)
    memory_ax.set(xlabel="sequence length N", ylabel="entries per head",
                  title="memory (la.attention_cost)")
    (memory_low, memory_high), (entries_low, entries_high) = extent["memory_n"], extent["entries"]
    _log_ticks(memory_ax.xaxis, memory_low, memory_high, powers_of_two=True)
    _log_ticks(memory_ax.yaxis, entries_low, entries_high, step=2)
    memory_ax.set_ylim(entries_low / 4, entries_high * 3)
    memory_ax.grid(alpha=0.3)
    fig.suptitle(f"Recorded {result['recorded']} on {result['machine']}, not timed now; "
                 f"d = {result['d']}, {form}", fontsize=10)
    return fig


class ScalingExplorer(Explorer):
    """Softmax's time grows like N², linear attention's like N: recorded, with the crossover."""

    name = "scaling"
    title = "Softmax vs linear attention as N grows (recorded measurements)"
    controls = {"d": (32, 64, 128), "causal": (False, True)}
    defaults = {"d": 64, "causal": False}
    labels = {"d": "head width d (= m = d_v)", "causal": "causal"}

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = path

    def draw(self, fig: Figure | None, **settings: Any) -> Figure:
        return plot_scaling(compute_scaling(settings["d"], settings["causal"], self.path), fig)
