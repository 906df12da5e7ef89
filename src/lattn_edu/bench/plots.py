"""The plots of a ``lattn-edu bench`` record: throughput, speed-up, time and decoding (chapter 9).

Each ``plot_*`` takes a record (as :func:`lattn_edu.bench.load_results` returns it) and
returns a matplotlib Figure, so a chapter draws the recorded run and the command writes
the same figures as PNG files next to its CSV. Lines are labelled as chapter 9 names them
(:data:`LABELS`: "ours (numba chunkwise)", "peer, eager", ...), not by the record's method
keys, and the panels' legends sit below the panels, off the data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from .methods import KERNEL, OURS, PEER, PEER_COMPILED, SOFTMAX_OURS, SOFTMAX_SDPA
from .summary import decode_heads, timed_rows


_STYLE = {OURS: ("C0", "o", "-"), KERNEL: ("C0", ".", ":"), PEER: ("C3", "s", "-"),
          PEER_COMPILED: ("C3", "s", "--"), "torch chunkwise": ("C1", "^", "--"),
          "numpy chunkwise": ("C2", "v", "--"), "numba recurrent": ("C4", "D", ":"),
          "numba parallel": ("C5", "P", ":"), "numba quadratic": ("C6", "X", ":"),
          SOFTMAX_OURS: ("C7", "o", "-."), SOFTMAX_SDPA: ("C2", "s", "-."), "numpy softmax": ("C1", "^", "-.")}


# What a legend calls a method (the record's key where the key already says what it is).
LABELS = {OURS: "ours (numba chunkwise)", KERNEL: "ours, kernel called directly", PEER: "peer, eager",
          PEER_COMPILED: "peer, compiled", "torch chunkwise": "torch backend chunkwise",
          "numba parallel": "numba parallel (ours, timed again)", "numpy softmax": "numpy softmax (whole N×N matrix)"}


def label(method: str) -> str:
    """The legend's name for a method of the record (:data:`LABELS`, else the method's key)."""
    return LABELS.get(method, method)


def _legend_below(fig: Any, axes: Any, ncol: int) -> None:
    """One legend for the whole figure, below its panels: each label once, in the order drawn."""
    entries: dict[str, Any] = {}
    for ax in axes:
        for handle, text in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(text, handle)
    fig.legend(list(entries.values()), list(entries), fontsize=7, loc="outside lower center", ncol=ncol)


def _label(record: dict, heads: str | None = None) -> str:
    """The record's machine and threads, then the sequences a call ran (``heads``, when given;
    else the record's batch·heads)."""
    m = record["machine"]
    heads = heads or f"batch·heads = {record['settings']['batch_heads']}"
    return (f"{m['cpu']}, {m['cores']} cores; numba {m['numba_threads']} threads, torch "
            f"{m['torch_threads']}; {heads}, float32")


# The lines a figure does not argue from: thin and grey, so the argued ones stand out; each keeps
# its marker and line style, and its name in the legend.
_BACKGROUND = {"color": "0.62", "lw": 0.9, "ms": 3, "alpha": 0.9, "zorder": 1}


def _method_panels(record: dict, names: tuple[str, ...], value: Callable[[dict], float],
                   ylabel: str, highlight: Iterable[str] | None = None,
                   sharey: bool = True) -> tuple[Any, dict[int, Any]]:
    """One panel per d, sharing the y axis, with a line per method of ``names``: ``value(row)``
    against N. Methods in ``highlight`` (every method, when None) are drawn in their colours;
    the rest thin and grey. Returns the figure and {d: axes} for each caller's scales and extras."""
    import matplotlib.pyplot as plt

    rows, dims = record["results"], record["settings"]["dims"]
    fig, axes = plt.subplots(1, len(dims), figsize=(4.2 * len(dims), 4.8), sharey=sharey, squeeze=False,
                             layout="constrained")
    for ax, d in zip(axes[0], dims):
        for name in names:
            ok = timed_rows(rows, name, d)
            if ok:
                colour, marker, line = _STYLE[name]
                sizes = sorted(ok)
                look = ({"color": colour, "ms": 4, "zorder": 2} if highlight is None or name in highlight
                        else _BACKGROUND)
                ax.plot(sizes, [value(ok[n]) for n in sizes], line, marker=marker, label=label(name), **look)
        ax.set(xlabel="sequence length N", title=f"d = d_v = {d}")
    axes[0][0].set_ylabel(ylabel)
    return fig, dict(zip(dims, axes[0]))


