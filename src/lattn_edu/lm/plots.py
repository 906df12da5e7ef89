"""The plots of a language-model lab record (chapter 17): validation bits against steps, each
model's final bits with its seeds' range, the loss by position in the context, and (from
benchmarks/lm_decode.py's record, chapter 15's clock) decode time.

Each ``plot_*`` takes a lab record (as :func:`.lab.recorded` returns it) and returns a matplotlib
Figure. Every model is drawn at its best learning rate, the one :func:`.lab.summarise` picks;
a thick line is the mean over seeds and thin lines are the seeds themselves.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..recall.plots import STYLES, display_name
from ..style import PALETTE
from .lab import summarise

# the lab's models that are not a single registered mixer: the hybrid, and Based's two layers
LM_STYLES = {**STYLES, "hybrid": (PALETTE["vermillion"], "-.", "D"), "based": (PALETTE["sky"], "--", "s")}
# the lab figures' styles (plot_validation, plot_position_bits): eight models on one axis, so no two
# share a colour (the eight colours of the book's palette, Based's yellow darkened to olive to show
# on white), and the line style and marker tell apart again the models a colour-blind reader may
# confuse; a model not listed falls back to LM_STYLES. The window model's long, open dashes keep
# its thin seed lines apart from softmax's solid ones in a near colour (matplotlib's "--" at a
# thin line's width reads as almost solid)
WINDOW_DASHES = (0, (5, 4))
LAB_STYLES = {"softmax": (PALETTE["blue"], "-", "o"), "sliding_window": (PALETTE["sky"], WINDOW_DASHES, "v"),
              "linear": (PALETTE["orange"], ":", "^"), "based": ("#8C7A00", "-.", "s"),
              "gated_deltanet": (PALETTE["purple"], "-", "D"), "kda": (PALETTE["black"], "--", "P"),
              "mamba2": (PALETTE["green"], ":", "X"), "hybrid": (PALETTE["vermillion"], "-.", "*")}
# one colour per model in every figure of chapters 16 and 17: the lab's own, and the recall
# study's three models the lab lacks (its 1-in-4 hybrid is the lab's hybrid, under another key)
MODEL_COLOURS = {key: style[0] for key, style in LAB_STYLES.items()} | {
    "gated_deltanet*3+softmax": LAB_STYLES["hybrid"][0], "gated_deltanet+softmax": "#882255",
    "log_linear": "#44AA99"}


def model_names(window: str = "window") -> dict[str, str]:
    """The name chapters 16 and 17 give each model of the hybrid recall study and the lab, by
    record key (the study's "gated_deltanet*3+softmax" and the lab's "hybrid" are one model);
    ``window`` names the sliding-window model."""
    return {"softmax": "softmax", "sliding_window": window, "linear": "linear (elu+1)", "based": "Based",
            "gated_deltanet": "pure Gated DeltaNet", "kda": "KDA", "mamba2": "Mamba-2",
            "log_linear": "log-linear attention", "gated_deltanet*3+softmax": "1-in-4 hybrid",
            "hybrid": "1-in-4 hybrid", "gated_deltanet+softmax": "2-in-4 hybrid"}


def prose_name(model: str, names: dict[str, str]) -> str:
    """A model's name in a sentence: "the" before a hybrid or a window model ("the 1-in-4 hybrid",
    but "KDA")."""
    name = names[model]
    return f"the {name}" if "hybrid" in name or "window" in name else name


def best_runs(record: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each model's runs at its best learning rate, in the summary's order."""
    return {row["model"]: [r for r in record["runs"] if r["model"] == row["model"]
                           and r["learning_rate"] == row["learning_rate"]] for row in summarise(record)}


