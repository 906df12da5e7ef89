"""The plots of a capacity-study record (chapters 7, 10 and 15): loss curves, accuracy, state-size
sweep, accuracy against memory.

Each ``plot_*`` takes a study record (as :func:`lattn_edu.records.load_record` returns it)
and returns a matplotlib Figure. The main part's models are drawn at their best learning
rate, the one :func:`.study.summarise` picks (highest mean accuracy over seeds), and every
seed is shown: a curve each, or the range as an error bar around the mean. Seed counts in
the labels come from the runs recorded, so a partial record says what it holds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..style import PALETTE
from .mixers import parse_pattern
from .study import guessing_loss, plateau_exit, plateau_start, seed_counts, summarise, sweep_runs
from .training import learning_rate_factor

# (colour, line style, marker): distinct for every model, softmax and linear in chapter 7's
# colours, linear and DeltaNet (the chapters' main comparison) far apart; eight colours for
# nine models, so the two Part I models that share one differ in line and marker
STYLES = {"softmax": (PALETTE["blue"], "-", "o"), "linear": (PALETTE["orange"], "-", "o"),
          "deltanet": (PALETTE["black"], "-", "o"), "gated_deltanet": (PALETTE["purple"], "-", "o"),
          "mamba2": (PALETTE["green"], "-", "o"), "gla": (PALETTE["sky"], "-", "o"),
          "favor": (PALETTE["green"], "--", "s"), "retnet": (PALETTE["vermillion"], "-", "s"),
          "based": (PALETTE["purple"], "--", "s"), "deltanet_neg": (PALETTE["black"], "--", "^"),
          "deltaproduct": (PALETTE["vermillion"], "--", "^"), "ttt_linear": (PALETTE["orange"], ":", "D"),
          "titans_linear": (PALETTE["sky"], ":", "D"), "least_squares": (PALETTE["blue"], ":", "D"),
          "kda": (PALETTE["purple"], ":", "v"), "sliding_window": (PALETTE["blue"], "--", "v"),
          "log_linear": (PALETTE["green"], ":", "v")}


def best_runs(record: dict[str, Any], model: str, num_pairs: int) -> list[dict[str, Any]]:
    """The main part's runs of ``model`` at ``num_pairs``, at that pair's best learning rate."""
    rate = next(r["learning_rate"] for r in summarise(record, "main")
                if r["model"] == model and r["num_pairs"] == num_pairs)
    return [r for r in record["runs"] if r["part"] == "main" and r["model"] == model
            and r["num_pairs"] == num_pairs and r["learning_rate"] == rate]


def _loss_panels(record: dict[str, Any], panels: dict[str, list[dict[str, Any]]]) -> Any:
    """One panel per title, one thin line per run (coloured by model), on a log scale."""
    import matplotlib.pyplot as plt

    every = record["config"]["curve_every"]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels) + 1.6, 3.6), sharey=True,
                             squeeze=False, layout="constrained")
    labelled: set[str] = set()
    for ax, (title, runs) in zip(axes[0], panels.items()):
        for run in runs:
            colour, line, _ = STYLES[run["model"]]
            steps = every * (np.arange(len(run["loss_curve"])) + 1)
            ax.plot(steps, run["loss_curve"], line, color=colour, lw=1,
                    label=None if run["model"] in labelled else run["model"])
            labelled.add(run["model"])
        ax.axhline(guessing_loss(record), color="gray", lw=0.8, ls="--",
                   label=None if "guessing" in labelled else "guessing")
        labelled.add("guessing")
        ax.set(yscale="log", xlabel="training step", title=title)
    axes[0][0].set_ylabel(f"loss (nats), {every}-step mean")
    fig.legend(loc="outside right upper", fontsize=8)
    return fig


def plot_loss_curves(record: dict[str, Any]) -> Any:
    """The main part's training loss against step, one panel per P, one line per seed, each
    model at its best learning rate."""
    config = record["config"]
    return _loss_panels(record, {f"P = {p} pairs": [run for model in config["models"]
                                                    for run in best_runs(record, model, p)]
                                 for p in config["pair_counts"]})


# the line styles and markers of the sliding windows in one loss figure, widest first: every
# window keeps the sliding window's colour (as in :func:`plot_memory_recall`) and gets a line and
# a marker of its own, the widest the sliding window's own marker
WINDOW_LINES = ("--", ":", (0, (3, 1, 1, 1)), (0, (1, 3)), (0, (5, 1, 1, 1, 1, 1)))
WINDOW_MARKERS = ("v", "^", "<", ">", "x")


def plot_chosen_losses(record: dict[str, Any], panels: dict[str, list[tuple[str, int | None]]],
                       schedule: bool = False, names: dict[str, str] | None = None,
                       colours: dict[str, str] | None = None, no_lookup_loss: float | None = None,
                       seed_labels: tuple[str, ...] = ()) -> Any:
    """The training loss of chosen runs against step: one panel per title, each holding the
    (model, window) pairs listed (window None for every model but the sliding window), a thin
    line per seed, with the guessing loss and half of it dashed in grey and, where
    ``no_lookup_loss`` is given, that loss dotted in grey and named "no-lookup loss" (the loss of
    answering with each value's share of the sequence, :func:`.task.no_lookup_baselines`).
    With ``schedule``, a short panel under each draws the learning rate as a share of its peak
    (:func:`.training.learning_rate_factor`, the schedule every run trained on), on the same
    steps: step k, counted from 1 as the loss curves count, at the schedule's index k - 1.

    Each model is drawn in :func:`style_of`'s colour, line and marker (a marker every few
    points), the scheme of :func:`plot_memory_recall`, so a colour means the same model in
    both figures; the windows share the sliding window's colour and each gets its own line and
    marker (:data:`WINDOW_LINES`, :data:`WINDOW_MARKERS`, widest first). ``names`` maps record keys to the legend's
    names (a key it lacks is shown as is); ``colours`` replaces :func:`style_of`'s colour of the
    keys it holds (so that models of one family can each have a colour of their own). In the
    panels whose titles ``seed_labels`` lists, each line ends in its seed, "s0", "s1", ..., in
    the line's colour on a white box (so that a grey level line behind it does not strike it
    through), so that a reader can follow one run among many."""
    import matplotlib.pyplot as plt

    every = record["config"]["curve_every"]
    guess = guessing_loss(record)
    windows = sorted({w for chosen in panels.values() for _, w in chosen if w is not None}, reverse=True)
    if len(windows) > len(WINDOW_LINES):
        raise ValueError(f"{len(windows)} windows chosen; at most {len(WINDOW_LINES)} line styles")
    if schedule:
        fig, grid = plt.subplots(2, len(panels), figsize=(4.2 * len(panels) + 0.4, 5.4), sharex=True,
                                 squeeze=False, layout="constrained", height_ratios=(3, 1))
        axes = grid[:1]
        for ax in grid[0][1:]:
            ax.sharey(grid[0][0])
        steps_total = record["config"]["base"]["steps"]
        steps = np.arange(1, steps_total + 1)  # step k, counted from 1, runs at index k - 1
        for ax in grid[1]:
            ax.plot(steps, [learning_rate_factor(int(s) - 1, steps_total) for s in steps], color="#333333", lw=1)
            ax.set(xlabel="training step", ylim=(0, 1.05), yticks=(0, 0.5, 1))
            ax.grid(True, lw=0.4, alpha=0.5)
        grid[1][0].set_ylabel("learning rate\n(share of peak)")
    else:
        fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 0.4, 3.8), sharey=True,
                                 squeeze=False, layout="constrained")
    for ax, (title, chosen) in zip(axes[0], panels.items()):
        ends: list[tuple[float, int, int, str]] = []  # (final loss, step, seed, colour) per line
        for model, window in chosen:
            runs = [r for r in record["runs"] if r["model"] == model and r.get("window") == window]
            if not runs:
                raise ValueError(f"the record has no run of {model!r} with window {window!r}")
            _, line, marker = style_of(model)
            colour = _colour(model, colours)
            if window is not None:
                line, marker = WINDOW_LINES[windows.index(window)], WINDOW_MARKERS[windows.index(window)]
            for i, run in enumerate(sorted(runs, key=lambda r: r["seed"])):
                steps = every * (np.arange(len(run["loss_curve"])) + 1)
                label = (display_name(model, names) + (f" (W = {window})" if window else "")) if i == 0 else None
                ax.plot(steps, run["loss_curve"], color=colour, ls=line, lw=1, label=label, marker=marker,
                        markersize=4, markevery=(i, 4))  # seeds' markers a point apart
                if title in seed_labels:  # labelled below, once every line is drawn
                    ends.append((run["loss_curve"][-1], int(steps[-1]), run["seed"], colour))
        levels = [(guess, "guessing loss", "--"), (guess / 2, "half of it", "--")]
        if no_lookup_loss is not None:
            levels.insert(1, (no_lookup_loss, "no-lookup loss", ":"))
        for level, name, style in levels:
            ax.axhline(level, color="gray", lw=0.8, ls=style)
            ax.annotate(name, (0, level), xytext=(2, 2 if style == "--" else -9), textcoords="offset points",
                        xycoords=("axes fraction", "data"), fontsize=7, color="#444444")
        if ends:  # each line's seed just right of its end, lines ending close together spread apart
            low, high = ax.get_ylim()
            gap, placed = 0.045 * (high - low), float("-inf")
            for loss, step, seed, colour in sorted(ends):
                placed = max(loss, placed + gap)
                ax.annotate(f"s{seed}", (step, loss), xytext=(step * 1.012, placed), textcoords="data",
                            fontsize=6, color=colour, va="center", zorder=5,  # over the grey lines
                            bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none"})
            ax.set_xlim(right=max(step for _, step, _, _ in ends) * 1.08)  # room for the labels
        ax.set(xlabel="" if schedule else "training step", title=title)
        ax.legend(fontsize=7, loc="lower left", handlelength=3)
    axes[0][0].set_ylabel(f"loss (nats), {every}-step mean")
    return fig


def plot_plateau_steps(record: dict[str, Any], run: dict[str, Any], margin: float = 0.1,
                       names: dict[str, str] | None = None) -> Any:
    """One run's training loss against step, its two plateau steps marked and named: the start
    of its fall (:func:`.study.plateau_start`, the first curve point ``margin`` nats below
    the guessing loss) and its half-loss step, where it fell below half the guessing loss
    (:func:`.study.plateau_exit`). The guessing loss, the margin below it and half of it are
    drawn in grey; a step the run never reached is not marked. ``names`` maps record keys to the
    legend's names (a key it lacks is shown as is)."""
    import matplotlib.pyplot as plt

    every = record["config"]["curve_every"]
    guess = guessing_loss(record)
    colour, line, _ = style_of(run["model"])
    steps = every * (np.arange(len(run["loss_curve"])) + 1)
    fig, ax = plt.subplots(figsize=(6.4, 3.6), layout="constrained")
    name = display_name(run["model"], names) + (f" (W = {run['window']})" if run.get("window") else "")
    ax.plot(steps, run["loss_curve"], color=colour, ls=line, lw=1.2, label=f"{name}, seed {run['seed']}")
    levels = ((guess, "guessing loss", "--"), (guess - margin, f"{margin:g} nats below it", ":"),
              (guess / 2, "half the guessing loss", "--"))
    for level, text, style in levels:
        ax.axhline(level, color="gray", lw=0.8, ls=style)
        ax.annotate(text, (1, level), xytext=(-2, 2 if style == "--" else -9), textcoords="offset points",
                    xycoords=("axes fraction", "data"), fontsize=7, color="#444444", ha="right")
    marks = ((plateau_start(run, record, margin), "start of the fall", (-10, -34)),
             (plateau_exit(run, record), "half-loss step", (-10, -30)))
    for step, text, offset in marks:
        if step is None:
            continue
        loss = run["loss_curve"][step // every - 1]
        ax.plot([step], [loss], "o", ms=7, mfc="none", mec="black", mew=1.2)
        ax.annotate(f"{text}\n(step {step})", (step, loss), xytext=offset, textcoords="offset points",
                    fontsize=8, ha="right", va="top", arrowprops={"arrowstyle": "-", "color": "black", "lw": 0.6})
    ax.set(xlabel="training step", ylabel=f"loss (nats), {every}-step mean", ylim=(0, None))
    ax.legend(fontsize=8, loc="lower left")
    return fig


def plot_sweep_losses(record: dict[str, Any]) -> Any:
    """The state-size sweep's training loss against step, one panel per width."""
    runs = sweep_runs(record)
    return _loss_panels(record, {f"d_model = {width}": [r for r in runs if r["d_model"] == width]
                                 for width in record["config"]["sweep_widths"]})


def _mean_and_range(ax: Any, x: float, row: dict[str, Any], label: str | None) -> None:
    """A marker at the mean accuracy with an error bar spanning the seeds' min to max."""
    colour, _, marker = STYLES[row["model"]]
    ax.errorbar([x], [row["mean"]], yerr=[[row["mean"] - row["min"]], [row["max"] - row["mean"]]],
                fmt=marker, color=colour, capsize=3, label=label)


def plot_accuracy(record: dict[str, Any]) -> Any:
    """Recall accuracy per model and P: mean over seeds with the range as an error bar."""
    import matplotlib.pyplot as plt

    config = record["config"]
    rows = summarise(record, "main")
    by_key = {(r["model"], r["num_pairs"]): r for r in rows}
    models, pairs = config["models"], config["pair_counts"]
    fig, ax = plt.subplots(figsize=(6.6, 3.8), layout="constrained")
    for model, offset in zip(models, np.linspace(-0.3, 0.3, len(models))):
        for i, p in enumerate(pairs):
            _mean_and_range(ax, i + offset, by_key[model, p], model if i == 0 else None)
    ax.set_xticks(range(len(pairs)), [f"P = {p}" for p in pairs])
    rates = " and ".join(f"{rate:g}" for rate in config["learning_rates"])
    ax.set(ylabel="accuracy (bar: seeds' range)",
           title=f"{config['base']['steps']:,} steps, {seed_counts(rows)} seeds, best lr of {rates}")
    fig.legend(loc="outside right upper", fontsize=8)
    return fig


def plot_state_sweep(record: dict[str, Any]) -> Any:
    """Accuracy against model width at the sweep's fixed P, for each sweep model."""
    import matplotlib.pyplot as plt

    config = record["config"]
    rows = summarise(record, "state_sweep")
    widths, heads, models = config["sweep_widths"], config["base"]["num_heads"], config["sweep_models"]
    fig, ax = plt.subplots(figsize=(6.6, 3.8), layout="constrained")
    for model, offset in zip(models, np.linspace(-0.06, 0.06, len(models))):
        by_width = sorted((r for r in rows if r["model"] == model), key=lambda r: r["d_model"])
        for i, row in enumerate(by_width):
            _mean_and_range(ax, np.log2(row["d_model"]) + offset, row, model if i == 0 else None)
        ax.plot([np.log2(r["d_model"]) + offset for r in by_width], [r["mean"] for r in by_width],
                STYLES[model][1], color=STYLES[model][0], lw=1)
    ax.axhline(1 / config["base"]["num_values"], color="gray", lw=0.8, ls="--", label="guessing")
    ax.set_xticks(np.log2(widths), [f"{w}\n(d_head = {w // heads})" for w in widths])
    ax.set(xlabel="width d_model (a head's state is about d_head × d_head)",
           ylabel="accuracy (bar: seeds' range)",
           title=f"P = {config['sweep_pairs']} pairs, lr {config['sweep_learning_rate']:g}, {seed_counts(rows)} seeds")
    fig.legend(loc="outside right upper", fontsize=8)
    return fig


def style_of(model: str) -> tuple[str, str, str]:
    """(colour, line style, marker) of a registered mixer, or of a layer pattern: a hybrid of
    recurrent and softmax layers takes the recurrent mixer's colour, and a line and a marker for
    softmax in fewer than half its layers (dash-dot, square) or in half or more (dash-dot-dot,
    diamond): ``"gated_deltanet*3+softmax"`` and ``"gated_deltanet+softmax"`` differ."""
    if model in STYLES:
        return STYLES[model]
    layers = parse_pattern(model)
    colour, _, _ = STYLES[next(name for name in layers if name != "softmax")]
    if 2 * layers.count("softmax") < len(layers):  # softmax in fewer than half the layers
        return colour, "-.", "s"
    return colour, (0, (5, 1.5, 1, 1.5, 1, 1.5)), "D"  # dash-dot-dot


def display_name(model: str, names: dict[str, str] | None) -> str:
    """The name ``names`` gives a record key, or the key itself."""
    return (names or {}).get(model, model)


def _colour(model: str, colours: dict[str, str] | None) -> str:
    """The colour ``colours`` gives a record key, or :func:`style_of`'s."""
    return (colours or {}).get(model, style_of(model)[0])


def _short_label(row: dict[str, Any], names: dict[str, str] | None = None) -> str:
    """A marker's label in :func:`plot_memory_recall`: the model's name, or W = its window."""
    return f"W = {row['window']}" if "window" in row else display_name(row["model"], names)


SEED_DOT_SHIFT = 1.04  # each seed's dot, this factor right of its mean on the log axis


def plot_memory_recall(record: dict[str, Any], names: dict[str, str] | None = None,
                       colours: dict[str, str] | None = None, no_lookup: float | None = None) -> Any:
    """Recall accuracy against the numbers each model keeps per sequence after the task's 3P
    tokens (all layers; log scale, ticked at the numbers the models keep): mean over seeds with
    the range as an error bar and each seed's accuracy as a small dot just right of it, each
    marker labelled with its model (a window by W = its width;
    models at the same point share one label), the sliding windows joined by a line from the
    narrowest to the widest. ``names`` maps record keys to the labels' names (a key it lacks is
    shown as is); ``colours`` replaces :func:`style_of`'s colour of the keys it holds. A label
    whose marker was moved left goes on its left and below it, clear of labels further left. A
    memory within 10% of the next smaller one gets no tick of its own (the two would print over
    each other); its markers' labels give the number instead. A dotted line marks chance (one over
    the number of values) and, where ``no_lookup`` is given, a second one the accuracy reached
    without any lookup (:func:`.task.no_lookup_baselines`), each named at the right edge, clear of
    the labels of the smallest memories on the left."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    config = record["config"]
    rows = summarise(record, "main")
    fig, ax = plt.subplots(figsize=(7.4, 4.4), layout="constrained")  # labels, no legend
    # models at one memory but different accuracies are drawn side by side, a few per cent apart on
    # the log axis, so that neither marker hides the other (those at one point, the same runs, coincide)
    dodge: dict[tuple[Any, float], float] = {}
    for x in {row["cache_floats"] for row in rows}:
        means = sorted({round(row["mean"], 3) for row in rows if row["cache_floats"] == x})
        for k, mean in enumerate(means):
            dodge[x, mean] = 1.1 ** (k - (len(means) - 1) / 2) if len(means) > 1 else 1.0
    for row in rows:
        _, _, marker = style_of(row["model"])
        colour = _colour(row["model"], colours)
        label = display_name(row["model"], names) + (f" (W = {row['window']})" if "window" in row else "")
        x = row["cache_floats"] * dodge[row["cache_floats"], round(row["mean"], 3)]
        ax.errorbar([x], [row["mean"]], yerr=[[row["mean"] - row["min"]],
                                                                [row["max"] - row["mean"]]],
                    fmt=marker, color=colour, capsize=3, label=label)
        seeds = [r["accuracy"] for r in record["runs"] if r["part"] == "main"
                 and (r["model"], r["num_pairs"], r["d_model"], r["learning_rate"], r.get("window"))
                 == (row["model"], row["num_pairs"], row["d_model"], row["learning_rate"], row.get("window"))]
        ax.plot([x * SEED_DOT_SHIFT] * len(seeds), seeds, ".", color=colour, ms=3, alpha=0.8)
    windows = sorted((r for r in rows if "window" in r), key=lambda r: r["window"])
    if windows:
        ax.plot([r["cache_floats"] * dodge[r["cache_floats"], round(r["mean"], 3)] for r in windows],
                [r["mean"] for r in windows], "--",
                color=_colour(windows[0]["model"], colours), lw=0.8)
    memory = sorted({row["cache_floats"] for row in rows})
    # a memory within 10% of the tick before it would print over that tick: its markers' labels
    # carry the number instead
    crowded = {m for previous, m in zip(memory, memory[1:]) if m < 1.1 * previous}
    points: dict[tuple[int, float], list[str]] = {}  # models at one point share a label
    for row in rows:
        points.setdefault((row["cache_floats"], round(row["mean"], 3)), []).append(_short_label(row, names))
    for (x, y), labels in points.items():
        if x in crowded:
            labels = [" and ".join(labels) + f" ({x:,} numbers)"]
        # of two labels at one memory within 0.1 in accuracy, the lower goes below its marker
        close = [other for (ox, other) in points if ox == x and other != y and abs(other - y) < 0.1]
        left = dodge[x, y] < 1  # moved left of its memory: labelled on its left, clear of the other
        below = left or any(other > y for other in close)
        ax.annotate(" and ".join(labels), (x * dodge[x, y], y), xytext=(-5 if left else 5, -9 if below else 3),
                    textcoords="offset points", fontsize=7, color="#333333", ha="right" if left else "left")
    lines = {"chance": 1 / config["base"]["num_values"]}
    if no_lookup is not None:
        lines["no-lookup accuracy"] = no_lookup
    for text, level in lines.items():
        ax.axhline(level, color="gray", lw=0.8, ls=":")
        ax.annotate(text, (1, level), xytext=(-2, -9 if text == "chance" else 3), textcoords="offset points",
                    xycoords=("axes fraction", "data"), fontsize=7, color="#444444", ha="right")
    pairs = config["pair_counts"][0]
    ax.set(xscale="log", xlabel=f"numbers kept per sequence after {3 * pairs} tokens (all layers)",
           ylabel="accuracy (bar: seeds' range)",
           title=f"P = {pairs} pairs, {config['base']['num_layers']} layers, "
                 f"{config['base']['steps']:,} steps, {seed_counts(rows)} seeds")
    ticks = [m for m in memory if m not in crowded]
    ax.set_xticks(ticks, [f"{m:,}" for m in ticks], rotation=90, fontsize=8)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(memory[0] / 1.8, memory[-1] * 2)  # room for the labels on either side
    return fig