# The lines chapter 9 argues from in each figure; the others are drawn thin and grey.
THROUGHPUT_ARGUED = (OURS, PEER, PEER_COMPILED)
# Every method the throughput plot draws (where the record has it), in the legend's order.
THROUGHPUT_METHODS = (OURS, KERNEL, PEER, PEER_COMPILED, "torch chunkwise", "numpy chunkwise", "numba recurrent",
                      "numba parallel")
TIMES_ARGUED = (OURS, SOFTMAX_OURS, SOFTMAX_SDPA)


def plot_throughput(record: dict, highlight: Iterable[str] | None = THROUGHPUT_ARGUED,
                    sharey: bool = False) -> Any:
    """GFLOP/s (4·d·d_v per token) against N for the linear-attention methods
    (:data:`THROUGHPUT_METHODS`), one panel per d, with the sgemm measured in the same rounds as
    the ceiling. The methods of ``highlight`` (ours and the two peer runs by default; None: every
    method) are coloured, the others thin and grey. Each panel has its own y-limits
    (``sharey=True``: one scale for all)."""
    fig, panels = _method_panels(record, THROUGHPUT_METHODS, lambda row: row["gflops"],
                                 "GFLOP/s (4·d·d_v per token)", highlight, sharey=sharey)
    for d, ax in panels.items():
        ceiling = [r["sgemm_gflops_same_rounds"] for r in record["results"] if r["d"] == d
                   and r["method"] == OURS and r["status"] == "ok"]
        if ceiling:
            top = float(np.median(ceiling))
            ax.axhline(top, color="black", lw=1, ls=":", label="numpy sgemm (ceiling)")
            highest = max((line.get_ydata().max() for line in ax.get_lines()[:-1]), default=top)
            if not sharey and highest < top / 2:  # the ceiling far above: scale to the data, say where
                ax.set_ylim(0, 1.2 * highest)
                ax.annotate(f"sgemm ceiling, {top:.0f} GFLOP/s, above", (0.02, 0.97),
                            xycoords="axes fraction", fontsize=7, va="top")
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
    _legend_below(fig, panels.values(), ncol=5)
    fig.suptitle("Causal linear attention throughput. " + _label(record), fontsize=8)
    return fig


GOAL = 1.5  # the project's goal for its kernels: at least this many times as fast as the compiled peer


def _ratio_levels(ax: Any) -> None:
    """Dotted lines at 1 (same speed) and at :data:`GOAL`, each named at the axes' left edge."""
    for level, text in ((1.0, "1: same speed"), (GOAL, f"{GOAL:g}: the project's goal against the compiled peer")):
        ax.axhline(level, color="black", lw=0.8, ls=":")
        ax.annotate(text, (0.01, level), xycoords=("axes fraction", "data"), xytext=(0, 2),
                    textcoords="offset points", fontsize=7, va="bottom")