def ranked_runs(record: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """:func:`best_runs`, best mean final bits first: the lab figures' legend order, so the
    legend reads as the ranking does."""
    order = [row["model"] for row in sorted(summarise(record), key=lambda row: row["bits"])]
    best = best_runs(record)
    return {model: best[model] for model in order}


def _draw(ax: Any, model: str, x: np.ndarray, curves: list[list[float]],
          names: dict[str, str] | None = None, seed_lines: bool = True, seed_counts: bool = True) -> None:
    """Thin lines for the seeds (unless ``seed_lines`` is False), a thick one (with markers) for
    their mean, labelled with the model's name in ``names`` (its record key where ``names``
    lacks it) and, unless ``seed_counts`` is False, its seed count in brackets."""
    colour, line, marker = LAB_STYLES.get(model, LM_STYLES[model])
    for curve in curves if seed_lines else ():
        ax.plot(x, curve, ls=line, color=colour, lw=0.9, alpha=0.7)
    label = display_name(model, names) + (f" ({len(curves)})" if seed_counts else "")
    ax.plot(x, np.mean(curves, axis=0), ls=line, color=colour, lw=2, marker=marker, markersize=5,
            label=label)


def plot_validation(record: dict[str, Any], first_step: int = 100,
                    names: dict[str, str] | None = None, seed_counts: bool = True) -> Any:
    """Validation bits per character against training step (from ``first_step``: step 0 is the
    untrained model's log2 of the vocabulary, which would squash the rest). ``names`` maps record
    keys to the legend's names (a key it lacks is shown as is); ``seed_counts=False`` leaves
    each name's "(n)", its count of seeds, out of the legend and the title."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.2, 4.0), layout="constrained")
    for model, runs in ranked_runs(record).items():  # the legend in ranking order
        points = [p for p in runs[0]["validation"] if p["step"] >= first_step]
        curves = [[p["bits"] for p in r["validation"] if p["step"] >= first_step] for r in runs]
        _draw(ax, model, np.array([p["step"] for p in points]), curves, names, seed_counts=seed_counts)
    ax.set(xlabel="training step", ylabel="validation bits per character",
           title="mean over seeds (thick) and each seed (thin)" + ("; (n): seeds" if seed_counts else ""))
    fig.legend(loc="outside right upper", fontsize=8)
    return fig


def plot_position_bits(record: dict[str, Any], names: dict[str, str] | None = None,
                       relative_to: str | None = None, seed_lines: bool = True,
                       seed_counts: bool = True) -> Any:
    """Validation bits per character by position in the context, in blocks: how much each model
    gains from the characters before (falling lines: it uses the far context). ``names`` maps
    record keys to the legend's names (a key it lacks is shown as is).

    ``relative_to``, a model in the record, adds a second panel below: each other model's bits
    by block minus that model's run on the same seed (thin lines), and their mean (thick), so
    what every model shares, such as a harder passage, cancels.

    ``seed_lines=False`` leaves the seeds' thin lines out of the top panel (eight models'
    means stay readable there); the panel below keeps them. ``seed_counts=False`` leaves each
    name's "(n)", its count of seeds, out of the legend and the title."""
    import matplotlib.pyplot as plt

    block = record["config"]["position_block"]
    best = ranked_runs(record)  # the legend in ranking order
    if relative_to is not None and relative_to not in best:
        raise ValueError(f"relative_to must be a model in the record ({', '.join(best)}); got {relative_to!r}")
    rows = 1 if relative_to is None else 2
    fig, axes = plt.subplots(rows, 1, figsize=(7.2, 4.0 * rows), layout="constrained", sharex=True,
                             squeeze=False)
    ax = axes[0, 0]
    for model, runs in best.items():
        curves = [r["position_bits"] for r in runs]
        starts = block * np.arange(len(curves[0]))
        _draw(ax, model, starts + block / 2, curves, names, seed_lines, seed_counts)
    ax.set(xlabel=f"position in the context (blocks of {block} characters)",
           ylabel="validation bits per character",
           title="after training" + ("; (n): number of seeds" if seed_counts else ""))
    if relative_to is not None:
        below = axes[1, 0]
        reference = {r["seed"]: np.asarray(r["position_bits"]) for r in best[relative_to]}
        for model, runs in best.items():
            if model == relative_to:
                continue
            curves = [list(np.asarray(r["position_bits"]) - reference[r["seed"]]) for r in runs
                      if r["seed"] in reference]  # paired by seed
            if curves:
                starts = block * np.arange(len(curves[0]))
                _draw(below, model, starts + block / 2, curves, names, seed_counts=seed_counts)
        below.axhline(0, color="gray", lw=0.8)
        below.set(xlabel=ax.get_xlabel(),
                  ylabel=f"minus {display_name(relative_to, names)} (bits)")
        ax.set(xlabel="")  # the shared axis is labelled once, below
    fig.legend(*ax.get_legend_handles_labels(), loc="outside right upper", fontsize=8)
    return fig


