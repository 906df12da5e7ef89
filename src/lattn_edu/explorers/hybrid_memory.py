"""Explorer ``hybrid_memory``: what a hybrid holds and reads per token as the context grows (chapter 15).

A preset gives the shape of the layers (how many, their heads and head sizes): Qwen3-Next-80B-A3B,
Kimi Linear 48B-A3B, MiniMax-Text-01, or a round 32-layer stack that is no shipped model. The
controls lay that shape out again: how many of every 4 layers are softmax (1 or 2, the last
of each group, :func:`lattn_edu.hybrid.interleave`), the softmax layers' window (the option
"full" is unwindowed, w = ∞; or 4,096 tokens) and the context N at which the numbers are read.

Left: bytes held per sequence against the context, bf16: the KV cache, the recurrent state
(flat) and their sum. Right: decode FLOPs per token (reading the cache, passing over the
states; projections left out, :mod:`lattn_edu.hybrid`'s counting rule), with the break-even
context from which the stack decodes more cheaply than its all-softmax twin (rounded up to
whole tokens, as the chapter rounds break-evens). On both, in grey,
the same shape as the twin (every layer softmax, unwindowed) and as recurrent layers only, and, dotted,
the model as shipped. Every number is :mod:`lattn_edu.hybrid`'s; the axes never change, so a
move redraws only the lines, two markers and the text.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.legend import Legend

from .._checks import check_choice
from ..hybrid import (break_even_context, decode_flops, full_attention, interleave, kv_cache_bytes, preset,
                      state_bytes, windowed)
from ..style import PALETTE
from ._ticks import plain_log_labels
from .base import Explorer

ROUND = "round 32-layer stack"
PRESET_NAMES = ("Qwen3-Next-80B-A3B", "Kimi Linear 48B-A3B", "MiniMax-Text-01", ROUND)
GROUP = 4  # the controls count softmax layers in every GROUP layers
WINDOWS = ("full", 4096)
# two contexts: a third would take the static page past its 3 MB (48 frames of ~75 kB as base64)
CONTEXTS = (131_072, 1_048_576)
CURVE = np.unique(np.geomspace(10, 2**22, 48).astype(int))  # the context axis' points
X_RANGE, BYTES_RANGE, FLOPS_RANGE = (10, 2**22), (1e4, 1e13), (1e6, 1e14)
FULL, RECURRENT, SHIPPED_STYLE = ("0.45", "--"), ("0.6", ":"), (PALETTE["purple"], (0, (1, 1.5)))


def readable(value: float, unit: str) -> str:
    """'3.2 GB', '26 GFLOP', '512 B': three significant digits and a decimal prefix."""
    for prefix, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def whole_tokens(context: float) -> str:
    """A break-even context rounded up to whole tokens, as chapter 15 rounds it: '1,949'; 'never'
    when the stack never becomes cheaper (an infinite break-even)."""
    return "never" if math.isinf(context) else f"{math.ceil(context):,}"


def _curves(stack: Any, contexts: np.ndarray) -> dict[str, np.ndarray]:
    """KV-cache bytes, total bytes (KV + state) and decode FLOPs at each context [len(contexts)]."""
    kv = np.array([kv_cache_bytes(stack, int(n)) for n in contexts], dtype=float)
    return {"kv": kv, "total": kv + state_bytes(stack),
            "flops": np.array([decode_flops(stack, int(n)) for n in contexts], dtype=float)}


def compute_hybrid_memory(preset_name: str, softmax_per_4: int, window: Any, context: int) -> dict[str, Any]:
    """The stack the controls describe, its memory and decode work against the context
    (``CURVE`` with the window's corner added), at ``context``, and the same for the references:
    full attention and recurrent layers only (same shape) and the model as shipped."""
    shape = preset(check_choice(preset_name, "preset_name", PRESET_NAMES))
    if softmax_per_4 not in (1, 2):
        raise ValueError(f"softmax_per_4 must be 1 or 2 (0 and 4 are drawn as references); "
                         f"got {softmax_per_4!r}")
    if window not in WINDOWS:
        raise ValueError(f"window must be one of {WINDOWS}; got {window!r}")
    if context not in CONTEXTS:
        raise ValueError(f"context must be one of {CONTEXTS}; got {context!r}")
    stack = windowed(interleave(shape, softmax_per_4, GROUP), None if window == "full" else window)
    contexts = np.union1d(CURVE, [window] if window != "full" else [])  # the window's corner, drawn sharp
    full = full_attention(shape)
    return {
        "preset": preset_name, "softmax_per_4": softmax_per_4, "window": window, "context": context,
        "stack": stack, "contexts": contexts, "curves": _curves(stack, contexts),
        "full": _curves(full, contexts), "recurrent": _curves(interleave(shape, 0, GROUP), contexts),
        "shipped": None if preset_name == ROUND else _curves(shape, contexts),
        "kv": kv_cache_bytes(stack, context), "state": state_bytes(stack),
        "flops": decode_flops(stack, context),
        "full_kv": kv_cache_bytes(full, context), "full_flops": decode_flops(full, context),
        "break_even": break_even_context(stack, full, "flops"),
        "break_even_bytes": break_even_context(stack, full, "bytes"),
    }


def summary(result: dict[str, Any]) -> tuple[str, str, str]:
    """Three lines: the setting in words, then its memory and its decode work at the chosen context."""
    stack = result["stack"]
    window = "unwindowed" if result["window"] == "full" else f"window {result['window']:,}"
    setting = (f"{result['preset']} shape, {result['softmax_per_4']} softmax in every {GROUP} layers "
               f"({stack.num_softmax} of {stack.num_layers}), {window}; at N = {result['context']:,} tokens:")
    memory = (f"KV cache {readable(result['kv'], 'B')} + state {readable(result['state'], 'B')} "
              f"(all-softmax twin: KV cache {readable(result['full_kv'], 'B')})")
    work = (f"decode {readable(result['flops'], 'FLOP')} per token (all-softmax twin "
            f"{readable(result['full_flops'], 'FLOP')}); cheaper than the twin from N = "
            f"{whole_tokens(result['break_even'])} in work (in traffic, bytes moved: "
            f"{whole_tokens(result['break_even_bytes'])})")
    return setting, memory, work


class HybridMemoryExplorer(Explorer):
    """A hybrid's KV cache, state and decode FLOPs against the context, with the references."""

    name = "hybrid_memory"
    title = "Hybrid memory: KV cache, state and decode work per token against the context"
    controls = {"preset_name": PRESET_NAMES, "softmax_per_4": (1, 2), "window": WINDOWS,
                "context": CONTEXTS}  # 32 frames
    defaults = {"preset_name": "Qwen3-Next-80B-A3B", "softmax_per_4": 1, "window": "full", "context": 131_072}
    labels = {"preset_name": "shape of", "softmax_per_4": "softmax layers in every 4",
              "window": "softmax window", "context": "context N"}
    figsize = (10, 4.6)
    layout = "none"  # the axes are placed by hand: no layout pass at all

    def compute(self, preset_name: str, softmax_per_4: int, window: Any, context: int) -> dict[str, Any]:
        return compute_hybrid_memory(preset_name, softmax_per_4, window, context)

    def describe(self, reason: str | None = None, **settings: Any) -> str:
        """The controls' values, then the numbers at the chosen context (the static page's alt text)."""
        said = super().describe(reason, **settings)
        if reason:
            return said
        return f"{said} {' '.join(summary(self.compute(**settings)))}."

    def build(self, fig: Figure) -> dict[str, Any]:
        """Two log-log axes with fixed limits, every line empty, the markers, the break-even
        line and its label, a legend drawn once with the axes, and the suptitle."""
        memory_ax = fig.add_axes((0.08, 0.12, 0.4, 0.58))
        work_ax = fig.add_axes((0.59, 0.12, 0.4, 0.58))
        artists: dict[str, Any] = {}
        for ax, key, y_range, ylabel in ((memory_ax, "bytes", BYTES_RANGE, "bytes held per sequence (bf16)"),
                                         (work_ax, "flops", FLOPS_RANGE,
                                          "decode FLOPs per token\n(projections left out)")):
            ax.set(xscale="log", yscale="log", xlim=X_RANGE, ylim=y_range, xlabel="context N (tokens)",
                   ylabel=ylabel)
            plain_log_labels(ax.xaxis, ax.yaxis)
            ax.grid(alpha=0.3)
            artists[key] = {
                "full": ax.plot([], [], color=FULL[0], linestyle=FULL[1], linewidth=1.2)[0],
                "recurrent": ax.plot([], [], color=RECURRENT[0], linestyle=RECURRENT[1], linewidth=1.5)[0],
                "shipped": ax.plot([], [], color=SHIPPED_STYLE[0], linestyle=SHIPPED_STYLE[1],
                                   linewidth=1.5)[0],
                "main": ax.plot([], [], color=PALETTE["blue"], linewidth=2.2)[0],
                "marker": ax.plot([], [], "o", color=PALETTE["blue"], markersize=7)[0]}
        artists["bytes"]["kv"] = memory_ax.plot([], [], color=PALETTE["vermillion"], linewidth=1.2)[0]
        artists["bytes"]["state"] = memory_ax.plot([], [], color=PALETTE["green"], linewidth=1.2)[0]
        artists["break_even"] = work_ax.axvline(1, color=PALETTE["vermillion"], linestyle=":", linewidth=1.2)
        artists["break_even_label"] = work_ax.text(1, 0.03, "", transform=work_ax.get_xaxis_transform(),
                                                   color=PALETTE["vermillion"], fontsize=8.5, va="bottom")
        lines = artists["bytes"]
        handles = [lines[key] for key in ("main", "kv", "state", "shipped", "full", "recurrent")]
        names = ["this stack: KV + state", "its KV cache", "its state", "as shipped",
                 "same shape, full attention", "same shape, recurrent only"]
        # added as an artist, not as the axes' legend: drawn once with the decoration, not on every move
        memory_ax.add_artist(Legend(memory_ax, handles, names, loc="lower center", ncols=3, fontsize=8,
                                    frameon=False, bbox_to_anchor=(0.5, 0.71),
                                    bbox_transform=fig.transFigure))
        artists["title"] = fig.suptitle("", fontsize=9, y=0.985)
        return artists

    def update(self, artists: dict[str, Any], result: dict[str, Any]) -> None:
        """Every line to ``result``'s curves, the markers to the chosen context, the break-even
        line and the two lines of numbers."""
        contexts, context = result["contexts"], result["context"]
        for key, total in (("bytes", "total"), ("flops", "flops")):
            lines = artists[key]
            lines["main"].set_data(contexts, result["curves"][total])
            lines["full"].set_data(contexts, result["full"][total])
            lines["recurrent"].set_data(contexts, result["recurrent"][total])
            shipped = result["shipped"]
            lines["shipped"].set_data(contexts if shipped else [], shipped[total] if shipped else [])
        artists["bytes"]["kv"].set_data(contexts, result["curves"]["kv"])
        artists["bytes"]["state"].set_data(X_RANGE, [result["state"]] * 2)
        artists["bytes"]["marker"].set_data([context], [result["kv"] + result["state"]])
        artists["flops"]["marker"].set_data([context], [result["flops"]])
        crossing = result["break_even"]
        shown = X_RANGE[0] <= crossing <= X_RANGE[1]
        artists["break_even"].set_visible(shown)
        artists["break_even"].set_xdata([crossing] * 2 if shown else [1, 1])
        artists["break_even_label"].set_x(crossing if shown else X_RANGE[0])
        label = f" cheaper than the twin\n from N = {whole_tokens(crossing)}"
        artists["break_even_label"].set_text(label if shown else "")
        artists["title"].set_text("\n".join(summary(result)))
