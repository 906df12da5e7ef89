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
from ..style import PALETTE
from ..timing import crossover_size, loglog_slope
from ._ticks import fixed_ticks, power_of_ten
from .base import Explorer

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


class ScalingExplorer(Explorer):
    """Softmax's time grows like N², linear attention's like N: recorded, with the crossover.

    Left: seconds per call against N on log-log axes, slopes and crossover marked. Right:
    entries per head of the N×N matrix, the KV cache and the m×d_v state.
    """

    name = "scaling"
    title = "Softmax vs linear attention as N grows (recorded measurements)"
    controls = {"d": (32, 64, 128), "causal": (False, True)}
    defaults = {"d": 64, "causal": False}
    labels = {"d": "head width d (= m = d_v)", "causal": "causal"}

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__()
        self.path = path

    def compute(self, d: int, causal: bool) -> dict[str, Any]:
        return compute_scaling(d, causal, self.path)

    def build(self, fig: Figure) -> dict[str, Any]:
        """Every artist in place and empty: per method a line and its slope label, the
        crossover line and note, the three memory lines and their labels, and the suptitle.
        The axes fit every run of the record (``recorded_extent``), so they stay put as d and
        causal change."""
        record = load_scaling(self.path)
        time_ax, memory_ax = fig.subplots(1, 2)
        artists: dict[str, Any] = {"time": {}, "slope_labels": {}}
        for method, color in (("softmax", SOFTMAX), ("linear", LINEAR)):
            artists["time"][method], = time_ax.plot([], [], marker="o", color=color)
            artists["slope_labels"][method] = time_ax.text(1, 1, "", color=color, fontsize=9, ha="center",
                                                           va="bottom", in_layout=False)
        artists["crossover"] = time_ax.axvline(1, color="0.27", linestyle="--", linewidth=1)
        artists["crossover_label"] = time_ax.text(1, 0.03, "", transform=time_ax.get_xaxis_transform(),
                                                  fontsize=9, va="bottom")
        artists["no_crossover"] = time_ax.text(0.98, 0.03, "", transform=time_ax.transAxes, ha="right", fontsize=9)
        time_ax.set(xscale="log", yscale="log", xlabel="sequence length N",
                    ylabel=f"ms per call, batch·heads {record.get('batch_heads')}",
                    title=f"time per call (slopes for N ≥ {FIT_FROM})")
        extent = recorded_extent(record)
        (n_low, n_high), (ms_low, ms_high) = extent["n"], extent["ms"]
        _log_ticks(time_ax.xaxis, n_low, n_high, powers_of_two=True)
        _log_ticks(time_ax.yaxis, ms_low, ms_high, step=2)
        time_ax.set(xlim=(n_low / 1.5, n_high * 2), ylim=(ms_low / 2, ms_high * 20))
        time_ax.grid(alpha=0.3)

        artists["memory"] = {
            "matrix_entries": memory_ax.plot([], [], color=SOFTMAX, marker="o", markersize=4)[0],
            "kv_cache_entries": memory_ax.plot([], [], color="0.6", linestyle="--")[0],
            "state_entries": memory_ax.plot([], [], color=STATE, marker="o", markersize=4)[0]}
        artists["memory_labels"] = {key: memory_ax.text(1, 1, "", color=color, fontsize=9, ha="right", va=va,
                                                        in_layout=False)
                                    for key, color, va in (("matrix_entries", SOFTMAX, "bottom"),
                                                           ("kv_cache_entries", "0.47", "top"),
                                                           ("state_entries", STATE, "bottom"))}
        memory_ax.set(xscale="log", yscale="log", xlabel="sequence length N", ylabel="entries per head",
                      title="memory (la.attention_cost)")
        (memory_low, memory_high), (entries_low, entries_high) = extent["memory_n"], extent["entries"]
        _log_ticks(memory_ax.xaxis, memory_low, memory_high, powers_of_two=True)
        _log_ticks(memory_ax.yaxis, entries_low, entries_high, step=2)
        memory_ax.set_xlim(memory_low / 1.5, memory_high * 1.5)
        memory_ax.set_ylim(entries_low / 4, entries_high * 3)
        memory_ax.grid(alpha=0.3)
        artists["title"] = fig.suptitle("", fontsize=10)
        return artists

    def update(self, artists: dict[str, Any], result: dict[str, Any]) -> None:
        """Move every artist to ``result``: the timings and slopes, the crossover, the memory
        counts and the suptitle."""
        for method in ("softmax", "linear"):
            sizes, milliseconds = result["sizes"][method], result["seconds"][method] * 1e3
            slope = result["slopes"][method]
            artists["time"][method].set_data(sizes, milliseconds)
            artists["time"][method].set_label(f"{method}: slope {slope:.2f}")
            artists["slope_labels"][method].set_position((sizes[-1], milliseconds[-1] * 1.5))
            artists["slope_labels"][method].set_text(f"{method}\nslope {slope:.2f}")
        crossover = result["crossover"]
        artists["crossover"].set_visible(crossover is not None)
        if crossover is not None:
            artists["crossover"].set_xdata([crossover, crossover])
            artists["crossover_label"].set_x(crossover)
        artists["crossover_label"].set_text("" if crossover is None else f" linear faster\n from N ≈ {crossover:,.0f}")
        artists["no_crossover"].set_text(f"linear not faster up to N = {result['largest_shared']:,.0f}"
                                         if crossover is None else "")

        n = result["memory_sizes"]
        for key, line in artists["memory"].items():
            line.set_data(n, result[key])
        matrix, cache, state = result["matrix_entries"], result["kv_cache_entries"], result["state_entries"]
        labels = artists["memory_labels"]
        labels["matrix_entries"].set_position((n[-3], matrix[-3] * 1.5))  # above-left of the line
        labels["matrix_entries"].set_text("N×N matrix: N²")
        labels["kv_cache_entries"].set_position((n[-1], cache[-1] / 5))
        labels["kv_cache_entries"].set_text("KV cache:\nN·(d + d_v)")
        labels["state_entries"].set_position((n[-1], state[-1] * 1.6))
        labels["state_entries"].set_text(f"state: m·d_v = {state[0]:,.0f}")
        form = "causal" if result["causal"] else "non-causal"
        artists["title"].set_text(f"Recorded {result['recorded']} on {result['machine']}, not timed now; "
                                  f"d = {result['d']}, {form}")