def plot_ratio(record: dict) -> Any:
    """Our chunkwise form's speed over each peer's (time of the peer / time of ours) against N:
    solid against the eager peer, dashed against the compiled one where the record has it, with
    dotted lines at 1 and at the goal of 1.5."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 4.4), layout="constrained")
    for i, (d, shapes) in enumerate(_group(record["summary"]["per_shape"], "d").items()):
        ax.plot([s["n"] for s in shapes], [s["ratio"] for s in shapes], marker="o", color=f"C{i}",
                label=f"d = {d}, {label(PEER)}")
        compiled = [s for s in shapes if s.get("compiled_ratio") is not None]
        if compiled:
            ax.plot([s["n"] for s in compiled], [s["compiled_ratio"] for s in compiled], "--", marker="s",
                    color=f"C{i}", label=f"d = {d}, {label(PEER_COMPILED)}")
    _ratio_levels(ax)
    ax.set_xscale("log", base=2)
    ax.set(xlabel="sequence length N", ylabel="speed-up: peer's time / ours",
           title="Our chunkwise kernel against the peers (same run)")
    _legend_below(fig, [ax], ncol=3)
    fig.suptitle(_label(record), fontsize=7)
    return fig


def plot_times(record: dict, highlight: Iterable[str] | None = TIMES_ARGUED) -> Any:
    """Time per call against N on log-log axes: linear (ours, peer) against softmax (ours, SDPA,
    materialised), one panel per d. The crossings are not drawn (several per panel could not be
    told apart; chapter 9 tabulates them). The methods of ``highlight`` (ours and the two
    softmax kernels the crossovers are taken against, by default; None: every method) are
    coloured, the others (the peers, numpy's softmax) thin and grey."""
    names = (OURS, PEER, PEER_COMPILED, SOFTMAX_OURS, SOFTMAX_SDPA, "numpy softmax")
    fig, panels = _method_panels(record, names, lambda row: 1e3 * row["median_s"], "time per call (ms, median)",
                                 highlight)
    for ax in panels.values():
        ax.set_xscale("log")
        ax.set_yscale("log")
    _legend_below(fig, panels.values(), ncol=4)
    fig.suptitle("Causal attention, linear vs softmax. " + _label(record), fontsize=8)
    return fig


# The decoding figure's lines: the record's method, its line style and its legend name.
DECODE_LINES = {"LinearAttentionState.step": ("-", "state"), "SoftmaxKVCache.step": ("--", "KV cache")}


def plot_decode(record: dict) -> Any:
    """Per-token decoding time against the number of tokens already seen (log-log), the lines
    named as chapter 9 names them (:data:`DECODE_LINES`: "state", "KV cache")."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    for i, d in enumerate(sorted({r["d"] for r in record["decode"]})):
        for method, (line, name) in DECODE_LINES.items():
            mine = sorted((r for r in record["decode"] if r["d"] == d and r["method"] == method),
                          key=lambda r: r["n"])
            ax.loglog([r["n"] for r in mine], [1e6 * r["median_s"] for r in mine], line, marker="o",
                      color=f"C{i}", label=f"{name}, d = {d}", ms=4)
    ax.set(xlabel="tokens already seen N", ylabel="time per decoded token (µs, median)",
           title="Decoding: fixed state vs growing KV cache")
    ax.legend(fontsize=7)
    heads = decode_heads(record["decode"])  # the decoding steps ran one head, not batch·heads
    fig.suptitle(_label(record, "one head" if heads == 1 else f"{heads} heads"), fontsize=7)
    return fig


PLOTS = {"bench_throughput.png": plot_throughput, "bench_ratio.png": plot_ratio,
         "bench_times.png": plot_times, "bench_decode.png": plot_decode}


def plot_gated_ratios(record: dict) -> Any:
    """The gated family's record (``bench_gated.json``): each variant's speed-up over its peer
    against N, one panel per d; solid against the eager peer, dashed against the compiled one,
    with dotted lines at 1 and 1.5."""
    import matplotlib.pyplot as plt

    dims = record["settings"]["dims"]
    fig, axes = plt.subplots(1, len(dims), figsize=(4.6 * len(dims), 5.0), sharey=True, squeeze=False)
    for ax, d in zip(axes[0], dims):
        for i, (variant, rows) in enumerate(_group([r for r in record["results"] if r["d"] == d], "family").items()):
            rows.sort(key=lambda r: r["n"])
            ax.plot([r["n"] for r in rows], [r["ratio"] for r in rows], "-", marker="o", ms=4, color=f"C{i}",
                    label=f"{variant}, eager")
            compiled = [r for r in rows if r.get("compiled_ratio") is not None]
            ax.plot([r["n"] for r in compiled], [r["compiled_ratio"] for r in compiled], "--", marker="s", ms=4,
                    color=f"C{i}", label=f"{variant}, compiled")
        _ratio_levels(ax)
        ax.set_xscale("log", base=2)
        ax.set(yscale="log", xlabel="sequence length N", title=f"d = d_v = {d}")
    low, high = axes[0][0].get_ylim()
    low, high = min(low, 0.9), max(high, 1.6)
    for ax in axes[0]:  # labelled ticks on the log axis, at round ratios
        ax.set_ylim(low, high)
        ax.set_yticks([t for t in (1, 1.5, 2, 5, 10, 20, 50, 100) if low <= t <= high])
        ax.yaxis.set_major_formatter("{x:g}")
        ax.yaxis.set_minor_formatter("")
    axes[0][0].set_ylabel("peer's time / ours")
    fig.legend(*axes[0][0].get_legend_handles_labels(), fontsize=7, loc="outside lower center", ncol=3)
    fig.suptitle("Gated and delta-rule families against their torch chunkwise peers. " + _label(record), fontsize=8)
    return fig


GATED_PLOTS = {"bench_gated_ratio.png": plot_gated_ratios}


def _group(items: list[dict], key: str) -> dict[Any, list[dict]]:
    groups: dict[Any, list[dict]] = {}
    for item in items:
        groups.setdefault(item[key], []).append(item)
    return groups


def write_plots(record: dict, out: Path, plots: dict[str, Callable[[dict], Any]] = PLOTS) -> list[str]:
    """Every plot of ``plots`` (:data:`PLOTS`) as a PNG in ``out``, in the book's style; returns the file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..style import use_book_style

    use_book_style()
    written = []
    for name, plot in plots.items():
        fig = plot(record)
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        written.append(name)
    return written