def plot_final_bits(record: dict[str, Any], names: dict[str, str] | None = None,
                    groups: list[tuple[str, ...]] | tuple[tuple[str, ...], ...] | None = None) -> Any:
    """Each model's final validation bits per character, best at the top: a filled dot with a
    black rim at the mean over seeds (the same for every model, so no model's mean looks like
    its ticks), a line across the seeds' range (lowest to highest) and a tick at each seed's
    bits. ``names`` maps record keys to the axis's names (a key it lacks is shown as is).

    ``groups``, a sequence of tuples of models, shades each group's rows, alternately grey and
    white, and labels them "group 1", "group 2", ... at the right; every model of a group must
    be in the record, and no model in two groups."""
    import matplotlib.pyplot as plt

    rows = sorted(summarise(record), key=lambda r: r["bits"])
    models = [r["model"] for r in rows]
    place = {m: i for i, m in enumerate(models)}  # row 0 at the top
    if groups is not None:
        listed = [m for group in groups for m in group]
        unknown = [m for m in listed if m not in place]
        if unknown or len(set(listed)) != len(listed):
            raise ValueError(f"groups must name models of the record ({', '.join(models)}), each "
                             f"once; got {groups!r}")
    best = best_runs(record)
    fig, ax = plt.subplots(figsize=(7.2, 0.45 * len(rows) + 1.2), layout="constrained")
    for shade, group in enumerate(groups or ()):
        rows_of = [place[m] for m in group]
        ax.axhspan(min(rows_of) - 0.5, max(rows_of) + 0.5, color="0.9" if shade % 2 == 0 else "white",
                   zorder=0)
        ax.text(1.0, (min(rows_of) + max(rows_of)) / 2, f" group {shade + 1}", va="center",
                ha="left", fontsize=8, transform=ax.get_yaxis_transform())
    for row in rows:
        model, y = row["model"], place[row["model"]]
        colour = LAB_STYLES.get(model, LM_STYLES[model])[0]
        ax.plot([row["min"], row["max"]], [y, y], color=colour, lw=2, solid_capstyle="butt", zorder=2)
        seeds = [r["final_bits"] for r in best[model]]
        ax.plot(seeds, [y] * len(seeds), ls="none", marker="|", color=colour, markersize=10, zorder=3)
        # the mean: a filled dot with a black rim, bigger than the ticks, for every model alike
        ax.plot([row["bits"]], [y], ls="none", marker="o", color=colour, markersize=10, zorder=4,
                markeredgecolor="black", markeredgewidth=1.2)
    ax.set_yticks(range(len(models)), [display_name(m, names) for m in models])
    ax.set_ylim(len(models) - 0.5, -0.5)  # best at the top
    ax.set(xlabel="validation bits per character at the last step",
           title="mean over seeds (dot), each seed (tick) and their range (line)")
    return fig


# plot_decode's highlighted models, in order: strong colours that stay apart; the rest grey
DECODE_HIGHLIGHT = ("softmax", "gated_deltanet", "hybrid")
HIGHLIGHT_COLOURS = (PALETTE["blue"], PALETTE["black"], PALETTE["vermillion"])
MUTED = "#9a9a9a"
# plot_decode's legend: readable names for the record's model keys (others keep their key)
DECODE_NAMES = {"softmax": "softmax", "linear": "linear attention (elu+1)",
                "gated_deltanet": "Gated DeltaNet", "kda": "KDA", "mamba2": "Mamba-2",
                "sliding_window": "sliding window", "hybrid": "hybrid (3 Gated DeltaNet : 1 softmax)",
                "based": "Based"}
# the time ticks plot_decode may label, in ms: those inside the drawn range are used
MS_TICKS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500,
            1000, 2000, 5000)


def plot_decode(record: dict[str, Any], highlight: tuple[str, ...] | None = DECODE_HIGHLIGHT,
                crossing: float | None = None, crossing_label: str = "softmax crosses Gated DeltaNet",
                band: bool = False, band_label: str = "the other models (min–max of medians)") -> Any:
    """Decode time per token against the context (benchmarks/lm_decode.py's record, log-log):
    the median of each model, with its 95th percentile as the bar's top.

    The models in ``highlight`` (at most three) are drawn thick, in strong colours that stay
    apart (blue, black, vermillion, in that order) and on top; every other model thin and
    grey, told apart by its marker. ``highlight=None`` draws every model in its own colour
    (:data:`LM_STYLES`). ``crossing``, a context, adds a dotted vertical line there, labelled
    ``crossing_label`` and the context. The legend (below the axes) names the models as
    :data:`DECODE_NAMES` does; the x ticks are the timed contexts and the y ticks plain
    milliseconds (0.5, 1, 2, 5, ...). ``band=True`` (with ``highlight``) draws the other
    models not as lines but as one grey band from the smallest to the largest of their medians
    at each context, labelled ``band_label``.
    """
    import matplotlib.pyplot as plt

    if highlight is not None and len(highlight) > len(HIGHLIGHT_COLOURS):
        raise ValueError(f"highlight at most {len(HIGHLIGHT_COLOURS)} models; got {highlight!r}")
    colours = {} if highlight is None else dict(zip(highlight, HIGHLIGHT_COLOURS))
    from matplotlib.ticker import NullFormatter

    fig, ax = plt.subplots(figsize=(7.2, 4.8), layout="constrained")
    models = dict.fromkeys(row["model"] for row in record["rows"])
    if band and highlight is not None:  # the others as one min–max band of their medians
        others = [m for m in models if m not in colours]
        if others:
            at = sorted({r["context"] for r in record["rows"] if r["model"] in others})
            spans = [[r["median_ms"] for r in record["rows"] if r["model"] in others and r["context"] == n]
                     for n in at]
            ax.fill_between(at, [min(v) for v in spans], [max(v) for v in spans], color=MUTED, alpha=0.35,
                            lw=0, zorder=1, label=band_label)
        models = dict.fromkeys(m for m in models if m in colours)
    for model in models:  # the record's order (softmax first), highlighted ones on top
        rows = sorted((r for r in record["rows"] if r["model"] == model), key=lambda r: r["context"])
        colour, line, marker = LM_STYLES[model]
        weight = {}  # highlight=None: every model in its own colour, matplotlib's widths
        if highlight is not None:
            strong = model in colours
            colour = colours.get(model, MUTED)
            weight = {"lw": 2 if strong else 0.8, "markersize": 6 if strong else 3.5,
                      "elinewidth": 1 if strong else 0.6, "zorder": 3 if strong else 2}
        medians = np.array([r["median_ms"] for r in rows])
        ax.errorbar([r["context"] for r in rows], medians, fmt=marker + line, color=colour, capsize=2,
                    yerr=[np.zeros_like(medians), [r["p95_ms"] - r["median_ms"] for r in rows]],
                    label=DECODE_NAMES.get(model, model),
                    **weight)
    if crossing is not None:
        ax.axvline(crossing, ls=":", color="#444444", lw=1.4, zorder=1,
                   label=f"{crossing_label}, N ≈ {crossing:,.0f}")
    ax.set(xscale="log", yscale="log", xlabel="tokens already in the cache N",
           ylabel="ms per decoded token (median; bar: p95)",
           title=f"{record['settings']['num_layers']} layers, d_model {record['settings']['d_model']}, "
                 f"one thread")
    contexts = sorted({r["context"] for r in record["rows"]})
    ax.set_xticks(contexts, [f"{n:,}" for n in contexts])
    low = min(r["median_ms"] for r in record["rows"])
    high = max(r["p95_ms"] for r in record["rows"])
    ticks = [t for t in MS_TICKS if low <= t <= high]
    if len(ticks) >= 2:  # plain labels where the range holds at least two of them
        ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_formatter(NullFormatter())
    fig.legend(loc="outside lower center", ncol=3, fontsize=8)
    return fig
